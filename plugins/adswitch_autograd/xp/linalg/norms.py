"""``linalg`` rules for norms: ``vector_norm`` and ``matrix_norm``, every ``ord``.

Each is one primitive computing numpy's value, whose derivative is a *slope* ``S`` of
``x``'s shape -- ``d norm = sum(S * dx)`` over the reduced axes -- written in
differentiable operations (so second derivatives exist where the norm is smooth).
Non-smooth points follow the namespace's conventions:

* a norm at zero (and ``ord < 1`` vector norms at a zero element) has slope 0, as
  ``abs`` at 0 (its second derivative there is 0 too, but for the spectral norms below);
* ``ord=inf``/``-inf`` (vectors), ``1``/``-1``/``inf``/``-inf`` (matrices): the largest
  (smallest) entry, column or row sum -- tied ones share the slope equally, as ``max``;
  elements at 0 get slope 0 (``abs``);
* ``ord=2``/``-2`` (matrices): the largest (smallest) singular value; repeated ones
  share the slope equally (``U_k V_k^T / k``, independent of the basis), and a zero one
  has slope 0; ``'nuc'``: ``U V^T`` over the nonzero singular values. Their second
  derivatives go through the singular vectors, and are refused at repeated or zero
  singular values (:mod:`.factors`);
* ``ord=0`` (vectors, the count of nonzero elements): slope 0.
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defvjp, primitive

from ...tracing.boxes import raw_value
from .factors import singular_slope
from .support import close_pairs

__all__ = ["matrix_norm", "vector_norm"]

_MATRIX_AXES = (-2, -1)


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        return (axis % ndim,) if ndim else ()
    return tuple(a % ndim for a in axis)


def _kept(value: Any, axes: tuple[int, ...], shape: tuple[int, ...], keepdims: bool) -> Any:
    """``value`` (reduced over ``axes``) with the reduced axes kept as length 1."""
    if keepdims:
        return value
    return anp.reshape(value, tuple(1 if d in axes else n for d, n in enumerate(shape)))


def _share(hit: Any, axes: tuple[int, ...]) -> Any:
    """``hit / count(hit)`` over ``axes``: ties share equally (``max``'s convention)."""
    hit = np.asarray(hit, dtype=float)
    return hit / np.maximum(np.sum(hit, axis=axes, keepdims=True), 1.0)


def _vector_slope(x: Any, norm: Any, axes: tuple[int, ...], ord: Any) -> Any:
    """``S`` with ``d norm = sum(S * dx, axes)``; ``norm`` kept over ``axes``."""
    value, n = np.asarray(raw_value(x)), np.asarray(raw_value(norm))
    zero = n == 0
    sign = np.sign(value).astype(value.dtype)
    if ord == 0:
        return np.zeros_like(value)
    if ord in (np.inf, -np.inf):
        return sign * _share((np.abs(value) == n) & ~zero, axes).astype(value.dtype)
    if ord == 1:
        return sign
    safe = anp.where(zero, 1.0, norm)
    if ord == 2:
        return anp.where(zero, 0.0, x / safe)
    # (sum |x|^p)^(1/p): sign(x) |x|^(p-1) / norm^(p-1), 0 at zero elements and norms
    absolute = anp.abs(anp.where(value == 0, 1.0, x))
    slope = sign * absolute ** (ord - 1) / safe ** (ord - 1)
    return anp.where(zero | (value == 0), 0.0, slope)


@primitive  # type: ignore[untyped-decorator]
def vector_norm(x: Any, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """numpy's ``vector_norm`` (differentiable: see the module doc)."""
    return np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)


def _vector_vjp(ans: Any, x: Any, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    shape = tuple(anp.shape(x))
    axes = _axes(axis, len(shape))

    def vjp(g: Any) -> Any:
        norm = _kept(ans, axes, shape, keepdims)
        return _kept(g, axes, shape, keepdims) * _vector_slope(x, norm, axes, ord)

    return vjp


def _vector_jvp(
    g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False, ord: Any = 2
) -> Any:
    shape = tuple(anp.shape(x))
    axes = _axes(axis, len(shape))
    slope = _vector_slope(x, _kept(ans, axes, shape, keepdims), axes, ord)
    return anp.sum(slope * g, axis=axes, keepdims=keepdims)


defvjp(vector_norm, _vector_vjp)
defjvp(vector_norm, _vector_jvp)


def _spectral_weights(s: np.ndarray, ord: Any) -> np.ndarray:
    """The weights of the singular values ``s`` in ``ord``'s norm (shared among ties)."""
    if ord == "nuc":
        return np.ones_like(s)
    extreme = s[..., :1] if ord == 2 else s[..., -1:]
    close = close_pairs(s)
    hit = (s == extreme) | np.any(close & (s == extreme)[..., None, :], axis=-1)
    weights: np.ndarray = _share(hit, (-1,)).astype(s.dtype)
    return weights


def _matrix_slope(x: Any, norm: Any, ord: Any) -> Any:
    """``S`` with ``d norm = sum(S * dx)`` over the last two axes; ``norm`` kept."""
    value, n = np.asarray(raw_value(x)), np.asarray(raw_value(norm))
    zero = n == 0
    if ord in ("fro", None):
        return anp.where(zero, 0.0, x / anp.where(zero, 1.0, norm))
    if ord in (2, -2, "nuc"):
        s = np.linalg.svdvals(value)
        return singular_slope(x, _spectral_weights(s, ord), s, name="matrix_norm")
    sign = np.sign(value).astype(value.dtype)
    # 1 and -1: column sums (over axis -2); inf and -inf: row sums (over axis -1)
    along = -2 if ord in (1, -1) else -1
    sums = np.sum(np.abs(value), axis=along, keepdims=True)
    picked = _share((sums == n) & ~zero, (-2, -1))
    return sign * picked.astype(value.dtype)


@primitive  # type: ignore[untyped-decorator]
def matrix_norm(x: Any, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """numpy's ``matrix_norm`` (differentiable: see the module doc)."""
    return np.linalg.matrix_norm(x, keepdims=keepdims, ord=ord)


def _lift(value: Any, keepdims: bool) -> Any:
    """A stack of norms with the matrix axes kept (as length 1)."""
    return value if keepdims else anp.reshape(value, (*anp.shape(value), 1, 1))


def _matrix_vjp(ans: Any, x: Any, keepdims: bool = False, ord: Any = "fro") -> Any:
    return lambda g: _lift(g, keepdims) * _matrix_slope(x, _lift(ans, keepdims), ord)


def _matrix_jvp(g: Any, ans: Any, x: Any, keepdims: bool = False, ord: Any = "fro") -> Any:
    ans_kept = _lift(ans, keepdims)
    return anp.sum(_matrix_slope(x, ans_kept, ord) * g, axis=_MATRIX_AXES, keepdims=keepdims)


defvjp(matrix_norm, _matrix_vjp)
defjvp(matrix_norm, _matrix_jvp)
