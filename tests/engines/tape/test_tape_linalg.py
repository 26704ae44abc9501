"""The tape's ``xp.linalg``, end to end: every function's gradient and second derivative
against finite differences of the same function run by numpy (float64; float32
loosely), nested (``ad.gradient`` inside ``f``), batched sweeps (``ad.jacobian`` in both
modes: one batched pass over every output), stacks of matrices, and the forward values
against numpy's. The rules one by one -- batched against a loop, nested, second order --
are checked in ``test_tape_operators_rules`` (the examples of ``tape_linalg_examples``);
degeneracy and errors in ``test_tape_linalg_degenerate``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad

_rng = np.random.default_rng(2024)
C3 = _rng.standard_normal((3, 3))
C43 = _rng.standard_normal((4, 3))


def _regular(*shape: int) -> np.ndarray:
    return np.eye(shape[-1]) * 1.5 + _rng.uniform(-0.4, 0.4, shape)


def _spread(m: int, n: int) -> np.ndarray:
    k = min(m, n)
    u = np.linalg.qr(_rng.standard_normal((m, k)))[0]
    v = np.linalg.qr(_rng.standard_normal((n, k)))[0]
    return (u * (np.arange(k, 0.0, -1.0) + 0.5)) @ v.T


def _la(x: Any) -> Any:
    return ad.array_namespace(x).linalg


def _xp(x: Any) -> Any:
    return ad.array_namespace(x)


def _sym(x: Any) -> Any:
    return (x + _la(x).matrix_transpose(x)) / 2.0


def _qr_loss(x: Any) -> Any:
    q, r = _la(x).qr(x)
    d = _la(x).diagonal(r)
    return _xp(x).sum(_xp(x).sin(q * d)) + _xp(x).sum(r[: d.shape[0]] * d[:, None] * 0.3)


def _svd_loss(x: Any) -> Any:
    u, s, vh = _la(x).svd(x, full_matrices=False)
    return _xp(x).sum(((u * _xp(x).sin(s)) @ vh) * x) + _xp(x).sum(s**3)


def _eigh_loss(x: Any) -> Any:
    w, v = _la(x).eigh(_sym(x))
    quad = _xp(x).sum(v * (C3 @ v), axis=0)  # v_i^T C v_i: sign-invariant
    return _xp(x).sum(quad * w) + _xp(x).sum(w**3) * 0.1


def _gram(x: Any) -> Any:
    return x @ _la(x).matrix_transpose(x) + np.eye(x.shape[-2])


# name -> (f, x): scalar functions through one linalg function each (and its options)
FUNCTIONS: dict[str, tuple[Callable[[Any], Any], np.ndarray]] = {
    "matmul": (lambda x: _xp(x).sum(_la(x).matmul(x, x) * C3), _regular(3, 3)),
    "matrix_transpose": (lambda x: _xp(x).sum(_la(x).matrix_transpose(x) * x**2), _regular(3, 3)),
    "vecdot": (lambda x: _xp(x).sum(_la(x).vecdot(x, x**2)), _regular(3, 3)),
    "tensordot": (lambda x: _xp(x).sum(_la(x).tensordot(x, x, axes=2) * x), _regular(3, 3)),
    "outer": (lambda x: _xp(x).sum(_xp(x).sin(_la(x).outer(x[0], x[1]))), _regular(3, 3)),
    "cross": (lambda x: _xp(x).sum(_la(x).cross(x[0], x[1]) ** 2), _regular(3, 3)),
    "trace": (lambda x: _la(x).trace(x @ x, offset=1), _regular(3, 3)),
    "diagonal": (lambda x: _xp(x).sum(_la(x).diagonal(x @ x) ** 3), _regular(3, 3)),
    "vector_norm": (lambda x: _xp(x).sum(_la(x).vector_norm(x, axis=0, ord=3)), _regular(3, 3)),
    "matrix_norm_fro": (lambda x: _la(x).matrix_norm(x @ x), _regular(3, 3)),
    "matrix_norm_2": (lambda x: _la(x).matrix_norm(x, ord=2) ** 2, _spread(4, 3)),
    "matrix_norm_-2": (lambda x: _la(x).matrix_norm(x, ord=-2) ** 2, _spread(3, 4)),
    "matrix_norm_nuc": (lambda x: _la(x).matrix_norm(x @ x, ord="nuc"), _regular(3, 3)),
    "det": (lambda x: _la(x).det(x), _regular(3, 3)),
    "det_stack": (lambda x: _xp(x).sum(_la(x).det(x) ** 2), _regular(2, 3, 3)),
    "slogdet": (lambda x: _la(x).slogdet(x)[1] * _la(x).slogdet(x)[0], -_regular(3, 3)),
    "inv": (lambda x: _xp(x).sum(_la(x).inv(x) * C3), _regular(3, 3)),
    "inv_stack": (lambda x: _xp(x).sum(_la(x).inv(x) ** 2), _regular(2, 3, 3)),
    "solve_matrix": (
        lambda x: _xp(x).sum(_la(x).solve(x, C3[:, :2] + x[:, :2]) ** 2),
        _regular(3, 3),
    ),
    "solve_vector": (lambda x: _xp(x).sum(_la(x).solve(x, x[0]) * C3[0]), _regular(3, 3)),
    "solve_stack": (lambda x: _xp(x).sum(_la(x).solve(x, C3) ** 2), _regular(2, 3, 3)),
    "cholesky": (lambda x: _xp(x).sum(_la(x).cholesky(_gram(x)) * C3), _regular(3, 3)),
    "cholesky_upper": (
        lambda x: _xp(x).sum(_la(x).cholesky(_gram(x), upper=True) ** 3),
        _regular(3, 3),
    ),
    "cholesky_stack": (
        lambda x: _xp(x).sum(_xp(x).log(_la(x).diagonal(_la(x).cholesky(_gram(x))))),
        _regular(2, 3, 3),
    ),
    "eigh": (_eigh_loss, _regular(3, 3) * 2.0 + np.diag([0.0, 1.0, 3.0])),
    "eigvalsh": (lambda x: _xp(x).sum(_la(x).eigvalsh(_sym(x)) * C3[0]), _regular(3, 3)),
    "eigvalsh_stack": (lambda x: _xp(x).sum(_la(x).eigvalsh(_sym(x)) ** 3), _regular(2, 3, 3)),
    "qr_tall": (_qr_loss, _spread(4, 3)),
    "qr_square": (_qr_loss, _regular(3, 3)),
    "qr_wide": (_qr_loss, _spread(3, 5)),
    "svd_tall": (_svd_loss, _spread(4, 3)),
    "svd_wide": (_svd_loss, _spread(2, 4)),
    "svd_square": (_svd_loss, _spread(3, 3)),
    "svdvals": (lambda x: _xp(x).sum(_la(x).svdvals(x) * C3[0]), _spread(3, 3)),
    "pinv_tall": (lambda x: _xp(x).sum(_la(x).pinv(x) * C43.T), _spread(4, 3)),
    "pinv_wide": (lambda x: _xp(x).sum(_la(x).pinv(x) ** 2), _spread(3, 4)),
    "matrix_power_3": (lambda x: _xp(x).sum(_la(x).matrix_power(x, 3) * C3), _regular(3, 3)),
    "matrix_power_-3": (lambda x: _xp(x).sum(_la(x).matrix_power(x, -3) * C3), _regular(3, 3)),
}
NAMES = list(FUNCTIONS)


def _value(f: Callable[[Any], Any], x: np.ndarray) -> float:
    return float(f(x))


def fd_gradient(f: Callable[[Any], Any], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of ``f`` run by numpy (the oracle: no tape involved)."""
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[index] = eps
        grad[index] = (_value(f, x + step) - _value(f, x - step)) / (2 * eps)
    return grad


def fd_second(f: Callable[[Any], Any], x: np.ndarray, u: np.ndarray, v: np.ndarray) -> float:
    """``u^T H v`` by a mixed second difference of ``f`` (numpy), step 1e-4."""
    h = 1e-4
    total = 0.0
    for su, sv in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        total += su * sv * _value(f, x + h * (su * u + sv * v))
    return total / (4 * h * h)


@pytest.mark.parametrize("name", NAMES)
def test_gradient_and_value_match_numpy(name: str) -> None:
    f, x = FUNCTIONS[name]
    val, (g,) = ad.withgradient(f, x.copy(), backend="tape")
    assert float(val) == pytest.approx(_value(f, x), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(g, fd_gradient(f, x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", NAMES)
def test_second_derivative_hessian_and_nested(name: str) -> None:
    f, x = FUNCTIONS[name]
    (hess,) = ad.hessian(f, x.copy(), backend="tape")
    flat = np.asarray(hess[0]).reshape(x.size, x.size)
    u, v = _rng.standard_normal(x.shape), _rng.standard_normal(x.shape)
    expected = fd_second(f, x, u, v)
    assert u.ravel() @ flat @ v.ravel() == pytest.approx(expected, rel=1e-5, abs=1e-5)

    def directional(y: Any) -> Any:  # <grad f(y), v>: differentiated again (rule 9)
        (g,) = ad.gradient(f, y)
        return _xp(y).sum(g * v)

    (nested,) = ad.gradient(directional, x.copy(), backend="tape")
    assert np.sum(nested * u) == pytest.approx(expected, rel=1e-5, abs=1e-5)


_JACOBIANS = {
    "eigvalsh": (lambda x: _la(x).eigvalsh(_sym(x)), _regular(3, 3)),
    "svdvals": (lambda x: _la(x).svdvals(x), _spread(4, 3)),
    "inv": (lambda x: _xp(x).reshape(_la(x).inv(x), (-1,)), _regular(2, 2)),
    "solve": (lambda x: _la(x).solve(x, C3[0]), _regular(3, 3)),
    "cholesky": (lambda x: _xp(x).reshape(_la(x).cholesky(_gram(x)), (-1,)), _regular(2, 2)),
    "det_stack": (lambda x: _la(x).det(x), _regular(3, 2, 2)),
    "slogdet": (lambda x: _xp(x).stack(list(_la(x).slogdet(x))), _regular(3, 3)),
    "qr": (lambda x: _xp(x).reshape(_la(x).qr(x)[1] ** 2, (-1,)), _spread(3, 2)),
    "svd_u": (
        lambda x: _xp(x).reshape(_la(x).svd(x, full_matrices=False)[0] ** 2, (-1,)),
        _spread(3, 2),
    ),
    "pinv": (lambda x: _xp(x).reshape(_la(x).pinv(x), (-1,)), _spread(3, 2)),
    "eigh_vectors": (lambda x: _xp(x).reshape(_la(x).eigh(_sym(x))[1] ** 2, (-1,)), _regular(3, 3)),
}


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("name", list(_JACOBIANS))
def test_jacobians_batched_sweeps_in_both_modes(name: str, mode: str) -> None:
    f, x = _JACOBIANS[name]
    (jac,) = ad.jacobian(f, x.copy(), backend="tape", mode=mode)
    out = np.asarray(f(x))
    expected = np.zeros(out.shape + x.shape)
    for k in np.ndindex(out.shape):
        expected[k] = fd_gradient(lambda y, k=k: np.asarray(f(y))[k], x)
    np.testing.assert_allclose(jac, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "name", ["det", "inv", "solve_matrix", "cholesky", "eigh", "qr_tall", "svd_tall", "pinv_tall"]
)
def test_float32_gradients_stay_float32_and_close(name: str) -> None:
    f, x = FUNCTIONS[name]
    (g,) = ad.gradient(f, x.astype(np.float32), backend="tape")
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, fd_gradient(f, x), rtol=2e-3, atol=2e-3)


def test_factorization_results_are_named_tuples_of_numpy_values() -> None:
    x = _spread(4, 3)
    sym = x.T @ x + np.eye(3)
    seen: dict[str, Any] = {}

    def f(y: Any) -> Any:
        la = _la(y)
        s = la.matrix_transpose(y) @ y + np.eye(3)
        seen["eigh"] = la.eigh(s)
        seen["qr"] = la.qr(y)
        seen["svd"] = la.svd(y, full_matrices=False)
        seen["slogdet"] = la.slogdet(s)
        parts = [*seen["eigh"], *seen["qr"], *seen["svd"], *seen["slogdet"]]
        return sum(_xp(y).sum(p) for p in parts), {k: tuple(v) for k, v in seen.items()}

    result = ad.withgradient(f, x, backend="tape")
    aux = result.val[1]
    assert seen["eigh"].eigenvalues is seen["eigh"][0] and seen["svd"].Vh is seen["svd"][2]
    assert seen["qr"].R is seen["qr"][1] and seen["slogdet"].logabsdet is seen["slogdet"][1]
    for name, expected in [
        ("eigh", np.linalg.eigh(sym)),
        ("qr", np.linalg.qr(x)),
        ("svd", np.linalg.svd(x, full_matrices=False)),
        ("slogdet", np.linalg.slogdet(sym)),
    ]:
        for got, want in zip(aux[name], expected):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
