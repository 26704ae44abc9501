"""``ad.custom_vjp`` / ``ad.custom_jvp`` / ``ad.stop_gradient`` on torch and HIPS autograd
(the engine hooks in ``adswitch_torch.integrations.custom`` and
``adswitch_autograd.primitives.custom``).

Oracles: closed forms (softmax for logsumexp, the rule's own formula where the rule
differs from the function's derivative on purpose) and central finite differences of a
closed-form gradient; never an engine against itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import UnsupportedError

pytest.importorskip("torch")
pytest.importorskip("autograd")

ENGINES = ["torch", "autograd"]
X = np.array([0.3, -1.2, 2.0, 0.5])
V = np.array([1.0, -0.5, 0.25, 2.0])


def _np(value: Any) -> np.ndarray:
    """A result as numpy (torch tensors are converted; numpy passes through)."""
    if hasattr(value, "detach"):
        value = value.detach().numpy()
    return np.asarray(value)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def lse_np(x: np.ndarray) -> float:
    return float(x.max() + np.log(np.exp(x - x.max()).sum()))


def fd_jacobian(g: Any, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of the closed-form vector function ``g``: ``J[i, j] = dg_i/dx_j``."""
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        cols.append((g(x + e) - g(x - e)) / (2 * h))
    return np.stack(cols, axis=1)


def _lse_value(x: Any) -> Any:
    xp = ad.array_namespace(x)
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m)))


def _lse_fwd(x: Any) -> tuple[Any, Any]:
    out = _lse_value(x)
    return out, (x, out)


def _lse_bwd(res: Any, g: Any) -> tuple[Any]:
    x, out = res
    xp = ad.array_namespace(x)
    return (g * xp.exp(x - out),)  # softmax, made of differentiable ops: nests


lse = ad.custom_vjp(_lse_value)
lse.defvjp(_lse_fwd, _lse_bwd)


def _identity(x: Any) -> Any:
    return x


clipped = ad.custom_vjp(_identity)  # gradient clipped to [-1, 1]: the rule, not d(x)/dx
clipped.defvjp(
    lambda x: (x, None),
    lambda _, g: (ad.array_namespace(g).clip(g, -1.0, 1.0),),
)


def _round(x: Any) -> Any:
    return ad.array_namespace(x).round(x)


straight_through = ad.custom_vjp(_round)  # round forward, identity backward
straight_through.defvjp(lambda x: (_round(x), None), lambda _, g: (g,))


def _sin(x: Any) -> Any:
    return ad.array_namespace(x).sin(x)


def _sin_rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    xp = ad.array_namespace(x)
    return xp.sin(x), 2.0 * xp.cos(x) * t  # twice the true derivative, on purpose


sin2 = ad.custom_jvp(_sin)
sin2.defjvp(_sin_rule)


def _sum(x: Any) -> Any:
    return ad.array_namespace(x).sum(x)


@pytest.mark.parametrize("backend", ENGINES)
@pytest.mark.parametrize("shift", [0.0, 1000.0])
def test_logsumexp_gradient_is_softmax(backend: str, shift: float) -> None:
    x = X + shift  # at 1000 the naive exp overflows: the rule's gradient stays finite
    (g,) = ad.gradient(lse, x, backend=backend)
    np.testing.assert_allclose(_np(g), softmax(x), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("backend", ENGINES)
def test_clipped_gradient_is_the_rules(backend: str) -> None:
    (g,) = ad.gradient(lambda x: _sum(3.0 * clipped(x)), X, backend=backend)
    np.testing.assert_allclose(_np(g), np.ones_like(X))  # clip(3) = 1, not 3


@pytest.mark.parametrize("backend", ENGINES)
def test_straight_through_estimator(backend: str) -> None:
    value, (g,) = ad.withgradient(lambda x: _sum(straight_through(x) * x), X, backend=backend)
    assert float(_np(value)) == pytest.approx(float(np.sum(np.round(X) * X)))
    np.testing.assert_allclose(_np(g), X + np.round(X))  # d/dx [st(x) x] = x + round(x)


@pytest.mark.parametrize("backend", ENGINES)
def test_hessian_through_custom_vjp(backend: str) -> None:
    (h,) = ad.hessian(lse, X, backend=backend)
    h = _np(h[0] if isinstance(h, tuple) else h)
    np.testing.assert_allclose(h, fd_jacobian(softmax, X), atol=1e-8)


@pytest.mark.parametrize("backend", ENGINES)
def test_nested_gradient_through_custom_vjp(backend: str) -> None:
    # d/dx <grad(lse^2)(x), v>, grad(lse^2) = 2 lse(x) softmax(x) in closed form.
    def inner_dot(x: Any) -> Any:
        xp = ad.array_namespace(x)
        (g,) = ad.gradient(lambda y: lse(y) ** 2, x)
        return xp.sum(g * xp.asarray(V))

    (got,) = ad.gradient(inner_dot, X, backend=backend)
    closed = fd_jacobian(lambda x: 2 * lse_np(x) * softmax(x), X)
    np.testing.assert_allclose(_np(got), closed.T @ V, atol=1e-7)


@pytest.mark.parametrize("backend", ENGINES)
def test_custom_vjp_in_forward_mode_refuses(backend: str) -> None:
    with pytest.raises(UnsupportedError, match="custom_jvp"):
        ad.jvp(lse, (X,), (V,), backend=backend)


@pytest.mark.parametrize("backend", ENGINES)
def test_custom_jvp_forward_mode(backend: str) -> None:
    out, t = ad.jvp(sin2, (X,), (V,), backend=backend)
    np.testing.assert_allclose(_np(out), np.sin(X))
    np.testing.assert_allclose(_np(t), 2 * np.cos(X) * V)
    (jac,) = ad.jacobian(sin2, X, backend=backend, mode="forward")
    np.testing.assert_allclose(_np(jac), np.diag(2 * np.cos(X)), atol=1e-15)


@pytest.mark.parametrize("backend", ENGINES)
def test_custom_jvp_reverse_mode(backend: str) -> None:
    (g,) = ad.gradient(
        lambda x: _sum(sin2(x) * ad.array_namespace(x).asarray(V)), X, backend=backend
    )
    np.testing.assert_allclose(_np(g), 2 * np.cos(X) * V)
    (jac,) = ad.jacobian(sin2, X, backend=backend, mode="reverse")
    np.testing.assert_allclose(_np(jac), np.diag(2 * np.cos(X)), atol=1e-15)
    (h,) = ad.hessian(lambda x: _sum(sin2(x)), X, backend=backend)
    h = _np(h[0] if isinstance(h, tuple) else h)  # d/dx 2 cos(x) = -2 sin(x)
    np.testing.assert_allclose(h, np.diag(-2 * np.sin(X)), atol=1e-12)


@pytest.mark.parametrize("backend", ENGINES)
def test_stop_gradient_every_mode(backend: str) -> None:
    (g,) = ad.gradient(lambda x: _sum(x * ad.stop_gradient(x)), X, backend=backend)
    np.testing.assert_allclose(_np(g), X)  # not 2x
    _, t = ad.jvp(lambda x: x * ad.stop_gradient(x), (X,), (V,), backend=backend)
    np.testing.assert_allclose(_np(t), X * V)
    (h,) = ad.hessian(lambda x: _sum(x * x * ad.stop_gradient(x)), X, backend=backend)
    h = _np(h[0] if isinstance(h, tuple) else h)  # grad 2 x s, s constant: diag(2 x)
    np.testing.assert_allclose(h, np.diag(2 * X), atol=1e-12)


@pytest.mark.parametrize("backend", ENGINES)
def test_prepared_at_a_second_point(backend: str) -> None:
    grad = ad.prepare(ad.gradient, lse, X, backend=backend)
    jvp = ad.prepare(ad.jvp, sin2, (X,), (V,), backend=backend)
    y = X[::-1] * 2.0
    np.testing.assert_allclose(_np(grad(X)[0]), softmax(X), rtol=1e-12)
    np.testing.assert_allclose(_np(grad(y)[0]), softmax(y), rtol=1e-12)
    np.testing.assert_allclose(_np(jvp((y,), (V,))[1]), 2 * np.cos(y) * V)


def test_torch_tensor_input() -> None:
    import torch

    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    (g,) = ad.gradient(lse, x, backend="torch")
    assert isinstance(g, torch.Tensor) and x.grad is None  # the user's tensor untouched
    np.testing.assert_allclose(g.numpy(), softmax(X), rtol=1e-12)
    _, t = ad.jvp(sin2, (torch.tensor(X),), (torch.tensor(V),), backend="torch")
    np.testing.assert_allclose(t.numpy(), 2 * np.cos(X) * V)


@pytest.mark.parametrize("backend", ENGINES)
def test_several_leaves_and_a_constant(backend: str) -> None:
    # f(a, b) = a * b with a rule giving (ct * b, 10 * ct * a); an integer leaf too.
    def prod(a: Any, b: Any, k: int) -> Any:
        return a * b * k

    rule = ad.custom_vjp(prod, nondiff_argnums=(2,))
    rule.defvjp(
        lambda a, b, k: (prod(a, b, k), (a, b)),
        lambda k, r, g: (g * r[1] * k, 10 * g * r[0] * k),
    )
    ga, gb = ad.gradient(lambda a, b: _sum(rule(a, b, 2)), X, V, backend=backend)
    np.testing.assert_allclose(_np(ga), 2 * V)
    np.testing.assert_allclose(_np(gb), 20 * X)
    gb_only = ad.gradient(
        lambda b: _sum(rule(ad.array_namespace(b).asarray(X), b, 2)), V, backend=backend
    )
    np.testing.assert_allclose(_np(gb_only[0]), 20 * X)


@pytest.mark.parametrize("backend", ENGINES)
def test_hvp_through_custom_vjp(backend: str) -> None:
    # torch: reverse-over-reverse, bwd differentiated. autograd's hvp is forward-over-
    # reverse, which meets the rule (no pushforward) and goes reverse-over-reverse too.
    (got,) = ad.hvp(lse, (X,), (V,), backend=backend)
    np.testing.assert_allclose(_np(got), fd_jacobian(softmax, X) @ V, atol=1e-8)
