"""The pluggy plugin adswitch loads through the entry point ``dual = "adswitch_dual.plugin"``.

Kept free of engine imports at the top: adswitch imports every plugin module when it
lists its engines, so a plugin module must import fast and must not fail when the
engine's dependencies are missing. The engine is imported inside the methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from typing import Any

from adswitch.errors import BackendUnavailableError
from adswitch.spec import Backend, BackendBase, CallInfo, Capabilities, OutputFn, hookimpl

__all__ = ["DualBackend", "adswitch_backend"]


class DualBackend(BackendBase):
    """Forward-mode dual numbers over numpy, implementing only the ``jvp`` primitive.

    adswitch derives every other primitive from it (``adswitch.derive``): a gradient or a
    pullback is one batched ``jvp`` over the inputs' basis (cost ~ inputs x forward pass),
    a Jacobian the same batch. ``ad.hessian``/``ad.hvp`` need nesting, which this engine
    declares it lacks, so they raise ``UnsupportedError``.

    Example:
        >>> import numpy as np
        >>> from adswitch.spec import CallInfo, implements
        >>> def fn(leaves):
        ...     y = leaves[0] ** 2
        ...     return [y], [y]
        >>> DualBackend().jvp(fn, [np.array([3.0])], [True], [np.array([1.0])], CallInfo())[1]
        [array([6.])]
        >>> implements(DualBackend(), "jvp"), implements(DualBackend(), "value_and_grad")
        (True, False)
    """

    name = "dual"
    install_hint = 'pip install "adswitch-dual"  (or: pip install ./examples/adswitch-dual)'
    # Honest: forward mode is exact through in-place writes (every array carries the
    # derivative of what it holds now), pushes a whole batch of tangents in one pass,
    # but does not nest.
    capabilities = Capabilities(
        nested=False,
        mutation=True,
        fresh_buffer_writes=True,
        numpy_operands=True,
        devices=("cpu",),
        dtypes=("float32", "float64"),
        array_kinds=("numpy",),
        compiles=False,
        forward=True,
        batching=True,
        custom_vjp=False,  # forward only: a reverse rule (bwd) has nothing to run in
    )
    array_modules: tuple[str, ...] = ("adswitch_dual",)

    def version(self) -> str:
        try:
            return metadata.version("adswitch-dual")
        except metadata.PackageNotFoundError as exc:
            raise BackendUnavailableError(
                f"the dual engine's distribution is not installed; run {self.install_hint}"
            ) from exc

    def namespace(self, arrays: Sequence[Any]) -> Any:
        # adswitch asks the engine (not the array type) for the namespace inside f, so
        # DualArray needs no reference back up to the namespace module built on it.
        from adswitch_dual import namespace

        return namespace

    def jvp(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        tangents: Sequence[Any],
        info: CallInfo,
    ) -> tuple[list[Any], list[Any]]:
        from adswitch_dual.engine import jvp

        return jvp(fn, leaves, active, tangents, info)

    # User rules (``adswitch.custom``): a jvp rule per tangent direction; a vjp rule has
    # nothing to run in here and is refused; stop_gradient drops the tangents.
    def custom_jvp(self, fn: Any, rule: Any, leaves: Sequence[Any], active: Sequence[bool]) -> Any:
        from adswitch_dual.custom import custom_jvp

        return custom_jvp(fn, rule, leaves, active)

    def custom_vjp(
        self, fn: Any, fwd: Any, bwd: Any, leaves: Sequence[Any], active: Sequence[bool]
    ) -> Any:
        from adswitch_dual.custom import custom_vjp

        return custom_vjp(fn, fwd, bwd, leaves, active)

    def stop_gradient(self, value: Any) -> Any:
        from adswitch_dual.custom import stop_gradient

        return stop_gradient(value)


@hookimpl
def adswitch_backend() -> Backend:
    """Return the dual engine (adswitch calls this once per process)."""
    return DualBackend()
