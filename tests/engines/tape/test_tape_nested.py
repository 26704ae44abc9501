"""Higher order on the tape: nested ``ad.gradient`` against closed forms and finite
differences, Hessian-vector products, the seed-000 network (a loss on an input gradient)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from tests.engines.tape.test_tape_support import fd_gradient


def _xp(*arrays: Any) -> Any:
    return ad.array_namespace(*arrays)


def _sum(v: Any) -> Any:
    return _xp(v).sum(v)


X = np.array([0.7, -1.3, 2.1])


def test_second_order_closed_form() -> None:
    def f(x: Any) -> Any:
        (g,) = ad.gradient(lambda y: _sum(y**3 + _xp(y).sin(y)), x)
        return _sum(g)

    (h,) = ad.gradient(f, X, backend="tape")
    np.testing.assert_allclose(h, 6 * X - np.sin(X), rtol=1e-12)


def test_third_order_closed_form() -> None:
    def d1(y: Any) -> Any:
        return ad.gradient(lambda z: _sum(_xp(z).exp(2.0 * z) + z**4), y)[0]

    def d2(y: Any) -> Any:
        return ad.gradient(lambda z: _sum(d1(z)), y)[0]

    (g3,) = ad.gradient(lambda x: _sum(d2(x)), X, backend="tape")
    np.testing.assert_allclose(g3, 8 * np.exp(2 * X) + 24 * X, rtol=1e-12)


@pytest.mark.parametrize("n", [3, 5000], ids=["small", "large"])  # both tanh_grad paths
def test_third_order_of_tanh_closed_form(n: int) -> None:
    x = np.linspace(-2.0, 2.0, n)

    def d1(z: Any) -> Any:
        return ad.gradient(lambda u: _sum(_xp(u).tanh(u)), z)[0]

    def d2(y: Any) -> Any:
        return ad.gradient(lambda z: _sum(d1(z)), y)[0]

    (g3,) = ad.gradient(lambda v: _sum(d2(v)), x, backend="tape")
    t = np.tanh(x)
    np.testing.assert_allclose(g3, (6 * t**2 - 2) * (1 - t**2), rtol=1e-10, atol=1e-12)


def test_fourth_order_mixed_closed_form() -> None:
    # f = x^2 y^3: d^4 f / dx^2 dy^2 = 2 * 6 y = 12 y
    def fx(x: Any, y: Any) -> Any:
        return ad.gradient(lambda a: _sum(a**2 * y**3), x)[0]

    def fxx(x: Any, y: Any) -> Any:
        return ad.gradient(lambda a: _sum(fx(a, y)), x)[0]

    def fxxy(x: Any, y: Any) -> Any:
        return ad.gradient(lambda b: _sum(fxx(x, b)), y)[0]

    _, gy = ad.gradient(lambda x, y: _sum(fxxy(x, y)), X, X[::-1].copy(), backend="tape")
    np.testing.assert_allclose(gy, 12 * X[::-1], rtol=1e-12)


def _loss(x: Any, a: Any) -> Any:
    xp = _xp(x)
    return xp.sum(xp.exp(0.3 * x)) * xp.sum(xp.tanh(a @ x)) + xp.prod(x) ** 2


A = np.array([[0.5, -1.0, 0.2], [1.5, 0.3, -0.7]])


def test_hessian_vector_product_matches_differences_of_the_gradient() -> None:
    v = np.array([0.3, -0.2, 1.0])

    def hvp(x: Any) -> Any:
        (g,) = ad.gradient(lambda y: _loss(y, A), x)
        return _sum(g * v)

    (hv,) = ad.gradient(hvp, X, backend="tape")
    eps = 1e-5
    gp, _ = ad.gradient(_loss, X + eps * v, ad.Const(A), backend="tape")
    gm, _ = ad.gradient(_loss, X - eps * v, ad.Const(A), backend="tape")
    np.testing.assert_allclose(hv, (gp - gm) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_hessian_vector_product_of_a_quadratic_is_exact() -> None:
    m = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, -1.0], [0.0, -1.0, 4.0]])
    v = np.array([1.0, -2.0, 0.5])

    def hvp(x: Any) -> Any:
        (g,) = ad.gradient(lambda y: 0.5 * _sum(y * (m @ y)), x)
        return _sum(g * v)

    (hv,) = ad.gradient(hvp, X, backend="tape")
    np.testing.assert_allclose(hv, m @ v, rtol=1e-12)


# -- seed 000: a loss on the input gradient of a two-branch network with a tuple input ------
RNG = np.random.default_rng(3)
PARAMS = {
    "dense_u": {"W": RNG.standard_normal((2, 32)) * 0.5, "b": RNG.standard_normal(32) * 0.1},
    "dense_t": {"W": RNG.standard_normal((1, 32)) * 0.5, "b": RNG.standard_normal(32) * 0.1},
}
U, T, TARGETS = (
    RNG.standard_normal((100, 2)),
    RNG.standard_normal((100, 1)),
    RNG.standard_normal((100, 2)),
)


def _parallel(params: Any, inputs: tuple[Any, Any]) -> Any:
    u, t = inputs
    xp = _xp(params["dense_u"]["W"], u)
    du, dt = params["dense_u"], params["dense_t"]
    return xp.maximum(u @ du["W"] + du["b"], 0.0) + xp.maximum(t @ dt["W"] + dt["b"], 0.0)


def _grad_mse(params: Any, data: Any) -> Any:
    (u, t), targets = data
    (gu,) = ad.gradient(lambda u_: _sum(_parallel(params, (u_, t))), u)
    return _xp(gu).mean((gu - targets) ** 2)


def _grad_mse_closed_form(wu: Any, bu: Any) -> float:
    """The same loss with the input gradient written by hand: relu'(z) @ W^T."""
    active = (U @ wu + bu > 0).astype(float)
    return float(np.mean((active @ wu.T - TARGETS) ** 2))


def test_seed_000_loss_on_an_input_gradient() -> None:
    g, _ = ad.gradient(_grad_mse, PARAMS, ad.Const(((U, T), TARGETS)), backend="tape")
    wu, bu = PARAMS["dense_u"]["W"], PARAMS["dense_u"]["b"]
    expected_w = fd_gradient(_grad_mse_closed_form, (wu, bu), 0)
    np.testing.assert_allclose(g["dense_u"]["W"], expected_w, rtol=1e-5, atol=1e-8)
    # The t branch does not reach the input gradient of u: exactly zero, not None.
    np.testing.assert_array_equal(g["dense_t"]["W"], 0.0)
    np.testing.assert_array_equal(g["dense_u"]["b"], 0.0)  # relu' is piecewise constant


def test_inner_mutation_is_differentiated_by_the_outer_call() -> None:
    def inner(y: Any) -> Any:
        y[0] = y[1] ** 2
        return _sum(y * y)

    w = np.array([0.5, -1.0, 2.0])
    (g,) = ad.gradient(lambda x: _sum(ad.gradient(inner, x)[0] * w), X, backend="tape")
    expected = np.array([0.0, (12 * X[1] ** 2 + 2) * w[1], 2 * w[2]])
    np.testing.assert_allclose(g, expected, rtol=1e-12)


def test_inner_write_to_its_argument_reaches_the_outer_value() -> None:
    def inner(y: Any) -> Any:
        s = _sum(_xp(y).sin(y))
        y[0] = 0.0
        return s

    def outer(x: Any) -> Any:
        (g,) = ad.gradient(inner, x)
        return _sum(x * g)  # x[0] is 0 now, as after a plain call of inner

    (g,) = ad.gradient(outer, X, backend="tape")
    expected = np.cos(X) - X * np.sin(X)
    expected[0] = 0.0
    np.testing.assert_allclose(g, expected, rtol=1e-12)


def _prod_hessian(x: np.ndarray) -> np.ndarray:
    """d^2 prod(x) / dx_i dx_j = product of the elements other than i and j (0 if i == j)."""
    n = x.size
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                h[i, j] = np.prod(np.delete(x, [i, j]))
    return h


@pytest.mark.parametrize(
    "x", [[0.0, -0.5, 2.0, 1.5], [0.0, 0.0, 2.0, 1.5], [0.7, -0.5, 2.0, 1.5]], ids=str
)
def test_second_order_of_prod_with_zeros_is_exact(x: list[float]) -> None:
    xv, c = np.array(x), np.array([0.3, -1.0, 0.5, 2.0])

    def f(v: Any) -> Any:
        (g,) = ad.gradient(lambda u: _xp(u).prod(u), v)
        return _sum(g * c)

    (h,) = ad.gradient(f, xv, backend="tape")
    np.testing.assert_allclose(h, _prod_hessian(xv) @ c, rtol=1e-12, atol=1e-12)


def test_second_order_of_prod_along_an_axis_with_zeros() -> None:
    x = np.array([[0.0, -0.5, 2.0], [1.5, 0.0, 0.0]])
    c = np.array([[0.3, -1.0, 0.5], [2.0, 0.7, -0.2]])

    def f(v: Any) -> Any:
        (g,) = ad.gradient(lambda u: _sum(_xp(u).prod(u, axis=1)), v)
        return _sum(g * c)

    (h,) = ad.gradient(f, x, backend="tape")
    expected = np.stack([_prod_hessian(x[r]) @ c[r] for r in range(2)])
    np.testing.assert_allclose(h, expected, rtol=1e-12, atol=1e-12)


def test_second_order_through_broadcasting_add_and_subtract() -> None:
    # add/subtract entries keep only their arguments' shapes: the unbroadcasting of their
    # rules must still be right, and recorded, at second order.
    b = np.array([0.3, -0.8])

    def grad_sum(x: Any, b: Any) -> Any:
        def inner(u: Any, v: Any) -> Any:
            xp = _xp(u, v)
            col = xp.reshape(u, (3, 1))
            return _sum(xp.tanh(col + v) * xp.sin(1.5 - col - v))

        gx, gb = ad.gradient(inner, x, b)
        return _sum(gx * gx) + _sum(gb * gb)

    gx, gb = ad.gradient(grad_sum, X, b, backend="tape")
    np.testing.assert_allclose(gx, fd_gradient(grad_sum, (X, b), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, fd_gradient(grad_sum, (X, b), 1), rtol=1e-6, atol=1e-8)


# -- matmul's rules as recorded products by a transpose (matmul_nt / matmul_tn) -------------
def _mlp_input_grad_loss(w1: Any, w2: Any, w3: Any, x: Any, t: Any) -> Any:
    """``mean((d/dx sum(mlp(x)) - t)^2)`` through the tape (inner call recorded)."""

    def net(x_: Any) -> Any:
        xp = _xp(w1, x_)
        return _sum(xp.tanh(xp.tanh(x_ @ w1) @ w2) @ w3)

    (dx,) = ad.gradient(net, x)
    return _xp(dx).mean((dx - t) ** 2)


def _mlp_input_grad_loss_closed_form(w1: Any, w2: Any, w3: Any, x: Any, t: Any) -> float:
    """The same loss, the input gradient written by hand in numpy."""
    h1 = np.tanh(x @ w1)
    h2 = np.tanh(h1 @ w2)
    g2 = np.ones((*h2.shape[:-1], w3.shape[-1])) @ np.swapaxes(w3, -1, -2) * (1 - h2**2)
    dx = (g2 @ w2.T * (1 - h1**2)) @ w1.T
    return float(np.mean((dx - t) ** 2))


@pytest.mark.parametrize(
    "x_shape, out", [((5, 3), 1), ((5, 3), 2), ((2, 4, 3), 1)], ids=["outer", "two", "batched"]
)
def test_second_order_through_matmul_transposes_matches_differences(
    x_shape: tuple[int, ...], out: int
) -> None:
    # out == 1: the inner backward's first product is an outer product (k == 1, computed
    # by a broadcast multiply); batched: 3-D inputs against 2-D weights (unbroadcast).
    rng = np.random.default_rng(7)
    w1, w2, w3 = (
        rng.standard_normal((3, 4)) * 0.7,
        rng.standard_normal((4, 4)) * 0.7,
        rng.standard_normal((4, out)) * 0.7,
    )
    x, t = rng.standard_normal(x_shape), rng.standard_normal(x_shape)
    grads = ad.gradient(_mlp_input_grad_loss, w1, w2, w3, ad.Const(x), ad.Const(t), backend="tape")
    for i in range(3):
        expected = fd_gradient(_mlp_input_grad_loss_closed_form, (w1, w2, w3, x, t), i)
        np.testing.assert_allclose(grads[i], expected, rtol=1e-6, atol=1e-9)


def test_third_order_through_matmul_transposes_closed_form() -> None:
    # The rules of matmul_nt / matmul_tn are themselves recorded and differentiated here.
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 3))
    w0 = rng.standard_normal((3, 2))

    def d1(w: Any) -> Any:
        return ad.gradient(lambda v: _sum((a @ v) ** 3), w)[0]

    def d2(w: Any) -> Any:
        return ad.gradient(lambda v: _sum(d1(v)), w)[0]

    (g3,) = ad.gradient(lambda w: _sum(d2(w)), w0, backend="tape")
    # f = sum_{n,j} z_nj^3 with z = a w; sum(d1) = sum_{n,j} 3 z_nj^2 r_n (r_n = sum_i a_ni);
    # sum(d2) = sum_{n,j} 6 z_nj r_n^2; d3 = 6 a^T (r^2 broadcast over j).
    r = a.sum(axis=1)
    expected = 6 * a.T @ np.repeat((r**2)[:, None], 2, axis=1)
    np.testing.assert_allclose(g3, expected, rtol=1e-12)
