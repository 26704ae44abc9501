"""The built-in tape engine, ``backend="tape"``: reverse mode over numpy, any order.

Registered under the ``adswitch.backends`` entry point. It needs nothing but numpy, so
``pip install adswitch`` alone differentiates real code. This module only declares the
engine; the machinery is imported when a call needs it. All four primitives of the
contract are native: ``value_and_grad`` (``engine``), ``vjp``, ``vjp_apply`` and ``jvp``
(``operators``), batched (``Capabilities.batching``); ``jvp`` is a forward sweep of
tangents through the recorded tape (``Capabilities.forward``, see ``operators``). Calls
of an ``ad.prepare``-d operator are recorded once and replayed (``replay/``).

Example:
    >>> import numpy as np, adswitch as ad
    >>> ad.gradient(lambda x: ad.array_namespace(x).sum(x * x), np.array([1.0, 2.0]),
    ...             backend="tape")[0]
    array([2., 4.])
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any

import numpy as np

from adswitch.spec import (
    Backend,
    BackendBase,
    CallInfo,
    Capabilities,
    LossFn,
    OutputFn,
    Pullback,
    SeedFn,
    hookimpl,
)

__all__ = ["TapeBackend", "adswitch_backend"]


class TapeBackend(BackendBase):
    """The tape engine (see ``adswitch_tape`` for the design)."""

    name = "tape"
    install_hint = "pip install adswitch"
    capabilities = Capabilities(
        nested=True,
        mutation=True,
        fresh_buffer_writes=True,
        numpy_operands=True,
        devices=("cpu",),
        dtypes=("float32", "float64"),
        array_kinds=("numpy",),
        forward=True,
        batching=True,
        extensions=("linalg",),
    )
    array_modules: tuple[str, ...] = ("adswitch_tape",)

    def version(self) -> str:
        try:
            return metadata.version("adswitch")
        except metadata.PackageNotFoundError:
            return "0+unknown"

    def namespace(self, arrays: Sequence[Any]) -> Any:
        """The tape's namespace when any array is traced, else numpy's (a cheap type test:
        this runs on every ``ad.array_namespace`` call inside ``f``)."""
        tracer, namespace = _modules()
        for array in arrays:
            if type(array) is tracer:
                return namespace
        return np

    def value_and_grad(
        self, fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], list[Any | None]]:
        if info.prepared is not None and not info.depth:
            return _replay().value_and_grad(fn, leaves, active, info)  # type: ignore[no-any-return]
        run = _ENGINE
        if run is None:
            run = _load_engine()
        return run(fn, leaves, active, info)

    def vjp(
        self, fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], Pullback]:
        if info.prepared is not None and not info.depth:
            return _replay().vjp(fn, leaves, active, info)  # type: ignore[no-any-return]
        return _operators().vjp(fn, leaves, active, info)  # type: ignore[no-any-return]

    def vjp_apply(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        seed: SeedFn,
        info: CallInfo,
    ) -> tuple[list[Any], list[Any | None]]:
        if info.prepared is not None and not info.depth:
            return _replay().vjp_apply(fn, leaves, active, seed, info)  # type: ignore[no-any-return]
        return _operators().vjp_apply(fn, leaves, active, seed, info)  # type: ignore[no-any-return]

    def jvp(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        tangents: Sequence[Any],
        info: CallInfo,
    ) -> tuple[list[Any], list[Any]]:
        if info.prepared is not None and not info.depth:
            return _replay().jvp(fn, leaves, active, tangents, info)  # type: ignore[no-any-return]
        return _operators().jvp(fn, leaves, active, tangents, info)  # type: ignore[no-any-return]

    def is_traced(self, value: Any) -> bool:
        """Whether ``value`` carries derivatives of a running call: a tracer with history
        at some level (a fresh buffer or a value made of constants has none)."""
        from .array.tracer import Tracer
        from .core import sync

        while type(value) is Tracer:
            if value._base is not None:
                sync(value)
            if value._idx is not None:
                return True
            value = value._value
        return False

    def stop_gradient(self, value: Any) -> Any:
        """``ad.stop_gradient``'s hook: a tape array without history at any level (the
        tape's way for zero-derivative functions such as ``floor``). Reading the value
        makes a prepared call's recording refuse, so prepared calls trace every time."""
        from .array.tracer import raw
        from .xp.axes import like_inputs

        return like_inputs(np.array(raw(value), copy=True), True)

    def checkpoint(
        self, fn: Callable[[list[Any]], list[Any]], leaves: Sequence[Any], active: Sequence[bool]
    ) -> list[Any]:
        """``ad.checkpoint``'s hook: one tape entry that runs ``fn`` again in the backward
        pass (``checkpoint``)."""
        from .checkpoint import checkpoint

        return checkpoint(fn, leaves, active)

    def custom_vjp(
        self, fn: Any, fwd: Any, bwd: Any, leaves: Sequence[Any], active: Sequence[bool]
    ) -> list[Any]:
        """``ad.custom_vjp``'s hook: one tape entry whose backward calls ``bwd`` (see
        ``adswitch_tape.custom``)."""
        from .custom import custom_vjp

        return custom_vjp(fn, fwd, bwd, leaves, active)

    def custom_jvp(
        self, fn: Any, rule: Any, leaves: Sequence[Any], active: Sequence[bool]
    ) -> list[Any]:
        """``ad.custom_jvp``'s hook: one tape entry whose tangent is ``rule``'s, and whose
        backward transposes it (see ``adswitch_tape.custom``)."""
        from .custom import custom_jvp

        return custom_jvp(fn, rule, leaves, active)

    def to_host(self, value: Any) -> Any:
        """A tape value as numpy for host code (``adswitch.host_rules``); ``None`` for a
        value with history (a rule's hooks see raw values: history here is a nested
        derivative the conversion would drop)."""
        tracer, _ = _modules()
        return None if isinstance(value, tracer) else np.asarray(value)

    def from_host(self, array: Any, like: Any) -> Any:
        """Host code's numpy result (a plain array is a constant on the tape)."""
        return np.asarray(array)


@functools.cache
def _modules() -> tuple[type, Any]:
    """The tracer type and the namespace, imported on first use (not at plugin load)."""
    from . import namespace
    from .array.tracer import Tracer

    return Tracer, namespace


_ENGINE: Callable[..., tuple[list[Any], list[Any | None]]] | None = None


def _load_engine() -> Callable[..., tuple[list[Any], list[Any | None]]]:
    """The engine's ``value_and_grad``, imported on first use (then read from the global
    ``_ENGINE``: no call on the hot path)."""
    global _ENGINE
    from .engine import value_and_grad

    _ENGINE = value_and_grad
    return value_and_grad


@functools.cache
def _operators() -> Any:
    """The engine's ``vjp``, ``vjp_apply`` and ``jvp`` (module ``operators``), imported on
    first use."""
    from . import operators

    return operators


@functools.cache
def _replay() -> Any:
    """The engine's prepared calls (module ``replay.prepared``), imported on first use."""
    from .replay import prepared

    return prepared


@hookimpl
def adswitch_backend() -> Backend:
    """The tape engine."""
    return TapeBackend()
