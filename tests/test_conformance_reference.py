"""The conformance references against closed forms: the oracle must be right first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from adswitch_conformance.case import Case
from adswitch_conformance.reference import build_expected, finite_differences

import adswitch as ad


def test_richardson_matches_closed_form_to_1e9() -> None:
    x = np.array([-1.3, 0.2, 0.9, 2.5])
    grads, errors = finite_differences(lambda v: np.sum(np.exp(v) * np.sin(v)), [x], [True])
    exact = np.exp(x) * (np.sin(x) + np.cos(x))
    np.testing.assert_allclose(grads["args[0]"], exact, rtol=1e-10, atol=1e-10)
    assert np.all(errors["args[0]"] < 1e-8)


def test_python_float_leaf_gets_a_float() -> None:
    grads, _ = finite_differences(lambda a, x: a**3 * np.sum(x), [1.5, np.ones(2)], [True, False])
    assert isinstance(grads["args[0]"], float)
    assert abs(grads["args[0]"] - 3 * 1.5**2 * 2) < 1e-9
    assert "args[1]" not in grads  # inactive argument


def test_tied_array_gets_the_total_at_its_first_occurrence() -> None:
    w = np.array([0.3, -0.7])
    tree = {"a": w, "b": w}
    grads, _ = finite_differences(
        lambda t: np.sum(np.sin(t["a"])) + np.sum(t["b"] ** 2), [tree], [True]
    )
    np.testing.assert_allclose(grads["args[0]['a']"], np.cos(w) + 2 * w, rtol=1e-10)
    assert "args[0]['b']" not in grads


def test_each_evaluation_sees_fresh_inputs_when_f_mutates() -> None:
    def f(x: Any) -> Any:
        y = np.log(x)
        x[...] = 0.0
        return np.sum(y + x)

    x = np.array([1.0, 2.0, 4.0])
    grads, _ = finite_differences(f, [x], [True])
    np.testing.assert_allclose(grads["args[0]"], 1 / np.array([1.0, 2.0, 4.0]), rtol=1e-9)
    np.testing.assert_array_equal(x, [1.0, 2.0, 4.0])  # the caller's array untouched


def test_float32_inputs_are_differentiated_in_float64() -> None:
    x = np.array([0.1, 0.2], dtype=np.float32)
    grads, _ = finite_differences(lambda v: np.sum(v**3), [x], [True])
    assert grads["args[0]"].dtype == np.float64
    np.testing.assert_allclose(grads["args[0]"], 3 * x.astype(np.float64) ** 2, rtol=1e-10)


@dataclass
class Layer:
    w: Any
    name: str
    n: int


def test_expected_marks_const_ties_and_nondifferentiable_leaves() -> None:
    w = np.array([1.0, 2.0])
    case = Case(
        "t.x",
        "trees",
        "test",
        lambda m, t, c: np.sum(m.w**2) + np.sum(t["p"] * t["q"]) * c,
        lambda: (),
    )
    args = (Layer(w, "l", 3), {"p": w, "q": w}, ad.Const(2.0))
    expected = build_expected(case, args)
    layer, tied, const = expected.args
    np.testing.assert_allclose(layer.grads["args[0].w"], 6 * w, rtol=1e-9)  # w is tied everywhere
    assert layer.grads["args[0].name"] is None and layer.grads["args[0].n"] is None
    assert tied.grads["args[1]['p']"] is None and tied.grads["args[1]['q']"] is None
    assert const.kind == "const" and not const.grads
    assert expected.output == case.fn(*[a if not isinstance(a, ad.Const) else a.val for a in args])
