"""The sweep's in-place paths against closed forms: rules and gradient accumulation may
reuse memory only when nothing the user (or an unswept tape entry) holds refers to it.
Arrays here are large (>= ``IN_PLACE_FROM`` elements) so that those paths are taken; each
case checks the gradient *and* every value the user still holds against plain numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
from adswitch_tape.array.tracer import raw
from adswitch_tape.core import IN_PLACE_FROM

import adswitch as ad

N = 2 * IN_PLACE_FROM


def _x(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2.0, 2.0, N)


def _dtanh(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 - np.tanh(x) ** 2
    return out


def test_tanh_output_returned_as_aux_is_not_overwritten() -> None:
    x = _x()

    def f(v: Any) -> Any:
        xp = ad.array_namespace(v)
        y = xp.tanh(v)
        return xp.sum(y), y

    (_, aux), (g,) = ad.withgradient(f, x, backend="tape")
    np.testing.assert_allclose(aux, np.tanh(x), rtol=1e-15)
    np.testing.assert_allclose(g, _dtanh(x), rtol=1e-12)


def test_tanh_output_returned_through_a_view_is_not_overwritten() -> None:
    x = _x(1)

    def f(v: Any) -> Any:
        xp = ad.array_namespace(v)
        y = xp.tanh(v)
        return xp.sum(y * 3.0), y[:10]

    (_, aux), (g,) = ad.withgradient(f, x, backend="tape")
    np.testing.assert_allclose(aux, np.tanh(x[:10]), rtol=1e-15)
    np.testing.assert_allclose(g, 3.0 * _dtanh(x), rtol=1e-12)


def test_tanh_output_kept_by_the_user_is_not_overwritten() -> None:
    x = _x(2)
    kept: list[Any] = []

    def f(v: Any) -> Any:
        xp = ad.array_namespace(v)
        y = xp.tanh(v)
        kept.append(y)  # a traced value kept past the call (its value stays readable)
        return xp.sum(y)

    (g,) = ad.gradient(f, x, backend="tape")
    np.testing.assert_allclose(raw(kept[0]), np.tanh(x), rtol=1e-15)
    np.testing.assert_allclose(g, _dtanh(x), rtol=1e-12)


def test_tanh_output_read_by_later_rules_and_by_an_unreached_entry() -> None:
    # y feeds y * y and tanh(y) (their rules read y before tanh's entry is swept) and an
    # operation that does not reach the loss (its entry keeps y alive).
    x = _x(3)
    unused: list[Any] = []

    def f(v: Any) -> Any:
        xp = ad.array_namespace(v)
        y = xp.tanh(v)
        unused.append(y * 7.0)
        return xp.sum(y * y) + xp.sum(xp.tanh(y))

    (g,) = ad.gradient(f, x, backend="tape")
    t = np.tanh(x)
    np.testing.assert_allclose(g, (2.0 * t + _dtanh(t)) * _dtanh(x), rtol=1e-12)
    np.testing.assert_allclose(raw(unused[0]), 7.0 * t, rtol=1e-15)


def test_two_tanh_layers_in_a_row() -> None:
    x = _x(4)

    def f(v: Any) -> Any:
        xp = ad.array_namespace(v)
        return xp.sum(xp.tanh(xp.tanh(v) * 1.5))

    (g,) = ad.gradient(f, x, backend="tape")
    t = np.tanh(x)
    np.testing.assert_allclose(g, _dtanh(1.5 * t) * 1.5 * _dtanh(x), rtol=1e-12)


def test_nested_gradients_through_tanh_are_recorded() -> None:
    # The inner sweep runs on tracers of the outer call: its rules must be recorded.
    x = _x(5)

    def inner_grad_sum(v: Any) -> Any:
        xp = ad.array_namespace(v)
        (dv,) = ad.gradient(lambda u: ad.array_namespace(u).sum(ad.array_namespace(u).tanh(u)), v)
        return xp.sum(dv * dv)

    (g,) = ad.gradient(inner_grad_sum, x, backend="tape")
    t = np.tanh(x)
    # d/dx sum((1 - t^2)^2) = 2 (1 - t^2) * (-2 t (1 - t^2))
    np.testing.assert_allclose(g, -4.0 * t * (1.0 - t**2) ** 2, rtol=1e-10, atol=1e-14)


def test_mlp_gradient_matches_the_hand_derived_one() -> None:
    # Large layers: the outer-product matmul rule (inner dimension 1), the rows-summed
    # bias gradient and the tanh rule on large arrays, against backpropagation by hand.
    rng = np.random.default_rng(6)
    x = rng.standard_normal((128, 64))
    t = rng.standard_normal((128, 1))
    p = {
        "W1": rng.standard_normal((64, 256)) / 8.0,
        "b1": rng.standard_normal(256),
        "W2": rng.standard_normal((256, 256)) / 16.0,
        "b2": rng.standard_normal(256),
        "W3": rng.standard_normal((256, 1)) / 16.0,
        "b3": rng.standard_normal(1),
    }
    before = {k: v.copy() for k, v in p.items()}

    def loss(q: Any, x: Any, t: Any) -> Any:
        xp = ad.array_namespace(q["W1"])
        h = xp.tanh(x @ q["W1"] + q["b1"])
        h = xp.tanh(h @ q["W2"] + q["b2"])
        return xp.mean((h @ q["W3"] + q["b3"] - t) ** 2)

    (g, _, _) = ad.gradient(loss, p, ad.Const(x), ad.Const(t), backend="tape")

    h1 = np.tanh(x @ p["W1"] + p["b1"])
    h2 = np.tanh(h1 @ p["W2"] + p["b2"])
    go = 2.0 * (h2 @ p["W3"] + p["b3"] - t) / t.size
    ga2 = (go @ p["W3"].T) * (1.0 - h2**2)
    ga1 = (ga2 @ p["W2"].T) * (1.0 - h1**2)
    expected = {
        "W3": h2.T @ go,
        "b3": go.sum(axis=0),
        "W2": h1.T @ ga2,
        "b2": ga2.sum(axis=0),
        "W1": x.T @ ga1,
        "b1": ga1.sum(axis=0),
    }
    for k, want in expected.items():
        np.testing.assert_allclose(g[k], want, rtol=1e-10, atol=1e-14, err_msg=k)
    for k, v in p.items():
        np.testing.assert_array_equal(v, before[k], err_msg=k)
