"""The jax engine through ``ad.gradient``: kinds, dtypes, activity, ties, aux outputs.

Oracles: central finite differences computed with plain numpy, and closed forms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from adswitch_jax.notices import JaxFallbackWarning  # noqa: E402

import adswitch as ad  # noqa: E402
from adswitch.errors import ActivityError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::adswitch_jax.notices.JaxFallbackWarning")


def numeric_grad(f: Callable[[np.ndarray], float], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of ``f`` evaluated in float64 numpy."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[index] += h
        minus[index] -= h
        grad[index] = (float(f(plus)) - float(f(minus))) / (2 * h)
    return grad


def sin_x(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * x)


def test_float64_numpy_in_numpy_out_without_touching_global_flag() -> None:
    before = jax.config.jax_enable_x64
    x = np.linspace(-1.0, 2.0, 7)
    (g,) = ad.gradient(sin_x, x, backend="jax")
    assert jax.config.jax_enable_x64 == before
    assert type(g) is np.ndarray and g.dtype == np.float64 and g.flags.writeable
    # float32 arithmetic would leave errors near 1e-7; float64 agrees to 1e-14.
    np.testing.assert_allclose(g, np.sin(x) + x * np.cos(x), rtol=0, atol=1e-13)


def test_float32_numpy_stays_float32() -> None:
    x = np.linspace(-1.0, 2.0, 7).astype(np.float32)
    (g,) = ad.gradient(sin_x, x, backend="jax")
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, numeric_grad(sin_x, x), rtol=1e-5, atol=1e-5)


def test_jax_in_jax_out_picked_from_array_type() -> None:
    x = jnp.linspace(-1.0, 2.0, 5)
    (g,) = ad.gradient(sin_x, x)  # no backend=: jax arrays select jax
    assert isinstance(g, jax.Array) and g.dtype == x.dtype
    expected = numeric_grad(sin_x, np.asarray(x, dtype=np.float64))
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-5, atol=1e-5)


def test_jax_float64_input_keeps_float64() -> None:
    with jax.enable_x64(True):
        x = jnp.linspace(-1.0, 2.0, 5, dtype=jnp.float64)
    before = jax.config.jax_enable_x64
    (g,) = ad.gradient(sin_x, x)
    assert jax.config.jax_enable_x64 == before
    assert g.dtype == jnp.float64
    xs = np.asarray(x)
    np.testing.assert_allclose(np.asarray(g), np.sin(xs) + xs * np.cos(xs), atol=1e-13)


def test_python_float_leaf_gets_a_python_float() -> None:
    def f(a: float, x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(xp.exp(a * x))

    x = np.array([0.5, 1.0, -2.0])
    ga, gx = ad.gradient(f, 0.3, x, backend="jax")
    assert type(ga) is float
    assert ga == pytest.approx(float(np.sum(x * np.exp(0.3 * x))), rel=1e-12)
    np.testing.assert_allclose(gx, 0.3 * np.exp(0.3 * x), rtol=1e-12)


def test_const_unused_and_integer_leaves() -> None:
    def f(p: dict[str, Any], c: Any) -> Any:
        xp = ad.array_namespace(p["w"])
        return xp.sum(p["w"] ** 2 * c) + p["n"]

    p: dict[str, Any] = {"w": np.array([1.0, -2.0]), "unused": np.array([3.0, 4.0]), "n": 2}
    c = np.array([2.0, 5.0])
    gp, gc = ad.gradient(f, p, ad.Const(c), backend="jax")
    assert gc is None
    assert gp["n"] is None
    np.testing.assert_array_equal(gp["unused"], np.zeros(2))
    np.testing.assert_allclose(gp["w"], 2 * p["w"] * c)


def test_tied_parameter_gets_total_gradient() -> None:
    w = np.array([1.0, 2.0, 3.0])
    model = {"encoder": w, "decoder": w}

    def f(m: dict[str, Any]) -> Any:
        xp = ad.array_namespace(m["encoder"])
        return xp.sum(m["encoder"] ** 2) + xp.sum(xp.sin(m["decoder"]))

    (g,) = ad.gradient(f, model, backend="jax")
    # "decoder" < "encoder" in flatten order decides where the total sits.
    total = [v for v in g.values() if v is not None]
    assert len(total) == 1
    np.testing.assert_allclose(total[0], 2 * w + np.cos(w), rtol=1e-12)


def test_aux_outputs_concrete_in_callers_kind() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        y = xp.tanh(x)
        return xp.sum(y), {"y": y, "label": "tanh", "count": 3}

    x = np.array([0.1, -0.4, 2.0])
    with pytest.warns(JaxFallbackWarning, match="non-array outputs"):
        out = ad.withgradient(f, x, backend="jax")
    loss, aux = out.val
    assert type(loss) is np.float64 and float(loss) == pytest.approx(np.tanh(x).sum())
    assert isinstance(aux["y"], np.ndarray) and aux["label"] == "tanh" and aux["count"] == 3
    np.testing.assert_allclose(aux["y"], np.tanh(x), rtol=1e-12)
    np.testing.assert_allclose(out.grad[0], 1 - np.tanh(x) ** 2, rtol=1e-12)


def test_array_aux_with_jax_inputs_stays_jax() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x**3), x * 2

    x = jnp.asarray([1.0, 2.0])
    out = ad.withgradient(f, x)
    assert isinstance(out.val[1], jax.Array) and not isinstance(out.val[1], jax.core.Tracer)
    np.testing.assert_allclose(np.asarray(out.val[1]), [2.0, 4.0])
    np.testing.assert_allclose(np.asarray(out.grad[0]), 3 * np.array([1.0, 4.0]), rtol=1e-6)


def test_duplicated_numpy_shadow_accumulates() -> None:
    x = np.array([1.0, 2.0])
    dx = np.array([10.0, 20.0])
    (g,) = ad.gradient(sin_x, ad.Duplicated(x, dx), backend="jax", zero=False)
    assert g is dx
    np.testing.assert_allclose(dx, [10.0, 20.0] + np.sin(x) + x * np.cos(x), rtol=1e-12)


def test_duplicated_jax_shadow_is_a_clear_error() -> None:
    x = jnp.asarray([1.0, 2.0])
    shadow = jnp.asarray([5.0, 6.0])
    with pytest.raises(ActivityError, match=r"jax.*immutable.*plain"):
        ad.gradient(sin_x, ad.Duplicated(x, shadow), zero=False)
    np.testing.assert_array_equal(np.asarray(shadow), [5.0, 6.0])


def test_duplicated_jax_shadow_with_zeroing_is_a_clear_error() -> None:
    x = jnp.asarray([1.0, 2.0])
    other = ad.Duplicated(np.ones(2), np.full(2, 5.0))
    with pytest.raises(ActivityError, match=r"jax.*immutable.*plain"):
        ad.gradient(lambda a, b: sin_x(a) + 0.0, ad.Duplicated(x, jnp.zeros(2)), other)
    np.testing.assert_array_equal(other.dval, [5.0, 5.0])  # nothing half-written


def test_callable_model_argument() -> None:
    from dataclasses import dataclass

    @dataclass
    class Affine:
        w: Any
        b: Any

        def __call__(self, x: Any) -> Any:
            xp = ad.array_namespace(self.w)
            return xp.sum(xp.tanh(x @ self.w + self.b))

    rng = np.random.default_rng(0)
    model = Affine(rng.standard_normal((3, 2)), rng.standard_normal(2))
    x = rng.standard_normal((4, 3))
    (gm, _) = ad.gradient(lambda m, x: m(x), model, ad.Const(x), backend="jax")
    assert isinstance(gm, Affine)
    ref_w = numeric_grad(lambda w: Affine(w, model.b)(x), model.w)
    np.testing.assert_allclose(gm.w, ref_w, rtol=1e-6, atol=1e-8)


def test_destructure_is_differentiable_with_ties() -> None:
    w = np.array([1.0, 2.0])
    params = {"a": w, "b": w, "c": np.array([[3.0]])}
    flat, rebuild = ad.destructure(params)

    def f(v: Any) -> Any:
        p = rebuild(v)
        xp = ad.array_namespace(v)
        return xp.sum(p["a"] ** 2) + xp.sum(p["b"]) + xp.sum(p["c"] ** 3)

    (g,) = ad.gradient(f, flat, backend="jax")
    # w is one parameter: 2w from "a" plus 1 from "b"; c: 3c^2
    np.testing.assert_allclose(g, [2 * 1.0 + 1, 2 * 2.0 + 1, 27.0])


def test_owns_jax_arrays_and_tracers_only() -> None:
    from adswitch_jax.plugin import JaxBackend

    backend = JaxBackend()
    owned: list[bool] = []

    def f(x: Any) -> Any:
        owned.append(backend.owns(x))  # x is a jax tracer here
        return jnp.sum(x)

    jax.grad(f)(jnp.ones(2))
    assert owned == [True]
    assert backend.owns(jnp.ones(2))
    assert not backend.owns(np.ones(2)) and not backend.owns(1.0)
