"""The Array API's ``fft`` extension over autograd (``xp.fft``).

On plain arrays numpy's ``numpy.fft``. On traced arrays: autograd's own rules for
``fft``, ``ifft``, ``fftn``, ``ifftn``, ``fftshift`` and ``ifftshift``; ``rfft`` and
``rfftn`` are the non-negative frequencies of ``fft``/``fftn`` (their values equal
numpy's to rounding). autograd's rules for the inverse real transforms (and for
``rfft`` itself) give wrong gradients for numpy's default normalisation, and ``hfft``/
``ihfft`` have none: ``irfft``, ``irfftn``, ``hfft`` and ``ihfft`` refuse traced arrays
(``UnsupportedError``). ``fftfreq`` and ``rfftfreq`` are constants.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import autograd.numpy as anp
import autograd.numpy.fft as afft
import numpy as np

from .indexing import index_along
from .support import check_device, constant, is_traced, unsupported

__all__ = [
    "fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift", "ihfft",
    "irfft", "irfftn", "rfft", "rfftfreq", "rfftn",
]  # fmt: skip


def _one_axis(name: str, traced: Callable[..., Any]) -> Callable[..., Any]:
    plain = getattr(np.fft, name)

    def transform(
        x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward"
    ) -> Any:
        return (traced if is_traced(x) else plain)(x, n=n, axis=axis, norm=norm)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"numpy's ``fft.{name}`` along ``axis`` (differentiable when traced)."
    return transform


def _many_axes(name: str, traced: Callable[..., Any]) -> Callable[..., Any]:
    plain = getattr(np.fft, name)

    def transform(
        x: Any,
        /,
        *,
        s: Sequence[int] | None = None,
        axes: Sequence[int] | None = None,
        norm: str = "backward",
    ) -> Any:
        return (traced if is_traced(x) else plain)(x, s=s, axes=axes, norm=norm)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"numpy's ``fft.{name}`` over ``axes`` (differentiable when traced)."
    return transform


def _traced_rfft(x: Any, *, n: int | None, axis: int, norm: str) -> Any:
    full = afft.fft(x, n=n, axis=axis, norm=norm)
    return full[index_along(axis, anp.ndim(full), slice(0, anp.shape(full)[axis] // 2 + 1))]


def _traced_rfftn(x: Any, *, s: Any, axes: Any, norm: str) -> Any:
    full = afft.fftn(x, s=s, axes=axes, norm=norm)
    last = -1 if axes is None else axes[-1]
    return full[index_along(last, anp.ndim(full), slice(0, anp.shape(full)[last] // 2 + 1))]


fft = _one_axis("fft", afft.fft)
ifft = _one_axis("ifft", afft.ifft)
rfft = _one_axis("rfft", _traced_rfft)
irfft = _one_axis("irfft", unsupported("fft.irfft", np.fft.irfft))
hfft = _one_axis("hfft", unsupported("fft.hfft", np.fft.hfft))
ihfft = _one_axis("ihfft", unsupported("fft.ihfft", np.fft.ihfft))
fftn = _many_axes("fftn", afft.fftn)
ifftn = _many_axes("ifftn", afft.ifftn)
rfftn = _many_axes("rfftn", _traced_rfftn)
irfftn = _many_axes("irfftn", unsupported("fft.irfftn", np.fft.irfftn))


def fftshift(x: Any, /, *, axes: int | Sequence[int] | None = None) -> Any:
    """The zero frequency moved to the middle (differentiable when traced)."""
    return afft.fftshift(x, axes=axes) if is_traced(x) else np.fft.fftshift(x, axes=axes)


def ifftshift(x: Any, /, *, axes: int | Sequence[int] | None = None) -> Any:
    """The inverse of :func:`fftshift` (differentiable when traced)."""
    return afft.ifftshift(x, axes=axes) if is_traced(x) else np.fft.ifftshift(x, axes=axes)


def fftfreq(n: int, /, *, d: float = 1.0, device: Any = None, dtype: Any = None) -> Any:
    """The sample frequencies of an ``n``-point transform (a constant)."""
    check_device(device)
    out = np.fft.fftfreq(n, d=d)
    return constant(out if dtype is None else out.astype(dtype), new=True)


def rfftfreq(n: int, /, *, d: float = 1.0, device: Any = None, dtype: Any = None) -> Any:
    """The sample frequencies of an ``n``-point real transform (a constant)."""
    check_device(device)
    out = np.fft.rfftfreq(n, d=d)
    return constant(out if dtype is None else out.astype(dtype), new=True)
