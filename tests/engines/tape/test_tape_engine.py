"""The tape as an engine: the contract of ``adswitch.spec`` and the core rules on it --
leaf kinds, dtypes, unused and tied leaves, shadows, outputs, threads."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from adswitch_tape.engine import value_and_grad
from adswitch_tape.plugin import TapeBackend, adswitch_backend

import adswitch as ad
from adswitch.spec import CallInfo


def _xp(*arrays: Any) -> Any:
    return ad.array_namespace(*arrays)


def test_plugin_declares_the_engine() -> None:
    backend = adswitch_backend()
    assert isinstance(backend, TapeBackend)
    assert backend.name == "tape" and backend.install_hint == "pip install adswitch"
    caps = backend.capabilities
    assert caps.nested and caps.mutation and caps.fresh_buffer_writes
    assert set(caps.dtypes) == {"float32", "float64"}
    assert "tape" in {b.name for b in ad.backends() if b.available}


def test_value_and_grad_called_directly() -> None:
    def fn(values: Sequence[Any]) -> tuple[Any, list[Any]]:
        x, label, y = values
        loss = _xp(x).sum(x**2) * y
        return loss, [loss, label]

    x = np.array([1.0, -2.0])
    outs, grads = value_and_grad(fn, [x, "label", 3.0], [True, False, True], CallInfo())
    assert outs[0] == 15.0 and outs[1] == "label"
    assert type(outs[0]).__module__ == "numpy"
    np.testing.assert_allclose(np.asarray(grads[0]), np.array([6.0, -12.0]))
    assert grads[1] is None
    assert grads[2] == 5.0 and type(grads[2]) is float


def test_the_namespace_inside_f_is_the_tapes() -> None:
    seen = []

    def f(x: Any) -> Any:
        xp = _xp(x)
        seen.append(xp.__name__)
        return xp.sum(xp.concat([x, x]) * 1.0)

    ad.gradient(f, np.ones(2), backend="tape")
    assert seen == ["adswitch_tape.namespace"]


def test_unused_leaves_get_zeros_and_distinct_writeable_gradients() -> None:
    def f(p: dict[str, Any]) -> Any:
        return _xp(p["a"]).sum(p["a"] + p["b"])

    p = {"a": np.ones(3), "b": np.ones(3), "unused": np.ones(2), "step": 3}
    (g,) = ad.gradient(f, p, backend="tape")
    np.testing.assert_array_equal(g["unused"], np.zeros(2))
    assert g["step"] is None
    assert g["a"] is not g["b"] and not np.shares_memory(g["a"], g["b"])
    g["a"][0] = 5.0  # writeable, and the other gradient is untouched
    np.testing.assert_array_equal(g["b"], np.ones(3))


def test_a_loss_that_does_not_depend_on_the_input_gives_zeros() -> None:
    (g,) = ad.gradient(lambda x: 3.0, np.ones(2), backend="tape")
    np.testing.assert_array_equal(g, np.zeros(2))


def test_a_loss_read_through_a_view_of_the_input() -> None:
    (g,) = ad.gradient(lambda x: x[1], np.array([1.0, 2.0, 3.0]), backend="tape")
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.0])


def test_tied_parameters_sum_at_the_first_occurrence() -> None:
    w = np.array([1.0, 2.0])

    def f(p: dict[str, Any]) -> Any:
        xp = _xp(p["enc"])
        return xp.sum(p["enc"] * 3.0) + xp.sum(p["dec"] ** 2)

    (g,) = ad.gradient(f, {"enc": w, "dec": w}, backend="tape")
    np.testing.assert_allclose(g["enc"], 3.0 + 2 * w)  # the total, at the first place
    assert g["dec"] is None


def test_duplicated_shadows_accumulate_across_calls() -> None:
    x = np.array([1.0, 2.0])
    dup = ad.Duplicated(x, np.zeros(2))

    def f(v: Any) -> Any:
        return _xp(v).sum(v**2)

    (g,) = ad.gradient(f, dup, backend="tape")
    assert g is dup.dval
    ad.gradient(f, dup, backend="tape", zero=False)
    np.testing.assert_allclose(dup.dval, 4 * x)


def test_float32_gradients_and_float_leaves() -> None:
    x = np.array([1.0, 2.0], dtype=np.float32)
    gx, gs = ad.gradient(lambda v, s: _xp(v).sum(v * s) * s, x, 2.0, backend="tape")
    assert gx.dtype == np.float32 and type(gs) is float
    np.testing.assert_allclose(gx, [4.0, 4.0])
    assert gs == pytest.approx(12.0)


def test_locks_are_released_whatever_order_views_and_bases_were_locked() -> None:
    from adswitch_tape.core import Trace

    base = np.ones(4)
    view, readonly = base[:2], np.ones(2)
    readonly.flags.writeable = False
    trace = Trace()
    for array in (base, view, readonly):
        trace.guard(array, "a test array")
    assert not base.flags.writeable and not view.flags.writeable
    trace.close()
    assert base.flags.writeable and view.flags.writeable
    assert not readonly.flags.writeable  # it was read-only before: left alone


def test_large_fan_out_accumulates_correctly() -> None:
    # Large arrays take the in-place paths (accumulation, fused rules); shared gradient
    # objects (x + x) must not be updated in place.
    rng = np.random.default_rng(5)
    x, a, b = rng.standard_normal((3, 6000))

    def f(v: Any) -> Any:
        xp = _xp(v)
        h = xp.tanh(v)
        return xp.sum(v * a) + xp.sum(v * b) + xp.sum(h + h) + xp.sum(v + v) + xp.sum(h * h)

    (g,) = ad.gradient(f, x, backend="tape")
    t = np.tanh(x)
    np.testing.assert_allclose(g, a + b + 2 * (1 - t**2) + 2 + 2 * t * (1 - t**2), rtol=1e-12)


def test_threads_do_not_share_tape_state() -> None:
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def work(power: float, x: np.ndarray) -> None:
        try:
            barrier.wait()
            for _ in range(60):
                (g,) = ad.gradient(lambda v: _xp(v).sum(v**power), x, backend="tape")
                np.testing.assert_allclose(g, power * x ** (power - 1), rtol=1e-12)
                (h,) = ad.gradient(
                    lambda v: _xp(v).sum(ad.gradient(lambda u: _xp(u).sum(u**power), v)[0]),
                    x,
                    backend="tape",
                )
                np.testing.assert_allclose(h, power * (power - 1) * x ** (power - 2), rtol=1e-12)
        except BaseException as exc:  # reported to the main thread
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(3.0, np.array([1.0, 2.0, 3.0]))),
        threading.Thread(target=work, args=(4.0, np.array([0.5, -1.5]))),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_threads_sharing_a_constant_array_release_it_once_both_are_done() -> None:
    shared = np.array([1.0, 2.0, 3.0])
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def work(scale: float) -> None:
        try:
            barrier.wait()
            for _ in range(100):
                (g, _) = ad.gradient(
                    lambda v, c: _xp(v).sum(v * c) * scale,
                    np.ones(3),
                    ad.Const(shared),
                    backend="tape",
                )
                np.testing.assert_allclose(g, scale * shared)
        except BaseException as exc:  # reported to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in (1.0, 3.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert shared.flags.writeable


def test_the_tape_keeps_only_the_values_its_rules_read() -> None:
    # x * 2.0 keeps x (not its output), + 1.0 keeps shapes only, tanh keeps its output:
    # the two intermediates are freed during f, as in plain numpy (peak memory).
    import weakref

    from adswitch_tape.array.tracer import raw

    freed: list[bool] = []

    def f(x: Any) -> Any:
        xp = _xp(x)
        t = x * 2.0
        z = t + 1.0
        y = xp.tanh(z)
        refs = [weakref.ref(raw(t)), weakref.ref(raw(z))]
        del t, z
        freed.extend(r() is None for r in refs)
        return xp.sum(y)

    x = np.linspace(-1.0, 1.0, 5)
    (g,) = ad.gradient(f, x, backend="tape")
    assert freed == [True, True]
    np.testing.assert_allclose(g, 2.0 * (1.0 - np.tanh(2.0 * x + 1.0) ** 2), rtol=1e-12)
