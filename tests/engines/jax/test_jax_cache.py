"""Compile once and reuse: cache hits, recompiles on every change, fallbacks said once.

Traces are counted with a Python side effect inside ``f`` that fires only on jax's traced
values; values are checked against closed forms after every change.
"""

from __future__ import annotations

import collections
import math
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from adswitch_jax.notices import JaxFallbackWarning, reset_warnings  # noqa: E402
from adswitch_jax.primitives import engine as _engine  # noqa: E402

import adswitch as ad  # noqa: E402
from adswitch.errors import UnsupportedError  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_state() -> None:
    reset_warnings()
    _engine.reset()


def counting_cube() -> tuple[collections.deque[int], Any]:
    # (a deque: a list that f appends to is data the jax guard watches -- a changed
    # list makes the program compile again -- while a deque's items it does not read)
    runs: collections.deque[int] = collections.deque()

    def f(x: Any) -> Any:
        if isinstance(x, jax.core.Tracer):  # only while jax traces a program
            runs.append(1)
        xp = ad.array_namespace(x)
        return xp.sum(x**3)

    return runs, f


def test_repeat_calls_hit_the_cache_with_fresh_values() -> None:
    runs, f = counting_cube()
    for scale in (1.0, 2.0, -3.0):
        x = scale * np.array([1.0, 2.0, 3.0])
        (g,) = ad.gradient(f, x, backend="jax")
        np.testing.assert_allclose(g, 3 * x**2, rtol=1e-12)
    assert len(runs) == 1


def test_a_direct_caller_keyed_by_the_deprecated_cache_key_still_hits_the_cache() -> None:
    from adswitch_jax.plugin import JaxBackend

    from adswitch.spec import CallInfo

    runs, f = counting_cube()
    # (the engine called directly, as third-party code written before CallInfo.structure)
    info = CallInfo(cache_key=(f, "one leaf"), entry="gradient", func=f)

    class Loss:
        output_structure = "one leaf"

        def __call__(self, leaves: list[Any]) -> tuple[Any, list[Any]]:
            value = f(leaves[0])
            return value, [value]

        def reuse(self, structure: Any) -> None:
            assert structure == "one leaf"

    for scale in (1.0, -2.0):
        x = scale * np.array([1.0, 2.0, 3.0])
        _, grads = JaxBackend().value_and_grad(Loss(), [x], [True], info)
        np.testing.assert_allclose(np.asarray(grads[0]), 3 * x**2, rtol=1e-12)  # closed form
    assert len(runs) == 1


def test_shape_change_recompiles() -> None:
    runs, f = counting_cube()
    ad.gradient(f, np.ones(3), backend="jax")
    x = np.arange(5.0)
    (g,) = ad.gradient(f, x, backend="jax")
    assert len(runs) == 2
    np.testing.assert_allclose(g, 3 * x**2)
    ad.gradient(f, np.ones(3), backend="jax")  # both programs are kept
    assert len(runs) == 2


def test_dtype_change_recompiles() -> None:
    runs, f = counting_cube()
    x = np.array([1.1, 2.2])
    (g32,) = ad.gradient(f, x.astype(np.float32), backend="jax")
    (g64,) = ad.gradient(f, x, backend="jax")
    assert len(runs) == 2
    assert g32.dtype == np.float32 and g64.dtype == np.float64
    np.testing.assert_allclose(g64, 3 * x**2, rtol=1e-14)


def test_jax_and_numpy_inputs_of_one_function() -> None:
    runs, f = counting_cube()
    x = np.array([1.0, -2.0], dtype=np.float32)
    (g_np,) = ad.gradient(f, x, backend="jax")
    (g_jax,) = ad.gradient(f, jnp.asarray(x))
    ad.gradient(f, jnp.asarray(x))
    assert len(runs) == 2  # one program per kind of input, each reused
    assert type(g_np) is np.ndarray and isinstance(g_jax, jax.Array)
    np.testing.assert_allclose(np.asarray(g_jax), g_np)


def test_activity_change_recompiles() -> None:
    # (a deque: a list that f appends to is data the jax guard watches -- a changed
    # list makes the program compile again -- while a deque's items it does not read)
    runs: collections.deque[int] = collections.deque()

    def f(a: Any, b: Any) -> Any:
        runs.append(1)
        xp = ad.array_namespace(a)
        return xp.sum(a * b**2)

    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    ga, gb = ad.gradient(f, a, b, backend="jax")
    np.testing.assert_allclose(ga, b**2)
    np.testing.assert_allclose(gb, 2 * a * b)
    ga, gb = ad.gradient(f, ad.Const(a), b, backend="jax")
    assert ga is None
    np.testing.assert_allclose(gb, 2 * a * b)
    ga, gb = ad.gradient(f, a, ad.Const(b), backend="jax")
    assert gb is None
    np.testing.assert_allclose(ga, b**2)
    assert len(runs) == 3


def test_constant_values_are_part_of_the_key() -> None:
    # (a deque: a list that f appends to is data the jax guard watches -- a changed
    # list makes the program compile again -- while a deque's items it does not read)
    runs: collections.deque[int] = collections.deque()

    def f(x: Any, sign_of: float, power: int) -> Any:
        runs.append(1)
        xp = ad.array_namespace(x)
        return math.copysign(1.0, sign_of) * xp.sum(x**power)

    x = np.array([1.0, 2.0])
    (g, _, _) = ad.gradient(f, x, ad.Const(0.0), ad.Const(2), backend="jax")
    np.testing.assert_allclose(g, 2 * x)
    # -0.0 == 0.0 in Python, but the compiled program baked in the sign.
    (g, _, _) = ad.gradient(f, x, ad.Const(-0.0), ad.Const(2), backend="jax")
    np.testing.assert_allclose(g, -2 * x)
    (g, _, _) = ad.gradient(f, x, ad.Const(1.0), ad.Const(3), backend="jax")
    np.testing.assert_allclose(g, 3 * x**2)
    assert len(runs) == 3


def test_rebound_closure_variable_recompiles() -> None:
    weights = np.array([1.0, 2.0])

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x * weights)

    x = np.array([5.0, 7.0])
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], [1.0, 2.0])
    weights = np.array([-3.0, 4.0])
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], [-3.0, 4.0])


GLOBAL_WEIGHTS = np.array([1.0, 1.0])


def test_rebound_global_recompiles() -> None:
    global GLOBAL_WEIGHTS

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x * GLOBAL_WEIGHTS)

    x = np.array([5.0, 7.0])
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], [1.0, 1.0])
    GLOBAL_WEIGHTS = np.array([0.5, -2.0])
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], [0.5, -2.0])


HELPER_SCALE = 2.0


def _scaled_square_sum(x: Any) -> Any:
    return HELPER_SCALE * ad.array_namespace(x).sum(x**2)


def _cubed_sum(x: Any) -> Any:
    return ad.array_namespace(x).sum(x**3)


def test_global_read_by_a_helper_function_recompiles() -> None:
    # f reads only a helper function; the helper reads the changing global (the guard's
    # fast path over plain functions must follow it there).
    global HELPER_SCALE

    def f(x: Any) -> Any:
        return _scaled_square_sum(x)

    x = np.array([1.0, -2.0])
    for scale in (2.0, 5.0, 5.0, -1.0):
        HELPER_SCALE = scale
        np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], 2 * scale * x)


def test_rebound_helper_function_recompiles() -> None:
    global _scaled_square_sum
    original = _scaled_square_sum

    def f(x: Any) -> Any:
        return _scaled_square_sum(x)

    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], 2 * HELPER_SCALE * x)
    try:
        _scaled_square_sum = _cubed_sum
        np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], 3 * x**2)
    finally:
        _scaled_square_sum = original


def test_constant_of_a_large_tree_is_part_of_the_key() -> None:
    # Four or more leaves: the plan comes from a template, and so does the cache key.
    def f(p: dict[str, Any], scale: float) -> Any:
        xp = ad.array_namespace(p["a"])
        return scale * sum(xp.sum(v**2) for v in p.values())

    params = {k: np.arange(1.0, 3.0) + i for i, k in enumerate("abcd")}
    for scale in (1.0, 1.0, 2.5, -1.0, 2.5):
        (g, _) = ad.gradient(f, params, ad.Const(scale), backend="jax")
        for k, v in params.items():
            np.testing.assert_allclose(g[k], 2 * scale * v, rtol=1e-12)


def test_a_new_array_type_compiles_once() -> None:
    # The first call with an array type adswitch has not classified yet must already key
    # its program as every later call does (no second compile on the second call).
    from adswitch import leaves, templates

    array_type = type(jnp.zeros(2))
    leaves.ARRAY_TYPES.discard(array_type)
    templates.clear()
    runs, cube = counting_cube()

    def f(p: dict[str, Any]) -> Any:
        return sum(cube(v) for v in p.values())

    params = {k: jnp.arange(1.0, 3.0) + i for i, k in enumerate("abcd")}
    for _ in range(3):
        (g,) = ad.gradient(f, params, backend="jax")
        for k, v in params.items():
            np.testing.assert_allclose(np.asarray(g[k]), 3 * np.asarray(v) ** 2, rtol=1e-6)
    assert len(runs) == 4  # one trace of f: cube ran once per leaf


def test_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_engine.CACHE, "maxsize", 2)
    _engine.CACHE.clear()
    runs, f = counting_cube()
    for n in (1, 2, 3):
        ad.gradient(f, np.ones(n), backend="jax")
    assert len(_engine.CACHE) == 2
    (g,) = ad.gradient(f, np.full(1, 2.0), backend="jax")  # evicted: compiled again
    assert len(runs) == 4
    np.testing.assert_allclose(g, [12.0])


@pytest.mark.filterwarnings("error::adswitch_jax.notices.JaxFallbackWarning")
def test_value_dependent_control_flow_falls_back_once() -> None:
    # (a deque: a list that f appends to is data the jax guard watches -- a changed
    # list makes the program compile again -- while a deque's items it does not read)
    runs: collections.deque[int] = collections.deque()

    def f(x: Any) -> Any:
        runs.append(1)
        xp = ad.array_namespace(x)
        if xp.sum(x) > 0:  # needs a concrete value: not traceable under jit
            return xp.sum(x**2)
        return -xp.sum(x)

    with pytest.warns(JaxFallbackWarning, match="cannot be compiled") as record:
        (g,) = ad.gradient(f, np.array([1.0, 2.0]), backend="jax")
    assert record[0].filename == __file__  # points at the user's call, not at adswitch
    np.testing.assert_allclose(g, [2.0, 4.0])
    (g,) = ad.gradient(f, np.array([-1.0, -2.0]), backend="jax")  # no second warning
    np.testing.assert_allclose(g, [-1.0, -1.0])
    # one failed trace, then one eager run per call: no retrace attempts
    assert len(runs) == 3


def test_python_number_of_differentiated_value_is_a_clear_error() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        loss = xp.sum(x**2)
        return loss, f"loss={float(loss):.1f}"

    with (
        pytest.raises(UnsupportedError, match=r"jax engine: float\(x\).*Fix") as info,
        pytest.warns(JaxFallbackWarning, match="cannot be compiled"),
    ):
        ad.withgradient(f, np.array([1.0, 2.0]), backend="jax")
    assert "float(loss)" in str(info.value)  # the user's line (refused in the eager run)


def test_state_dependent_aux_runs_f_each_call() -> None:
    calls: list[int] = []

    def f(x: Any) -> Any:
        calls.append(1)
        xp = ad.array_namespace(x)
        return xp.sum(xp.exp(x)), len(calls)

    x = np.array([0.0, 1.0])
    with pytest.warns(JaxFallbackWarning, match="non-array outputs"):
        first = ad.withgradient(f, x, backend="jax")
    second = ad.withgradient(f, x, backend="jax")
    assert second.val[1] > first.val[1]  # not a value baked in at trace time
    np.testing.assert_allclose(second.grad[0], np.exp(x), rtol=1e-12)


def test_new_closure_every_call_is_warned() -> None:
    x = np.array([1.0, 2.0])
    with pytest.warns(JaxFallbackWarning, match="compiled 8 times"):
        for k in range(8):
            (g,) = ad.gradient(lambda x, k=k: (x * k).sum(), x, backend="jax")
            np.testing.assert_allclose(g, [k, k])


def test_unhashable_constant_runs_eagerly_with_warning() -> None:
    def f(x: Any, names: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x**2) * len(names)

    labels = np.array(["a", "b", "c"])
    with pytest.warns(JaxFallbackWarning, match="unhashable"):
        (g, _) = ad.gradient(f, np.array([1.0, 2.0]), ad.Const(labels), backend="jax")
    np.testing.assert_allclose(g, [6.0, 12.0])


def test_output_structure_that_depends_on_shape() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x**2), [x[i] * 2 for i in range(x.shape[0])]

    for n in (2, 3, 2, 2, 3):
        x = np.arange(1.0, n + 1.0)
        out = ad.withgradient(f, x, backend="jax")
        assert len(out.val[1]) == n
        np.testing.assert_allclose(np.array(out.val[1]), 2 * x)
        np.testing.assert_allclose(out.grad[0], 2 * x)
        (g,) = ad.gradient(f, x, backend="jax")
        np.testing.assert_allclose(g, 2 * x)


STATE = {"scale": 1.0}


def test_global_state_changed_in_place_recompiles() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return STATE["scale"] * xp.sum(x**2)

    x = np.array([1.0, 2.0])
    for scale in (1.0, 3.0, 3.0, -2.0):
        STATE["scale"] = scale
        np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], 2 * scale * x)


def test_captured_numpy_array_modified_in_place_recompiles() -> None:
    batch = np.array([1.0, 2.0])

    def f(w: Any) -> Any:
        xp = ad.array_namespace(w)
        return xp.sum(w * batch)

    w = np.zeros(2)
    np.testing.assert_allclose(ad.gradient(f, w, backend="jax")[0], [1.0, 2.0])
    batch[:] = [5.0, -1.0]  # the next batch, written into the same buffer
    np.testing.assert_allclose(ad.gradient(f, w, backend="jax")[0], [5.0, -1.0])


def test_bound_method_attribute_change_recompiles() -> None:
    class Model:
        def __init__(self) -> None:
            self.power = 2

        def loss(self, x: Any) -> Any:
            xp = ad.array_namespace(x)
            return xp.sum(x**self.power)

    model, x = Model(), np.array([1.0, 3.0])
    np.testing.assert_allclose(ad.gradient(model.loss, x, backend="jax")[0], 2 * x)
    model.power = 3
    np.testing.assert_allclose(ad.gradient(model.loss, x, backend="jax")[0], 3 * x**2)


def test_state_changing_every_call_ends_eager_and_stays_right() -> None:
    state = {"step": 0.0}

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return state["step"] * xp.sum(x)

    x = np.array([1.0, 1.0])
    with pytest.warns(JaxFallbackWarning, match="keep changing"):
        for step in range(6):
            state["step"] = float(step)
            np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], [step, step])
    state["step"] = 9.0
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], [9.0, 9.0])


BIG_DATA = np.arange(4.0)


def test_big_global_array_is_warned(monkeypatch: pytest.MonkeyPatch) -> None:
    # A global array is baked into the program; one too big to keep a copy of is
    # checked by identity only, which the warning says.
    from adswitch_jax.closures import baked

    monkeypatch.setattr(baked, "MAX_COPY_BYTES", 8)

    def f(w: Any) -> Any:
        xp = ad.array_namespace(w)
        return xp.sum(w * BIG_DATA)

    with pytest.warns(JaxFallbackWarning, match=r"large numpy array.*ad\.Const"):
        (g,) = ad.gradient(f, np.zeros(4), backend="jax")
    np.testing.assert_allclose(g, BIG_DATA)
