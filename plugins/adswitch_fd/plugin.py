"""The ``fd`` engine's plugin module: declares the engine; the numerics live in
:mod:`adswitch_fd.engine` (imported late, like every engine, though it needs no more
than numpy)."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any

from adswitch.spec import Backend, BackendBase, CallInfo, Capabilities, OutputFn, hookimpl

ACCURACY = 1e-6
"""The relative accuracy the engine promises for float64 (``Capabilities.accuracy``):
order-4 central differences with one Richardson step reach ~1e-10 on smooth functions
of moderate scale; 1e-6 leaves room for badly scaled or strongly curved ones."""


class FiniteDifferenceBackend(BackendBase):
    name = "fd"
    install_hint = 'pip install "adswitch"'
    # mutation: every probe runs on copies and the last call on the caller's arrays, so a
    # mutating f differentiates (and mutates) like a plain call. No nesting: the probes
    # are plain arrays, an inner gradient could not be differentiated by the outer one.
    capabilities = Capabilities(
        mutation=True,
        fresh_buffer_writes=True,
        numpy_operands=True,
        dtypes=("float32", "float64"),
        array_kinds=("numpy",),
        extensions=("linalg", "fft"),
        accuracy=ACCURACY,
        kinks=False,  # kinks, ties and jumps are detected and refused
        # A rule's derivative is not f's: differences of f would silently ignore it, so
        # no rule hook is implemented and ad.custom_vjp/custom_jvp/stop_gradient refuse.
        custom_vjp=False,
        rules=False,
    )

    def version(self) -> str:
        try:
            return importlib.metadata.version("adswitch")
        except importlib.metadata.PackageNotFoundError:
            return "0"

    def jvp(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        tangents: Sequence[Any],
        info: CallInfo,
    ) -> tuple[list[Any], list[Any]]:
        from adswitch_fd.engine import jvp

        return jvp(fn, leaves, active, tangents, info)


@hookimpl
def adswitch_backend() -> Backend:
    return FiniteDifferenceBackend()
