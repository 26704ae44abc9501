"""The HIPS autograd engine plugin (backend name ``"autograd"``).

Registered under the entry-point group ``adswitch.backends``. autograd itself is
imported only when a gradient or a namespace is first asked for, so a machine without
it still imports adswitch and lists this engine as unavailable.

Capabilities, honestly: nested gradients to any order (autograd's trace levels); writes
inside ``f`` -- ``x[i] = v``, ``x += v``, into arguments, intermediates, fresh buffers and
through views -- recorded with numpy's semantics (see ``writes.py``), or refused with
``MutationError`` where they cannot be followed (a write into a nested call's argument, a
view of a non-C-contiguous array...); numpy arrays on the CPU only.

Primitives: ``value_and_grad``; ``vjp`` and ``vjp_apply`` -- one run of ``f``, the graph
kept and swept back once per cotangent (a reusable pullback that owns copies of what it
refers to); ``jvp`` -- autograd's forward mode, all tangents of a batch carried through
one run of ``f`` (``forward=True``; primitives without a JVP rule are pushed by the exact
transposition of their VJP). ``batching=True``: a batch is one run of ``f`` and one sweep
(or one tangent) per entry -- autograd has no vmap, and its VJPs would sum a leading
batch axis away, so entries are never stacked into one array.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from adswitch.spec import (
    Backend,
    BackendBase,
    CallInfo,
    Capabilities,
    EngineLoader,
    LossFn,
    OutputFn,
    Pullback,
    SeedFn,
    hookimpl,
)

__all__ = ["AutogradBackend", "adswitch_backend"]

_INSTALL_HINT = 'pip install "adswitch[autograd]"'


class AutogradBackend(BackendBase):
    """adswitch's adapter for HIPS autograd.

    Example:
        >>> import numpy as np
        >>> from adswitch.spec import CallInfo
        >>> backend = AutogradBackend()
        >>> def fn(leaves):
        ...     xp = backend.namespace(leaves)
        ...     loss = xp.sum(xp.sin(leaves[0]) * leaves[1])
        ...     return loss, [loss]
        >>> outs, grads = backend.value_and_grad(fn, [np.zeros(2), 3.0], [True, True], CallInfo())
        >>> grads[0], grads[1]
        (array([3., 3.]), 0.0)
    """

    name = "autograd"
    install_hint = _INSTALL_HINT
    capabilities = Capabilities(
        nested=True,
        mutation=True,
        fresh_buffer_writes=True,
        numpy_operands=True,
        devices=("cpu",),
        dtypes=("float32", "float64"),
        array_kinds=("numpy",),
        compiles=False,
        forward=True,
        batching=True,
        extensions=("linalg", "fft"),
    )
    # adswitch_autograd: the GuardedBox that traced arrays are while adswitch runs.
    array_modules: tuple[str, ...] = ("autograd", "adswitch_autograd")

    def __init__(self) -> None:
        self._loader = EngineLoader(
            "autograd", "adswitch_autograd.primitives.engine", ("autograd",), _INSTALL_HINT
        )
        self._engine: ModuleType | None = None
        self._namespace: ModuleType | None = None

    def version(self) -> str:
        return self._loader.version()

    def _load(self) -> ModuleType:
        engine = self._engine
        if engine is None:
            engine = self._engine = self._loader.load()
        return engine

    def owns(self, value: Any) -> bool:
        tracer = sys.modules.get("autograd.tracer")
        return tracer is not None and type(value) in tracer.Box.types

    def namespace(self, arrays: Sequence[Any]) -> Any:
        if self._namespace is None:
            self._load()
            from adswitch_autograd import namespace

            self._namespace = namespace
        return self._namespace

    def value_and_grad(
        self, fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], list[Any | None]]:
        engine = self._engine if self._engine is not None else self._load()
        result: tuple[list[Any], list[Any | None]] = engine.value_and_grad(fn, leaves, active, info)
        return result

    def vjp(
        self, fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], Pullback]:
        engine = self._engine if self._engine is not None else self._load()
        result: tuple[list[Any], Pullback] = engine.vjp(fn, leaves, active, info)
        return result

    def vjp_apply(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        seed: SeedFn,
        info: CallInfo,
    ) -> tuple[list[Any], list[Any | None]]:
        engine = self._engine if self._engine is not None else self._load()
        result: tuple[list[Any], list[Any | None]] = engine.vjp_apply(
            fn, leaves, active, seed, info
        )
        return result

    def jvp(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        tangents: Sequence[Any],
        info: CallInfo,
    ) -> tuple[list[Any], list[Any]]:
        engine = self._engine if self._engine is not None else self._load()
        result: tuple[list[Any], list[Any]] = engine.jvp(fn, leaves, active, tangents, info)
        return result

    def custom_vjp(
        self,
        fn: Callable[[list[Any]], list[Any]],
        fwd: Callable[[list[Any]], tuple[list[Any], Any]],
        bwd: Callable[[Any, list[Any]], list[Any]],
        leaves: Sequence[Any],
        active: Sequence[bool],
    ) -> list[Any]:
        """A user's vjp rule as an autograd primitive (``primitives.custom``)."""
        self._load()
        from adswitch_autograd.primitives import custom

        return custom.custom_vjp(fn, fwd, bwd, leaves, active)

    def custom_jvp(
        self,
        fn: Callable[[list[Any]], list[Any]],
        rule: Callable[[list[Any], list[Any]], tuple[list[Any], list[Any]]],
        leaves: Sequence[Any],
        active: Sequence[bool],
    ) -> list[Any]:
        """A user's jvp rule as an autograd primitive (``primitives.custom``)."""
        self._load()
        from adswitch_autograd.primitives import custom

        return custom.custom_jvp(fn, rule, leaves, active)

    def stop_gradient(self, value: Any) -> Any:
        """The plain value under every box, copied (``primitives.custom``)."""
        self._load()
        from adswitch_autograd.primitives import custom

        return custom.stop_gradient(value)

    def checkpoint(
        self, fn: Callable[[list[Any]], list[Any]], leaves: Sequence[Any], active: Sequence[bool]
    ) -> list[Any]:
        """A primitive whose rules recompute ``fn`` (``primitives.checkpoint``)."""
        self._load()
        from adswitch_autograd.primitives import checkpoint

        return checkpoint.checkpoint(fn, leaves, active)

    def to_host(self, value: Any) -> Any:
        """A box's value as numpy for host code (``adswitch.host_rules``); ``None`` for a
        box being traced (the rule's primitive sees plain values: a box here is a
        nested derivative the conversion would drop)."""
        return None if type(value) in sys.modules["autograd.tracer"].Box.types else value

    def from_host(self, array: Any, like: Any) -> Any:
        """Host code's numpy result (plain numpy is autograd's array)."""
        import numpy

        return numpy.asarray(array)


@hookimpl
def adswitch_backend() -> Backend:
    """Return the autograd engine (autograd itself is imported on first use)."""
    return AutogradBackend()
