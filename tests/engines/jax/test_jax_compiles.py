"""How often the jax engine compiles: one program per operator call shape (a Hessian and a
reverse Jacobian are one program each), programs keyed on what a function *is* (a fresh
lambda with the same code and captures reuses the program), and captured arrays as
program inputs (a new value neither recompiles nor goes stale).

Compiles are counted twice over: traces of ``f`` (a side effect that fires only on jax's
traced values) and XLA compiles reported by ``jax.monitoring``. Values are checked
against closed forms after every change.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from adswitch_jax.notices import reset_warnings  # noqa: E402
from adswitch_jax.primitives import engine as _engine  # noqa: E402

import adswitch as ad  # noqa: E402

_BACKEND_COMPILES: list[str] = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kwargs: (
        _BACKEND_COMPILES.append(event) if event.endswith("backend_compile_duration") else None
    )
)


@pytest.fixture(autouse=True)
def _fresh_state() -> None:
    reset_warnings()
    _engine.reset()


@contextmanager
def xla_compiles() -> Iterator[list[int]]:
    """Counts the XLA compiles inside the block (into the yielded list's one element)."""
    count = [0]
    before = len(_BACKEND_COMPILES)
    try:
        yield count
    finally:
        count[0] = len(_BACKEND_COMPILES) - before


def programs_traced() -> int:
    """How many times jax traced the engine's cached programs."""
    return sum(entry.trace.count for _, entry in _engine.CACHE.items())


def traced(x: Any) -> bool:
    return isinstance(x, jax.core.Tracer)


# -- one program per operator -------------------------------------------------------------


def test_hessian_is_one_program_compiled_once() -> None:
    traces: list[int] = []

    def f(x: Any, A: Any) -> Any:
        if traced(x):
            traces.append(1)
        xp = ad.array_namespace(x)
        return xp.sum(xp.log1p(xp.exp(A @ x))) + 0.5 * xp.sum(x * x)

    rng = np.random.default_rng(0)
    A = rng.standard_normal((8, 5))
    for k in range(3):
        x = rng.standard_normal(5)
        with xla_compiles() as compiles:
            ((H, _), _) = ad.hessian(f, x, ad.Const(A), backend="jax")
        s = 1 / (1 + np.exp(-(A @ x)))
        np.testing.assert_allclose(H, A.T @ ((s * (1 - s))[:, None] * A) + np.eye(5), rtol=1e-12)
        if k:
            assert compiles[0] == 0
    # f ran once, inside the one program: forward over the inner gradient, batched
    assert len(traces) == 1
    assert len(_engine.CACHE) == 1 and programs_traced() == 1


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_jacobian_is_one_program_compiled_once(mode: str) -> None:
    traces: list[int] = []

    def f(x: Any, W: Any) -> Any:
        if traced(x):
            traces.append(1)
        return ad.array_namespace(x).tanh(W @ x)

    W = np.random.default_rng(1).standard_normal((4, 3))
    for k in range(3):
        x = np.full(3, 0.1 * k)
        with xla_compiles() as compiles:
            (J, _) = ad.jacobian(f, x, ad.Const(W), backend="jax", mode=mode)
        np.testing.assert_allclose(J, (1 - np.tanh(W @ x) ** 2)[:, None] * W, rtol=1e-12)
        if k:
            assert compiles[0] == 0
    assert len(traces) == 1 and len(_engine.CACHE) == 1 and programs_traced() == 1


def test_auto_jacobian_settles_on_one_program() -> None:
    W = np.random.default_rng(2).standard_normal((2, 5))
    f = lambda x, W: ad.array_namespace(x).sin(W @ x)  # noqa: E731
    for k in range(4):
        x = np.full(5, 0.2 * k)
        with xla_compiles() as compiles:
            (J, _) = ad.jacobian(f, x, ad.Const(W), backend="jax")
        np.testing.assert_allclose(J, np.cos(W @ x)[:, None] * W, rtol=1e-12)
        if k >= 2:  # the first call learns the output size, the second compiles its mode
            assert compiles[0] == 0


def test_vjp_pullbacks_compile_once() -> None:
    f = lambda x: ad.array_namespace(x).exp(x) * x  # noqa: E731
    for k in range(3):
        x = np.arange(3.0) + k
        with xla_compiles() as compiles:
            _, pullback = ad.vjp(f, x, backend="jax")
            for u in (np.ones(3), np.arange(3.0)):
                np.testing.assert_allclose(pullback(u)[0], np.exp(x) * (1 + x) * u, rtol=1e-12)
        if k:
            assert compiles[0] == 0


def test_jvp_and_hvp_compile_once() -> None:
    f = lambda x: ad.array_namespace(x).sum(x**4)  # noqa: E731
    for k in range(3):
        x, v = np.arange(3.0) + k, np.array([1.0, -1.0, 0.5])
        with xla_compiles() as compiles:
            (hv,) = ad.hvp(f, (x,), (v,), backend="jax")
            _, t = ad.jvp(lambda x: x**3, (x,), (v,), backend="jax")
        np.testing.assert_allclose(hv, 12 * x**2 * v, rtol=1e-12)
        np.testing.assert_allclose(t, 3 * x**2 * v, rtol=1e-12)
        if k:
            assert compiles[0] == 0


# -- keyed on what a function is ------------------------------------------------------------


def test_fresh_lambdas_in_a_loop_compile_once() -> None:
    traces: list[int] = []

    def note(v: Any) -> Any:
        if traced(v):
            traces.append(1)
        return v

    W = np.array([[1.0, 2.0], [3.0, 4.0]])
    for k in range(6):
        x = np.array([0.5, -0.25]) * (k + 1)
        with xla_compiles() as compiles:
            (g,) = ad.gradient(
                lambda v: ad.array_namespace(v).sum(note(W @ v) ** 2), x, backend="jax"
            )
        np.testing.assert_allclose(g, 2 * W.T @ (W @ x), rtol=1e-12)
        if k:
            assert compiles[0] == 0
    assert len(traces) == 1 and programs_traced() == 1


def test_changed_captured_array_is_an_input_not_a_recompile() -> None:
    traces: list[int] = []

    def make_loss(batch: np.ndarray) -> Any:  # a new closure every step, as in a training loop
        def loss(w: Any) -> Any:
            if traced(w):
                traces.append(1)
            return ad.array_namespace(w).sum(w * batch) ** 2

        return loss

    rng = np.random.default_rng(3)
    x = np.array([1.0, -2.0, 0.5])
    for _ in range(5):
        batch = rng.standard_normal(3)
        (g,) = ad.gradient(make_loss(batch), x, backend="jax")
        np.testing.assert_allclose(g, 2 * np.dot(x, batch) * batch, rtol=1e-12)
    assert len(traces) == 1 and programs_traced() == 1


def test_captured_array_changed_in_place_is_read_fresh() -> None:
    weights = np.array([1.0, 2.0])

    def f(x: Any) -> Any:
        return ad.array_namespace(x).sum(x * weights)

    x = np.zeros(2)
    for new in ([5.0, -1.0], [0.0, 3.0], [2.0, 2.0]):
        weights[:] = new
        np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], new)
    assert programs_traced() == 1


def test_captured_arrays_in_defaults_tuples_and_dicts_are_inputs() -> None:
    traces: list[int] = []

    def make(pair: tuple[Any, int], table: dict[str, Any], b: np.ndarray) -> Any:
        def f(w: Any, d: Any = b) -> Any:
            if traced(w):
                traces.append(1)
            xp = ad.array_namespace(w)
            scaled = table["scale"] * xp.sum(w * table["c"])
            return xp.sum(w * pair[0]) * pair[1] + xp.sum(w * d) + scaled

        return f

    rng = np.random.default_rng(4)
    x = np.array([0.3, 0.9])
    for _ in range(4):
        a, b, c = rng.standard_normal(2), rng.standard_normal(2), rng.standard_normal(2)
        (g,) = ad.gradient(make((a, 2), {"c": c, "scale": 3.0}, b), x, backend="jax")
        np.testing.assert_allclose(g, 2 * a + b + 3.0 * c, rtol=1e-12)
    assert len(traces) == 1


def summed(data: np.ndarray) -> Any:
    return lambda s: s * ad.array_namespace(data).sum(data)


def test_captured_array_of_a_new_shape_compiles_a_new_program() -> None:
    for n in (2, 3, 2):
        data = np.arange(1.0, n + 1.0)
        (g,) = ad.gradient(summed(data), 1.5, backend="jax")
        assert g == pytest.approx(data.sum())
    assert len(_engine.CACHE) == 2


def scaled_square(scale: float) -> Any:
    return lambda v: scale * ad.array_namespace(v).sum(v**2)


def test_captured_numbers_are_part_of_the_key() -> None:
    x = np.array([1.0, 2.0])
    for scale in (1.0, 2.0, 1.0, -0.0, 0.0):
        (g,) = ad.gradient(scaled_square(scale), x, backend="jax")
        np.testing.assert_allclose(g, 2 * scale * x)
        assert np.signbit(g[0]) == np.signbit(scale)  # -0.0 is not 0.0
    assert len(_engine.CACHE) == 4  # 1.0, 2.0, -0.0, 0.0


def test_same_code_with_other_captured_functions_is_another_program() -> None:
    def make(activation: Any) -> Any:
        return lambda x: ad.array_namespace(x).sum(activation(x))

    x = np.array([0.2, 0.4])
    (g_sin,) = ad.gradient(make(jnp.sin), x, backend="jax")
    (g_exp,) = ad.gradient(make(jnp.exp), x, backend="jax")
    np.testing.assert_allclose(g_sin, np.cos(x))
    np.testing.assert_allclose(g_exp, np.exp(x))


OFFSET = np.array([1.0, 1.0])


def test_global_arrays_stay_guarded_constants() -> None:
    global OFFSET
    x = np.array([1.0, 2.0])
    f = lambda v: ad.array_namespace(v).sum((v * OFFSET) ** 2)  # noqa: E731
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], 2 * x)
    OFFSET[:] = 3.0  # in place: the guard compares its copy
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], 18 * x)
    saved = OFFSET
    try:
        OFFSET = np.array([0.5, 0.5])  # rebound: another object
        np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], 0.5 * x)
    finally:
        OFFSET = saved


def test_captured_tracer_of_the_users_jax_transformation() -> None:
    def outer(s: Any) -> Any:
        x = jnp.asarray([1.0, 2.0])
        (g,) = ad.gradient(lambda v: jnp.sum(v**2) * s, x, backend="jax")  # captures a tracer
        return jnp.sum(g)  # 6 s

    assert float(jax.grad(outer)(2.0)) == pytest.approx(6.0)
    assert float(jax.jit(outer)(2.0)) == pytest.approx(12.0)


def test_a_function_called_again_sees_what_changed_in_its_closure() -> None:
    # The engine remembers a function's walk between calls while everything it reads is
    # the same object: every kind of change must still be seen.
    pair = (np.array([1.0, 2.0]), 2.0)
    data = np.array([[1.0, 0.0], [0.0, 1.0]])

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x * pair[0]) * pair[1] + xp.sum(data @ x)

    def expected() -> np.ndarray:
        return pair[0] * pair[1] + data.sum(axis=0)

    x = np.array([0.5, -0.5])
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], expected())
    pair = (np.array([-1.0, 3.0]), 0.5)  # a new tuple, a new number: another program
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], expected())
    data[0, 1] = 7.0  # in place: read fresh as an input
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], expected())
    data = np.ones((2, 2))
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], expected())
    flat = data.reshape(-1)
    data = flat  # same array object, reshaped: now a 4-vector
    data.shape = (2, 2)  # and back, in place: same object, same shape again
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], expected())


def test_a_captured_array_reshaped_in_place_compiles_for_its_new_shape() -> None:
    data = np.arange(4.0)

    def f(s: float) -> Any:
        return s * ad.array_namespace(data).sum(data[:2])

    assert ad.gradient(f, 1.0, backend="jax")[0] == pytest.approx(1.0)
    data.shape = (2, 2)  # the same object, another shape: data[:2] is now both rows
    assert ad.gradient(f, 1.0, backend="jax")[0] == pytest.approx(6.0)


def thresholded(threshold: np.ndarray) -> Any:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        if threshold > 0:  # Python control flow on a captured array's value
            return xp.sum(x**2) * threshold
        return -xp.sum(x)

    return f


@pytest.mark.filterwarnings("error::adswitch_jax.notices.JaxFallbackWarning")
def test_captured_array_steering_python_control_flow_is_baked_not_eager() -> None:
    # As a traced input the array cannot steer an `if`: the function is compiled with
    # its captured arrays baked in (and guarded by value) instead of running eagerly.
    x = np.array([1.0, 2.0])
    threshold = np.array(2.0)
    f = thresholded(threshold)
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], 4.0 * x)
    threshold[...] = -1.0  # in place: the guard sees it
    np.testing.assert_allclose(ad.gradient(f, x, backend="jax")[0], [-1.0, -1.0])
    np.testing.assert_allclose(
        ad.gradient(thresholded(np.array(0.5)), x, backend="jax")[0], 1.0 * x
    )
