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
from adswitch.spec import Backend, BackendBase, CallInfo, Capabilities, LossFn, hookimpl

__all__ = ["DualBackend", "adswitch_backend"]


class DualBackend(BackendBase):
    """Forward-mode dual numbers over numpy: one pass per gradient, cost ~ inputs x forward.

    Example:
        >>> import numpy as np
        >>> from adswitch.spec import CallInfo
        >>> from adswitch_dual import namespace as xp
        >>> def fn(leaves):
        ...     loss = xp.sum(leaves[0] ** 2)
        ...     return loss, [loss]
        >>> DualBackend().value_and_grad(fn, [np.array([3.0])], [True], CallInfo())[1][0]
        array([6.])
    """

    name = "dual"
    install_hint = 'pip install "adswitch-dual"  (or: pip install ./examples/adswitch-dual)'
    # Honest: forward mode is exact through in-place writes (every array carries the
    # derivative of what it holds now), but does not nest.
    capabilities = Capabilities(
        nested=False,
        mutation=True,
        fresh_buffer_writes=True,
        numpy_operands=True,
        devices=("cpu",),
        dtypes=("float32", "float64"),
        array_kinds=("numpy",),
        compiles=False,
    )
    array_modules: tuple[str, ...] = ("adswitch_dual",)

    def version(self) -> str:
        try:
            return metadata.version("adswitch-dual")
        except metadata.PackageNotFoundError as exc:
            raise BackendUnavailableError(
                f"the dual engine's distribution is not installed; run {self.install_hint}"
            ) from exc

    def value_and_grad(
        self, fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], list[Any | None]]:
        from adswitch_dual.engine import value_and_grad

        return value_and_grad(fn, leaves, active, info)


@hookimpl
def adswitch_backend() -> Backend:
    """Return the dual engine (adswitch calls this once per process)."""
    return DualBackend()
