"""Operators nested inside a differentiated function on the autograd engine: the inner
``vjp``/``jvp``/``jacobian``/``hessian`` results must stay differentiable by the
enclosing call. Checked against closed forms and central finite differences of plain
numpy code -- never autograd against itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd

pytest.importorskip("autograd")

import adswitch as ad
from adswitch.errors import UnsupportedError

B = "autograd"
X = np.array([0.3, -0.8, 1.2])


def xp_of(*arrays: Any) -> Any:
    return ad.array_namespace(*arrays)


def test_gradient_of_a_loss_on_an_inner_pullback() -> None:
    def outer(x: Any) -> Any:
        xp = xp_of(x)
        y, pullback = ad.vjp(lambda z: xp.sin(z) * z, x)
        (g,) = pullback(xp.cos(x))
        (again,) = pullback(xp.cos(x))  # reusable inside the call too
        return xp.sum(g * g) + xp.sum(y) + xp.sum(again)

    def plain(x: np.ndarray) -> float:
        g = np.cos(x) * (np.cos(x) * x + np.sin(x))
        return float(np.sum(g * g) + np.sum(np.sin(x) * x) + np.sum(g))

    (grad,) = ad.gradient(outer, X.copy(), backend=B)
    np.testing.assert_allclose(grad, central_fd(plain, X), rtol=1e-6, atol=1e-9)


def test_inner_pullback_ignores_later_writes_of_the_enclosing_call() -> None:
    def outer(x: Any) -> Any:
        xp = xp_of(x)
        buf = xp.asarray(x, copy=True)  # the enclosing call's own writable array
        (y, e), pullback = ad.vjp(lambda z: (z**3, xp.exp(z)), buf)
        buf[...] = 0.0  # written after the inner vjp ...
        y[...] = 5.0  # ... as are the outputs it returned (exp's VJP reads its output)
        e[...] = 5.0
        (g,) = pullback((xp.ones_like(x), xp.ones_like(x)))  # 3 buf^2 + exp(buf) at the vjp
        return xp.sum(g * x) + xp.sum(buf) + xp.sum(y) + xp.sum(e)

    # L = sum(3 x^3 + x exp(x)) + 0 + 30: dL/dx = 9 x^2 + (1 + x) exp(x)
    (grad,) = ad.gradient(outer, X.copy(), backend=B)
    np.testing.assert_allclose(grad, 9.0 * X**2 + (1.0 + X) * np.exp(X), rtol=1e-12)


def test_gradient_of_an_inner_jvp_reverse_over_forward() -> None:
    def outer(x: Any) -> Any:
        xp = xp_of(x)
        _, dy = ad.jvp(lambda z: xp.sin(z) * xp.exp(z), (x,), (x * x,))
        return xp.sum(dy**2)

    def plain(x: np.ndarray) -> float:
        dy = (np.cos(x) * np.exp(x) + np.sin(x) * np.exp(x)) * x * x
        return float(np.sum(dy**2))

    (grad,) = ad.gradient(outer, X.copy(), backend=B)
    np.testing.assert_allclose(grad, central_fd(plain, X), rtol=1e-6, atol=1e-9)


def test_derivative_of_a_derivative_forward_over_forward() -> None:
    def first(t: Any) -> Any:
        return ad.derivative(lambda s: s**4 + 2.0 * s, t)

    second = ad.derivative(first, 1.5, backend=B)
    assert second == pytest.approx(12.0 * 1.5**2)
    third = ad.derivative(lambda t: ad.derivative(first, t), 1.5, backend=B)
    assert third == pytest.approx(24.0 * 1.5)


@pytest.mark.parametrize("mode", ["reverse", "forward", "auto"])
def test_gradient_of_an_inner_jacobian(mode: str) -> None:
    w = np.array([[1.0, -0.5, 0.2], [0.3, 0.8, -1.0]])

    def outer(x: Any) -> Any:
        xp = xp_of(x)
        (jac, _) = ad.jacobian(lambda z, w: xp.tanh(w @ z), x, ad.Const(w), mode=mode)
        return xp.sum(jac**2)

    def plain(x: np.ndarray) -> float:
        jac = (1.0 / np.cosh(w @ x) ** 2)[:, None] * w
        return float(np.sum(jac**2))

    (grad,) = ad.gradient(outer, X.copy(), backend=B)
    np.testing.assert_allclose(grad, central_fd(plain, X), rtol=1e-6, atol=1e-9)


def test_gradient_of_an_inner_hessian_third_order() -> None:
    def outer(x: Any) -> Any:
        xp = xp_of(x)
        ((h,),) = ad.hessian(lambda z: xp.sum(z**4) + xp.prod(z), x)
        return xp.sum(h * h)

    def hess(x: np.ndarray) -> np.ndarray:
        h = np.diag(12.0 * x**2)
        for i in range(3):
            for j in range(3):
                if i != j:
                    h[i, j] = x[3 - i - j]
        return h

    (grad,) = ad.gradient(outer, X.copy(), backend=B)
    np.testing.assert_allclose(grad, central_fd(lambda x: float(np.sum(hess(x) ** 2)), X),
                               rtol=1e-6, atol=1e-8)  # fmt: skip


def test_hvp_of_a_function_with_an_inner_vjp() -> None:
    def f(x: Any) -> Any:
        xp = xp_of(x)
        _, pullback = ad.vjp(lambda z: xp.exp(z), x)
        (g,) = pullback(x)  # g = x exp(x)
        return xp.sum(g)

    # f = sum(x e^x): H = diag((x + 2) e^x)
    v = np.array([1.0, 2.0, -1.0])
    (hv,) = ad.hvp(f, (X.copy(),), (v,), backend=B)
    np.testing.assert_allclose(hv, (X + 2.0) * np.exp(X) * v, rtol=1e-12)
    ((h,),) = ad.hessian(f, X.copy(), backend=B)
    np.testing.assert_allclose(h, np.diag((X + 2.0) * np.exp(X)), rtol=1e-12, atol=1e-15)


def test_a_pullback_kept_past_its_enclosing_call_is_refused() -> None:
    kept: list[Any] = []

    def first(x: Any) -> Any:
        xp = xp_of(x)
        y, pullback = ad.vjp(lambda z: z * z, x)
        kept.append(pullback)
        return xp.sum(y)

    def second(x: Any) -> Any:
        (g,) = kept[0](xp_of(x).ones_like(x))
        return xp_of(x).sum(g * x)

    ad.gradient(first, X.copy(), backend=B)
    with pytest.raises(UnsupportedError, match="same call"):
        ad.gradient(second, X.copy(), backend=B)
