"""The factorizations and solvers of ``xp.linalg``, differentiated (part of ``xp/linalg``).

On traced arrays they record the primitives of ``rules.linalg.primitives`` (whose rules,
in ``rules.linalg.solvers`` and ``rules.linalg.factorizations``, say how each handles
degeneracy); on constants they are numpy's. Results with several parts are named tuples
with the standard's field names. What differs from numpy, and why:

* ``qr(mode='complete')`` of a traced matrix with more rows than columns, and
  ``svd(full_matrices=True)`` of a traced non-square matrix, are an
  :class:`~adswitch.errors.UnsupportedError`: the extra columns of ``Q``/``U`` are any
  orthonormal basis of the complement, which has no derivative. ``mode='reduced'``,
  ``full_matrices=False`` (or square matrices) are differentiated.
* ``eigh``'s eigenvectors and ``svd``'s ``U``/``Vh`` come out of the factorization by
  primitives of their own: at a repeated eigenvalue (a repeated or zero singular value)
  a derivative through them is an :class:`~adswitch.errors.UnsupportedError` (they are
  not unique there; ``eigvalsh``/``svdvals`` and symmetric functions of the values are
  differentiated).
* ``qr`` of a wide matrix (``m < n``) is the ``qr`` of its first ``m`` columns and
  ``R``'s other columns ``Q^T x[..., m:]`` (the same numbers as numpy's).
"""

from __future__ import annotations

import builtins
from typing import Any, Literal, NamedTuple

import numpy as np

from adswitch.errors import UnsupportedError

from ..array.conversions import carries_gradient
from ..array.tracer import raw
from ..rules import primitives as P
from ..rules.linalg import primitives as M
from .axes import constants_only, like_inputs, ndim_of

__all__ = [
    "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "det", "eigh",
    "eigvalsh", "inv", "pinv", "qr", "singular_values", "slogdet", "solve", "svd", "svdvals",
]  # fmt: skip

_ALL = slice(None)


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


def _traced(*arrays: Any) -> builtins.bool:
    return builtins.any(carries_gradient(a) for a in arrays)


def _part(x: Any, *key: Any) -> Any:
    return P.getitem(x, key=(Ellipsis, *key))


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(np.shape(raw(x)))


def cholesky(x: Any, /, *, upper: builtins.bool = False) -> Any:
    """The Cholesky factor of symmetric positive-definite matrices: lower (``x = L L^T``),
    or upper (``x = U^T U``) when ``upper``. Reads the lower (upper) triangle only, as
    numpy does; the gradient is the derivative of that."""
    if not _traced(x):
        return constants_only("linalg.cholesky", np.linalg.cholesky, x, upper=upper)
    if upper:
        return P.matrix_transpose(M.cholesky(P.matrix_transpose(x)))
    return M.cholesky(x)


def det(x: Any, /) -> Any:
    """The determinant (gradient: the cofactor matrix, right at singular matrices too)."""
    if not _traced(x):
        return constants_only("linalg.det", np.linalg.det, x)
    return M.det(x)


def slogdet(x: Any, /) -> SlogdetResult:
    """The sign (derivative 0) and the log of the absolute value of the determinant."""
    if not _traced(x):
        return constants_only("linalg.slogdet", np.linalg.slogdet, x)  # type: ignore[no-any-return]
    packed = M.slogdet(x)
    sign = like_inputs(np.array(raw(packed)[..., 0]), True)  # (a copy: not a view of packed)
    return SlogdetResult(sign, _part(packed, 1))


def inv(x: Any, /) -> Any:
    """The inverse (a singular matrix raises numpy's ``LinAlgError``, as in numpy)."""
    if not _traced(x):
        return constants_only("linalg.inv", np.linalg.inv, x)
    return M.inv(x)


def solve(x1: Any, x2: Any, /) -> Any:
    """The solution of ``x1 @ out = x2``; a 1-d ``x2`` is one right-hand side vector."""
    if not _traced(x1, x2):
        return constants_only("linalg.solve", np.linalg.solve, x1, x2)
    if ndim_of(x2) == 1:
        (n,) = _shape(x2)
        out = M.solve(x1, P.reshape(x2, shape=(n, 1)))
        return P.reshape(out, shape=_shape(out)[:-1])
    return M.solve(x1, x2)


def eigh(x: Any, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices (the lower
    triangle read, as numpy does)."""
    if not _traced(x):
        return constants_only("linalg.eigh", np.linalg.eigh, x)  # type: ignore[no-any-return]
    packed = M.eigh(x, name="eigh")
    return EighResult(_part(packed, 0, _ALL), M.eigenvectors(packed, name="eigh"))


def eigvalsh(x: Any, /) -> Any:
    """Eigenvalues (ascending) of symmetric matrices."""
    if not _traced(x):
        return constants_only("linalg.eigvalsh", np.linalg.eigvalsh, x)
    return _part(M.eigh(x, name="eigvalsh"), 0, _ALL)


def qr(x: Any, /, *, mode: Literal["reduced", "complete"] = "reduced") -> QRResult:
    """The QR decomposition (numpy's signs)."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', not {mode!r}")
    if not _traced(x):
        return constants_only("linalg.qr", np.linalg.qr, x, mode=mode)  # type: ignore[no-any-return]
    m, n = _shape(x)[-2:]
    if mode == "complete" and m > n:
        raise UnsupportedError(
            f"tape: xp.linalg.qr(mode='complete') of a traced {m} x {n} matrix: Q's last "
            f"{m - n} columns are any orthonormal basis of the complement and have no "
            "derivative. Fix: mode='reduced'."
        )
    if m >= n:
        packed = M.qr(x)
        return QRResult(_part(packed, slice(None, m), _ALL), _part(packed, slice(m, None), _ALL))
    q, r_left = qr(_part(x, _ALL, slice(None, m)))
    r_right = P.matmul_tn(q, _part(x, _ALL, slice(m, None)))
    return QRResult(q, P.concat(r_left, r_right, axis=-1))


def _svd_packed(x: Any, name: str) -> tuple[Any, int]:
    rows = _shape(x)[-2]
    return M.svd(x, rows=rows, name=name), rows


def svd(x: Any, /, *, full_matrices: builtins.bool = True) -> SVDResult:
    """The singular value decomposition ``x = U diag(S) Vh`` (numpy's signs)."""
    if not _traced(x):
        return constants_only(  # type: ignore[no-any-return]
            "linalg.svd", np.linalg.svd, x, full_matrices=full_matrices
        )
    m, n = _shape(x)[-2:]
    if full_matrices and m != n:
        raise UnsupportedError(
            f"tape: xp.linalg.svd(full_matrices=True) of a traced {m} x {n} matrix: the "
            "extra singular vectors are any orthonormal basis of the complement and have "
            "no derivative. Fix: full_matrices=False."
        )
    packed, rows = _svd_packed(x, "svd")
    u = M.singular_vectors(packed, rows=rows, side="U")
    v = M.singular_vectors(packed, rows=rows, side="V")
    return SVDResult(u, _part(packed, rows, _ALL), P.matrix_transpose(v))


def svdvals(x: Any, /) -> Any:
    """The singular values, descending."""
    if not _traced(x):
        return constants_only("linalg.svdvals", np.linalg.svdvals, x)
    return singular_values(x, "svdvals")


def singular_values(x: Any, name: str) -> Any:
    """The singular values of a traced ``x``, for ``xp.linalg.{name}`` (the function its
    errors name: ``svdvals``, ``matrix_norm``)."""
    packed, rows = _svd_packed(x, name)
    return _part(packed, rows, _ALL)


def pinv(x: Any, /, *, rtol: Any = None) -> Any:
    """The Moore-Penrose pseudo-inverse; singular values up to ``rtol`` times the largest
    count as 0 (``None``: numpy's default cut). Differentiated at constant rank."""
    if not _traced(x):
        if rtol is None:
            return constants_only("linalg.pinv", np.linalg.pinv, x)
        return constants_only("linalg.pinv", np.linalg.pinv, x, rtol=raw(rtol))
    return M.pinv(x, rtol=None if rtol is None else raw(rtol))
