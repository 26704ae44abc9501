"""The Array API ``linalg`` extension for the tape (``xp.linalg``), differentiated.

Compositions of the primitives: ``matmul``, ``matrix_transpose``, ``tensordot``,
``vecdot``, ``cross``, ``diagonal``, ``trace``, ``outer``, ``vector_norm``,
``matrix_norm`` and ``matrix_power``; norms at zero have gradient 0 (a subgradient, as
``abs`` at 0), ties in a max/min norm split evenly. ``matrix_norm`` of ord ``2``, ``-2``
and ``'nuc'`` is the max, min and sum of the singular values (at a largest or smallest
one repeated to rounding, the even split ``U_k V_k^T / k``: a subgradient); a zero
singular value has slope 0, as ``abs`` at 0 (``'nuc'`` at a rank-deficient matrix:
``U_r V_r^T`` over the nonzero ones, the minimum-norm subgradient and the symmetric limit the
kinks family checks; torch, jax and autograd give the same); their second derivatives at
repeated or zero singular values are refused. ``matrix_power`` with ``n < 0`` is a power
of ``inv``. ``matrix_rank`` has a zero derivative. The factorizations and solvers
(``cholesky``, ``det``, ``eigh``, ``eigvalsh``, ``inv``, ``pinv``, ``qr``, ``slogdet``,
``solve``, ``svd``, ``svdvals``) are primitives with rules of their own
(``xp/decompositions.py``; how each handles singular matrices and repeated eigenvalues:
``rules/linalg/solvers.py``, ``rules/linalg/factorizations.py``; at a repeated
eigenvalue or singular value, functions of the eigen-/singular vectors are refused,
symmetric functions of the values keep their first derivative:
``rules/linalg/spectra.py``). Part of the namespace.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from adswitch.spec import missing_function

from ..array.conversions import carries_gradient
from ..array.tracer import Tracer, raw
from ..rules import primitives as P
from ..rules.linalg.helpers import tolerance
from .axes import axes_of, constants_only, like_inputs, ndim_of
from .decompositions import (
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    pinv,
    qr,
    singular_values,
    slogdet,
    solve,
    svd,
    svdvals,
)
from .reductions import max, min, sum, tensordot, vecdot
from .shapes import matrix_transpose, stack

__all__ = [
    "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
    "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr",
    "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]  # fmt: skip

matmul = P.matmul


def _traced(*arrays: Any) -> builtins.bool:
    return builtins.any(carries_gradient(a) for a in arrays)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The cross product of 3-vectors along ``axis`` (broadcast over the others)."""
    s1, s2 = np.shape(raw(x1)), np.shape(raw(x2))
    if not (s1[axis:][:1] == s2[axis:][:1] == (3,)):
        raise ValueError(f"cross: axis {axis} must have length 3 in both shapes {s1}, {s2}")
    if not _traced(x1, x2):
        return constants_only("linalg.cross", np.linalg.cross, x1, x2, axis=axis)
    shape = np.broadcast_shapes(s1, s2)
    ax = axis % len(shape)
    a = [_component(P.broadcast_to(x1, shape=shape), ax, i) for i in range(3)]
    b = [_component(P.broadcast_to(x2, shape=shape), ax, i) for i in range(3)]
    parts = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    return stack(parts, axis=ax)


def _component(x: Any, axis: int, i: int) -> Any:
    return P.getitem(x, key=(slice(None),) * axis + (i,))


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The diagonal ``offset`` of the last two axes (a gather: differentiated)."""
    rows, cols = np.shape(raw(x))[-2:]
    start_row, start_col = builtins.max(-offset, 0), builtins.max(offset, 0)
    n = builtins.max(builtins.min(rows - start_row, cols - start_col), 0)
    i = np.arange(n)
    return P.getitem(x, key=(Ellipsis, i + start_row, i + start_col))


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """The sum of the diagonal ``offset`` of the last two axes."""
    return sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def outer(x1: Any, x2: Any, /) -> Any:
    """The outer product of two 1-d arrays."""
    if ndim_of(x1) != 1 or ndim_of(x2) != 1:
        raise ValueError("outer: both arguments must be 1-d")
    return P.reshape(x1, shape=(-1, 1)) * P.reshape(x2, shape=(1, -1))


def _safe_root(s: Any, p: float) -> Any:
    """``s ** (1 / p)`` for ``s >= 0``, with gradient 0 where ``s == 0`` (not inf * 0)."""
    zero = raw(s) == 0
    root = P.sqrt(P.where(zero, 1.0, s)) if p == 2 else P.pow(P.where(zero, 1.0, s), 1.0 / p)
    return P.where(zero, 0.0, root)


def vector_norm(
    x: Any,
    /,
    *,
    axis: Any = None,
    keepdims: builtins.bool = False,
    ord: Any = 2,
) -> Any:
    """The ``ord``-norm over ``axis`` (all axes when None)."""
    if not _traced(x) or np.iscomplexobj(raw(x)):
        return constants_only(
            "linalg.vector_norm", np.linalg.vector_norm, x, axis=axis, keepdims=keepdims, ord=ord
        )
    axes = axes_of(axis, ndim_of(x))
    if ord == np.inf:
        return max(P.abs(x), axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return min(P.abs(x), axis=axes, keepdims=keepdims)
    if ord == 0:
        count = np.count_nonzero(raw(x), axis=axes, keepdims=keepdims)
        return like_inputs(count.astype(raw(x).dtype), True)
    if ord == 2:
        return _safe_root(sum(P.square(x), axis=axes, keepdims=keepdims), 2)
    if ord == 1:
        return sum(P.abs(x), axis=axes, keepdims=keepdims)
    return _safe_root(sum(P.pow(P.abs(x), float(ord)), axis=axes, keepdims=keepdims), ord)


def matrix_norm(
    x: Any,
    /,
    *,
    keepdims: builtins.bool = False,
    ord: Any = "fro",
) -> Any:
    """The ``ord``-norm of the matrices in the last two axes."""
    if not _traced(x) or np.iscomplexobj(raw(x)):
        return constants_only(
            "linalg.matrix_norm", np.linalg.matrix_norm, x, keepdims=keepdims, ord=ord
        )
    if ord == "fro":
        return vector_norm(x, axis=(-2, -1), keepdims=keepdims)
    if ord in (1, -1, np.inf, -np.inf):
        summed, pick = (-2, -1) if ord in (1, -1) else (-1, -2)
        extreme = max if ord in (1, np.inf) else min
        out = extreme(sum(P.abs(x), axis=summed, keepdims=True), axis=pick, keepdims=True)
        return out if keepdims else P.reshape(out, shape=np.shape(raw(out))[:-2])
    if ord in (2, -2, "nuc"):
        out = _spectral_norm(singular_values(x, "matrix_norm"), ord)
        return P.reshape(out, shape=(*np.shape(raw(out)), 1, 1)) if keepdims else out
    raise ValueError(f"matrix_norm: ord must be 'fro', 'nuc', +-1, +-2 or +-inf, not {ord!r}")


def _spectral_norm(s: Any, ord: Any) -> Any:
    """The largest (``2``), smallest (``-2``) singular value or their sum (``'nuc'``).
    Values equal to the extreme to rounding (not exactly: ``max`` splits exact ties) share
    its slope evenly, a weighted sum -- the slope of a repeated extreme is the even split,
    the one the rules accept (equal cotangents for equal values)."""
    if ord == "nuc":
        return sum(s, axis=-1)
    values = np.asarray(raw(s))
    extreme = values[..., :1] if ord == 2 else values[..., -1:]
    near = np.abs(values - extreme) <= tolerance(values)
    if (near == (values == extreme)).all():
        return max(s, axis=-1) if ord == 2 else min(s, axis=-1)
    return sum(s * (near / np.sum(near, axis=-1, keepdims=True)), axis=-1)


def matrix_power(x: Any, n: int, /) -> Any:
    """``x @ x @ ... @ x`` (``n`` times; the identity for ``n == 0``) by squaring; for
    ``n < 0``, the power ``-n`` of ``inv(x)``."""
    if not _traced(x):
        return constants_only("linalg.matrix_power", np.linalg.matrix_power, x, n)
    if n < 0:
        x, n = inv(x), -n
    shape = np.shape(raw(x))
    if n == 0:
        eye = np.broadcast_to(np.eye(shape[-1], dtype=raw(x).dtype), shape)
        return like_inputs(np.array(eye), True)
    result: Any = None
    power = x
    while True:
        if n & 1:
            result = power if result is None else P.matmul(result, power)
        n >>= 1
        if not n:
            return result
        power = P.matmul(power, power)


def matrix_rank(x: Any, /, *, rtol: Any = None) -> Any:
    """The number of singular values above ``rtol`` times the largest (a zero derivative)."""
    rank = np.linalg.matrix_rank(raw(x), rtol=raw(rtol))
    return like_inputs(rank, type(x) is Tracer)


def __getattr__(name: str) -> Any:
    # ``xp.linalg.norm`` (numpy's name) and the like: the standard's name, not a raw
    # AttributeError (adswitch.numpy_names)
    raise missing_function(
        "tape",
        name,
        "xp.linalg",
        "The tape does not provide it. Fix: express it with supported functions, or "
        "choose another engine with backend='torch' or 'jax'.",
    )
