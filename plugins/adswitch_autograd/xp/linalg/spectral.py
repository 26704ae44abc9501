"""``linalg`` rules for the symmetric eigendecomposition and the Cholesky factor:
``eigh`` (its eigenvalues and its eigenvectors, one primitive each), ``eigvalsh``,
``cholesky``.

Each is a primitive computing numpy's value, with a VJP written in differentiable
operations (so derivatives of every order exist) and a JVP. Eigenvalues:
``dw_i = v_i^T dA v_i``; eigenvectors: ``dV = V (F o (V^T dA V))``, ``F_ij = 1 / (w_j -
w_i)``.

Which elements are read: numpy's ``eigh``, ``eigvalsh`` and ``cholesky`` read only the
lower triangle of the input (``cholesky(upper=True)``: the upper one), as a symmetric
matrix. The gradient is that of what numpy computes: zero on the unread side, the
symmetric gradient's off-diagonal element doubled on the read side. For an input that is
symmetric by construction (``A = B @ B.T``, a kernel matrix), the gradient with respect
to what it is built from is the symmetric convention's.

Degeneracy -- a repeated eigenvalue, to within rounding (:func:`.support.close_pairs`):

* functions of the eigenvalues: the first derivative in reverse mode exists for
  functions symmetric in the repeated ones (their sum: ``V_k V_k^T`` spread equally), and
  is computed; equal eigenvalues with different cotangents (a loss on one of two equal
  eigenvalues, which has a kink there) are refused, and so are forward mode in a direction
  that splits the repeated value (not linear there) and higher derivatives (they go
  through the eigenvectors);
* functions of the eigenvectors: refused (``UnsupportedError``). The eigenvectors of a
  repeated eigenvalue are any rotation of one another, and their cotangent does not
  determine a derivative: ``sum(V diag(w - 1) V^T)`` and ``sum(w)`` give the same
  cotangents at the identity and have the gradients ``ones`` and ``I``. (A single
  forward-mode ``jvp`` pushes a tangent through every output ``f`` computes, used or not:
  there, ``eigh`` at a repeated eigenvalue is refused even if only its eigenvalues are
  used -- ``eigvalsh`` is not.)

Sign convention: each eigenvector's sign is LAPACK's, which is piecewise constant but not
otherwise fixed: differentiate quantities that do not depend on it (``v v^T``, ``w``).

Cholesky: the input must be positive definite (numpy's ``LinAlgError`` otherwise);
``L^{-1}`` is applied by solves. ``dL = L Phi(L^{-1} dA L^{-T})``, ``Phi`` the lower
triangle with the diagonal halved; reverse mode is Murray's (arXiv:1602.07527).
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defvjp, primitive

from ...tracing.boxes import raw_value
from .support import (
    T,
    check_tangent,
    check_values,
    close_pairs,
    diagonal,
    eye,
    inverse_gaps,
    lower_read,
    lower_tangent,
    matmul,
    refuse_vectors,
    solve_left,
    upper_read,
    upper_tangent,
)

__all__ = ["cholesky", "eigenvalues", "eigenvectors", "eigvalsh"]

_REPEATED = "the matrix has a repeated eigenvalue"


@primitive  # type: ignore[untyped-decorator]
def eigenvalues(a: Any) -> Any:
    """The eigenvalues numpy's ``eigh`` gives each matrix of a stack (ascending)."""
    return np.linalg.eigh(a)[0]


@primitive  # type: ignore[untyped-decorator]
def eigenvectors(a: Any) -> Any:
    """The eigenvectors (columns) numpy's ``eigh`` gives each matrix of a stack."""
    return np.linalg.eigh(a)[1]


def _values_vjp(name: str) -> Any:
    def maker(ans: Any, a: Any) -> Any:
        def vjp(g: Any) -> Any:
            check_values(name, g, close_pairs(raw_value(ans)))
            v = eigenvectors(a)
            return lower_read(matmul(v * g[..., None, :], T(v)))

        return vjp

    return maker


def _values_jvp(name: str) -> Any:
    def jvp(g: Any, ans: Any, a: Any) -> Any:
        v = eigenvectors(a)
        block = matmul(matmul(T(v), lower_tangent(g)), v)
        check_tangent(name, block, close_pairs(raw_value(ans)))
        return diagonal(block)

    return jvp


def _vectors_vjp(ans: Any, a: Any) -> Any:
    def vjp(g: Any) -> Any:
        w = eigenvalues(a)
        close = close_pairs(raw_value(w))
        if close.any():
            raise refuse_vectors("eigh", _REPEATED)
        inner = inverse_gaps(w, close) * matmul(T(ans), g)
        return lower_read(matmul(matmul(ans, inner), T(ans)))

    return vjp


def _vectors_jvp(g: Any, ans: Any, a: Any) -> Any:
    w = eigenvalues(a)
    close = close_pairs(raw_value(w))
    if close.any():
        raise refuse_vectors("eigh", _REPEATED)
    block = matmul(matmul(T(ans), lower_tangent(g)), ans)
    return matmul(ans, inverse_gaps(w, close) * block)


defvjp(eigenvalues, _values_vjp("eigh"))
defjvp(eigenvalues, _values_jvp("eigh"))
defvjp(eigenvectors, _vectors_vjp)
defjvp(eigenvectors, _vectors_jvp)


@primitive  # type: ignore[untyped-decorator]
def eigvalsh(a: Any) -> Any:
    """numpy's ``eigvalsh`` of each matrix of a stack (differentiable; the eigenvectors
    its derivative needs come from :func:`eigenvectors`)."""
    return np.linalg.eigvalsh(a)


defvjp(eigvalsh, _values_vjp("eigvalsh"))
defjvp(eigvalsh, _values_jvp("eigvalsh"))


@primitive  # type: ignore[untyped-decorator]
def cholesky(a: Any, *, upper: bool = False) -> Any:
    """numpy's Cholesky factor of each matrix of a stack (lower, or upper: ``L^T``)."""
    return np.linalg.cholesky(a, upper=upper)


def _halved_lower(x: Any) -> Any:
    """``Phi(x)``: the lower triangle, with the diagonal halved."""
    n = anp.shape(x)[-1]
    return anp.tril(x) - 0.5 * x * eye(n, x)


def _cholesky_vjp(ans: Any, a: Any, upper: bool = False) -> Any:
    def vjp(g: Any) -> Any:
        lower, lower_bar = (T(ans), T(g)) if upper else (ans, g)
        phi = _halved_lower(matmul(T(lower), lower_bar))
        # L^{-T} Phi L^{-1}, by two solves with L^T
        s = T(solve_left(T(lower), T(solve_left(T(lower), phi))))
        sym = 0.5 * (s + T(s))  # the gradient with respect to the symmetric matrix
        return upper_read(sym) if upper else lower_read(sym)

    return vjp


def _cholesky_jvp(g: Any, ans: Any, a: Any, upper: bool = False) -> Any:
    lower = T(ans) if upper else ans
    d_sym = upper_tangent(g) if upper else lower_tangent(g)
    # L^{-1} dA L^{-T}, by two solves with L
    inner = T(solve_left(lower, T(solve_left(lower, d_sym))))
    d_lower = matmul(lower, _halved_lower(inner))
    return T(d_lower) if upper else d_lower


defvjp(cholesky, _cholesky_vjp)
defjvp(cholesky, _cholesky_jvp)
