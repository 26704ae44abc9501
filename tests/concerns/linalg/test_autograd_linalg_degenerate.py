"""The autograd ``linalg`` extension where derivatives are degenerate: repeated eigen- and
singular values, singular and rank-deficient matrices, norms at zero and at ties -- each
either differentiated as the module docs say, against closed forms (or finite
differences, where the function stays smooth), or refused with an ``UnsupportedError``
naming the fix. Plus a Gaussian-process log-likelihood end to end."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd

pytest.importorskip("autograd")

import adswitch as ad
from adswitch.errors import UnsupportedError

B = "autograd"
_Q, _ = np.linalg.qr(np.random.default_rng(2).standard_normal((4, 4)))
REPEATED = _Q @ np.diag([1.0, 1.0, 2.0, 3.5]) @ _Q.T  # eigenvalue 1 twice
REPEATED = 0.5 * (REPEATED + REPEATED.T)
_U, _ = np.linalg.qr(np.random.default_rng(4).standard_normal((4, 3)))
_V, _ = np.linalg.qr(np.random.default_rng(5).standard_normal((3, 3)))
SINGULAR_TWICE = _U @ np.diag([2.0, 2.0, 0.5]) @ _V.T  # singular value 2 twice (tall)
RANK_TWO = _U @ np.diag([2.0, 1.0, 0.0]) @ _V.T  # a zero singular value (tall)


def _xp(x: Any) -> Any:
    return ad.array_namespace(x)


def _gradient(f: Callable[[Any, Any], Any], x: np.ndarray) -> np.ndarray:
    (g,) = ad.gradient(lambda v: f(_xp(v), v), x.copy(), backend=B)
    return np.asarray(g)


def _lower_read(g: np.ndarray) -> np.ndarray:
    """The gradient of a function of the symmetric matrix numpy reads from the lower
    triangle, from its symmetric gradient ``g``."""
    return np.tril(g) + np.tril(g.T, -1)


# -- repeated eigenvalues ----------------------------------------------------------------
def test_symmetric_functions_of_repeated_eigenvalues_are_differentiated() -> None:
    # d(w0 + w1) = the projector onto their eigenspace (lower triangle read)
    p = _Q[:, :2] @ _Q[:, :2].T
    for f in (
        lambda xp, x: xp.sum(xp.linalg.eigh(x).eigenvalues[:2]),
        lambda xp, x: xp.sum(xp.linalg.eigvalsh(x)[:2] ** 2),  # 2 * w0 + 2 * w1, w = 1
    ):
        g = _gradient(f, REPEATED)
        np.testing.assert_allclose(g / g[3, 3] * p[3, 3], _lower_read(p), atol=1e-10)
    # the sum of all: the trace, whose gradient is the identity
    g = _gradient(lambda xp, x: xp.sum(xp.linalg.eigvalsh(x)), np.eye(3))
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)
    # finite differences agree where the function is smooth (the pair stays summed)
    f = lambda xp, x: xp.sum(xp.linalg.eigvalsh(x)[:2] * 3.0) + xp.linalg.eigvalsh(x)[3]  # noqa: E731
    expected = central_fd(lambda x: f(np, x), REPEATED)
    np.testing.assert_allclose(_gradient(f, REPEATED), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    ("f", "match"),
    [
        (lambda xp, x: xp.linalg.eigvalsh(x)[0], "sum"),
        (lambda xp, x: xp.linalg.eigh(x).eigenvalues[1] * 2.0, "sum"),
    ],
    ids=["eigvalsh", "eigh"],
)
def test_one_of_two_equal_eigenvalues_is_refused(f: Callable[[Any, Any], Any], match: str) -> None:
    with pytest.raises(UnsupportedError, match=rf"linalg\.eig.*equal.*Fix:.*{match}"):
        _gradient(f, REPEATED)


def _projector(xp: Any, x: Any) -> Any:
    v = xp.linalg.eigh(x).eigenvectors[:, :2]
    return xp.sum(v @ xp.linalg.matrix_transpose(v))


def _shifted(xp: Any, x: Any) -> Any:
    w, v = xp.linalg.eigh(x)
    return xp.sum((v * (w - 1.0)) @ xp.linalg.matrix_transpose(v))  # sum(x - I)


@pytest.mark.parametrize("f", [_projector, _shifted], ids=["projector", "matrix-function"])
def test_eigenvectors_at_a_repeated_eigenvalue_are_refused(f: Callable[[Any, Any], Any]) -> None:
    # sum(V diag(w - 1) V^T) is sum(x - I), gradient ones; at the identity its cotangents
    # are those of sum(w), gradient I: nothing computed from them could be right for both
    assert _gradient(lambda xp, x: xp.sum(xp.linalg.eigh(x).eigenvalues), np.eye(2)).trace() == 2
    with pytest.raises(UnsupportedError, match=r"linalg\.eigh.*repeated.*Fix:.*eigvalsh"):
        _gradient(f, np.eye(2) if f is _shifted else REPEATED)


def test_forward_mode_and_second_derivatives_at_a_repeated_eigenvalue() -> None:
    diag = np.diag([1.0, 1.0, 2.0])
    f = lambda v: _xp(v).linalg.eigvalsh(v)  # noqa: E731
    # a direction that moves the repeated pair together: the derivative exists
    _, dw = ad.jvp(f, (diag,), (np.diag([0.3, 0.3, 0.5]),), backend=B)
    np.testing.assert_allclose(dw, [0.3, 0.3, 0.5])
    # ones that split it: the sorted eigenvalues have a kink in t (here min(.3t, -.2t))
    split = np.zeros((3, 3))
    split[1, 0] = split[0, 1] = 1.0
    for direction in (split, np.diag([0.3, -0.2, 0.5])):
        # (the engine retries a refused JVP rule by transposing the VJP, which refuses too)
        with pytest.raises(UnsupportedError, match=r"linalg\.eigvalsh.*(splits|forward-mode)"):
            ad.jvp(f, (diag,), (direction,), backend=B)
    # second derivatives go through the eigenvectors: refused there
    with pytest.raises(UnsupportedError, match=r"linalg\.eig.*repeated"):
        ad.hvp(lambda v: _xp(v).sum(f(v)), (diag,), (split,), backend=B)


# -- repeated and zero singular values -------------------------------------------------
def test_svd_at_a_repeated_singular_value() -> None:
    def total(xp: Any, x: Any) -> Any:
        return xp.sum(xp.linalg.svd(x, full_matrices=False).S * np.array([2.0, 2.0, 1.0]))

    expected = central_fd(lambda x: total(np, x), SINGULAR_TWICE)
    np.testing.assert_allclose(_gradient(total, SINGULAR_TWICE), expected, rtol=1e-6, atol=1e-8)
    with pytest.raises(UnsupportedError, match=r"linalg\.svd.*equal"):
        _gradient(lambda xp, x: xp.linalg.svd(x, full_matrices=False)[1][0], SINGULAR_TWICE)
    with pytest.raises(UnsupportedError, match=r"linalg\.svd.*repeated or zero"):
        _gradient(
            lambda xp, x: xp.sum(xp.linalg.svd(x, full_matrices=False).U ** 2), SINGULAR_TWICE
        )


def test_zero_singular_values_have_zero_slope() -> None:
    # sum of singular values (the nuclear norm) at rank 2: U_2 V_2^T, the zero one adds 0
    expected = _U[:, :2] @ _V[:, :2].T
    for f in (
        lambda xp, x: xp.sum(xp.linalg.svdvals(x)),
        lambda xp, x: xp.linalg.matrix_norm(x, ord="nuc"),
        lambda xp, x: xp.sum(xp.linalg.svd(x, full_matrices=False).S),
    ):
        np.testing.assert_allclose(_gradient(f, RANK_TWO), expected, atol=1e-10)
    # the smallest singular value, zero: a kink, slope 0 (as abs at 0)
    g = _gradient(lambda xp, x: xp.linalg.matrix_norm(x, ord=-2), RANK_TWO)
    np.testing.assert_array_equal(g, np.zeros((4, 3)))
    # the singular vectors of a rank-deficient matrix are not unique
    with pytest.raises(UnsupportedError, match="zero"):
        _gradient(lambda xp, x: xp.sum(xp.linalg.svd(x, full_matrices=False)[0] ** 2), RANK_TWO)


def test_full_matrices_and_complete_qr_of_non_square_matrices_are_refused() -> None:
    with pytest.raises(UnsupportedError, match="full_matrices=False"):
        _gradient(lambda xp, x: xp.sum(xp.linalg.svd(x)[0]), np.ones((3, 2)) + np.eye(3, 2))
    with pytest.raises(UnsupportedError, match="mode='reduced'"):
        _gradient(lambda xp, x: xp.sum(xp.linalg.qr(x, mode="complete")[0]), np.eye(3, 2))


# -- singular and rank-deficient matrices ----------------------------------------------
def _cofactors(a: np.ndarray) -> np.ndarray:
    """The cofactor matrix by its definition (signed minors)."""
    n = a.shape[0]
    out = np.zeros_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=0), j, axis=1)
            out[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


@pytest.mark.parametrize("rank", [2, 1, 0])
def test_det_at_a_singular_matrix_is_the_cofactor_matrix(rank: int) -> None:
    rng = np.random.default_rng(rank)
    a = rng.standard_normal((3, rank)) @ rng.standard_normal((rank, 3))
    g = _gradient(lambda xp, x: xp.linalg.det(x), a)
    np.testing.assert_allclose(g, _cofactors(a), atol=1e-12)


def test_second_derivative_of_det_at_a_singular_matrix_is_refused() -> None:
    with pytest.raises(UnsupportedError, match=r"linalg\.det.*singular"):
        ad.hvp(lambda v: _xp(v).linalg.det(v), (np.ones((2, 2)),), (np.eye(2),), backend=B)


@pytest.mark.parametrize(
    ("name", "f", "match"),
    [
        ("slogdet", lambda xp, x: xp.linalg.slogdet(x).logabsdet, "jitter"),
        ("qr", lambda xp, x: xp.sum(xp.linalg.qr(x)[1]), "full-rank"),
    ],
)
def test_singular_slogdet_and_rank_deficient_qr_are_refused(
    name: str, f: Callable[[Any, Any], Any], match: str
) -> None:
    with pytest.raises(UnsupportedError, match=rf"linalg\.{name}.*{match}"):
        _gradient(f, np.array([[1.0, 2.0], [2.0, 4.0]]))


def test_pinv_of_a_rank_deficient_matrix_at_constant_rank() -> None:
    # a rank-one family stays rank one: its pseudo-inverse is smooth along it
    u0, v0 = np.array([1.0, 2.0, -1.0]), np.array([0.5, -1.0])

    def f(xp: Any, t: Any) -> Any:
        a = xp.linalg.outer(u0 + t[0] * np.array([0.3, 0.0, 1.0]), v0 + t[1] * np.array([1.0, 0.2]))
        return xp.sum(xp.linalg.pinv(a) * np.arange(6.0).reshape(2, 3))

    t = np.array([0.1, -0.2])
    np.testing.assert_allclose(_gradient(f, t), central_fd(lambda v: f(np, v), t), rtol=1e-6)


def test_singular_inv_and_solve_raise_numpys_error_traced_too() -> None:
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    for f in (lambda xp, x: xp.sum(xp.linalg.inv(x)), lambda xp, x: xp.sum(xp.linalg.solve(x, x))):
        with pytest.raises(np.linalg.LinAlgError):
            f(np, singular)
        with pytest.raises(np.linalg.LinAlgError):
            _gradient(f, singular)


# -- norms at zero and at ties ---------------------------------------------------------
VECTOR_ORDS = [2, 1, 3, 0.5, -1, 0, math.inf, -math.inf]
MATRIX_ORDS = ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]


@pytest.mark.filterwarnings("ignore:divide by zero")  # numpy's own, computing 0 ** -1
@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norms_at_zero_have_slope_zero(ord: float) -> None:
    g = _gradient(lambda xp, x: xp.linalg.vector_norm(x, ord=ord), np.zeros(3))
    np.testing.assert_array_equal(g, np.zeros(3))


@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norms_at_zero_have_slope_zero(ord: Any) -> None:
    g = _gradient(lambda xp, x: xp.linalg.matrix_norm(x, ord=ord), np.zeros((2, 3)))
    np.testing.assert_array_equal(g, np.zeros((2, 3)))


def test_norm_ties_share_the_slope_equally() -> None:
    g = _gradient(lambda xp, x: xp.linalg.vector_norm(x, ord=xp.inf), np.array([-2.0, 1.0, 2.0]))
    np.testing.assert_array_equal(g, [-0.5, 0.0, 0.5])
    # the spectral norm at the identity: every singular value is the largest
    g = _gradient(lambda xp, x: xp.linalg.matrix_norm(x, ord=2), np.eye(3))
    np.testing.assert_allclose(g, np.eye(3) / 3.0, atol=1e-12)
    # columns 0 and 2 tie for the largest absolute sum
    a = np.array([[1.0, 0.5, -2.0], [-2.0, 0.5, 1.0]])
    g = _gradient(lambda xp, x: xp.linalg.matrix_norm(x, ord=1), a)
    np.testing.assert_array_equal(g, np.sign(a) * np.array([0.5, 0.0, 0.5]))


def test_vector_norms_of_order_below_one_at_a_zero_element() -> None:
    x = np.array([0.0, 1.0, 2.0])
    g = _gradient(lambda xp, v: xp.linalg.vector_norm(v, ord=0.5), x)
    n = (1.0 + math.sqrt(2.0)) ** 2  # d/dx_i = (n / |x_i|)^(1/2) away from 0, 0 at 0
    np.testing.assert_allclose(g, [0.0, n**0.5, (n / 2.0) ** 0.5])


# -- a Gaussian process, end to end --------------------------------------------------------
POINTS = np.random.default_rng(21).uniform(-2.0, 2.0, (7, 2))
TARGETS = np.sin(POINTS[:, 0]) + 0.3 * POINTS[:, 1]


def gp_log_likelihood(xp: Any, params: Any, points: Any) -> Any:
    """The log marginal likelihood of TARGETS under a squared-exponential kernel with
    log length scale, log signal variance and log noise ``params``: the data fit through
    a Cholesky factor and ``solve``, the complexity through ``slogdet``."""
    y = xp.asarray(TARGETS, dtype=points.dtype)
    diff = points[:, None, :] - points[None, :, :]
    sq = xp.sum(diff * diff, axis=-1)
    n = points.shape[0]
    k = xp.exp(params[1]) * xp.exp(-0.5 * sq / xp.exp(2.0 * params[0]))
    k = k + (xp.exp(params[2]) + 1e-6) * xp.eye(n, dtype=points.dtype)
    chol = xp.linalg.cholesky(k)
    z = xp.linalg.solve(chol, y)
    fit = -0.5 * xp.sum(z * z)
    complexity = -0.5 * xp.linalg.slogdet(k).logabsdet
    return fit + complexity - 0.5 * n * math.log(2.0 * math.pi)


PARAMS = np.array([-0.2, 0.3, -1.5])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gaussian_process_log_likelihood_gradient(dtype: Any) -> None:
    params, points = PARAMS.astype(dtype), POINTS.astype(dtype)
    gp, gx = ad.gradient(lambda p, x: gp_log_likelihood(_xp(p), p, x), params, points, backend=B)
    assert gp.dtype == dtype and gx.dtype == dtype
    want_p = central_fd(lambda p: gp_log_likelihood(np, p, POINTS), PARAMS)
    want_x = central_fd(lambda x: gp_log_likelihood(np, PARAMS, x), POINTS)
    rtol = 1e-6 if dtype == np.float64 else 2e-3
    np.testing.assert_allclose(gp, want_p, rtol=rtol, atol=rtol * np.abs(want_p).max())
    np.testing.assert_allclose(gx, want_x, rtol=rtol, atol=rtol * np.abs(want_x).max())


def test_gaussian_process_log_likelihood_hessian() -> None:
    h = ad.hessian(lambda p: gp_log_likelihood(_xp(p), p, POINTS), PARAMS, backend=B)[0][0]
    step = 1e-4
    expected = np.zeros((3, 3))
    for i in range(3):
        e = np.zeros(3)
        e[i] = step
        grad = lambda p: central_fd(lambda q: gp_log_likelihood(np, q, POINTS), p, step=1e-5)  # noqa: E731
        expected[:, i] = (grad(PARAMS + e) - grad(PARAMS - e)) / (2 * step)
    np.testing.assert_allclose(h, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
