"""The tape's ``xp.linalg`` where derivatives degenerate, and a Gaussian process end to end.

Each documented convention (``rules/matrix_solvers.py``, ``rules/matrix_factorizations.py``)
against an independent oracle: ``det`` at singular matrices (the cofactor matrix, by
minors), repeated eigenvalues and singular values (symmetric functions of the values there, by
closed forms; functions of the vectors at regular points, by finite differences),
the lower-triangle reading of ``cholesky``/``eigh`` (numpy's own differences), and the
errors that say the fix (a singular ``slogdet``, a rank-deficient ``qr``, the complete
factors, a second derivative of ``det`` at a singular matrix; and at repeated eigen- or
singular values: functions of the vectors, kinks, forward mode across a repeated value,
second derivatives). The Gaussian-process
log-likelihood against its closed-form gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import UnsupportedError
from tests.engines.tape.test_tape_linalg import fd_gradient, fd_second

_rng = np.random.default_rng(99)
C = _rng.standard_normal((3, 3))
SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])  # rank 2
ROTATION = np.linalg.qr(_rng.standard_normal((3, 3)))[0]
REPEATED = (ROTATION * np.array([1.0, 1.0, 3.0])) @ ROTATION.T  # eigenvalues 1, 1, 3


def _la(x: Any) -> Any:
    return ad.array_namespace(x).linalg


def _xp(x: Any) -> Any:
    return ad.array_namespace(x)


def _sym(x: Any) -> Any:
    return (x + _la(x).matrix_transpose(x)) / 2.0


def _cofactors(a: np.ndarray) -> np.ndarray:
    n = a.shape[0]
    out = np.zeros_like(a)
    for i, j in np.ndindex(n, n):
        minor = np.delete(np.delete(a, i, 0), j, 1)
        out[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


# -- singular matrices ---------------------------------------------------------------------
@pytest.mark.parametrize("a", [SINGULAR, np.zeros((3, 3)), np.diag([2.0, 0.0, 0.0])])
def test_det_gradient_at_singular_matrices_is_the_cofactor_matrix(a: np.ndarray) -> None:
    (g,) = ad.gradient(lambda x: _la(x).det(x), a.copy(), backend="tape")
    np.testing.assert_allclose(g, _cofactors(a), atol=1e-12)


def test_det_second_derivative_at_a_regular_matrix_and_refused_at_a_singular_one() -> None:
    a = SINGULAR + np.diag([0.0, 0.5, 0.0])  # regular
    (hess,) = ad.hessian(lambda x: _la(x).det(x), a, backend="tape")
    u, v = _rng.standard_normal((3, 3)), _rng.standard_normal((3, 3))
    got = u.ravel() @ np.asarray(hess[0]).reshape(9, 9) @ v.ravel()
    assert got == pytest.approx(fd_second(lambda x: _la(x).det(x), a, u, v), rel=1e-6)
    with pytest.raises(UnsupportedError, match="Fix:") as info:
        ad.hessian(lambda x: _la(x).det(x), SINGULAR.copy(), backend="tape")
    assert isinstance(info.value, np.linalg.LinAlgError)  # also numpy's error


def test_slogdet_at_a_singular_matrix_gives_numpy_values_and_refuses_the_gradient() -> None:
    def f(x: Any) -> Any:
        sign, logabs = _la(x).slogdet(x)
        return logabs, {"sign": sign}

    with pytest.raises(UnsupportedError, match=r"infinite.*Fix:"):
        ad.gradient(f, SINGULAR.copy(), backend="tape")
    assert ad.withgradient(lambda x: _la(x).det(x), SINGULAR.copy(), backend="tape").val == 0.0


def test_inv_and_solve_of_a_singular_matrix_raise_as_numpy_does() -> None:
    for call in (lambda x: _la(x).inv(x), lambda x: _la(x).solve(x, x[0])):
        with pytest.raises(np.linalg.LinAlgError):
            ad.gradient(lambda x, call=call: _xp(x).sum(call(x)), SINGULAR.copy(), backend="tape")


def test_qr_of_dependent_columns_says_so() -> None:
    def f(x: Any) -> Any:
        q, r = _la(x).qr(x)
        return _xp(x).sum(q * _la(x).diagonal(r))

    with pytest.raises(UnsupportedError, match=r"full column rank"):
        ad.gradient(f, SINGULAR.T.copy(), backend="tape")


def test_cholesky_of_an_indefinite_matrix_raises_numpy_s_error() -> None:
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        ad.gradient(lambda x: _xp(x).sum(_la(x).cholesky(x)), -np.eye(2), backend="tape")


# -- repeated eigenvalues and singular values ----------------------------------------------
# (rules/matrix_spectra.py): functions of the vectors are refused there, symmetric
# functions of the values have their first derivative, kinks and second derivatives are
# refused; regular points keep their numbers (finite differences of numpy).
CE = np.array([[1.0, 2.0, 0.3], [2.0, 1.0, 0.5], [0.3, 0.5, -1.0]])
E01 = np.zeros((3, 3))
E01[0, 1] = 1.0


def _expm_trace(x: Any) -> Any:
    """``tr(C expm(sym x))`` through eigh: smooth everywhere."""
    w, v = _la(x).eigh(_sym(x))
    return _xp(x).sum(CE * ((v * _xp(x).exp(w)[None, :]) @ _la(x).matrix_transpose(v)))


def _reconstruction(x: Any) -> Any:
    """``sum(C * V diag(w) V^T) = sum(C * sym x)``: its gradient is ``sym(C)``-ish."""
    w, v = _la(x).eigh(_sym(x))
    return _xp(x).sum(C * ((v * w[None, :]) @ _la(x).matrix_transpose(v)))


def _svd_reconstruction(x: Any) -> Any:
    u, s, vh = _la(x).svd(x, full_matrices=False)
    return _xp(x).sum(C * ((u * s[None, :]) @ vh))


def _eig_squares(x: Any) -> Any:
    return _xp(x).sum(_la(x).eigvalsh(_sym(x)) ** 2)


def _projector(x: Any) -> Any:
    v = _la(x).eigh(_sym(x)).eigenvectors
    low = v[:, :2]
    return _xp(x).sum((low @ _la(x).matrix_transpose(low)) * C)


def _polar(x: Any) -> Any:
    u, _, vh = _la(x).svd(x, full_matrices=False)
    return _xp(x).sum((u @ vh) * C)


REGULAR_SYM = np.diag([1.0, 1.5, 2.0]) + 0.1 * (C + C.T)


@pytest.mark.parametrize(
    ("f", "a"),
    [
        (_expm_trace, np.diag([1.0, 1.5, 2.0])),
        (_expm_trace, REGULAR_SYM),
        (_reconstruction, REGULAR_SYM),
        (_projector, REGULAR_SYM),
        (_svd_reconstruction, np.diag([3.0, 2.0, 1.0]) + 0.1 * C),
        (_polar, np.diag([3.0, 2.0, 1.0]) + 0.1 * C),
    ],
    ids=["expm-diag", "expm", "eigh-reconstruction", "projector", "svd-reconstruction", "polar"],
)
def test_functions_of_the_vectors_at_regular_points_match_finite_differences(
    f: Any, a: np.ndarray
) -> None:
    (g,) = ad.gradient(f, a.copy(), backend="tape")
    np.testing.assert_allclose(g, fd_gradient(f, a), atol=1e-7)


@pytest.mark.parametrize(
    ("f", "a", "name"),
    [
        (_expm_trace, np.diag([1.0, 1.0, 2.0]), "eigh"),
        (_expm_trace, REPEATED, "eigh"),
        (_reconstruction, np.eye(3), "eigh"),
        (_reconstruction, np.diag([0.0, 0.0, 1.0]), "eigh"),
        (_projector, REPEATED, "eigh"),
        (_svd_reconstruction, np.diag([2.0, 2.0, 1.0]), "svd"),
        (_svd_reconstruction, SINGULAR, "svd"),  # a zero singular value
        (_polar, ROTATION, "svd"),
    ],
)
def test_functions_of_the_vectors_at_a_degenerate_spectrum_are_refused(
    f: Any, a: np.ndarray, name: str
) -> None:
    # (finite differences of the eigh ones are not 0 there: the masked terms were wrong)
    with pytest.raises(UnsupportedError, match=rf"xp\.linalg\.{name}'s .*vectors.*Fix:"):
        ad.gradient(f, a.copy(), backend="tape")


def test_forward_mode_through_the_eigenvectors_at_a_repeated_eigenvalue_is_refused() -> None:
    a = np.diag([1.0, 1.0, 2.0])
    assert np.abs(fd_gradient(_expm_trace, a)[0, 1]) > 1.0  # a nonzero true derivative
    with pytest.raises(UnsupportedError, match=r"xp\.linalg\.eigh.*Fix:"):
        ad.jvp(_expm_trace, (a,), (E01,), backend="tape")
    with pytest.raises(UnsupportedError, match=r"xp\.linalg\.eigh's eigenvectors"):
        ad.jvp(_expm_trace, (a,), (np.eye(3),), backend="tape")  # (a non-splitting one)


def test_symmetric_functions_of_repeated_eigenvalues_and_singular_values() -> None:
    (g,) = ad.gradient(_eig_squares, REPEATED.copy(), backend="tape")  # ||S||_F^2
    np.testing.assert_allclose(g, REPEATED + REPEATED.T, atol=1e-12)
    (g,) = ad.gradient(lambda x: _xp(x).sum(_la(x).eigvalsh(x)), np.eye(3), backend="tape")
    np.testing.assert_allclose(g, np.eye(3), atol=1e-15)  # the trace
    h = lambda x: _xp(x).sum(_la(x).svdvals(x) ** 2)  # ||A||_F^2  # noqa: E731
    for a in (np.eye(3), ROTATION, np.diag([2.0, 0.0, 0.0])):  # all repeated, or zeros
        (g,) = ad.gradient(h, a.copy(), backend="tape")
        np.testing.assert_allclose(g, 2.0 * a, atol=1e-12)


def test_forward_mode_along_a_repeated_eigenvalue_and_across_it() -> None:
    f = lambda x: _xp(x).sum(_la(x).eigvalsh(x) * np.array([1.0, 2.0, 3.0]))  # noqa: E731
    a = np.diag([1.0, 1.0, 2.0])
    _, t = ad.jvp(f, (a,), (np.eye(3),), backend="tape")  # moves 1, 1 together: 1 + 2 + 3
    assert float(t) == pytest.approx(6.0, abs=1e-12)
    with pytest.raises(UnsupportedError, match=r"xp\.linalg\.eigvalsh.*splits.*Fix:"):
        ad.jvp(f, (a,), (E01 + E01.T,), backend="tape")


def test_a_function_of_one_of_two_equal_eigenvalues_is_refused() -> None:
    f = lambda x: _la(x).eigvalsh(x)[0]  # noqa: E731  (a kink: min of the two)
    with pytest.raises(UnsupportedError, match=r"xp\.linalg\.eigvalsh.*different cotangents"):
        ad.gradient(f, np.diag([1.0, 1.0, 2.0]), backend="tape")


def test_second_derivatives_at_a_degenerate_spectrum_are_refused_and_kept_elsewhere() -> None:
    u, v = _rng.standard_normal((3, 3)), _rng.standard_normal((3, 3))
    for f, a, name in [
        (_eig_squares, REGULAR_SYM, "eigvalsh"),
        (lambda x: _la(x).matrix_norm(x, ord=2) ** 2, np.diag([3.0, 2.0, 1.0]) + 0.1 * C, ""),
        (lambda x: _la(x).matrix_norm(x, ord="nuc"), np.diag([3.0, 2.0, 1.0]) + 0.1 * C, ""),
    ]:
        (hess,) = ad.hessian(f, a.copy(), backend="tape")
        got = u.ravel() @ np.asarray(hess[0]).reshape(9, 9) @ v.ravel()
        assert got == pytest.approx(fd_second(f, a, u, v), rel=1e-5, abs=1e-6), name
    for f, a, name in [
        (_eig_squares, REPEATED, "eigvalsh"),
        (lambda x: _la(x).matrix_norm(x, ord=2) ** 2, np.diag([2.0, 2.0, 1.0]), "matrix_norm"),
        (lambda x: _la(x).matrix_norm(x, ord="nuc"), np.diag([2.0, 2.0, 1.0]), "matrix_norm"),
    ]:
        with pytest.raises(UnsupportedError, match=rf"xp\.linalg\.{name} at .*Fix:"):
            ad.hessian(f, a.copy(), backend="tape")


def test_spectral_norm_at_a_repeated_largest_singular_value_splits_evenly() -> None:
    a = ROTATION @ np.diag([2.0, 2.0, 1.0]) @ ROTATION.T  # (ties to rounding, not exact)
    (g,) = ad.gradient(lambda x: _la(x).matrix_norm(x, ord=2), a.copy(), backend="tape")
    expected = ROTATION[:, :2] @ ROTATION[:, :2].T / 2.0  # U_k V_k^T / k
    np.testing.assert_allclose(g, expected, atol=1e-12)


def test_nuclear_norm_at_a_rank_deficient_matrix_is_the_minimum_norm_subgradient() -> None:
    (g,) = ad.gradient(lambda x: _la(x).matrix_norm(x, ord="nuc"), SINGULAR.copy(), backend="tape")
    u, s, vh = np.linalg.svd(SINGULAR)
    # U_r V_r^T: a zero singular value has slope 0, as abs at 0 (before: U V^T, another
    # subgradient, where torch, jax and autograd give this one)
    r = int((s > 1e-10).sum())
    assert r < 3
    np.testing.assert_allclose(g, u[:, :r] @ vh[:r], atol=1e-10)
    _, tangent = ad.jvp(
        lambda x: _la(x).matrix_norm(x, ord="nuc"), (SINGULAR.copy(),), (g,), backend="tape"
    )
    assert float(tangent) == pytest.approx(float(np.sum(g * g)), abs=1e-10)  # <grad, t>


def test_largest_of_a_repeated_eigenvalue_splits_evenly() -> None:
    a = np.diag([3.0, 3.0, 1.0])
    (g,) = ad.gradient(lambda x: _xp(x).max(_la(x).eigvalsh(x)), a, backend="tape")
    np.testing.assert_allclose(g, np.diag([0.5, 0.5, 0.0]), atol=1e-12)


# -- conventions: the triangles read, the complete factors -----------------------------------
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradient_is_that_of_the_triangle_numpy_reads(upper: bool) -> None:
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    f = lambda x: _xp(x).sum(_la(x).cholesky(x, upper=upper) * C)  # noqa: E731
    (g,) = ad.gradient(f, a.copy(), backend="tape")
    expected = fd_gradient(f, a)  # numpy's: zero in the triangle it never reads
    np.testing.assert_allclose(g, expected, atol=1e-7)
    assert (np.triu(g, 1) if not upper else np.tril(g, -1)).any() == 0


def test_eigh_gradient_is_that_of_the_lower_triangle() -> None:
    a = np.array([[2.0, 0.3, -0.4], [0.3, 1.0, 0.1], [-0.4, 0.1, -1.0]])
    f = lambda x: _xp(x).sum(_la(x).eigvalsh(x) * np.array([1.0, 2.0, 3.0]))  # noqa: E731
    (g,) = ad.gradient(f, a.copy(), backend="tape")
    np.testing.assert_allclose(g, fd_gradient(f, a), atol=1e-7)
    assert not np.triu(g, 1).any()


@pytest.mark.parametrize(
    ("call", "fix"),
    [
        (lambda x: _la(x).svd(x), "full_matrices=False"),
        (lambda x: _la(x).qr(x, mode="complete"), "mode='reduced'"),
    ],
)
def test_complete_factors_of_tall_matrices_are_refused_with_the_fix(call: Any, fix: str) -> None:
    tall = np.ones((3, 2)) + np.eye(3, 2)
    with pytest.raises(UnsupportedError, match=fix):
        ad.gradient(lambda x: _xp(x).sum(call(x)[0]), tall, backend="tape")


def test_complete_factors_of_square_matrices_are_the_reduced_ones() -> None:
    a = np.array([[2.0, 0.5], [0.3, 1.0]])
    for call in (lambda x: _la(x).svd(x)[1], lambda x: _la(x).qr(x, mode="complete")[1] ** 2):
        f = lambda x, call=call: _xp(x).sum(call(x))  # noqa: E731
        (g,) = ad.gradient(f, a.copy(), backend="tape")
        np.testing.assert_allclose(g, fd_gradient(f, a), atol=1e-7)


# -- a Gaussian process, end to end ----------------------------------------------------------
X = np.linspace(-2.0, 2.0, 8)
Y = np.sin(1.3 * X) + 0.1 * _rng.standard_normal(8)


def _kernel(theta: Any, xp: Any) -> Any:
    ell, sf, sn = xp.exp(theta[0]), xp.exp(theta[1]), xp.exp(theta[2])
    d2 = (X[:, None] - X[None, :]) ** 2
    return sf**2 * xp.exp(-0.5 * d2 / ell**2) + sn**2 * np.eye(X.size)


def gp_log_likelihood(theta: Any) -> Any:
    xp = ad.array_namespace(theta)
    k = _kernel(theta, xp)
    z = xp.linalg.solve(xp.linalg.cholesky(k), Y)
    return -0.5 * xp.sum(z**2) - 0.5 * xp.linalg.slogdet(k)[1] - 0.5 * X.size * np.log(2 * np.pi)


def _closed_form_gradient(theta: np.ndarray) -> np.ndarray:
    """d log p / d theta_i = tr((alpha alpha^T - inv(K)) dK/dtheta_i) / 2."""
    ell, sf, sn = np.exp(theta)
    d2 = (X[:, None] - X[None, :]) ** 2
    se = sf**2 * np.exp(-0.5 * d2 / ell**2)
    k = se + sn**2 * np.eye(X.size)
    alpha = np.linalg.solve(k, Y)
    inner = np.outer(alpha, alpha) - np.linalg.inv(k)
    d_k = [se * d2 / ell**2, 2.0 * se, 2.0 * sn**2 * np.eye(X.size)]
    return np.array([0.5 * np.sum(inner * d) for d in d_k])


def test_gp_log_likelihood_gradient_and_hessian() -> None:
    theta = np.array([0.2, -0.1, -1.2])
    val, (g,) = ad.withgradient(gp_log_likelihood, theta.copy(), backend="tape")
    assert float(val) == pytest.approx(float(gp_log_likelihood(theta)), rel=1e-12)
    np.testing.assert_allclose(g, _closed_form_gradient(theta), rtol=1e-9, atol=1e-12)
    (hess,) = ad.hessian(gp_log_likelihood, theta.copy(), backend="tape")
    expected = np.stack([fd_gradient(_closed_form_gradient_i(i), theta) for i in range(3)])
    np.testing.assert_allclose(np.asarray(hess[0]), expected, rtol=1e-6, atol=1e-8)


def _closed_form_gradient_i(i: int) -> Any:
    return lambda t: _closed_form_gradient(np.asarray(t))[i]
