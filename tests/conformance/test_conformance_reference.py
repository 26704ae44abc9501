"""The conformance references against closed forms: the oracle must be right first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from adswitch_conformance.case import Case
from adswitch_conformance.dense import Ref, dense_hessian, dense_jacobian
from adswitch_conformance.reference import build_expected, finite_differences
from adswitch_conformance.reference_ops import build_operator_expected
from adswitch_conformance.trees import leaves_with_paths

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


def test_dense_jacobian_matches_a_closed_form_across_leaves() -> None:
    x, s = np.array([0.3, -0.8, 1.1]), 0.7
    J, errors, inputs, outputs = dense_jacobian(
        lambda a: (np.sin(a[0]) * a[1], {"sum": np.sum(a[0] ** 2)}), [x, s], [True, True]
    )
    exact = np.zeros((4, 4))
    exact[:3, :3] = np.diag(np.cos(x) * s)
    exact[:3, 3] = np.sin(x)
    exact[3, :3] = 2 * x
    np.testing.assert_allclose(J, exact, rtol=1e-10, atol=1e-11)
    assert np.all(errors < 1e-9)
    assert [i.path for i in inputs] == ["args[0]", "args[1]"] and inputs[1].python_float
    assert [o.path for o in outputs] == ["y[0]", "y[1]['sum']"]


def test_dense_hessian_matches_a_closed_form_with_cross_terms() -> None:
    x, y = np.array([0.4, -0.2]), np.array([1.3, 0.5])
    H, errors, _ = dense_hessian(
        lambda a: float(np.sum(np.exp(a[0]) * a[1] ** 2)), [x, y], [True, True]
    )
    exact = np.zeros((4, 4))
    exact[:2, :2] = np.diag(np.exp(x) * y**2)
    exact[:2, 2:] = exact[2:, :2] = np.diag(2 * np.exp(x) * y)
    exact[2:, 2:] = np.diag(2 * np.exp(x))
    np.testing.assert_allclose(H, exact, rtol=1e-9, atol=1e-10)
    assert np.all(errors < 1e-8)


def _leaf_refs(tree: Any) -> list[Any]:
    return [leaf for _, leaf in leaves_with_paths(tree, "r")]


def test_jacobian_layout_ties_const_and_non_floats() -> None:
    w = np.array([0.5, -1.0])
    case = Case(
        "o.j", "operators", "test", lambda a, b, c, d: a * b * c * d["k"], lambda: (),
        entry="jacobian",
    )  # fmt: skip
    expected = build_operator_expected(case, (w, w, ad.Const(np.ones(2)), {"k": 2.0, "s": "x"}))
    first, later, const, tree = expected.tree
    assert isinstance(first, Ref) and later is None and const is None
    np.testing.assert_allclose(first.value, np.diag(2 * w * 2.0), rtol=1e-9)
    assert isinstance(tree["k"], Ref) and tree["k"].value.shape == (2,) and tree["s"] is None


def test_hessian_layout_is_a_tree_of_trees() -> None:
    case = Case(
        "o.h", "operators", "test", lambda p, c: np.sum(p["W"] ** 2) * p["b"] * c, lambda: (),
        entry="hessian",
    )  # fmt: skip
    p = {"W": np.ones((2, 2)), "b": 1.5, "n": "x"}
    h_p, h_c = build_operator_expected(case, (p, ad.Const(2.0))).tree
    assert h_c is None and set(h_p) == {"W", "b", "n"} and h_p["n"] is None
    row_w, row_c = h_p["W"]
    assert row_w["W"].value.shape == (2, 2, 2, 2) and row_w["b"].value.shape == (2, 2)
    assert row_w["n"] is None and row_c is None
    np.testing.assert_allclose(row_w["b"].value, 2 * p["W"] * 2.0, rtol=1e-8)
    assert h_p["b"][0]["b"].python_float and abs(h_p["b"][0]["b"].value) < 1e-8
