"""The ``linalg`` extension, second part: ``cholesky``, ``eigh``/``eigvalsh``, ``qr``,
``svd``/``svdvals`` and a Gaussian-process log-likelihood.

Engines differ in conventions the standard leaves open, so every case is written to be
independent of them: symmetric matrices are made inside ``f`` (``(a + a^T) / 2``,
``b b^T + I``), as engines read different triangles and symmetrize gradients
differently; only quantities invariant under the eigenvectors' and singular vectors'
signs (``v_i v_i^T``, ``U diag(h(s)) V^T``) and ``qr``'s signs (``Q_ij R_jj``) are used.
References: finite differences, including at repeated eigenvalues and singular values
for the well-posed functions there (symmetric functions of the eigenvalues, projectors
onto an eigenspace, the polar factor ``U V^T``); closed forms or a subgradient check
where the function has a kink (the smallest of a repeated eigenvalue). Where the
eigenvectors or singular vectors themselves are not differentiable, an engine may
refuse with an ``UnsupportedError`` instead (the promise: the right number or a clear
error)."""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad

from .case import Case, arr
from .cases_linalg import NESTED, REFUSED, regular, spread

F = "linalg"


def _sym(xp: Any, a: Any) -> Any:
    return (a + xp.linalg.matrix_transpose(a)) / 2.0


def _gram(xp: Any, b: Any) -> Any:
    """``b b^T + I``: symmetric positive definite."""
    n = b.shape[-2]
    return xp.linalg.matmul(b, xp.linalg.matrix_transpose(b)) + xp.eye(n, dtype=b.dtype)


def _cholesky(b: Any, stack: Any) -> Any:
    xp = ad.array_namespace(b, stack)
    la = xp.linalg
    low = la.cholesky(_gram(xp, b))
    up = la.cholesky(_gram(xp, b), upper=True)
    return (
        xp.sum(low * xp.asarray(arr(110, 3, 3)))
        + xp.sum(up**3)
        + xp.sum(xp.log(la.diagonal(la.cholesky(_gram(xp, stack)))))
    )


def _eigvalsh(a: Any) -> Any:
    xp = ad.array_namespace(a)
    w = xp.linalg.eigvalsh(_sym(xp, a) + 3.0 * xp.eye(3, dtype=a.dtype))
    return xp.sum(w * xp.asarray([1.0, -2.0, 0.5])) + xp.sum(xp.log(w))


def _eigh_vectors(a: Any) -> Any:
    xp = ad.array_namespace(a)
    w, v = xp.linalg.eigh(_sym(xp, a))
    c = xp.asarray(arr(111, 3, 3))
    quadratic = xp.sum(v * xp.linalg.matmul(c, v), axis=0)  # v_i^T C v_i: sign-invariant
    return xp.sum(quadratic * xp.asarray([1.0, 2.0, -1.5])) + xp.sum(w**2 * quadratic)


def _eigh_stack(a: Any) -> Any:
    xp = ad.array_namespace(a)
    w, v = xp.linalg.eigh(_sym(xp, a))
    return xp.sum(w**3) + xp.sum(v[..., 0, :] ** 2 * w)


def _repeated() -> Any:
    """A symmetric matrix with the eigenvalues 1, 1, 3 (the 1 repeated)."""
    q = np.linalg.qr(arr(112, 3, 3))[0]
    return (q * np.array([1.0, 1.0, 3.0])) @ q.T


def _sum_of_squares(a: Any) -> Any:
    xp = ad.array_namespace(a)
    return xp.sum(xp.linalg.eigvalsh(_sym(xp, a)) ** 2)


def _smallest(a: Any) -> Any:
    xp = ad.array_namespace(a)
    return xp.min(xp.linalg.eigvalsh(_sym(xp, a)))


def _check_smallest(grads: Any, a: Any) -> str | None:
    """At a repeated smallest eigenvalue ``lambda_min`` is not differentiable; its
    subgradients are the ``H = sum_k c_k u_k u_k^T`` (``c_k >= 0``, summing to 1) over the
    eigenspace: symmetric, positive semi-definite, trace 1, supported on the eigenspace."""
    g = grads[0]
    if not isinstance(g, np.ndarray) or g.shape != a.shape:
        return f"expected a gradient array of shape {a.shape}, got {type(g).__name__}"
    w, v = np.linalg.eigh((a + a.T) / 2)
    low = v[:, np.abs(w - w[0]) < 1e-8]
    projector = low @ low.T
    if not np.all(np.isfinite(g)):
        return f"not finite: {g.tolist()}"
    if not np.allclose(g, g.T, atol=1e-8):
        return f"not symmetric: {g.tolist()}"
    if not np.allclose(projector @ g @ projector, g, atol=1e-8):
        return f"not supported on the repeated eigenvalue's eigenspace: {g.tolist()}"
    if abs(np.trace(g) - 1.0) > 1e-8 or np.linalg.eigvalsh(g).min() < -1e-8:
        return f"not a convex combination of u u^T (trace 1, PSD): {g.tolist()}"
    return None


def _projector(a: Any) -> Any:
    """``<C, P>`` for ``P`` the projector onto the repeated eigenvalue's eigenspace (the
    two lowest): smooth there although the eigenvectors themselves are not."""
    xp = ad.array_namespace(a)
    w, v = xp.linalg.eigh(_sym(xp, a))
    low = v[:, :2]
    p = xp.linalg.matmul(low, xp.linalg.matrix_transpose(low))
    return xp.sum(p * xp.asarray(arr(113, 3, 3))) + xp.sum(w**2)


def _qr_invariants(xp: Any, q: Any, r: Any) -> Any:
    """Sign-invariant quantities of a QR: ``Q_ij R_jj`` and ``R_ij R_ii``."""
    d = xp.linalg.diagonal(r)
    k = d.shape[-1]
    return q * d, r[..., :k, :] * xp.reshape(d, (*d.shape, 1))


def _qr(a: Any, wide: Any) -> Any:
    xp = ad.array_namespace(a, wide)
    qd, rd = _qr_invariants(xp, *xp.linalg.qr(a))
    wq, wr = _qr_invariants(xp, *xp.linalg.qr(wide))
    return (
        xp.sum(xp.sin(qd) * xp.asarray(arr(114, 4, 3)))
        + xp.sum(rd**2)
        + xp.sum(wq * xp.asarray(arr(115, 3, 3)))
        + xp.sum(wr * xp.asarray(arr(116, 3, 5)))
    )


def _svd_invariant(xp: Any, x: Any) -> Any:
    """``U diag(sin(s)) Vh`` and ``s``: invariant under flipping a pair ``(u_i, v_i)``."""
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    return xp.linalg.matmul(u * xp.sin(s)[..., None, :], vh), s


def _svd(tall: Any, wide: Any) -> Any:
    xp = ad.array_namespace(tall, wide)
    mt, st = _svd_invariant(xp, tall)
    mw, sw = _svd_invariant(xp, wide)
    return (
        xp.sum(mt * xp.asarray(arr(117, 4, 3)))
        + xp.sum(st**3)
        + xp.sum(mw * xp.asarray(arr(118, 2, 4)))
        + xp.sum(xp.exp(sw))
    )


def _polar(a: Any) -> Any:
    """``<C, U V^T>``, the polar factor: smooth wherever ``a`` is regular, also where its
    singular values repeat (here all equal: ``a`` is orthogonal)."""
    xp = ad.array_namespace(a)
    u, _, vh = xp.linalg.svd(a, full_matrices=False)
    return xp.sum(xp.linalg.matmul(u, vh) * xp.asarray(arr(119, 3, 3)))


def _svdvals(a: Any) -> Any:
    xp = ad.array_namespace(a)
    s = xp.linalg.svdvals(a)
    return xp.sum(s * xp.asarray([3.0, -1.0, 0.5])) + xp.sum(xp.linalg.svdvals(a[:2]) ** 2)


def _svdvals_sum_of_squares(a: Any) -> Any:
    xp = ad.array_namespace(a)
    return xp.sum(xp.linalg.svdvals(a) ** 2)


def _orthogonal() -> Any:
    return np.linalg.qr(arr(120, 3, 3))[0]


def gp_log_likelihood(theta: Any, x: Any, y: Any) -> Any:
    """The log marginal likelihood of a Gaussian process with a squared-exponential
    kernel, ``theta = (log lengthscale, log signal sd, log noise sd)``, through
    ``cholesky`` (the data fit), ``slogdet`` (the complexity term) and ``solve`` (the
    posterior weights, an aux output)."""
    xp = ad.array_namespace(theta)
    la = xp.linalg
    x, y = xp.asarray(x), xp.asarray(y)
    n = y.shape[0]
    ell, sf, sn = xp.exp(theta[0]), xp.exp(theta[1]), xp.exp(theta[2])
    d2 = (x[:, None] - x[None, :]) ** 2
    k = sf**2 * xp.exp(-0.5 * d2 / ell**2) + sn**2 * xp.eye(n, dtype=theta.dtype)
    z = la.solve(la.cholesky(k), y[:, None])
    logdet = la.slogdet(k)[1]
    alpha = la.solve(k, y)
    loss = -0.5 * xp.sum(z**2) - 0.5 * logdet - 0.5 * n * float(np.log(2.0 * np.pi))
    return loss, {"alpha": alpha}


def _gp_args() -> tuple[Any, ...]:
    x = np.linspace(-2.0, 2.0, 7)
    y = np.sin(1.3 * x) + 0.1 * arr(121, 7)
    return np.array([0.1, -0.2, -1.0]), ad.Const(x), ad.Const(y)


CASES = [
    Case(
        "linalg.cholesky",
        F,
        "cholesky of b b^T + I (lower and upper=True) and of a stack (2, 3, 3) (log of the "
        "diagonal: half the log-determinant)",
        _cholesky,
        lambda: (arr(122, 3, 3), arr(123, 2, 3, 3)),
    ),
    Case(
        "linalg.eigvalsh",
        F,
        "eigvalsh of a symmetric matrix made inside f, distinct eigenvalues: v_i v_i^T",
        _eigvalsh,
        lambda: (arr(124, 3, 3),),
    ),
    Case(
        "linalg.eigh",
        F,
        "eigh: eigenvalues and the sign-invariant v_i^T C v_i of each eigenvector "
        "(distinct eigenvalues)",
        _eigh_vectors,
        lambda: (regular(125, 3, 3) * 2.0 + np.diag([0.0, 1.0, 3.0]),),
    ),
    Case(
        "linalg.eigh_stack",
        F,
        "eigh of a stack (2, 3, 3) of symmetric matrices (eigenvalues, squared eigenvector "
        "entries)",
        _eigh_stack,
        lambda: (arr(126, 2, 3, 3) + np.diag([0.0, 1.0, 2.5]),),
    ),
    Case(
        "linalg.eigvalsh_repeated",
        F,
        "a symmetric function of the eigenvalues (the sum of squares, ||S||_F^2) at a repeated "
        "eigenvalue: closed form 2 S, where a rule dividing by eigenvalue gaps gives NaN",
        _sum_of_squares,
        lambda: (_repeated(),),
        closed_form=lambda a: (a + a.T,),
    ),
    Case(
        "linalg.eigvalsh_repeated_min",
        F,
        "the smallest eigenvalue where it is repeated (a kink): a subgradient (a convex "
        "combination of u u^T over its eigenspace), or a refusal; never NaN",
        _smallest,
        lambda: (_repeated(),),
        check=_check_smallest,
        also_ok=REFUSED,
    ),
    Case(
        "linalg.eigh_repeated_projector",
        F,
        "the projector onto a repeated eigenvalue's eigenspace, from eigh's eigenvectors: "
        "smooth there, finite differences' (or a refusal; never roundoff over roundoff)",
        _projector,
        lambda: (_repeated(),),
        also_ok=REFUSED,
    ),
    Case(
        "linalg.qr",
        F,
        "qr of a tall 4 x 3 and a wide 3 x 5 matrix: the sign-invariant Q_ij R_jj and R_ij R_ii",
        _qr,
        lambda: (spread(127, 4, 3), spread(128, 3, 5)),
    ),
    Case(
        "linalg.svd",
        F,
        "svd(full_matrices=False) of a tall and a wide matrix: U diag(sin s) Vh and the "
        "singular values (sign-invariant; distinct singular values)",
        _svd,
        lambda: (spread(129, 4, 3), spread(130, 2, 4)),
    ),
    Case(
        "linalg.svd_polar_repeated",
        F,
        "the polar factor U Vh of an orthogonal matrix, whose singular values are all 1: "
        "smooth there; only the rotation U and V share may be dropped, not all of dU, dV "
        "(or a refusal)",
        _polar,
        lambda: (_orthogonal(),),
        also_ok=REFUSED,
    ),
    Case(
        "linalg.svdvals",
        F,
        "svdvals of a 3 x 3 and of its first two rows (distinct singular values): u_i v_i^T",
        _svdvals,
        lambda: (spread(131, 3, 3),),
    ),
    Case(
        "linalg.svdvals_repeated",
        F,
        "the sum of squared singular values (||A||_F^2) of an orthogonal matrix (all equal): "
        "closed form 2 A",
        _svdvals_sum_of_squares,
        lambda: (_orthogonal(),),
        closed_form=lambda a: (2.0 * a,),
    ),
    Case(
        "linalg.gp_log_likelihood",
        F,
        "a Gaussian-process log marginal likelihood in its kernel's log-hyperparameters: "
        "cholesky, solve, slogdet end to end (and solve's weights as an aux output)",
        gp_log_likelihood,
        _gp_args,
    ),
    Case(
        "linalg.gp_hessian",
        F,
        "hessian of the Gaussian-process log-likelihood (second derivatives through "
        "cholesky, solve and slogdet)",
        gp_log_likelihood,
        _gp_args,
        entry="hessian",
        requires=NESTED,
    ),
]
