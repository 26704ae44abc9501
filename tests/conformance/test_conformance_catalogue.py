"""The catalogue itself: enough cases, well formed, and closed forms that agree with
finite differences (so that a reference is never the thing that is wrong)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from adswitch_conformance.case import ENTRIES, FAMILIES, GRADIENT_ENTRIES, TREE_ENTRIES, Case
from adswitch_conformance.cases import catalogue
from adswitch_conformance.dense import Ref
from adswitch_conformance.docs import render
from adswitch_conformance.reference import (
    build_expected,
    finite_differences,
    first_output,
    unwrap,
)
from adswitch_conformance.reference_ops import build_operator_expected
from adswitch_conformance.trees import leaves

from adswitch.errors import ActivityError
from adswitch.spec import Capabilities

CASES = catalogue()
CAPABILITY_FIELDS = {f.name for f in dataclasses.fields(Capabilities)}
# Capability names the suite uses before the contract has a field for them (see the
# report to the lead): engines lacking the field count as not declaring it.
PROPOSED = {"numpy_operands"}


def test_catalogue_is_large_and_ids_are_unique() -> None:
    assert len(CASES) >= 60
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case_is_well_formed(case: Case) -> None:
    assert case.family in FAMILIES and case.id.startswith(case.family + ".")
    assert "\n" not in case.description and 20 < len(case.description) < 200
    assert case.entry in ENTRIES
    for name in case.requires:
        assert (
            name in CAPABILITY_FIELDS
            or name in ("float32", "float16", "linalg", "fft")  # dtypes, extensions
            or name in PROPOSED
        )
    if case.family == "nested":
        assert case.ref_fn is not None, "nested references must not call ad.gradient"
    _check_operator_fields(case)
    first, second = case.make_args(), case.make_args()
    first_ids = {id(x) for x in leaves(list(first)) if isinstance(x, np.ndarray)}
    assert not first_ids & {id(x) for x in leaves(list(second)) if isinstance(x, np.ndarray)}
    dtypes = {
        x.dtype.name
        for x in leaves([unwrap(a)[1] for a in first])
        if isinstance(x, np.ndarray) and x.dtype.kind == "f"
    }
    # a lower precision only where the case declares it needs that dtype
    assert dtypes <= {"float64", *case.requires}


def _check_operator_fields(case: Case) -> None:
    """Each keyword only where the entry takes it; seeds exactly where it needs them."""
    assert (case.seeds is not None) == (case.entry in ("vjp", "jvp", "hvp"))
    assert case.mode == "auto" or case.entry == "jacobian"
    assert not case.has_aux or case.entry in ("vjp", "jvp", "jacobian")
    assert case.closed_form is None or case.entry in (*GRADIENT_ENTRIES, *TREE_ENTRIES)
    if case.family == "operators":
        assert case.entry != "withgradient"
        if "nested" in case.requires and case.entry not in ("hessian", "hvp"):
            # an operator inside f: the reference writes it in closed form
            assert case.ref_fn is not None
        if case.entry in ("hessian", "hvp") and case.raises is not ActivityError:
            assert "nested" in case.requires  # the front end needs a nesting engine
    if case.entry in GRADIENT_ENTRIES and case.family != "operators":
        assert case.seeds is None and not case.has_aux


# Rules cases whose closed form is the RULE's result, not f's derivative (a clipping or
# straight-through vjp, a halving jvp rule, stop_gradient): per case, given the arguments'
# values, a numpy function whose derivative at those values is the rule's result (the
# stopped values frozen at the point), so finite differences check the closed form.
_W = np.array([3.0, -0.5, -2.0, 0.25])  # the rules family's weights
RULE_RESULTS: dict[str, Any] = {
    "rules.clip_gradient": lambda x0: lambda x: np.sum(x * np.clip(_W, -1, 1)),
    "rules.clip_gradient_jacobian": lambda x0: lambda x: x * np.clip(_W, -1, 1),
    "rules.clip_gradient_tied": lambda a0, b0: (
        lambda a, b: np.sum(a * np.clip(_W, -1, 1) + b * np.clip(2 * _W, -1, 1))
    ),
    "rules.straight_through": lambda x0: lambda x: np.sum((np.round(x0) + x0) * x),
    "rules.straight_through_stop_gradient": lambda x0: lambda x: np.sum((np.round(x0) + x0) * x),
    "rules.straight_through_stop_gradient_forward": lambda x0: lambda x: x * _W,
    "rules.half_tangent_forward": lambda x0: lambda x: x * _W / 2,
    "rules.half_tangent_reverse": lambda x0: lambda x: np.sum(x * _W / 2),
    "rules.stop_gradient_gradient": lambda x0: lambda x: np.sum(x**2 * x0),
    "rules.stop_gradient_withgradient": lambda x0: lambda x: np.sum(x**2 * x0),
    "rules.stop_gradient_hessian": lambda x0: lambda x: np.sum(x**2 * x0),
    "rules.stop_gradient_jacobian": lambda x0: lambda x: x * x0 + np.sin(x),
    "rules.stop_gradient_jacobian_forward": lambda x0: lambda x: x * x0 + np.sin(x),
    "rules.stop_gradient_derivative": lambda t0, c0: lambda t, c: (t * t0 + np.sin(t)) * c,
    "rules.stop_gradient_tree": lambda p0: (
        lambda p: np.sum(p0["a"] * p["a"]) + np.sum(p0["b"][0] * p["b"][0] ** 2)
    ),
    "rules.stop_gradient_inner_order": lambda x0: lambda x: np.sum(2 * x * x0 * _W),
}


@pytest.mark.parametrize("case_id", sorted(RULE_RESULTS))
def test_rule_closed_forms_are_the_rules_results(case_id: str) -> None:
    """Each closed form equals finite differences of a function with the rule's derivative
    (and differs from f's own derivative: the case would catch an engine ignoring the rule)."""
    case = next(c for c in CASES if c.id == case_id)
    args = case.make_args()
    vals = [unwrap(a)[1] for a in args]
    twin = dataclasses.replace(case, closed_form=None, ref_fn=RULE_RESULTS[case_id](*vals))
    own = dataclasses.replace(case, closed_form=None, ref_fn=None)
    build = build_expected if case.entry in GRADIENT_ENTRIES else build_operator_expected
    closed, numeric, plain = (_numbers(build(c, args)) for c in (case, twin, own))
    assert closed and len(closed) == len(numeric) == len(plain), "nothing compared"
    for a, b in zip(closed, numeric, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-7)
    assert any(not np.allclose(a, c) for a, c in zip(closed, plain, strict=True))


def _numbers(expected: Any) -> list[np.ndarray]:
    if expected.tree is not None:
        return [np.asarray(r.value) for r in leaves(expected.tree) if isinstance(r, Ref)]
    return [np.asarray(v) for e in expected.args for v in e.grads.values() if v is not None]


def test_rule_ref_fns_equal_fn_at_the_cases_point() -> None:
    """The rules cases' ref_fns freeze a stopped value at make_args: same value as f there
    (outside an adswitch call a rule is its plain function)."""
    checked = 0
    for case in CASES:
        if case.family != "rules" or case.ref_fn is None or case.id.endswith("nested_gradient"):
            continue  # the nested one's inner softmax: rules.logsumexp_gradient checks it
        vals = [unwrap(a)[1] for a in case.make_args()]
        np.testing.assert_allclose(case.ref_fn(*vals), case.fn(*vals), rtol=1e-12)
        checked += 1
    assert checked >= 3


# The kinks family's closed forms are the kink convention's values at non-smooth points,
# where Richardson-extrapolated differences (which assume smoothness) do not converge; its
# symmetric limits are checked against plain central differences in
# tests/concerns/kinks/test_kinks_tape_autograd.py
# (test_conformance_kinks_match_central_differences).
CLOSED = [
    c
    for c in CASES
    if c.closed_form is not None
    and c.entry in GRADIENT_ENTRIES
    and c.family != "kinks"
    and c.id not in RULE_RESULTS
]
# Cases given in closed form because the default step cannot resolve them.
FD_STEPS = {"basics.float64_precision": 1e-7}


@pytest.mark.parametrize("case", CLOSED, ids=lambda c: c.id)
def test_closed_forms_agree_with_finite_differences(case: Case) -> None:
    kinds, vals = zip(*(unwrap(a) for a in case.make_args()), strict=True)
    active = [k != "const" for k in kinds]
    step = FD_STEPS.get(case.id, 2e-3)
    fd, errors = finite_differences(case.ref_fn or case.fn, list(vals), active, step)
    assert case.closed_form is not None
    closed = case.closed_form(*vals)
    assert fd, "nothing compared"
    for path, value in fd.items():
        i = int(path[5 : path.index("]")])
        np.testing.assert_allclose(
            closed[i], value, rtol=1e-6, atol=1e-6 + 4 * np.max(errors[path])
        )


CLOSED_OPERATORS = [
    c
    for c in CASES
    if c.closed_form is not None
    and c.entry in TREE_ENTRIES
    and c.family != "kinks"
    and c.id not in RULE_RESULTS
]


@pytest.mark.parametrize("case", CLOSED_OPERATORS, ids=lambda c: c.id)
def test_operator_closed_forms_agree_with_finite_differences(case: Case) -> None:
    args = case.make_args()
    closed = build_operator_expected(case, args).tree
    numeric = build_operator_expected(dataclasses.replace(case, closed_form=None), args).tree
    pairs = list(zip(leaves(closed), leaves(numeric), strict=True))
    assert any(isinstance(a, Ref) for a, _ in pairs), "nothing compared"
    for a, b in pairs:
        assert (a is None) == (b is None)
        if isinstance(a, Ref):
            np.testing.assert_allclose(a.value, b.value, rtol=1e-7, atol=1e-8 + 4 * np.max(b.error))


# (rules cases: the test engine has no rule hooks; test_rule_ref_fns_equal_fn_at... above)
NESTED = [c for c in CASES if c.ref_fn is not None and c.family != "rules"]
# Inner operators by finite differences of finite differences: loose agreement only.
LOOSE = {"nested.third_order", "operators.hvp_inside_gradient"}


@pytest.mark.parametrize("case", NESTED, ids=lambda c: c.id)
def test_ref_fn_equals_fn_with_a_finite_difference_engine(case: Case, fresh_registry: Any) -> None:
    """Each ref_fn writes the inner gradients (or operators) by hand; the tests'
    finite-difference engine computes them numerically instead: the two must agree."""
    from dataclasses import replace

    import adswitch as ad
    from tests.support.fd_engine import FiniteDifferenceBackend

    engine = FiniteDifferenceBackend()
    # At top level nothing encloses its calls, so it may compute second derivatives.
    engine.capabilities = replace(engine.capabilities, nested=True)
    fresh_registry.add(engine)
    vals = [unwrap(a)[1] for a in case.make_args()]
    expected = np.asarray(first_output(case.ref_fn(*vals)))  # type: ignore[misc]
    with ad.use("fd"):
        got = np.asarray(first_output(case.fn(*vals)))
    rtol = 1e-2 if case.id in LOOSE else 1e-5
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


def _inner_fd(f: Any, x: np.ndarray) -> np.ndarray:
    g, _ = finite_differences(f, [x], [True])
    return np.asarray(g["args[0]"])


def test_seed000_hand_derivation_matches_finite_differences() -> None:
    case = next(c for c in CASES if c.id == "nested.seed000_tanh_tuple_input")
    ps, ((u, t), targets) = case.make_args()
    fd = _inner_fd(
        lambda u_: np.sum(np.tanh(ps["W1"] @ u_ + ps["b1"]) + np.tanh(ps["W2"] @ t + ps["b2"])), u
    )
    z = ps["W1"] @ u + ps["b1"]
    np.testing.assert_allclose(ps["W1"].T @ (1 - np.tanh(z) ** 2), fd, rtol=1e-8)
    assert case.ref_fn is not None
    expected = np.mean((fd - targets) ** 2)
    assert abs(case.ref_fn(ps, ((u, t), targets)) - expected) < 1e-8


def test_kink_check_accepts_subgradients_and_rejects_others() -> None:
    case = next(c for c in CASES if c.id == "basics.kinks")
    assert case.check is not None
    (x,) = case.make_args()
    good = np.sign(x) + (x > 0)
    assert case.check((good,), x) is None
    assert case.check((np.where(x == 0, 0.5, good),), x) is None
    assert case.check((np.where(x == 0, np.nan, good),), x) is not None
    assert case.check((good + (x != 0) * 0.1,), x) is not None


def test_docs_page_is_up_to_date() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "cases.md"
    assert page.read_text() == render(), "run: python -m adswitch_conformance.docs"


def test_finite_difference_references_are_far_tighter_than_the_tolerance() -> None:
    """The reference's error estimate widens the tolerance; it must stay negligible, or
    a slightly wrong engine (say, float32 inside) could pass."""
    worst = {"first": 0.0, "second": 0.0}
    for case in CASES:
        if case.raises or case.check or case.closed_form:
            continue
        if case.entry in GRADIENT_ENTRIES:
            expected = build_expected(case, case.make_args())
        else:
            expected = build_operator_expected(case, case.make_args())
        pairs = [
            (arg.grads.get(path), err)
            for arg in [*expected.args, *(e for call in expected.per_call for e in call)]
            for path, err in arg.errors.items()
        ]
        pairs += [(ref.value, ref.error) for ref in leaves(expected.tree) if isinstance(ref, Ref)]
        order = "second" if case.entry in ("hessian", "hvp") else "first"
        for value, err in pairs:
            if value is not None:
                ratio = np.max(np.asarray(err) / np.maximum(1.0, np.abs(value)))
                worst[order] = max(worst[order], float(ratio))
    # second differences lose more to rounding (eps / h^2) but stay far below rtol 1e-8
    assert worst["first"] < 1e-10 and worst["second"] < 1e-9, worst


def test_max_ties_check_accepts_splits_and_rejects_double_counting() -> None:
    case = next(c for c in CASES if c.id == "basics.max_ties")
    assert case.check is not None
    (x,) = case.make_args()
    split = np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 1.0]])
    one_side = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    assert case.check((split,), x) is None and case.check((one_side,), x) is None
    assert case.check((np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]),), x) is not None
    assert case.check((np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 0.5]]),), x) is not None
