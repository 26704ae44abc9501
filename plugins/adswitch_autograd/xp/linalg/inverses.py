"""``linalg`` rules for inverses and determinants: ``inv``, ``det``, ``slogdet``, ``pinv``
(``solve`` is :func:`.support.solve_left`).

Each is a primitive computing numpy's value, with a VJP and a JVP written in
differentiable operations (so derivatives of every order exist):

* ``inv``: ``d(A^{-1}) = -A^{-1} dA A^{-1}``. A singular matrix has no inverse: numpy's
  ``LinAlgError``, traced or not.
* ``det``: the gradient is the cofactor matrix, ``det(A) A^{-T}`` for an invertible
  ``A``. At a singular ``A`` it is still defined (the cofactors are polynomials) and is
  computed from the SVD (``U adj(S) V^T det(U V^T)``): exact to first order; a second
  derivative at an exactly singular matrix is refused (``UnsupportedError``).
* ``slogdet``: ``d log|det A| = tr(A^{-1} dA)``; the sign is piecewise constant
  (derivative 0). At a singular matrix ``log|det|`` is ``-inf`` and has no derivative:
  refused.
* ``pinv``: the derivative of the pseudo-inverse at constant rank (Golub and Pereyra):
  ``-A^+ dA A^+ + A^+ A^{+T} dA^T (I - A A^+) + (I - A^+ A) dA^T A^{+T} A^+``. numpy's
  ``pinv`` cuts singular values below ``rtol`` times the largest, so its rank is
  constant for perturbations below that cut and this is the derivative of what it
  computes; where a singular value crosses the cut, the pseudo-inverse jumps.
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defvjp, primitive

from ...tracing.boxes import raw_value
from ..support import is_traced
from .support import T, eye, matmul, refuse

__all__ = ["cofactors", "det", "inv", "pinv", "slogdet_pair"]


@primitive  # type: ignore[untyped-decorator]
def inv(a: Any) -> Any:
    """numpy's inverse of each matrix of a stack (differentiable)."""
    return np.linalg.inv(a)


defvjp(inv, lambda ans, a: lambda g: -matmul(matmul(T(ans), g), T(ans)))
defjvp(inv, lambda g, ans, a: -matmul(matmul(ans, g), ans))


def _lift(g: Any) -> Any:
    """A stack of numbers as a stack of 1 by 1 matrices (to scale matrices)."""
    return anp.reshape(g, (*anp.shape(g), 1, 1))


def cofactors(a: Any) -> Any:
    """The cofactor matrix of each matrix of a stack (``det(a) a^{-T}`` where ``a`` is
    invertible), the gradient of ``det``; differentiable where ``a`` is invertible."""
    value = np.asarray(raw_value(a))
    try:
        np.linalg.inv(value)
    except np.linalg.LinAlgError:
        if is_traced(a):
            raise refuse(
                "det",
                "a second derivative of det at an exactly singular matrix is not computed "
                "(the first derivative is, from the SVD)",
                "differentiate det once there, or move away from the singular matrix",
            ) from None
        return _singular_cofactors(value)
    return _lift(det(a)) * T(inv(a))


def _singular_cofactors(a: np.ndarray) -> np.ndarray:
    # a = U S V^T: adj(a) = V adj(S) U^T det(U) det(V^T), adj(S) = diag(prod_{j != i} s_j)
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    others = np.stack(
        [np.prod(np.delete(s, i, axis=-1), axis=-1) for i in range(n)], axis=-1
    ) if n else s  # fmt: skip
    sign = np.linalg.det(u) * np.linalg.det(vh)
    cofactor: np.ndarray = (u * others[..., None, :]) @ vh * sign[..., None, None]
    return cofactor


@primitive  # type: ignore[untyped-decorator]
def det(a: Any) -> Any:
    """numpy's determinant of each matrix of a stack (differentiable, also where
    singular)."""
    return np.linalg.det(a)


defvjp(det, lambda ans, a: lambda g: _lift(g) * cofactors(a))
defjvp(det, lambda g, ans, a: anp.sum(cofactors(a) * g, axis=(-2, -1)))


@primitive  # type: ignore[untyped-decorator]
def slogdet_pair(a: Any) -> Any:
    """numpy's ``slogdet`` of each matrix of a stack, as one array ``(..., 2)``: the sign
    then ``log|det|`` (one primitive, one factorisation; split by indexing)."""
    sign, logabsdet = np.linalg.slogdet(a)
    return np.stack([sign, logabsdet], axis=-1)


def _inverse_transpose(a: Any) -> Any:
    try:
        np.linalg.inv(np.asarray(raw_value(a)))
    except np.linalg.LinAlgError:
        raise refuse(
            "slogdet",
            "the matrix is singular, where log|det| is -inf",
            "keep the matrix invertible (a jitter `A + eps * I`), or differentiate det",
        ) from None
    return T(inv(a))


defvjp(slogdet_pair, lambda ans, a: lambda g: _lift(g[..., 1]) * _inverse_transpose(a))
defjvp(
    slogdet_pair,
    lambda g, ans, a: anp.stack(
        [anp.zeros_like(ans[..., 0]), anp.sum(_inverse_transpose(a) * g, axis=(-2, -1))],
        axis=-1,
    ),
)


@primitive  # type: ignore[untyped-decorator]
def pinv(a: Any, *, rtol: Any = None) -> Any:
    """numpy's pseudo-inverse of each matrix of a stack (``rtol``: the standard's
    cut-off; ``None``, the standard's default ``max(m, n) * eps``), differentiable at
    constant rank."""
    return np.linalg.pinv(a, rtol=rtol)


def _pinv_tangent(g: Any, ans: Any, a: Any, rtol: Any = None) -> Any:
    m, n = anp.shape(a)[-2:]
    left = eye(m, ans) - matmul(a, ans)  # I - A A+
    right = eye(n, ans) - matmul(ans, a)  # I - A+ A
    return (
        -matmul(matmul(ans, g), ans)
        + matmul(matmul(matmul(ans, T(ans)), T(g)), left)
        + matmul(matmul(matmul(right, T(g)), T(ans)), ans)
    )


def _pinv_vjp(ans: Any, a: Any, rtol: Any = None) -> Any:
    def vjp(g: Any) -> Any:
        m, n = anp.shape(a)[-2:]
        left = eye(m, ans) - matmul(a, ans)
        right = eye(n, ans) - matmul(ans, a)
        return (
            -matmul(matmul(T(ans), g), T(ans))
            + matmul(matmul(left, T(g)), matmul(ans, T(ans)))
            + matmul(matmul(T(ans), ans), matmul(T(g), right))
        )

    return vjp


defvjp(pinv, _pinv_vjp)
defjvp(pinv, _pinv_tangent)
