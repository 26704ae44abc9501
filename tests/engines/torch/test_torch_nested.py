"""Nested gradients on the torch engine: second and third order, Hessian-vector
products, no perturbation confusion, inner gradients that stay differentiable.
Oracles: closed forms and finite differences."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import adswitch as ad  # noqa: E402
from tests.engines.torch.test_torch_oracles import fd_grad  # noqa: E402

TOL: dict[str, Any] = dict(rtol=1e-12, atol=1e-12)


def cube_sum(x: Any) -> Any:
    return ad.array_namespace(x).sum(x**3)


def sum_of_gradient(x: Any) -> Any:
    (g,) = ad.gradient(cube_sum, x)  # 3 x^2
    return ad.array_namespace(g).sum(g)


@pytest.mark.parametrize("kind", ["numpy", "tensor"])
def test_second_order_closed_form(kind: str) -> None:
    x = np.array([0.5, -1.0, 2.0])
    arg = x if kind == "numpy" else torch.tensor(x)
    (g,) = ad.gradient(sum_of_gradient, arg, backend="torch")
    g = g if kind == "numpy" else g.numpy()
    np.testing.assert_allclose(g, 6 * x, **TOL)


def test_third_order_closed_form() -> None:
    def second(x: Any) -> Any:
        (g,) = ad.gradient(sum_of_gradient, x)  # 6 x
        return ad.array_namespace(g).sum(g * x)  # 6 x^2

    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    (g,) = ad.gradient(second, x)
    assert torch.allclose(g, 12 * x, rtol=1e-12)


def test_hessian_vector_product_closed_form() -> None:
    # f(x) = sum(x^4)/4 + x0 x1: H = diag(3 x^2) + [[0, 1], [1, 0]] on the first two.
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x**4) / 4 + x[0] * x[1]

    def hvp(x: Any, v: Any) -> Any:
        (g,) = ad.gradient(f, x)
        return ad.array_namespace(g).sum(g * v)

    x = np.array([1.0, -2.0, 0.5])
    v = np.array([0.3, 0.7, -1.1])
    hv, none = ad.gradient(hvp, x, ad.Const(v), backend="torch")
    hessian = np.diag(3 * x**2)
    hessian[0, 1] = hessian[1, 0] = 1.0
    np.testing.assert_allclose(hv, hessian @ v, **TOL)
    assert none is None


def test_no_perturbation_confusion() -> None:
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1; a confused engine gives 2.
    def outer(x: Any) -> Any:
        xp = ad.array_namespace(x)
        (dy,) = ad.gradient(lambda y: xp.sum(x + y), xp.ones_like(x))
        return xp.sum(x * dy)

    (g,) = ad.gradient(outer, np.array([3.0]), backend="torch")
    np.testing.assert_allclose(g, [1.0], **TOL)


def test_inner_gradient_through_closure_stays_differentiable() -> None:
    # Inner gradient w.r.t. a fresh numpy array is `a` itself (a closure of the outer
    # call): it must come back attached, or the outer derivative would be lost.
    x = np.array([1.0, 2.0])

    def outer(a: Any) -> Any:
        xp = ad.array_namespace(a)
        (g,) = ad.gradient(lambda y: xp.sum(y * a**2), x)
        assert isinstance(g, torch.Tensor)
        return xp.sum(g)  # sum(a^2)

    a = torch.tensor([0.5, -3.0], dtype=torch.float64)
    (g,) = ad.gradient(outer, a)
    assert torch.allclose(g, 2 * a, rtol=1e-12)


def test_tied_leaf_in_inner_call() -> None:
    def outer(x: Any) -> Any:
        xp = ad.array_namespace(x)
        (g,) = ad.gradient(lambda p: xp.sum(p["a"] * p["b"]), {"a": x, "b": x})
        return xp.sum(g["a"] ** 2)  # g["a"] = 2x -> sum 4x^2
        # g["b"] is None: one leaf, total at the first occurrence

    (g,) = ad.gradient(outer, np.array([1.0, -2.0]), backend="torch")
    np.testing.assert_allclose(g, [8.0, -16.0], **TOL)


def test_loss_on_input_gradient_matches_finite_differences() -> None:
    # Seed 000: a loss on the input gradient of a small tanh network.
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((3, 4)), rng.standard_normal((4, 1))
    x, t = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))

    def net(w1: Any, x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(xp.tanh(x @ w1) @ xp.asarray(w2))

    def loss(w1: Any) -> Any:
        xp = ad.array_namespace(w1)
        (dx,) = ad.gradient(lambda x_: net(w1, x_), xp.asarray(x))
        return xp.mean((dx - xp.asarray(t)) ** 2)

    def loss_numpy(w1_np: np.ndarray) -> float:
        # dx of sum(tanh(x W1) W2) in closed form: (1 - tanh^2) * W2^T, times W1^T.
        h = np.tanh(x @ w1_np)
        dx = ((1 - h**2) * w2.T) @ w1_np.T
        return float(np.mean((dx - t) ** 2))

    (g,) = ad.gradient(loss, w1, backend="torch")
    np.testing.assert_allclose(g, fd_grad(loss_numpy, w1), rtol=1e-6, atol=1e-8)


def test_inner_write_into_outer_value_is_refused() -> None:
    def outer(x: Any) -> Any:
        xp = ad.array_namespace(x)
        y = x * 2  # a traced, non-leaf value of the outer call

        def inner(z: Any) -> Any:
            w = z * 3
            z[0] = 0.0  # writes through into the outer value y
            return xp.sum(w) + xp.sum(z)

        (g,) = ad.gradient(inner, y)
        return xp.sum(g)

    with pytest.raises(ad.MutationError, match="torch"):
        ad.gradient(outer, np.array([1.0, 2.0]), backend="torch")
