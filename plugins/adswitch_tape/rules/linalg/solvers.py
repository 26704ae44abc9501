"""Gradient and tangent rules of the inverse, the solver, the determinants and the
pseudo-inverse (``inv``, ``solve``, ``det``, ``cofactor``, ``slogdet``, ``pinv``).

Rules as in ``products``: batch-aware (cotangents and tangents may carry leading
batch axes; saved values broadcast against them, see ``helpers``), written with
primitives so that an enclosing call records them (any order of derivatives).

Degeneracy:

* ``inv``, ``solve``: a singular matrix raises numpy's ``LinAlgError`` in the forward
  pass already, as in numpy.
* ``det``: its gradient is the cofactor matrix (the adjugate's transpose), computed from
  the SVD where the matrix is ill-conditioned, so it is right at singular matrices too
  (rank ``n - 1``: nonzero; lower rank: 0), where ``det * inv(x)^T`` fails. Its
  derivative (the second derivative of ``det``) is ``C tr(inv(x) t) - C t^T inv(x)^T``:
  exact away from singular matrices, a :class:`~.helpers.SingularMatrixError` at
  an exactly singular one.
* ``slogdet``: the sign has derivative 0; ``log|det|``'s gradient is ``inv(x)^T``,
  infinite at a singular matrix: a :class:`~.helpers.SingularMatrixError` at an
  exactly singular one (numpy's forward gives ``-inf``).
* ``pinv``: the derivative at constant rank (Golub and Pereyra's formula), the rank as
  numpy's cut ``rtol`` decides it; the pseudo-inverse is not continuous where the rank
  changes, and no derivative exists there.
"""

from __future__ import annotations

from typing import Any

from ...recording import defjvp, defvjp
from .. import primitives as P
from ..helpers import pad, shape_of, unbroadcast
from . import primitives as M
from .helpers import mT, part, singular

Tangents = tuple[Any, ...]


# -- inv: d(inv x) = -inv(x) dx inv(x) -----------------------------------------------------
defvjp(M.inv, lambda g, ans, x: -P.matmul_nt(P.matmul_tn(ans, g), ans))
defjvp(M.inv, lambda ts, ans, x: -P.matmul(P.matmul(ans, ts[0]), ans))


# -- solve: x = inv(a) b; db -> inv(a) db, da -> -inv(a) da x ------------------------------
def _solve_a(g: Any, ans: Any, a: Any, b: Any) -> Any:
    return unbroadcast(-P.matmul_nt(M.solve(mT(a), g), ans), a)


def _solve_b(g: Any, ans: Any, a: Any, b: Any) -> Any:
    return unbroadcast(M.solve(mT(a), g), b)


def _solve_jvp(ts: Tangents, ans: Any, a: Any, b: Any) -> Any:
    ta, tb = ts
    rank = len(shape_of(ans))  # the tangents padded to it: a's or b's stack may be smaller
    rhs = None if tb is None else pad(tb, rank)
    if ta is not None:
        term = P.matmul(pad(ta, rank), ans)
        rhs = -term if rhs is None else rhs - term
    return M.solve(a, rhs)  # (broadcast against a's stack: batch + ans.shape)


defvjp(M.solve, _solve_a, _solve_b)
defjvp(M.solve, _solve_jvp)


# -- det: the gradient is the cofactor matrix ----------------------------------------------
def _scalar_per_matrix(g: Any) -> Any:
    """A cotangent of one number per matrix, shaped to scale whole matrices."""
    return P.reshape(g, shape=(*shape_of(g), 1, 1))


defvjp(M.det, lambda g, ans, x: _scalar_per_matrix(g) * M.cofactor(x))
defjvp(M.det, lambda ts, ans, x: P.sum(ts[0] * M.cofactor(x), axis=(-2, -1)))


def _inverse_transposed(x: Any, what: str, fix: str) -> Any:
    with singular(what, fix):
        return mT(M.inv(x))


def _cofactor_derivative(t: Any, ans: Any, x: Any) -> Any:
    """``dC = C tr(inv(x) t) - C t^T inv(x)^T``: the Hessian of ``det`` applied to ``t``.
    Symmetric (``C`` is a gradient), so the gradient rule is the tangent rule."""
    inv_t = _inverse_transposed(
        x,
        "the second derivative of xp.linalg.det at a singular matrix is not implemented",
        "differentiate det once only there, or compute it at a nearby regular matrix",
    )
    trace = P.sum(inv_t * t, axis=(-2, -1), keepdims=True)
    return trace * ans - P.matmul(P.matmul_nt(ans, t), inv_t)


defvjp(M.cofactor, _cofactor_derivative)
defjvp(M.cofactor, lambda ts, ans, x: _cofactor_derivative(ts[0], ans, x))


# -- slogdet: (sign, log|det|); d log|det x| = tr(inv(x) dx) -------------------------------
_LOG_SINGULAR = (
    "the gradient of log|det(x)| (xp.linalg.slogdet) is inv(x)^T, infinite at this singular matrix",
    "keep the matrix regular (add a multiple of the identity), or use xp.linalg.det, whose "
    "gradient exists at singular matrices",
)


def _slogdet_vjp(g: Any, ans: Any, x: Any) -> Any:
    return _scalar_per_matrix(part(g, 1)) * _inverse_transposed(x, *_LOG_SINGULAR)


def _slogdet_jvp(ts: Tangents, ans: Any, x: Any) -> Any:
    d_log = P.sum(ts[0] * _inverse_transposed(x, *_LOG_SINGULAR), axis=(-2, -1))
    return P.stack(P.multiply(d_log, 0.0), d_log, axis=-1)  # the sign's is 0


defvjp(M.slogdet, _slogdet_vjp)
defjvp(M.slogdet, _slogdet_jvp)


# -- pinv: X = pinv(A), at constant rank ---------------------------------------------------
# dX = -X dA X + X X^T dA^T (I - A X) + (I - X A) dA^T X^T X
def _pinv_vjp(g: Any, ans: Any, x: Any, rtol: Any = None) -> Any:
    gt = mT(g)
    first = -P.matmul_tn(ans, P.matmul_nt(g, ans))
    second = P.matmul(gt - P.matmul(x, P.matmul_nt(ans, g)), P.matmul_nt(ans, ans))
    third = P.matmul(P.matmul_tn(ans, ans), gt - P.matmul(P.matmul_tn(g, ans), x))
    return first + second + third


def _pinv_jvp(ts: Tangents, ans: Any, x: Any, rtol: Any = None) -> Any:
    t = ts[0]
    tt = mT(t)
    first = -P.matmul(P.matmul(ans, t), ans)
    second = P.matmul(P.matmul_nt(ans, ans), tt - P.matmul(tt, P.matmul(x, ans)))
    third = P.matmul(tt - P.matmul(ans, P.matmul(x, tt)), P.matmul_tn(ans, ans))
    return first + second + third


defvjp(M.pinv, _pinv_vjp)
defjvp(M.pinv, _pinv_jvp)
