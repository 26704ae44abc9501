"""The Array API's ``linalg`` extension over autograd, differentiated (``xp.linalg``).

On plain arrays every function is numpy's own ``numpy.linalg`` one. On traced arrays
the values are numpy's too -- each decomposition is one primitive calling numpy -- and
derivatives of every order exist in reverse and forward mode: the rules, and how each
treats the points where a derivative does not exist (singular matrices, repeated
eigen- and singular values, norms at zero, the sign conventions of ``qr``, ``svd`` and
``eigh``), are in :mod:`.inverses` (``inv``, ``solve``, ``det``, ``slogdet``,
``pinv``), :mod:`.spectral` (``eigh``, ``eigvalsh``, ``cholesky``),
:mod:`.factors` (``svd``, ``svdvals``, ``qr``) and :mod:`.norms`
(``vector_norm``, ``matrix_norm``). In short:

* ``eigh``, ``eigvalsh``, ``cholesky`` read one triangle of the input (numpy's), and
  their gradient is zero on the other;
* a repeated eigen- or singular value (or a zero singular value): symmetric functions
  of the repeated values are differentiated once, in reverse mode; functions of the
  vectors there, different cotangents for equal values, forward mode in a direction
  that splits them and higher derivatives are an ``UnsupportedError`` (the vectors'
  cotangent does not determine a derivative there);
* ``det`` is differentiated at singular matrices too (the cofactors; a second derivative
  there is refused), ``slogdet`` and ``qr`` of a singular or rank-deficient matrix are
  refused; ``inv``/``solve`` of a singular matrix raise numpy's ``LinAlgError`` as they
  do untraced; ``pinv`` is differentiated at constant rank;
* norms have slope 0 at zero (and at zero singular values), ties share it equally (as
  ``max``);
* signs of ``qr``, ``svd`` and ``eigh`` vectors are LAPACK's (piecewise constant):
  differentiate quantities that do not depend on them;
* ``svd(full_matrices=True)`` of a non-square matrix and ``qr(mode='complete')`` of a tall
  one are refused when traced: their extra vectors are not unique;
* ``matmul``, ``matrix_transpose``, ``tensordot``, ``vecdot``, ``outer``, ``cross``,
  ``diagonal``, ``trace`` and ``matrix_power`` are compositions of differentiable
  operations; ``matrix_rank`` is an integer (no derivative).

Complex traced arrays are refused by the decompositions and norms (the rules are written
for real matrices); plain complex arrays are numpy's.

Example:
    >>> import adswitch as ad, numpy as np
    >>> def f(a):
    ...     return ad.array_namespace(a).linalg.slogdet(a).logabsdet
    >>> ad.gradient(f, np.array([[2.0, 0.0], [0.0, 4.0]]), backend="autograd")[0]
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
"""

from __future__ import annotations

from typing import Any, Literal

import autograd.numpy as anp
import numpy as np

from adswitch.errors import UnsupportedError
from adswitch.spec import missing_function

from ..dtypes import astype
from ..linear_algebra import matmul, matrix_transpose, tensordot, vecdot
from ..manipulation import moveaxis, stack
from ..support import constant, is_traced, untraced
from . import factors, inverses, norms, spectral
from .support import diagonal as linalg_diagonal
from .support import solve_left

__all__ = [
    "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
    "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr",
    "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]  # fmt: skip

_SQUARE = np.eye(2)
EighResult = type(np.linalg.eigh(_SQUARE))
QRResult = type(np.linalg.qr(_SQUARE))
SlogdetResult = type(np.linalg.slogdet(_SQUARE))
SVDResult = type(np.linalg.svd(_SQUARE))


def _real(name: str, *arrays: Any) -> bool:
    """Whether any of ``arrays`` is traced; refuses traced complex ones."""
    traced = False
    for a in arrays:
        if is_traced(a):
            traced = True
            if np.iscomplexobj(untraced(a)):
                raise UnsupportedError(
                    f"autograd (HIPS) via adswitch: linalg.{name} of a traced complex array is "
                    "not differentiated (its rules are written for real matrices). Fix: "
                    "differentiate the real and imaginary parts as real arrays, or use "
                    "backend='torch' or 'jax'."
                )
    return traced


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(np.shape(untraced(x)))


def cholesky(x: Any, /, *, upper: bool = False) -> Any:
    """The Cholesky factor of each symmetric positive-definite matrix (only the lower
    triangle is read, or the upper one when ``upper``): ``L``, or ``U = L^T``."""
    if _real("cholesky", x):
        return spectral.cholesky(x, upper=upper)
    return np.linalg.cholesky(x, upper=upper)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The cross product of 3-vectors along ``axis`` (the other axes broadcast)."""
    if not (is_traced(x1) or is_traced(x2)):
        return np.linalg.cross(x1, x2, axis=axis)
    # numpy's checks of shapes and axis, on placeholders
    shape = np.linalg.cross(np.zeros(_shape(x1)), np.zeros(_shape(x2)), axis=axis).shape
    a, b = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    out = moveaxis(out, -1, axis)
    return out if anp.shape(out) == shape else anp.reshape(out, shape)


def det(x: Any, /) -> Any:
    """The determinant of each square matrix (differentiated also where singular)."""
    if _real("det", x):
        return inverses.det(x)
    return np.linalg.det(x)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The diagonal ``offset`` of each matrix (the last two axes)."""
    if is_traced(x):
        return linalg_diagonal(x, offset=offset)
    return np.linalg.diagonal(x, offset=offset)


def eigh(x: Any, /) -> Any:
    """Eigenvalues (ascending) and eigenvectors of each symmetric matrix (its lower
    triangle): ``(eigenvalues, eigenvectors)``."""
    if _real("eigh", x):
        return EighResult(spectral.eigenvalues(x), spectral.eigenvectors(x))
    return np.linalg.eigh(x)


def eigvalsh(x: Any, /) -> Any:
    """Eigenvalues (ascending) of each symmetric matrix (its lower triangle)."""
    if _real("eigvalsh", x):
        return spectral.eigvalsh(x)
    return np.linalg.eigvalsh(x)


def inv(x: Any, /) -> Any:
    """The inverse of each square matrix (numpy's ``LinAlgError`` where singular)."""
    if _real("inv", x):
        return inverses.inv(x)
    return np.linalg.inv(x)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """The ``ord`` norm of each matrix: ``'fro'``, ``'nuc'``, ``1``, ``-1``, ``2``,
    ``-2``, ``inf``, ``-inf``."""
    if _real("matrix_norm", x):
        return norms.matrix_norm(x, keepdims=keepdims, ord=ord)
    return np.linalg.matrix_norm(x, keepdims=keepdims, ord=ord)


def matrix_power(x: Any, n: int, /) -> Any:
    """``x`` to the integer power ``n`` (``n < 0``: of its inverse), by numpy's own
    sequence of products (so traced values are numpy's)."""
    if not is_traced(x):
        return np.linalg.matrix_power(x, n)
    shape = _shape(x)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"matrix_power needs a stack of square matrices, got shape {shape}")
    if n == 0:
        return constant(np.broadcast_to(np.eye(shape[-1], dtype=x.dtype), shape).copy(), new=True)
    a = inv(x) if n < 0 else x
    n = abs(n)
    if n == 1:
        return a
    if n == 2:
        return matmul(a, a)
    if n == 3:
        return matmul(matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def matrix_rank(x: Any, /, *, rtol: Any = None) -> Any:
    """The rank of each matrix (an integer: no derivative; of a traced array's value)."""
    return np.linalg.matrix_rank(untraced(x), rtol=untraced(rtol))


def outer(x1: Any, x2: Any, /) -> Any:
    """The outer product of two 1-d arrays."""
    if not (is_traced(x1) or is_traced(x2)):
        return np.linalg.outer(x1, x2)
    if len(_shape(x1)) != 1 or len(_shape(x2)) != 1:
        raise ValueError(f"outer takes 1-d arrays, got shapes {_shape(x1)} and {_shape(x2)}")
    return anp.reshape(x1, (-1, 1)) * anp.reshape(x2, (1, -1))


def pinv(x: Any, /, *, rtol: Any = None) -> Any:
    """The pseudo-inverse of each matrix (singular values below ``rtol`` times the
    largest are cut; ``None``: ``max(m, n) * eps``)."""
    if _real("pinv", x):
        return inverses.pinv(x, rtol=untraced(rtol))
    return np.linalg.pinv(x, rtol=rtol)


def qr(x: Any, /, *, mode: Literal["reduced", "complete"] = "reduced") -> Any:
    """The QR decomposition of each matrix: ``(Q, R)``; ``mode`` ``'reduced'`` or
    ``'complete'``."""
    if not _real("qr", x):
        return np.linalg.qr(x, mode=mode)
    m, n = _shape(x)[-2:]
    if mode == "complete" and m > n:
        raise UnsupportedError(
            "autograd (HIPS) via adswitch: linalg.qr(mode='complete') of a tall traced matrix "
            "is not differentiated: Q's columns beyond the matrix's are not unique. Fix: "
            "mode='reduced'."
        )
    q, r = factors.unpack_qr(factors.qr_packed(x, mode=mode), m, n)
    return QRResult(q, r)


def slogdet(x: Any, /) -> Any:
    """The sign and the log of the absolute value of each determinant:
    ``(sign, logabsdet)``."""
    if not _real("slogdet", x):
        return np.linalg.slogdet(x)
    pair = inverses.slogdet_pair(x)
    return SlogdetResult(pair[..., 0], pair[..., 1])


def solve(x1: Any, x2: Any, /) -> Any:
    """The solution of ``x1 @ out = x2``; ``x2`` is a stack of vectors only when 1-d (the
    standard's and numpy 2's rule), else of matrices; stack axes broadcast."""
    if not _real("solve", x1, x2):
        return np.linalg.solve(x1, x2)
    if len(_shape(x2)) == 1:
        return solve_left(x1, anp.reshape(x2, (-1, 1)))[..., 0]
    return solve_left(x1, x2)


def svd(x: Any, /, *, full_matrices: bool = True) -> Any:
    """The singular value decomposition of each matrix: ``(U, S, Vh)``, ``S``
    descending."""
    if not _real("svd", x):
        return np.linalg.svd(x, full_matrices=full_matrices)
    m, n = _shape(x)[-2:]
    if full_matrices and m != n:
        raise UnsupportedError(
            "autograd (HIPS) via adswitch: linalg.svd(full_matrices=True) of a non-square "
            "traced matrix is not differentiated: its singular vectors beyond min(m, n) are "
            "not unique. Fix: full_matrices=False."
        )
    packed = factors.singular_vectors(x, full_matrices=full_matrices)
    u, vh = factors.unpack_vectors(packed, m, n)
    return SVDResult(u, factors.svd_values(x, full_matrices=full_matrices), vh)


def svdvals(x: Any, /) -> Any:
    """The singular values of each matrix (descending)."""
    if _real("svdvals", x):
        return factors.svdvals(x)
    return np.linalg.svdvals(x)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """The sum of the diagonal ``offset`` of each matrix."""
    if not is_traced(x):
        return np.linalg.trace(x, offset=offset, dtype=dtype)
    if dtype is not None and x.dtype != dtype:
        x = astype(x, dtype)
        if not is_traced(x):  # an integer dtype: no derivative
            return np.linalg.trace(x, offset=offset)
    return anp.sum(linalg_diagonal(x, offset=offset), axis=-1)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """The ``ord`` norm of the vectors along ``axis`` (all axes when ``None``)."""
    if _real("vector_norm", x):
        return norms.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
    return np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)


def __getattr__(name: str) -> Any:
    # ``xp.linalg.norm`` (numpy's name) and the like: the standard's name, not a raw
    # AttributeError (adswitch.numpy_names)
    raise missing_function("autograd", name, "xp.linalg", _OTHERWISE)


_OTHERWISE = (
    "Fix: express it with the functions of the Array API's linalg extension, or choose "
    "another engine (backend='torch' or 'jax')."
)
