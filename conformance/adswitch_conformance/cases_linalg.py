"""The ``linalg`` extension, first part: products, norms, determinants, inverses, solvers
and powers, through ``xp.linalg`` (``xp = ad.array_namespace(x)``). References: finite
differences (away from kinks and singular matrices, and at a singular matrix for
``det``, a polynomial), or closed forms. The factorizations are in
``cases_linalg_factorizations``."""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad
from adswitch.errors import UnsupportedError

from .case import Case, arr

F = "linalg"
NESTED = ("nested",)  # second derivatives differentiate the engine's own gradient
# At the degenerate points an engine may also refuse: the promise is the right number
# or a clear error, never a wrong one (NaN, or a gap's roundoff divided by itself).
REFUSED = (UnsupportedError,)


def regular(seed: int, *shape: int) -> Any:
    """Matrices well away from singular: 1.5 times the identity plus entries in +-0.4."""
    return np.eye(shape[-1]) * 1.5 + arr(seed, *shape, lo=-0.4, hi=0.4)


def spread(seed: int, m: int, n: int) -> Any:
    """An ``m x n`` matrix with the distinct singular values 3.5, 2.5, 1.5, ..."""
    k = min(m, n)
    u = np.linalg.qr(arr(seed, m, k))[0]
    v = np.linalg.qr(arr(seed + 1, n, k))[0]
    return (u * (np.arange(k, 0.0, -1.0) + 0.5)) @ v.T


def _products(a: Any, b: Any, v: Any) -> Any:
    xp = ad.array_namespace(a, b, v)
    la = xp.linalg
    ab = la.matmul(a, b)
    return (
        xp.sum(ab**2)
        + xp.sum(la.matrix_transpose(a) * xp.sin(la.matmul(b, xp.ones((2, 3), dtype=a.dtype))))
        + xp.sum(la.vecdot(a, a * v) ** 2)
        + xp.sum(la.tensordot(a, b, axes=1) * 0.5)
        + xp.sum(xp.tanh(la.outer(v, v)))
        + xp.sum(la.matmul(a, v))
    )


def _cross_trace_diagonal(x: Any) -> Any:
    xp = ad.array_namespace(x)
    la = xp.linalg
    c = la.cross(x[0], x[1])
    return (
        xp.sum(c**2)
        + la.trace(x) * la.trace(x, offset=1)
        + xp.sum(la.diagonal(x, offset=-1) ** 3)
        + xp.sum(xp.exp(la.diagonal(x)))
    )


def _vector_norms(x: Any) -> Any:
    xp = ad.array_namespace(x)
    la = xp.linalg
    return (
        la.vector_norm(x)
        + xp.sum(la.vector_norm(x, axis=1, ord=1) ** 2)
        + xp.sum(la.vector_norm(x, axis=0, ord=xp.inf))
        + xp.sum(la.vector_norm(x, axis=1, ord=3, keepdims=True) * x)
    )


def _matrix_norms(x: Any) -> Any:
    xp = ad.array_namespace(x)
    la = xp.linalg
    return (
        la.matrix_norm(x) ** 2
        + la.matrix_norm(x, ord=1)
        + la.matrix_norm(x, ord=-1)
        + la.matrix_norm(x, ord=xp.inf) * la.matrix_norm(x, ord=-xp.inf)
    )


def _spectral_norms(x: Any) -> Any:
    xp = ad.array_namespace(x)
    la = xp.linalg
    return la.matrix_norm(x, ord=2) ** 2 + la.matrix_norm(x, ord=-2) + la.matrix_norm(x, ord="nuc")


def _det(a: Any, stack: Any) -> Any:
    xp = ad.array_namespace(a, stack)
    la = xp.linalg
    return la.det(a) + xp.sum(la.det(stack) ** 2)


def _det_only(a: Any) -> Any:
    return ad.array_namespace(a).linalg.det(a)


def _rank_two() -> Any:
    """A 3 x 3 matrix of rank 2: its second row twice the first, so that elimination meets
    an exact zero pivot."""
    return np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])


def _slogdet(a: Any, stack: Any) -> Any:
    xp = ad.array_namespace(a, stack)
    la = xp.linalg
    sign, logabs = la.slogdet(a)
    signs, logs = la.slogdet(stack)
    return sign * logabs**2 + xp.sum(signs * logs)


def _inv(a: Any, stack: Any) -> Any:
    xp = ad.array_namespace(a, stack)
    la = xp.linalg
    c = xp.asarray(arr(90, 3, 3))
    return xp.sum(la.inv(a) * c) + xp.sum(la.inv(stack) ** 2)


def _solve(a: Any, b: Any, v: Any) -> Any:
    xp = ad.array_namespace(a, b, v)
    la = xp.linalg
    return xp.sum(la.solve(a, b) ** 2) + xp.sum(xp.sin(la.solve(a, v)))


def _solve_stack(a: Any, b: Any) -> Any:
    xp = ad.array_namespace(a, b)
    return xp.sum(xp.linalg.solve(a, b) * xp.asarray(arr(91, 2, 3, 2)))


def _pinv(a: Any) -> Any:
    xp = ad.array_namespace(a)
    return xp.sum(xp.linalg.pinv(a) * xp.asarray(arr(92, 3, 4)))


def _matrix_power(a: Any) -> Any:
    xp = ad.array_namespace(a)
    la = xp.linalg
    c = xp.asarray(arr(93, 3, 3))
    return (
        xp.sum(la.matrix_power(a, 3) * c)
        + xp.sum(la.matrix_power(a, -2) * c)
        + xp.sum(la.matrix_power(a, 0) * a)
    )


def _logdet_quadratic(a: Any, v: Any) -> Any:
    xp = ad.array_namespace(a, v)
    la = xp.linalg
    return la.slogdet(a)[1] + xp.sum(v * la.solve(a, v))


def _det_hessian(a: Any) -> tuple[Any, ...]:
    """The Hessian of ``det`` exactly: ``det`` is affine in each entry, so
    ``det(a + s E_ij + t E_kl)`` is ``c0 + c1 s + c2 t + c3 s t`` and unit differences give
    ``c3`` without truncation error (0 for the same entry twice)."""
    n = a.shape[0]
    hess = np.zeros((n, n, n, n))
    for i, j, k, l in np.ndindex(n, n, n, n):
        if (i, j) == (k, l):
            continue
        total = 0.0
        for s, t in ((1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)):
            moved = a.copy()
            moved[i, j] += s
            moved[k, l] += t
            total += s * t * np.linalg.det(moved)
        hess[i, j, k, l] = total / 4.0
    return ((hess,),)


def _solve_inv32(a: Any, b: Any) -> Any:
    xp = ad.array_namespace(a, b)
    la = xp.linalg
    return xp.sum(la.solve(a, b) ** 2) + xp.sum(la.inv(a)) + la.det(a)


CASES = [
    Case(
        "linalg.products",
        F,
        "matmul, matrix_transpose, vecdot, tensordot, outer of matrices and a vector "
        "(matrix-vector products, contractions summed back over the right axes)",
        _products,
        lambda: (arr(80, 3, 4), arr(81, 4, 2), arr(82, 4)),
    ),
    Case(
        "linalg.cross_trace_diagonal",
        F,
        "cross of two 3-vectors, trace (offset 0 and 1) and diagonal (offsets 0, -1) of a 3 x 3",
        _cross_trace_diagonal,
        lambda: (arr(83, 3, 3),),
    ),
    Case(
        "linalg.vector_norm",
        F,
        "vector_norm: ord 2 over all axes, 1 and 3 along rows (keepdims), inf along columns "
        "(no zeros, no ties: the smooth branches)",
        _vector_norms,
        lambda: (arr(84, 3, 4, lo=0.2, hi=1.5) * np.array([1.0, -1.0, 1.0, -1.0]),),
    ),
    Case(
        "linalg.matrix_norm",
        F,
        "matrix_norm 'fro', 1, -1, inf, -inf (column and row sums without ties)",
        _matrix_norms,
        lambda: (np.array([[1.0, -2.0, 0.5], [0.3, 1.7, -2.4], [-0.9, 0.25, 1.1]]),),
    ),
    Case(
        "linalg.matrix_norm_spectral",
        F,
        "matrix_norm ord 2, -2, 'nuc' (largest, smallest and sum of the singular values, "
        "which are distinct here) of a 4 x 3",
        _spectral_norms,
        lambda: (spread(85, 4, 3),),
    ),
    Case(
        "linalg.det",
        F,
        "det of a matrix and of a stack (2, 3, 3): the cofactor matrices",
        _det,
        lambda: (regular(86, 3, 3), regular(87, 2, 3, 3)),
    ),
    Case(
        "linalg.det_singular",
        F,
        "det at a singular matrix (rank 2, an exact zero pivot): its gradient is the cofactor "
        "matrix, not 0 and not inf/NaN from det * inv(x)^T (or a refusal)",
        _det_only,
        lambda: (_rank_two(),),
        also_ok=REFUSED,
    ),
    Case(
        "linalg.slogdet",
        F,
        "slogdet of a matrix with a negative determinant (sign -1, derivative 0) and of a "
        "stack: d log|det| = inv(x)^T",
        _slogdet,
        lambda: (-regular(88, 3, 3), regular(89, 2, 3, 3)),
    ),
    Case(
        "linalg.inv",
        F,
        "inv of a matrix and of a stack: -inv^T G inv^T",
        _inv,
        lambda: (regular(94, 3, 3), regular(95, 2, 3, 3)),
    ),
    Case(
        "linalg.solve",
        F,
        "solve with a matrix and with a vector right-hand side (1-d: one vector), every "
        "argument differentiated",
        _solve,
        lambda: (regular(96, 3, 3), arr(97, 3, 2), arr(98, 3)),
    ),
    Case(
        "linalg.solve_stack",
        F,
        "solve of a stack (2, 3, 3) against one (3, 2) right-hand side broadcast to it: "
        "the right-hand side's gradient summed over the stack",
        _solve_stack,
        lambda: (regular(99, 2, 3, 3), arr(100, 3, 2)),
    ),
    Case(
        "linalg.pinv",
        F,
        "pinv of a 4 x 3 matrix of full rank (the derivative at constant rank)",
        _pinv,
        lambda: (spread(101, 4, 3),),
    ),
    Case(
        "linalg.matrix_power",
        F,
        "matrix_power with n = 3, -2 (a power of the inverse) and 0 (the identity, derivative 0)",
        _matrix_power,
        lambda: (regular(102, 3, 3),),
    ),
    Case(
        "linalg.hessian_logdet",
        F,
        "hessian of log|det(a)| + v^T inv(a) v in (a, v): second derivatives of slogdet and "
        "solve, the cross blocks included",
        _logdet_quadratic,
        lambda: (regular(103, 3, 3), arr(104, 3)),
        entry="hessian",
        requires=NESTED,
    ),
    Case(
        "linalg.hessian_det",
        F,
        "hessian of det (the derivative of the cofactor matrix): closed form from det's "
        "exact unit differences (it is affine in each entry)",
        _det_only,
        lambda: (regular(107, 3, 3),),
        entry="hessian",
        closed_form=_det_hessian,
        requires=NESTED,
    ),
    Case(
        "linalg.float32",
        F,
        "solve, inv and det in float32: float32 gradients within float32 tolerance",
        _solve_inv32,
        lambda: (regular(105, 3, 3).astype(np.float32), arr(106, 3, 2, dtype=np.float32)),
        requires=("float32",),
    ),
]
