"""``ad.prepare`` on the jax engine: the program lives in the prepared call's slot, found
without the cache lookup, and stays right when what the call does not fix changes --
constant leaf values, closures, globals -- and from several threads at once.

Oracles: closed forms.
"""

from __future__ import annotations

import collections
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from adswitch_jax.notices import reset_warnings  # noqa: E402
from adswitch_jax.primitives import engine as _engine  # noqa: E402

import adswitch as ad  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_state() -> None:
    reset_warnings()
    _engine.reset()


def counting(f: Any) -> tuple[collections.deque[int], Any]:
    # (a deque: a list that f appends to is data the jax guard watches -- a changed
    # list makes the program compile again -- while a deque's items it does not read)
    traces: collections.deque[int] = collections.deque()

    def wrapped(*args: Any) -> Any:
        if isinstance(args[0], jax.core.Tracer):
            traces.append(1)
        return f(*args)

    return traces, wrapped


def test_prepared_gradient_compiles_once_and_skips_the_cache() -> None:
    traces, f = counting(lambda x, w: ad.array_namespace(x).sum(w * x**2))
    w = np.array([1.0, -1.0, 2.0])
    prep = ad.prepare(ad.gradient, f, np.ones(3), ad.Const(w), backend="jax")
    for k in range(4):
        x = np.arange(3.0) + k
        (g, none) = prep(x, ad.Const(w))
        assert none is None
        np.testing.assert_allclose(g, 2 * w * x)
    # one program, and one more trace when the whole prepared call becomes one program
    # after its first calls (adswitch.shortcut); then none
    assert len(traces) == 2
    _engine.CACHE.clear()  # the prepared call keeps its own program
    np.testing.assert_allclose(prep(np.ones(3), ad.Const(w))[0], 2 * w)
    assert len(traces) == 2


def test_prepared_constant_leaves_may_change_value() -> None:
    def f(x: Any, scale: float, power: int) -> Any:
        return scale * ad.array_namespace(x).sum(x**power)

    x = np.array([1.0, 2.0])
    prep = ad.prepare(ad.gradient, f, x, ad.Const(1.0), ad.Const(2), backend="jax")
    for scale, power in ((1.0, 2), (3.0, 2), (3.0, 3), (-0.0, 2), (1.0, 2)):
        (g, _, _) = prep(x, ad.Const(scale), ad.Const(power))
        np.testing.assert_allclose(g, scale * power * x ** (power - 1))
        assert np.signbit(g[0]) == np.signbit(scale)


def test_prepared_call_sees_its_closure_change() -> None:
    weights = np.array([1.0, 2.0])
    offset = 0.0

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x * weights) + offset * xp.sum(x**2)

    x = np.array([1.0, 1.0])
    prep = ad.prepare(ad.gradient, f, x, backend="jax")
    np.testing.assert_allclose(prep(x)[0], [1.0, 2.0])
    weights[:] = [3.0, 4.0]  # in place: an input of the program
    np.testing.assert_allclose(prep(x)[0], [3.0, 4.0])
    weights = np.array([-1.0, 5.0])  # rebound: another input
    np.testing.assert_allclose(prep(x)[0], [-1.0, 5.0])
    offset = 1.5  # a number: baked in, so another program
    np.testing.assert_allclose(prep(x)[0], [2.0, 8.0])


SETTINGS = {"power": 2}


def test_prepared_call_sees_a_global_change() -> None:
    def f(x: Any) -> Any:
        return ad.array_namespace(x).sum(x ** SETTINGS["power"])

    x = np.array([1.0, 2.0])
    prep = ad.prepare(ad.gradient, f, x, backend="jax")
    try:
        for power in (2, 3, 3, 2):
            SETTINGS["power"] = power
            np.testing.assert_allclose(prep(x)[0], power * x ** (power - 1))
    finally:
        SETTINGS["power"] = 2


def test_prepared_calls_from_several_threads() -> None:
    data = np.array([0.5, -1.0, 2.0])
    prep = ad.prepare(
        ad.gradient, lambda x: ad.array_namespace(x).sum(x**2 * data), np.ones(3), backend="jax"
    )

    def work(seed: int) -> bool:
        rng = np.random.default_rng(seed)
        for _ in range(20):
            x = rng.standard_normal(3)
            np.testing.assert_allclose(prep(x)[0], 2 * x * data, rtol=1e-12)
        return True

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(8)))


def test_prepared_compiles_in_threads_with_captured_arrays() -> None:
    # Several threads compiling at once while f's captured array is swapped for a traced
    # value during each trace: no thread may see another's traced value.
    def make(weights: np.ndarray) -> Any:
        return lambda x: ad.array_namespace(x).sum(x * weights)

    def work(seed: int) -> bool:
        rng = np.random.default_rng(seed)
        for n in (2, 3, 4):
            weights = rng.standard_normal(n)
            f = make(weights)
            prep = ad.prepare(ad.gradient, f, np.ones(n), backend="jax")
            for _ in range(3):
                np.testing.assert_allclose(prep(rng.standard_normal(n))[0], weights)
                np.testing.assert_allclose(ad.gradient(f, np.ones(n), backend="jax")[0], weights)
        return True

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(8)))


def test_one_function_compiled_for_many_shapes_from_several_threads() -> None:
    # Every thread compiles programs of the same f (one per shape) at once: each trace
    # swaps f's captured scale for a traced value, and no other thread may see it.
    scale = np.array(1.5)

    def f(x: Any) -> Any:
        return ad.array_namespace(x).sum(x**2) * scale

    def work(n: int) -> bool:
        for k in range(3):
            x = np.arange(1.0, n + 2.0) * (k + 1)
            np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], 3.0 * x)
        return True

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(12)))


def test_every_prepared_operator_compiles_once() -> None:
    traces, f = counting(lambda x, A: ad.array_namespace(x).tanh(A @ x))
    traces_s, g = counting(
        lambda x, A: ad.array_namespace(x).sum(ad.array_namespace(x).tanh(A @ x))
    )
    A = np.array([[1.0, 0.5], [-0.5, 2.0], [0.0, 1.0]])
    x0, v = np.array([0.1, 0.2]), np.array([1.0, -1.0])
    prepared = {
        "jacobian": ad.prepare(ad.jacobian, f, x0, ad.Const(A), backend="jax", mode="reverse"),
        "jacobian_forward": ad.prepare(
            ad.jacobian, f, x0, ad.Const(A), backend="jax", mode="forward"
        ),
        "vjp": ad.prepare(ad.vjp, f, x0, ad.Const(A), backend="jax"),
        "jvp": ad.prepare(ad.jvp, f, (x0, ad.Const(A)), (v, None), backend="jax"),
        "hessian": ad.prepare(ad.hessian, g, x0, ad.Const(A), backend="jax"),
        "hvp": ad.prepare(ad.hvp, g, (x0, ad.Const(A)), (v, None), backend="jax"),
    }
    for k in range(3):
        x = x0 + k
        y = np.tanh(A @ x)
        J = (1 - y**2)[:, None] * A
        H = A.T @ ((-2 * y * (1 - y**2))[:, None] * A)
        np.testing.assert_allclose(prepared["jacobian"](x, ad.Const(A))[0], J, rtol=1e-12)
        np.testing.assert_allclose(prepared["jacobian_forward"](x, ad.Const(A))[0], J, rtol=1e-12)
        _, pullback = prepared["vjp"](x, ad.Const(A))
        np.testing.assert_allclose(pullback(np.ones(3))[0], J.T @ np.ones(3), rtol=1e-12)
        np.testing.assert_allclose(
            prepared["jvp"]((x, ad.Const(A)), (v, None))[1], J @ v, rtol=1e-12
        )
        np.testing.assert_allclose(prepared["hessian"](x, ad.Const(A))[0][0], H, rtol=1e-10)
        np.testing.assert_allclose(
            prepared["hvp"]((x, ad.Const(A)), (v, None))[0], H @ v, rtol=1e-10
        )
    # reverse, forward, vjp, jvp: one program each, and the two Jacobians' shortcuts
    # (adswitch.shortcut: the whole prepared call traced once more, as one program)
    assert len(traces) == 6
    assert len(traces_s) == 3  # hessian, hvp, and the hessian's shortcut


def test_prepared_derivative_with_a_python_float() -> None:
    prep = ad.prepare(
        ad.derivative, lambda t, a: a * t**3, 1.0, np.array([1.0, 2.0]), backend="jax"
    )
    for t in (1.0, 2.0, -0.5):
        np.testing.assert_allclose(prep(t, np.array([1.0, 2.0])), 3 * t**2 * np.array([1.0, 2.0]))


def test_prepared_on_jax_arrays_float32() -> None:
    prep = ad.prepare(ad.gradient, lambda x: jnp.sum(jnp.sin(x)), jnp.zeros(3, jnp.float32))
    for k in range(3):
        x = jnp.full(3, 0.1 * k, dtype=jnp.float32)
        (g,) = prep(x)
        assert isinstance(g, jax.Array) and g.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(g), np.cos(np.asarray(x)), rtol=1e-6)
