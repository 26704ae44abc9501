"""What the rules of the factorizations and solvers share: transposes and solves of
stacks, triangle masks, diagonals, the reciprocal gaps of eigenvalues and singular
values, and the error for a singular matrix.

Written with primitives (``P.*``, ``M.*``), so an enclosing call records them. Saved
values (``ans``, the arguments) are unbatched stacks ``(..., m, n)``; cotangents and
tangents carry the batch axes in front (``core.BATCH``), and every helper here lines
them up by numpy broadcasting, which aligns the trailing matrix axes: a saved value's
stack never has more axes than the cotangent's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError
from adswitch.spec import tolerance  # (every engine's one tolerance, re-exported here)

from ...core import raw
from .. import primitives as P
from ..helpers import shape_of
from . import primitives as M

__all__ = [
    "SingularMatrixError", "col", "diag_embed", "diagonal", "gap_reciprocals", "lower_gradient",
    "lower_read", "mT", "part", "regular_triangle", "row", "safe_reciprocal", "singular",
    "solve_right", "sum_reciprocals", "tolerance", "tri",
]  # fmt: skip


class SingularMatrixError(UnsupportedError, np.linalg.LinAlgError):
    """A derivative needs the inverse of a matrix that is singular; also numpy's
    ``LinAlgError``, as a singular matrix raises in numpy itself."""


@contextmanager
def singular(what: str, fix: str) -> Iterator[None]:
    """Turn numpy's ``LinAlgError`` (a singular matrix) inside a rule into a
    :class:`SingularMatrixError` that says which derivative and the fix."""
    try:
        yield
    except np.linalg.LinAlgError as exc:
        if isinstance(exc, SingularMatrixError):
            raise
        raise SingularMatrixError(f"tape: {what} ({exc}). Fix: {fix}") from exc


def regular_triangle(r: Any, what: str, fix: str) -> None:
    """Raise a :class:`SingularMatrixError` unless the triangular matrices ``r`` are
    numerically regular (no diagonal entry below roundoff of the largest): solving with
    a numerically singular one gives no error, only numbers of size 1/eps."""
    d = np.abs(np.diagonal(np.asarray(raw(r)), axis1=-2, axis2=-1))
    if d.size and (d <= tolerance(d)).any():
        raise SingularMatrixError(f"tape: {what} (a zero on R's diagonal). Fix: {fix}")


def mT(x: Any) -> Any:
    """The transpose of the last two axes."""
    return P.matrix_transpose(x)


def solve_right(y: Any, a: Any) -> Any:
    """``y @ inv(a)``, as ``(inv(a)^T @ y^T)^T``."""
    return mT(M.solve(mT(a), mT(y)))


def part(x: Any, *key: Any) -> Any:
    """``x[..., *key]`` (a part of a packed factorization, of its value or cotangent)."""
    return P.getitem(x, key=(Ellipsis, *key))


def row(v: Any) -> Any:
    """``v[..., None, :]``: a vector as a one-row matrix (scales columns)."""
    shape = shape_of(v)
    return P.reshape(v, shape=(*shape[:-1], 1, shape[-1]))


def col(v: Any) -> Any:
    """``v[..., :, None]``: a vector as a one-column matrix (scales rows)."""
    return P.reshape(v, shape=(*shape_of(v), 1))


def diagonal(x: Any) -> Any:
    """The diagonals of a stack of square matrices."""
    i = np.arange(shape_of(x)[-1])
    return P.getitem(x, key=(Ellipsis, i, i))


def diag_embed(v: Any) -> Any:
    """Diagonal matrices with the vectors ``v`` (``(..., n)``) on their diagonals."""
    n = shape_of(v)[-1]
    return row(v) * np.eye(n, dtype=np.result_type(raw(v)))


def tri(n: int, like: Any, *, strict: bool = False, diag: float = 1.0) -> np.ndarray:
    """A lower-triangle mask: 1 below the diagonal, ``diag`` on it (``strict``: 0)."""
    dtype = np.result_type(raw(like))
    mask = np.tril(np.ones((n, n), dtype=dtype), -1)
    if not strict:
        mask += diag * np.eye(n, dtype=dtype)
    return mask


def lower_read(t: Any) -> Any:
    """What a function that reads only the lower triangle (numpy's ``cholesky``, ``eigh``)
    sees of a tangent ``t``: ``tril(t) + tril(t, -1)^T``."""
    n = shape_of(t)[-1]
    strict = tri(n, t, strict=True)
    return t * tri(n, t) + mT(t * strict)


def lower_gradient(gs: Any) -> Any:
    """The transpose of :func:`lower_read`, for a symmetric ``gs``: ``2 tril(gs, -1) +
    diag(gs)`` (the upper triangle, never read, gets 0)."""
    return gs * tri(shape_of(gs)[-1], gs, diag=0.5) * 2.0


def gap_reciprocals(values: Any) -> Any:
    """``F[..., i, j] = 1 / (v_j - v_i)`` for the sorted vectors ``values``, and 0 on the
    diagonal and wherever ``v_i`` and ``v_j`` are numerically equal (a repeated
    eigenvalue or singular value). The masked terms only ever meet zero cotangents of
    the vectors: where values repeat, a function of the vectors is refused
    (``spectra``) before the factorization's rule runs."""
    v = np.asarray(raw(values))
    apart = np.abs(v[..., None, :] - v[..., :, None]) > tolerance(v)[..., None]
    return P.divide(apart.astype(v.dtype), P.where(apart, row(values) - col(values), 1.0))


def sum_reciprocals(values: Any) -> Any:
    """``F[..., i, j] = 1 / (v_j + v_i)`` for nonnegative ``values`` (singular values),
    0 on the diagonal and where both are numerically 0."""
    v = np.asarray(raw(values))
    n = v.shape[-1]
    apart = (v[..., None, :] + v[..., :, None] > tolerance(v)[..., None]) & ~np.eye(n, dtype=bool)
    return P.divide(apart.astype(v.dtype), P.where(apart, row(values) + col(values), 1.0))


def safe_reciprocal(values: Any) -> Any:
    """``1 / v`` for nonnegative ``values`` (singular values), and 0 where ``v`` is
    numerically 0."""
    v = np.asarray(raw(values))
    nonzero = v > tolerance(v)
    return P.divide(nonzero.astype(v.dtype), P.where(nonzero, values, 1.0))
