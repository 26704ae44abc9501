"""Nested gradients on the jax engine: second and third order, Hessian-vector products,
and adswitch inside jax's own transformations -- all against closed forms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import adswitch as ad  # noqa: E402


def input_gradient_loss(a: float, x: Any) -> Any:
    """``sum((d/dx sum(sin(a x)))^2) = sum(a^2 cos^2(a x))`` (a loss on an input gradient)."""
    xp = ad.array_namespace(x)
    (dx,) = ad.gradient(lambda x_: xp.sum(xp.sin(a * x_)), x)
    return xp.sum(dx**2)


def test_second_order_against_closed_form() -> None:
    a, x = 1.3, np.array([0.2, -0.7, 1.1])
    ga, gx = ad.gradient(input_gradient_loss, a, x, backend="jax")
    c, s = np.cos(a * x), np.sin(a * x)
    assert ga == pytest.approx(float(np.sum(2 * a * c**2 - 2 * a**2 * c * s * x)), rel=1e-12)
    np.testing.assert_allclose(gx, -2 * a**3 * c * s, rtol=1e-12)


def test_second_order_repeat_calls_compile_once() -> None:
    runs: list[int] = []

    def loss(a: float, x: Any) -> Any:
        runs.append(1)
        return input_gradient_loss(a, x)

    x = np.array([0.2, -0.7, 1.1])
    for a in (0.5, 1.5):
        ga, _ = ad.gradient(loss, a, x, backend="jax")
        c, s = np.cos(a * x), np.sin(a * x)
        assert ga == pytest.approx(float(np.sum(2 * a * c**2 - 2 * a**2 * c * s * x)))
    assert len(runs) == 1


def test_hessian_vector_product() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x**4) / 4 + xp.sum(x) ** 2

    def hvp(x: Any, v: Any) -> Any:
        xp = ad.array_namespace(x)
        (g,) = ad.gradient(f, x)
        return xp.sum(g * v)

    x, v = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.1, -1.0])
    hv, _ = ad.gradient(hvp, x, ad.Const(v), backend="jax")
    np.testing.assert_allclose(hv, 3 * x**2 * v + 2 * v.sum(), rtol=1e-12, atol=1e-12)


def test_third_order_on_jax_arrays() -> None:
    def d1(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(ad.gradient(lambda y: xp.sum(xp.sin(y)), x)[0])  # sum(cos x)

    def d2(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(ad.gradient(d1, x)[0])  # sum(-sin x)

    x = jnp.asarray([0.3, 1.2])
    (g3,) = ad.gradient(d2, x)  # -cos x
    assert isinstance(g3, jax.Array)
    np.testing.assert_allclose(np.asarray(g3), -np.cos(np.asarray(x)), rtol=1e-6)


def test_inside_jax_grad_and_jit_of_the_user() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x**3)

    def g_sum(x: Any) -> Any:
        (g,) = ad.gradient(f, x, backend="jax")  # 3 x^2
        return jnp.sum(g * x)  # 3 sum(x^3); its gradient is 9 x^2

    x = jnp.asarray([1.0, 2.0, -1.0])
    np.testing.assert_allclose(np.asarray(jax.grad(g_sum)(x)), 9 * np.asarray(x) ** 2)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.grad(g_sum))(x)), 9 * np.asarray(x) ** 2)
    np.testing.assert_allclose(
        np.asarray(jax.jit(lambda x: ad.gradient(f, x, backend="jax")[0])(x)),
        3 * np.asarray(x) ** 2,
    )


def test_nested_float64_numpy_stays_exact() -> None:
    x = np.array([0.4, 0.9])
    (gx,) = ad.gradient(lambda x: input_gradient_loss(2.0, x), x, backend="jax")
    c, s = np.cos(2.0 * x), np.sin(2.0 * x)
    np.testing.assert_allclose(gx, -2 * 8.0 * c * s, rtol=1e-13)
