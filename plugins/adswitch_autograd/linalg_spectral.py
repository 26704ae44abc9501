"""``linalg`` rules for the symmetric eigendecomposition and the Cholesky factor:
``eigh``, ``eigvalsh``, ``cholesky``.

Each is a primitive computing numpy's value (a decomposition packed into one array, so
that autograd sees one output), with a VJP written in differentiable operations and a JVP.

Which elements are read: numpy's ``eigh``, ``eigvalsh`` and ``cholesky`` read only the
lower triangle of the input (``cholesky(upper=True)``: the upper one), as a symmetric
matrix. The gradient is that of what numpy computes: zero on the unread side, the
symmetric gradient's off-diagonal element doubled on the read side. For an input that is
symmetric by construction (``A = B @ B.T``, a kernel matrix), the gradient with respect
to what it is built from is the symmetric convention's.

Degeneracy -- a repeated eigenvalue, to within rounding (:func:`.linalg_support.close_pairs`):

* the eigenvectors of a repeated eigenvalue are any rotation of one another, so only a
  function that does not care which (a projector ``V_k V_k^T`` onto the whole eigenspace,
  ``V diag(f(w)) V^T``) has a derivative there. Reverse mode checks it -- the cotangent's
  rotation part within the eigenspace must vanish -- and computes the derivative without
  the (infinite) gap terms; otherwise ``UnsupportedError``;
* equal eigenvalues with different cotangents (a loss on one of two equal eigenvalues,
  which has a kink there) are refused; a symmetric function of them (their sum) is fine;
* forward mode (and reverse mode with a traced cotangent, where the check cannot be made)
  is refused at a repeated eigenvalue unless the tangent keeps the eigenspace's basis
  (its block of ``V^T dA V`` is diagonal).

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

from .boxes import raw_value
from .linalg_support import (
    ROTATION_FIX,
    T,
    check_rotation,
    check_tangent,
    check_values,
    close_pairs,
    diag_matrix,
    inverse_gaps,
    lower_read,
    lower_tangent,
    matmul,
    refuse,
    solve_left,
    upper_read,
    upper_tangent,
)
from .xp_support import is_traced

__all__ = ["cholesky", "eigh_packed", "eigvalsh", "unpack_eigh"]


@primitive  # type: ignore[untyped-decorator]
def eigh_packed(a: Any) -> Any:
    """numpy's ``eigh`` of each matrix of a stack, as one array ``(..., n + 1, n)``: the
    eigenvalues (ascending) in row 0, the eigenvectors (columns) below."""
    w, v = np.linalg.eigh(a)
    return np.concatenate([w[..., None, :], v], axis=-2)


def unpack_eigh(packed: Any) -> tuple[Any, Any]:
    """``(eigenvalues, eigenvectors)`` of :func:`eigh_packed`'s array (differentiable)."""
    return packed[..., 0, :], packed[..., 1:, :]


def _eigh_vjp(ans: Any, a: Any) -> Any:
    def vjp(g: Any) -> Any:
        w, v = unpack_eigh(ans)
        w_bar, v_bar = unpack_eigh(g)
        close = close_pairs(raw_value(w))
        coupling = matmul(T(v), v_bar)
        if close.any():
            if is_traced(g):
                raise refuse(
                    "eigh", "it has a repeated eigenvalue, and the cotangent is traced",
                    ROTATION_FIX,
                )  # fmt: skip
            check_values("eigh", w_bar, close)
            check_rotation("eigh", coupling - T(coupling), close)
        inner = diag_matrix(w_bar) + inverse_gaps(w, close) * coupling
        return lower_read(matmul(matmul(v, inner), T(v)))

    return vjp


def _eigh_jvp(g: Any, ans: Any, a: Any) -> Any:
    w, v = unpack_eigh(ans)
    block = matmul(matmul(T(v), lower_tangent(g)), v)
    close = close_pairs(raw_value(w))
    check_tangent("eigh", block, close)
    dw = anp.diagonal(block, axis1=-2, axis2=-1)
    dv = matmul(v, inverse_gaps(w, close) * block)
    return anp.concatenate([dw[..., None, :], dv], axis=-2)


defvjp(eigh_packed, _eigh_vjp)
defjvp(eigh_packed, _eigh_jvp)


@primitive  # type: ignore[untyped-decorator]
def eigvalsh(a: Any) -> Any:
    """numpy's ``eigvalsh`` of each matrix of a stack (differentiable; the eigenvectors
    its derivative needs come from :func:`eigh_packed`)."""
    return np.linalg.eigvalsh(a)


def _eigvalsh_vjp(ans: Any, a: Any) -> Any:
    def vjp(g: Any) -> Any:
        check_values("eigvalsh", g, close_pairs(raw_value(ans)))
        _, v = unpack_eigh(eigh_packed(a))
        return lower_read(matmul(v * g[..., None, :], T(v)))

    return vjp


def _eigvalsh_jvp(g: Any, ans: Any, a: Any) -> Any:
    _, v = unpack_eigh(eigh_packed(a))
    block = matmul(matmul(T(v), lower_tangent(g)), v)
    check_tangent("eigvalsh", block, close_pairs(raw_value(ans)))
    return anp.diagonal(block, axis1=-2, axis2=-1)


defvjp(eigvalsh, _eigvalsh_vjp)
defjvp(eigvalsh, _eigvalsh_jvp)


@primitive  # type: ignore[untyped-decorator]
def cholesky(a: Any, *, upper: bool = False) -> Any:
    """numpy's Cholesky factor of each matrix of a stack (lower, or upper: ``L^T``)."""
    return np.linalg.cholesky(a, upper=upper)


def _halved_lower(x: Any) -> Any:
    """``Phi(x)``: the lower triangle, with the diagonal halved."""
    n = anp.shape(x)[-1]
    return anp.tril(x) - 0.5 * x * np.eye(n, dtype=np.result_type(raw_value(x)))


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
