"""The Array API ``fft`` extension for the tape (``xp.fft``).

Transforms have complex values, and the tape differentiates real arrays only: on
constants they are numpy's (as tape arrays when given tape arrays), on a traced array
they raise :class:`~adswitch.errors.UnsupportedError` with the fix (see
``axes.constants_only``). ``fftshift``/``ifftshift`` are rolls, differentiated;
``fftfreq``/``rfftfreq`` make fresh buffers. Part of the namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from ..array.conversions import constant
from ..array.tracer import raw
from .axes import axes_of, ndim_of
from .axes import constants_only as _constants_only
from .indexing import roll

__all__ = [
    "fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift", "ihfft",
    "irfft", "irfftn", "rfft", "rfftfreq", "rfftn",
]  # fmt: skip

Norm = Literal["backward", "ortho", "forward"]


def _one_axis(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def transform(
        x: Any, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward"
    ) -> Any:
        return _constants_only(f"fft.{name}", fn, x, n=n, axis=axis, norm=norm)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``numpy.fft.{name}`` of an array that carries no gradient."
    return transform


def _many_axes(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def transform(
        x: Any,
        /,
        *,
        s: Sequence[int] | None = None,
        axes: Sequence[int] | None = None,
        norm: Norm = "backward",
    ) -> Any:
        return _constants_only(f"fft.{name}", fn, x, s=s, axes=axes, norm=norm)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``numpy.fft.{name}`` of an array that carries no gradient."
    return transform


fft, ifft = _one_axis(np.fft.fft, "fft"), _one_axis(np.fft.ifft, "ifft")
rfft, irfft = _one_axis(np.fft.rfft, "rfft"), _one_axis(np.fft.irfft, "irfft")
hfft, ihfft = _one_axis(np.fft.hfft, "hfft"), _one_axis(np.fft.ihfft, "ihfft")
fftn, ifftn = _many_axes(np.fft.fftn, "fftn"), _many_axes(np.fft.ifftn, "ifftn")
rfftn, irfftn = _many_axes(np.fft.rfftn, "rfftn"), _many_axes(np.fft.irfftn, "irfftn")


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an ``n``-point transform (a fresh buffer)."""
    out = np.fft.fftfreq(n, d=d)
    return constant(out if dtype is None else out.astype(dtype))


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an ``n``-point real transform (a fresh buffer)."""
    out = np.fft.rfftfreq(n, d=d)
    return constant(out if dtype is None else out.astype(dtype))


def _shift(x: Any, axes: Any, sign: int) -> Any:
    picked = axes_of(axes, ndim_of(x)) or ()
    if axes is None:
        picked = tuple(range(ndim_of(x)))
    shape = np.shape(raw(x))
    shifts = tuple(sign * (shape[a] // 2) for a in picked)
    return roll(x, shifts, axis=picked) if picked else x


def fftshift(x: Any, /, *, axes: Any = None) -> Any:
    """Move the zero frequency to the middle (a roll: differentiated)."""
    return _shift(x, axes, 1)


def ifftshift(x: Any, /, *, axes: Any = None) -> Any:
    """Undo :func:`fftshift` (a roll: differentiated)."""
    return _shift(x, axes, -1)
