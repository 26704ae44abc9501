"""The degenerate-spectrum predicates every engine's ``linalg`` rules share, written once
against the Array API.

Where eigenvalues or singular values repeat, or a singular value is zero, eigen- and
singular vectors are not unique and the textbook rules divide by zero; every engine's
rules first ask the same questions of the computed values: which pairs are equal to
rounding (:func:`close_pairs`), which values are zero to rounding (:func:`negligible`),
whether a cotangent or tangent is nonzero beyond a generous rounding
(:func:`beyond_rounding`, :func:`any_beyond`). One tolerance answers the first two:
``16 max(n, 1) eps`` times the largest magnitude (:func:`tolerance`), as LAPACK's
backward errors are about ``n eps`` times the norm.

Each function takes the values' namespace ``xp`` (``None``: the values' own
``__array_namespace__``, which numpy and jax arrays have; torch callers pass
``array_api_compat.torch``). None reads a value into Python, so jax can trace them under
``jit`` and ``vmap``; none imports an engine. Plugins import them from
:mod:`adswitch.spec`.

Example:
    >>> import numpy as np
    >>> close_pairs(np.array([1.0, 1.0 + 1e-15, 2.0]))[0].tolist()
    [False, True, False]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "GAP_ULPS", "any_beyond", "beyond_rounding", "close_pairs", "equal_pairs", "gap_factor",
    "negligible", "negligible_det", "spread_extreme", "tolerance", "well_conditioned",
]  # fmt: skip

# How close two computed eigenvalues (singular values) must be to count as equal, in units
# of n * eps * the largest magnitude: LAPACK's backward errors are about n * eps times the
# norm, so closer ones are indistinguishable from a repeated value.
GAP_ULPS = 16


def _xp(x: Any, xp: Any) -> Any:
    if xp is not None:
        return xp
    if hasattr(x, "__array_namespace__"):
        return x.__array_namespace__()
    return np


def _device(x: Any) -> dict[str, Any]:
    # jax's tracers have no ``device`` (their arrays are placed by jax itself); torch's
    # tensors need their own, or a CUDA comparison meets a CPU identity.
    try:
        return {"device": x.device}
    except AttributeError:
        return {}


def gap_factor(n: int, eps: float) -> float:
    """``16 max(n, 1) eps``: the tolerance of :func:`tolerance` per unit of the largest
    magnitude, for a caller that compares Python floats.

    Args:
        n: how many values (eigenvalues, singular values, diagonal entries) a matrix has.
        eps: the machine epsilon of their dtype.

    Returns:
        The factor, a Python float.

    Example:
        >>> gap_factor(2, 1.0)
        32.0
    """
    return float(GAP_ULPS * max(n, 1) * eps)


def tolerance(values: Any, *, xp: Any = None) -> Any:
    """``(..., 1)``: the magnitude below which differences of ``values`` (``(..., n)``)
    are roundoff, per vector: ``16 max(n, 1) eps`` times its largest magnitude.

    Args:
        values: eigen- or singular values (or any magnitudes), ``(..., n)``, real floating.
        xp: their namespace (``None``: theirs).

    Returns:
        The tolerances, with the last axis kept (of length 1); 0 where ``n`` is 0.

    Example:
        >>> import numpy as np
        >>> bool(tolerance(np.array([1.0, -2.0]))[0] == 64 * np.finfo(float).eps)
        True
    """
    xp = _xp(values, xp)
    n = values.shape[-1]
    size = xp.abs(values)
    # (an empty vector's sum is 0, where max has no value)
    scale = xp.max(size, axis=-1, keepdims=True) if n else xp.sum(size, axis=-1, keepdims=True)
    return scale * gap_factor(n, float(xp.finfo(values.dtype).eps))


def equal_pairs(values: Any, *, xp: Any = None) -> Any:
    """``(..., n, n)`` booleans: which pairs ``(i, j)`` of ``values`` are equal to within
    :func:`tolerance`, the diagonal included.

    Args:
        values: ``(..., n)`` eigen- or singular values.
        xp: their namespace (``None``: theirs).

    Returns:
        ``|v_j - v_i| <= tolerance`` at ``[..., i, j]``.

    Example:
        >>> import numpy as np
        >>> equal_pairs(np.array([1.0, 2.0])).tolist()
        [[True, False], [False, True]]
    """
    xp = _xp(values, xp)
    gaps = xp.abs(values[..., None, :] - values[..., :, None])
    return gaps <= tolerance(values, xp=xp)[..., None]


def close_pairs(values: Any, *, xp: Any = None) -> Any:
    """``(..., n, n)`` booleans: which pairs ``i != j`` of ``values`` are equal to within
    :func:`tolerance` -- a repeated eigenvalue or singular value, where the vectors are
    not unique.

    Args:
        values: ``(..., n)`` eigen- or singular values.
        xp: their namespace (``None``: theirs).

    Returns:
        :func:`equal_pairs` off the diagonal.

    Example:
        >>> import numpy as np
        >>> close_pairs(np.array([1.0, 1.0, 2.0]))[0].tolist()
        [False, True, False]
    """
    xp = _xp(values, xp)
    n = values.shape[-1]
    eye = xp.eye(n, dtype=xp.bool, **_device(values))
    return equal_pairs(values, xp=xp) & ~eye


def negligible(values: Any, *, xp: Any = None) -> Any:
    """Which of the nonnegative ``values`` (``(..., n)``: singular values, the magnitudes
    of a triangular factor's diagonal) are zero to within :func:`tolerance`.

    Args:
        values: ``(..., n)`` nonnegative values.
        xp: their namespace (``None``: theirs).

    Returns:
        ``values <= tolerance(values)``, shaped like ``values``.

    Example:
        >>> import numpy as np
        >>> negligible(np.array([2.0, 1e-17])).tolist()
        [False, True]
    """
    xp = _xp(values, xp)
    return values <= tolerance(values, xp=xp)


def negligible_det(det: Any, x: Any, *, xp: Any = None) -> Any:
    """Per matrix: whether the determinant ``det`` of ``x`` is zero to within roundoff:
    ``|det| <= 16 n eps`` times Hadamard's bound (the product of the rows' norms).

    Whether an LU meets an exact zero pivot at a singular matrix depends on the LAPACK
    kernel (the same matrix gives ``det == 0`` on one CPU and ``-6.7e-16`` on another), so
    a rule deciding "singular" must not ask for an exact zero.

    Args:
        det: ``(...)`` determinants (or ``exp(log|det|)``).
        x: ``(..., n, n)`` the matrices.
        xp: their namespace (``None``: theirs).

    Returns:
        ``(...)`` booleans.

    Example:
        >>> import numpy as np
        >>> x = np.array([[[1.0, 2.0], [2.0, 4.0 + 1e-16]], [[1.0, 0.0], [0.0, 1e-3]]])
        >>> negligible_det(np.linalg.det(x), x).tolist()
        [True, False]
    """
    xp = _xp(x, xp)
    n = x.shape[-1]
    bound = xp.prod(xp.sqrt(xp.sum(x * x, axis=-1)), axis=-1)
    return xp.abs(det) <= bound * gap_factor(n, float(xp.finfo(x.dtype).eps))


def beyond_rounding(x: Any, scale: Any, *, xp: Any = None) -> Any:
    """Which entries of ``x`` are not zero to within ``sqrt(eps)`` times ``scale``: a
    generous rounding, as what is tested is whether a derivative exists, not a value.

    Args:
        x: a cotangent, a tangent, or differences of them.
        scale: the magnitude to compare with, broadcast against ``x``.
        xp: ``x``'s namespace (``None``: its own).

    Returns:
        ``|x| > sqrt(eps) scale``, elementwise.

    Example:
        >>> import numpy as np
        >>> beyond_rounding(np.array([1e-12, 1e-3]), 1.0).tolist()
        [False, True]
    """
    xp = _xp(x, xp)
    return xp.abs(x) > float(xp.finfo(x.dtype).eps) ** 0.5 * scale


def any_beyond(values: Any, mask: Any, scale: Any, *, xp: Any = None) -> bool:
    """Whether the entries of ``values`` picked by ``mask`` are not all zero to within
    ``sqrt(eps)`` times the largest magnitude in ``scale`` (concrete values only: it
    returns a Python bool, for the rules that check a cotangent before using it).

    Args:
        values: a cotangent or tangent, or differences of them.
        mask: booleans broadcast against ``values`` (e.g. :func:`close_pairs`).
        scale: the values whose largest magnitude sets the rounding.
        xp: their namespace (``None``: ``values``').

    Returns:
        ``True`` where some picked entry exceeds the bound.

    Example:
        >>> import numpy as np
        >>> any_beyond(np.array([0.0, 1e-12]), np.array([True, True]), np.array([1.0]))
        False
    """
    xp = _xp(values, xp)
    # (integer cotangents are promoted, as numpy's result_type with float32 promotes them)
    dtype = xp.result_type(values.dtype, xp.float32)
    size = xp.abs(scale)
    bound = float(xp.max(size)) if math.prod(size.shape) else 0.0
    picked = xp.abs(values) > float(xp.finfo(dtype).eps) ** 0.5 * bound
    return bool(xp.any(picked & mask))


def well_conditioned(size: Any, *, xp: Any = None) -> Any:
    """Per vector: whether the smallest of the magnitudes ``size`` (``(..., n)``: singular
    values, LU's pivots) exceeds ``sqrt(eps)`` times the largest -- where the inverse is
    accurate enough for a rule to use it rather than a rank-revealing factorization.

    Args:
        size: ``(..., n)`` nonnegative magnitudes, ``n >= 1``.
        xp: their namespace (``None``: theirs).

    Returns:
        ``(...)`` booleans.

    Example:
        >>> import numpy as np
        >>> well_conditioned(np.array([[2.0, 1.0], [1.0, 1e-12]])).tolist()
        [True, False]
    """
    xp = _xp(size, xp)
    bound = float(xp.finfo(size.dtype).eps) ** 0.5 * xp.max(size, axis=-1)
    return xp.min(size, axis=-1) > bound


def spread_extreme(values: Any, fixed: Any, largest: bool, *, xp: Any = None) -> Any:
    """``max`` (``min``) of the sorted, nonnegative singular values ``values``, whose slope
    is spread equally over those equal to it to within :func:`tolerance` -- a
    basis-independent ``U_k V_k^T / k`` where ``max`` puts it on the one that rounding made
    largest -- and is 0 where the extreme is 0 (a kink, as ``abs`` at 0).

    Args:
        values: ``(..., k)`` singular values sorted in descending order, differentiable.
        fixed: the same values cut from differentiation (``detach``, ``stop_gradient``):
            the Array API has no such function, so the engine passes them.
        largest: ``max`` (the spectral norm, ord 2) or ``min`` (ord -2).
        xp: their namespace (``None``: theirs).

    Returns:
        ``(...)``: the value is ``max``'s (``min``'s) exactly, its slope the spread one.

    Example:
        >>> import numpy as np
        >>> s = np.array([2.0, 2.0, 1.0])
        >>> float(spread_extreme(s, s, True))
        2.0
    """
    xp = _xp(fixed, xp)
    end = fixed[..., :1] if largest else fixed[..., -1:]
    tol = tolerance(fixed, xp=xp)
    ties = xp.astype((xp.abs(fixed - end) <= tol) & (end > tol), fixed.dtype)
    weights = ties / xp.clip(xp.sum(ties, axis=-1, keepdims=True), min=1)
    slope = xp.sum(values * weights, axis=-1) - xp.sum(fixed * weights, axis=-1)
    return end[..., 0] + slope
