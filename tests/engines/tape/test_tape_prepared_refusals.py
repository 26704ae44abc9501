"""Prepared calls on the tape that must not be replayed are traced on every call, give the
right answer, and say so once (``TapeReplayWarning``); state that changes between calls
(a captured array, a rebound closure, a global dict, the Const arrays) is noticed.

Oracles: closed forms; the runs of ``f`` counted with a profile hook (``runs_of``)."""

from __future__ import annotations

import abc
import itertools
import random
import time
import types
import warnings
from typing import Any

import numpy as np
import pytest
from adswitch_tape.replay import recordings
from adswitch_tape.replay.notices import TapeReplayWarning, reset_warnings
from numpy.random import default_rng

import adswitch as ad
from tests.engines.tape.test_tape_prepared import runs_of


@pytest.fixture(autouse=True)
def _fresh_warnings() -> Any:
    reset_warnings()
    yield
    reset_warnings()


def _calls(prep: Any, points: list[Any], f: Any) -> tuple[list[Any], int, list[str]]:
    """``prep`` at every point: the results, how often ``f`` ran, the replay warnings."""
    with warnings.catch_warnings(record=True) as caught, runs_of(f) as runs:
        warnings.simplefilter("always")
        results = [prep(*args) for args in points]
    said = [str(w.message) for w in caught if issubclass(w.category, TapeReplayWarning)]
    return results, runs[0], said


def _branchy(x: Any) -> Any:
    xp = ad.array_namespace(x)
    if bool(x[0] > 0):
        return xp.sum(x**2)
    return xp.sum(x**3)


def test_a_python_branch_on_a_traced_value_traces_every_call() -> None:
    prep = ad.prepare(ad.gradient, _branchy, np.array([1.0, 2.0]))
    points = [(np.array([v, 2.0]),) for v in (1.0, -1.0, 3.0, -2.0)]
    results, runs, said = _calls(prep, points, _branchy)
    assert runs == 4
    for (x,), (g,) in zip(points, results):
        np.testing.assert_allclose(g, 2 * x if x[0] > 0 else 3 * x**2)
    assert len(said) == 1 and "reads the value of a traced array" in said[0]
    assert "test_tape_prepared_refusals.py" in said[0]  # the user's line


def _relu_like(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.where(x > 0, x, 0.1 * x) ** 2)


def test_a_mask_made_from_a_traced_value_traces_every_call() -> None:
    prep = ad.prepare(ad.gradient, _relu_like, np.array([1.0, -1.0]))
    points = [(np.array([a, b]),) for a, b in [(1.0, -1.0), (-2.0, 3.0), (0.5, 0.5)]]
    results, runs, said = _calls(prep, points, _relu_like)
    assert runs == 3 and len(said) == 1
    for (x,), (g,) in zip(points, results):
        np.testing.assert_allclose(g, np.where(x > 0, 2 * x, 0.02 * x))


SCALE = np.array([1.0, 1.0])


def _captured(x: Any) -> Any:
    return ad.array_namespace(x).sum(SCALE * x**2)


def test_a_captured_array_changed_in_place_is_noticed() -> None:
    SCALE[:] = 1.0
    prep = ad.prepare(ad.gradient, _captured, np.ones(2))
    x = np.array([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", TapeReplayWarning)
        with runs_of(_captured) as runs:
            np.testing.assert_allclose(prep(x)[0], [2.0, 4.0])
            np.testing.assert_allclose(prep(x)[0], [2.0, 4.0])  # replayed
            SCALE[:] = 3.0
            np.testing.assert_allclose(prep(x)[0], [6.0, 12.0])  # recorded again
            np.testing.assert_allclose(prep(x)[0], [6.0, 12.0])  # replayed
    assert runs[0] == 2
    SCALE[:] = 1.0


def test_a_rebound_closure_and_a_changed_global_dict_are_noticed() -> None:
    weight = np.array([1.0, 1.0])
    state = {"power": 2.0}

    def f(x: Any) -> Any:
        return ad.array_namespace(x).sum(weight * x ** state["power"])

    prep = ad.prepare(ad.gradient, f, np.ones(2))
    x = np.array([1.0, 2.0])
    with warnings.catch_warnings(), runs_of(f) as runs:
        warnings.simplefilter("error", TapeReplayWarning)
        for _ in range(2):  # recorded, then replayed
            np.testing.assert_allclose(prep(x)[0], 2 * x)
        weight = np.array([5.0, 5.0])  # the closure now holds another array
        for _ in range(2):
            np.testing.assert_allclose(prep(x)[0], 10 * x)
        state["power"] = 3.0  # a value in a dict f reads
        for _ in range(2):
            np.testing.assert_allclose(prep(x)[0], 15 * x**2)
        state["power"] = 2.0
        for _ in range(2):
            np.testing.assert_allclose(prep(x)[0], 10 * x)
    assert runs[0] == 4


class _Model:
    scale = 2.0

    def __init__(self, w: Any) -> None:
        self.w = w

    def __call__(self, x: Any) -> Any:
        return ad.array_namespace(x).sum(self.w * x**2) * self.scale


def test_a_callable_objects_attributes_and_class_attributes_are_noticed() -> None:
    model = _Model(np.array([1.0, 2.0]))
    prep = ad.prepare(ad.gradient, model, np.ones(2))
    x = np.array([1.0, 1.0])
    np.testing.assert_allclose(prep(x)[0], [4.0, 8.0])
    model.w = np.array([3.0, 3.0])
    np.testing.assert_allclose(prep(x)[0], [12.0, 12.0])
    _Model.scale = 1.0
    try:
        np.testing.assert_allclose(prep(x)[0], [6.0, 6.0])
    finally:
        _Model.scale = 2.0


LOG: list[float] = []


def _logs(x: Any) -> Any:
    LOG.append(1.0)
    return ad.array_namespace(x).sum(x * x)


def test_a_function_that_changes_what_it_reads_is_traced_every_call() -> None:
    LOG.clear()
    prep = ad.prepare(ad.gradient, _logs, np.ones(2))
    results, runs, said = _calls(prep, [(np.array([1.0, 2.0]),)] * 3, _logs)
    assert runs == 3 and len(LOG) == 3  # every call's side effect, as unprepared calls
    assert len(said) == 1 and "changes what it reads" in said[0]
    np.testing.assert_allclose(results[-1][0], [2.0, 4.0])


def _writes_const(x: Any, c: Any) -> Any:
    c[0] += 1.0  # a write into the caller's Const array, each call
    return ad.array_namespace(x).sum(x * x)


def test_a_function_writing_into_its_const_array_is_traced_every_call() -> None:
    c = np.zeros(2)
    prep = ad.prepare(ad.gradient, _writes_const, np.ones(2), ad.Const(c))
    _, runs, said = _calls(prep, [(np.ones(2), ad.Const(c))] * 3, _writes_const)
    assert runs == 3 and c[0] == 3.0
    assert len(said) == 1 and "writes into its Const arrays" in said[0]


def _nested(x: Any) -> Any:
    xp = ad.array_namespace(x)
    (g,) = ad.gradient(lambda v: xp.sum(xp.sin(v) * v), x)
    return xp.sum(g**2)


def test_a_differentiation_inside_f_is_traced_every_call() -> None:
    prep = ad.prepare(ad.gradient, _nested, np.ones(3))
    points = [(np.array([0.1, 0.5, 1.0]),), (np.array([2.0, -1.0, 0.3]),)]
    results, runs, said = _calls(prep, points, _nested)
    assert runs == 2 and len(said) == 1 and "differentiation" in said[0]
    for (x,), (got,) in zip(points, results):
        d = np.sin(x) + x * np.cos(x)
        np.testing.assert_allclose(got, 2 * d * (2 * np.cos(x) - x * np.sin(x)), rtol=1e-12)


def test_the_second_order_operators_say_they_trace_every_call() -> None:
    f = lambda v: ad.array_namespace(v).sum(v**3)  # noqa: E731
    prep = ad.prepare(ad.hessian, f, np.ones(2))
    with pytest.warns(TapeReplayWarning, match="ad.hessian differentiates a gradient call"):
        h = prep(np.array([1.0, 2.0]))
    np.testing.assert_allclose(h[0][0], np.diag([6.0, 12.0]))


RNG = np.random.default_rng(0)


def _noisy(x: Any) -> Any:
    return ad.array_namespace(x).sum(x * RNG.standard_normal(2))


def _global_noise(x: Any) -> Any:
    return ad.array_namespace(x).sum(x * np.random.standard_normal(2))


def _python_noise(x: Any) -> Any:
    return ad.array_namespace(x).sum(x * random.random())


def _fresh_generator(x: Any) -> Any:
    return ad.array_namespace(x).sum(x * default_rng().standard_normal(2))  # own entropy


def _clock(x: Any) -> Any:
    return ad.array_namespace(x).sum(x) * (time.perf_counter() % 1.0)


@pytest.mark.parametrize("f", [_noisy, _global_noise, _python_noise, _fresh_generator, _clock])
def test_random_numbers_drawn_in_f_are_fresh_on_every_call(f: Any) -> None:
    prep = ad.prepare(ad.gradient, f, np.ones(2))
    results, runs, said = _calls(prep, [(np.ones(2),)] * 3, f)
    assert runs == 3 and len(said) == 1 and ("random" in said[0] or "time" in said[0])
    assert not np.array_equal(results[0][0], results[1][0])  # new draws, as unprepared


def test_changing_const_arrays_are_noticed_and_finally_traced_every_call() -> None:
    def f(x: Any, c: Any) -> Any:
        return ad.array_namespace(x).sum(x * c)

    prep = ad.prepare(ad.gradient, f, np.ones(2), ad.Const(np.ones(2)))
    n = recordings.MAX_MISSES + 3
    points = [(np.ones(2), ad.Const(np.full(2, float(k)))) for k in range(n)]
    results, runs, said = _calls(prep, points, f)
    assert runs == len(points)
    for (_, c), (g, none) in zip(points, results):
        np.testing.assert_array_equal(g, c.val)
        assert none is None
    assert len(said) == 1 and "changes between calls" in said[0]


def test_an_iterator_f_reads_cannot_be_vouched_for() -> None:
    steps = iter(range(100))

    def f(x: Any) -> Any:
        return ad.array_namespace(x).sum(x * x) * next(steps)

    prep = ad.prepare(ad.gradient, f, np.ones(2))
    results, runs, said = _calls(prep, [(np.ones(2),)] * 3, f)
    assert runs == 3 and len(said) == 1 and "cannot see" in said[0]
    np.testing.assert_allclose([r[0][0] for r in results], [0.0, 2.0, 4.0])


def test_a_conversion_the_tape_refuses_is_refused_prepared_too() -> None:
    def f(x: Any) -> Any:
        return ad.array_namespace(x).sum(x) * float(x[0])

    prep = ad.prepare(ad.gradient, f, np.ones(2))
    for _ in range(2):
        with pytest.raises(ad.UnsupportedError, match="Python number"):
            prep(np.ones(2))


def _strict_sqrt(x: Any) -> Any:
    with np.errstate(invalid="raise"):
        return ad.array_namespace(x).sum(ad.array_namespace(x).sqrt(x))


def test_numpy_error_handling_set_inside_f_is_kept_on_every_call() -> None:
    prep = ad.prepare(ad.gradient, _strict_sqrt, np.ones(2))
    with pytest.warns(TapeReplayWarning, match="error handling"):
        np.testing.assert_allclose(prep(np.array([1.0, 4.0]))[0], [0.5, 0.25])
    with pytest.raises(FloatingPointError):  # as a fresh trace raises: never a silent NaN
        prep(np.array([-1.0, 4.0]))


SIGNED = np.array([0.0])


def _signed(x: Any, c: float) -> Any:
    return ad.array_namespace(x).sum(1.0 / (x * SIGNED + c))


def test_signed_zeros_are_new_values() -> None:
    """``-0.0 == 0.0``, yet ``1 / -0.0`` is ``-inf``: a Const value or captured array that
    changes sign of zero is a change."""
    SIGNED[:] = 0.0
    prep = ad.prepare(ad.withgradient, _signed, np.ones(1), ad.Const(0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (division by zero, as intended)
        warnings.simplefilter("ignore", TapeReplayWarning)  # (a change at every call)
        for c, sign in [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0)]:
            SIGNED[:] = sign
            got = prep(np.ones(1), ad.Const(c))
            want = ad.withgradient(_signed, np.ones(1), ad.Const(c))
            assert got.val == want.val and np.signbit(got.val) == np.signbit(want.val)
            assert got.val == (-np.inf if np.signbit(c) and np.signbit(sign) else np.inf)
    SIGNED[:] = 0.0


CONFIG = types.ModuleType("user_config")  # a module of the user's: its attributes f names
CONFIG.SCALE = 2.0  # type: ignore[attr-defined]
CONFIG.W = np.array([1.0, 2.0])  # type: ignore[attr-defined]


def _reads_a_module(x: Any) -> Any:
    return ad.array_namespace(x).sum(CONFIG.W * x**2) * CONFIG.SCALE  # type: ignore[attr-defined]


def test_attributes_of_a_users_module_are_noticed() -> None:
    prep = ad.prepare(ad.gradient, _reads_a_module, np.ones(2))
    x = np.array([1.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", TapeReplayWarning)
        for scale, w in [(2.0, 1.0), (2.0, 1.0), (3.0, 1.0), (3.0, 1.0), (3.0, 5.0), (3.0, 5.0)]:
            CONFIG.SCALE = scale  # type: ignore[attr-defined]
            CONFIG.W[:] = [w, 2 * w]  # type: ignore[attr-defined]
            np.testing.assert_allclose(prep(x)[0], 2 * scale * np.array([w, 2 * w]) * x)


class _Base(abc.ABC):
    @abc.abstractmethod
    def scale(self) -> float: ...


class _Slotted(_Base):
    __slots__ = ("_s",)

    def __init__(self, s: float) -> None:
        self._s = s

    @property
    def doubled(self) -> float:
        return self._s * 2

    def scale(self) -> float:
        return self.doubled

    def __call__(self, x: Any) -> Any:
        return ad.array_namespace(x).sum(x**2) * self.scale()


def test_properties_slots_and_abstract_bases_replay_and_are_noticed() -> None:
    model = _Slotted(1.0)
    prep = ad.prepare(ad.gradient, model, np.ones(2))
    x = np.array([1.0, 3.0])
    with warnings.catch_warnings(), runs_of(_Slotted.__call__) as runs:
        warnings.simplefilter("error", TapeReplayWarning)
        for s in (1.0, 1.0, 3.0, 3.0):
            model._s = s
            np.testing.assert_allclose(prep(x)[0], 4 * s * x)
    assert runs[0] == 2


def test_state_hidden_in_a_c_object_is_refused() -> None:
    counter = itertools.count()
    draws = random.Random(0)

    def counts(x: Any) -> Any:
        return ad.array_namespace(x).sum(x**2) * next(counter)

    def draws_from(x: Any) -> Any:
        return ad.array_namespace(x).sum(x**2) * draws.random()

    for f, match in [(counts, "cannot see"), (draws_from, "random generator")]:
        prep = ad.prepare(ad.gradient, f, np.ones(2))
        results, runs, said = _calls(prep, [(np.ones(2),)] * 3, f)
        assert runs == 3 and len(said) == 1 and match in said[0]
        assert len({float(r[0][0]) for r in results}) == 3  # a new value on every call
