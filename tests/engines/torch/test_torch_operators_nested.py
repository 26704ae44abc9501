"""Operators nested in differentiated functions on the torch engine: Jacobians, vjps and
jvps inside gradients (reverse over forward and over reverse), gradients and jvps inside
jvps (forward over reverse, forward over forward), third order, the exact ``**`` at a zero
exponent. Oracles: closed forms, torch.autograd.functional.hessian, central differences
on numpy copies."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch: Any = pytest.importorskip("torch")

import adswitch as ad  # noqa: E402
from tests.support.fd_oracle import central_fd  # noqa: E402

F64: dict[str, Any] = dict(rtol=1e-10, atol=1e-12)
FD: dict[str, Any] = dict(rtol=1e-6, atol=1e-7)

rng = np.random.default_rng(11)
X = rng.standard_normal(3)
V = rng.standard_normal(3)
W0 = rng.standard_normal((4, 3))


def field(z: Any, W: Any) -> Any:
    xp = ad.array_namespace(z, W)
    return xp.tanh(W @ z)


def slope(z: np.ndarray, W: np.ndarray) -> np.ndarray:
    """The closed-form Jacobian of ``field`` with respect to z."""
    return (1 - np.tanh(W @ z) ** 2)[:, None] * W


@pytest.mark.parametrize("mode", ["reverse", "forward", "auto"])
def test_jacobian_inside_a_gradient(mode: str) -> None:
    def loss(W: Any) -> Any:
        xp = ad.array_namespace(W)
        J = ad.jacobian(lambda z: field(z, W), xp.asarray(X), mode=mode)[0]
        return xp.sum(J**2)

    (g,) = ad.gradient(loss, W0, backend="torch")
    expected = central_fd(lambda W: np.sum(slope(X, W) ** 2), W0)
    np.testing.assert_allclose(g, expected, **FD)


def test_jvp_inside_a_gradient_reverse_over_forward() -> None:
    def loss(W: Any) -> Any:
        xp = ad.array_namespace(W)
        _, t = ad.jvp(lambda z: field(z, W), (xp.asarray(X),), (xp.asarray(V),))
        return xp.sum(t**3)

    (g,) = ad.gradient(loss, W0, backend="torch")
    expected = central_fd(lambda W: np.sum((slope(X, W) @ V) ** 3), W0)
    np.testing.assert_allclose(g, expected, **FD)


def test_jvp_with_a_traced_tangent_inside_a_gradient() -> None:
    # d/dv of sum((J v)^2) = 2 J^T J v: the tangent itself is the outer variable
    def loss(v: Any) -> Any:
        xp = ad.array_namespace(v)
        _, t = ad.jvp(lambda z: field(z, xp.asarray(W0)), (xp.asarray(X),), (v,))
        return xp.sum(t**2)

    (g,) = ad.gradient(loss, V, backend="torch")
    J = slope(X, W0)
    np.testing.assert_allclose(g, 2 * J.T @ J @ V, **F64)


def test_vjp_inside_a_gradient() -> None:
    u = rng.standard_normal(4)

    def loss(W: Any) -> Any:
        xp = ad.array_namespace(W)
        _, pullback = ad.vjp(lambda z: field(z, W), xp.asarray(X))
        (g,) = pullback(xp.asarray(u))
        return xp.sum(g**2)

    (g,) = ad.gradient(loss, W0, backend="torch")
    expected = central_fd(lambda W: np.sum((slope(X, W).T @ u) ** 2), W0)
    np.testing.assert_allclose(g, expected, **FD)


def energy(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * x**2) + x[0] * x[1] * x[2]


def energy_hessian(x: np.ndarray) -> np.ndarray:
    return torch.autograd.functional.hessian(energy, torch.from_numpy(x)).numpy()


def test_gradient_inside_a_jvp_forward_over_reverse() -> None:
    _, hv = ad.jvp(lambda x: ad.gradient(energy, x)[0], (X,), (V,), backend="torch")
    np.testing.assert_allclose(hv, energy_hessian(X) @ V, **F64)


def test_jvp_inside_a_jvp_forward_over_forward() -> None:
    u = rng.standard_normal(3)

    def directional(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return ad.jvp(energy, (x,), (xp.asarray(u),))[1]

    _, second = ad.jvp(directional, (X,), (V,), backend="torch")
    np.testing.assert_allclose(float(second), u @ energy_hessian(X) @ V, **F64)


def test_forward_jacobian_inside_a_jvp() -> None:
    # d/dt of the Jacobian of grad(energy) along V: the third derivative contracted with V
    def hess(x: Any) -> Any:
        return ad.jacobian(lambda z: ad.gradient(energy, z)[0], x, mode="forward")[0]

    _, dH = ad.jvp(hess, (X,), (V,), backend="torch")
    h = 1e-4
    expected = (energy_hessian(X + h * V) - energy_hessian(X - h * V)) / (2 * h)
    np.testing.assert_allclose(dH, expected, rtol=1e-6, atol=1e-6)


def test_hvp_inside_a_gradient_third_order() -> None:
    def loss(x: Any) -> Any:
        xp = ad.array_namespace(x)
        (hv,) = ad.hvp(energy, (x,), (xp.asarray(V),))
        return xp.sum(hv**2)

    (g,) = ad.gradient(loss, X, backend="torch")
    expected = central_fd(lambda x: np.sum((energy_hessian(x) @ V) ** 2), X)
    np.testing.assert_allclose(g, expected, **FD)


def test_hessian_inside_a_gradient() -> None:
    def loss(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(ad.hessian(energy, x)[0][0] ** 2)

    (g,) = ad.gradient(loss, X, backend="torch")
    expected = central_fd(lambda x: np.sum(energy_hessian(x) ** 2), X)
    np.testing.assert_allclose(g, expected, **FD)


def test_exact_power_in_a_forward_over_reverse_derivative_at_a_zero_exponent() -> None:
    # d/de of d/db b**e = b**(e-1) (1 + e log b): 1/b at e = 0 (torch's own pow gives 0)
    b = np.array([0.5, 2.0, 3.0])

    def slope_in_b(e: Any) -> Any:
        xp = ad.array_namespace(e)
        return ad.gradient(lambda b_: xp.sum(b_**e), xp.asarray(b))[0]

    _, d = ad.jvp(slope_in_b, (np.array(0.0),), (np.array(1.0),), backend="torch")
    np.testing.assert_allclose(d, 1 / b, **F64)
    J = ad.jacobian(slope_in_b, np.array(0.0), backend="torch", mode="forward")[0]
    np.testing.assert_allclose(J, 1 / b, **F64)


def test_exact_power_tangent_in_the_exponent() -> None:
    b = np.array([0.5, 2.0, 3.0])
    e = np.array([0.0, 1.5, -1.0])
    v = np.array([1.0, -0.5, 2.0])
    _, t = ad.jvp(lambda b_, e_: b_**e_, (b, e), (np.zeros(3), v), backend="torch")
    np.testing.assert_allclose(t, b**e * np.log(b) * v, **F64)


@pytest.mark.parametrize("kind", ["numpy", "tensor"])
def test_inner_results_that_carry_only_the_jvps_tangent_stay_traced(kind: str) -> None:
    # The inner operators differentiate with respect to a numpy array; their results
    # depend on the jvp only through the closure w (no inner leaf): d/dw of grad = v.
    data = np.array([1.0, 2.0, 3.0])

    def inner(w: Any) -> Any:
        xp = ad.array_namespace(w)
        (g,) = ad.gradient(lambda x: xp.sum(w * x), data)  # = w
        J = ad.jacobian(lambda x: w * x, data, mode="reverse")[0]  # = diag(w)
        (p,) = ad.vjp(lambda x: w * x, data)[1](np.ones(3))  # = w
        return g + xp.sum(J, axis=0) + p

    w, v = np.array([0.5, 1.5, 2.5]), np.array([1.0, -2.0, 0.5])
    conv = (lambda a: a) if kind == "numpy" else torch.from_numpy
    y, t = ad.jvp(inner, (conv(w),), (conv(v),), backend="torch")
    assert isinstance(t, np.ndarray if kind == "numpy" else torch.Tensor)
    np.testing.assert_allclose(np.asarray(y), 3 * w, **F64)
    np.testing.assert_allclose(np.asarray(t), 3 * v, **F64)


# Nested operator combinations against the built-in tape engine (an independent engine
# that derives every operator from its gradients): each function maps x (3,) to an array.
def _phi(z: Any) -> Any:
    xp = ad.array_namespace(z)
    return xp.sin(z) * xp.exp(0.3 * z) + z[0] * z**2


def _scalar(z: Any) -> Any:
    return ad.array_namespace(z).sum(_phi(z) ** 2)


COMBINATIONS: dict[str, Any] = {
    "jvp(gradient)": lambda x: ad.jvp(lambda z: ad.gradient(_scalar, z)[0], (x,), (x * 0 + 1,))[1],
    "jvp(jvp)": lambda x: ad.jvp(lambda z: ad.jvp(_phi, (z,), (z,))[1], (x,), (x,))[1],
    "gradient(jvp)": lambda x: ad.gradient(
        lambda z: ad.array_namespace(z).sum(ad.jvp(_phi, (z,), (z * z,))[1] ** 2), x
    )[0],
    "jvp(jacobian reverse)": lambda x: ad.jvp(
        lambda z: ad.jacobian(_phi, z, mode="reverse")[0], (x,), (x,)
    )[1],
    "jvp(jacobian forward)": lambda x: ad.jvp(
        lambda z: ad.jacobian(_phi, z, mode="forward")[0], (x,), (x,)
    )[1],
    "jacobian forward(vjp)": lambda x: ad.jacobian(
        lambda z: ad.vjp(_phi, z)[1](z)[0], x, mode="forward"
    )[0],
    "jvp(hvp)": lambda x: ad.jvp(lambda z: ad.hvp(_scalar, (z,), (z,))[0], (x,), (x,))[1],
    "jvp(hessian)": lambda x: ad.jvp(lambda z: ad.hessian(_scalar, z)[0][0], (x,), (x,))[1],
    "hessian(jvp)": lambda x: ad.hessian(
        lambda z: ad.array_namespace(z).sum(ad.jvp(_phi, (z,), (z,))[1]), x
    )[0][0],
}


@pytest.mark.parametrize("name", COMBINATIONS)
def test_nested_combinations_match_the_tape_engine(name: str) -> None:
    x = np.array([0.4, -0.7, 1.1])
    with ad.use("tape"):
        expected = COMBINATIONS[name](x)
    with ad.use("torch"):
        got = COMBINATIONS[name](x)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-10)
