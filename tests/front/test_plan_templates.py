"""Plan templates give exactly the plan the leaf-by-leaf derivation gives.

Random argument lists -- nested dicts, lists and tuples of float, integer and complex
arrays, numpy float32 scalars, Python scalars and strings, plain or ``Const``, with and
without tied arrays -- are planned twice with templates (the second call takes the
template when one applies) and once with templates switched off; every field must agree,
and errors must be the same errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adswitch as ad
from adswitch import templates
from adswitch.errors import AdswitchError
from adswitch.plan import Plan

POOL = [
    np.ones(2),
    np.zeros((2, 3)),
    np.arange(3),  # integers: inactive
    np.ones(2, dtype=np.float32),
    np.ones(2, dtype=np.complex128),
    np.float32(1.5),
    1.0,
    2,
    "label",
    None,
]


@st.composite
def leaves(draw: st.DrawFn) -> Any:
    item = draw(st.sampled_from(POOL))
    if isinstance(item, np.ndarray) and not draw(st.booleans()):
        return item.copy()  # a distinct object of the same kind (pool entries are ties)
    return item


trees = st.recursive(
    leaves(),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.tuples(children, children),
        st.dictionaries(st.sampled_from("abc"), children, max_size=3),
    ),
    max_leaves=8,
)
arguments = st.lists(
    st.tuples(trees, st.booleans()).map(lambda t: ad.Const(t[0]) if t[1] else t[0]),
    min_size=1,
    max_size=3,
)


def fields(plan: Plan) -> tuple[Any, ...]:
    return (
        [id(leaf) for leaf in plan.leaves],
        list(plan.active),
        list(plan.first),
        list(plan.kinds),
        list(plan.scalar_leaves),
        plan.n_active_arrays,
        [(p.kind, p.treedef, list(p.leaf_ids)) for p in plan.args],
    )


def outcome(args: list[Any]) -> Any:
    try:
        return fields(Plan(args))
    except AdswitchError as exc:
        return type(exc), str(exc)


@pytest.fixture
def no_templates(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    templates.clear()
    yield
    templates.clear()


@settings(max_examples=300, deadline=None)
@given(arguments)
def test_templated_plan_equals_derived_plan(args: list[Any]) -> None:
    templates.clear()
    first = outcome(args)
    second = outcome(args)  # from a template whenever one applies
    saved = templates.MIN_LEAVES
    templates.MIN_LEAVES = 10**9  # never
    try:
        derived = outcome(args)
    finally:
        templates.MIN_LEAVES = saved
    assert first == derived
    assert second == derived


def test_a_template_is_taken_and_ties_are_not_templated(no_templates: None) -> None:
    params = {"w": np.ones(2), "b": np.ones(2), "c": np.ones(2), "d": np.ones(2)}
    Plan((params,))
    assert len(templates._TEMPLATES) == 1
    Plan(({k: np.zeros(2) for k in params},))  # same structure, new arrays: the template
    assert len(templates._TEMPLATES) == 1
    tied = {k: params["w"] for k in params}
    plan = Plan((tied,))  # one array four times: one unique leaf, never from a template
    assert len(plan.leaves) == 1 and [p.leaf_ids for p in plan.args] == [[0, 0, 0, 0]]


def test_activity_and_dtype_are_part_of_the_key(no_templates: None) -> None:
    params = {k: np.ones(2) for k in "wxyz"}
    x = np.ones(1)
    assert list(Plan((params, x)).active) == [True] * 5
    assert list(Plan((ad.Const(params), x)).active) == [False] * 4 + [True]
    as_int = {k: np.ones(2, dtype=int) for k in "wxyz"}
    with pytest.raises(ad.ActivityError):
        Plan((as_int,))  # nothing to differentiate: not the float template's answer


def test_cache_key_from_a_template_keeps_constants_types_and_activity(no_templates: None) -> None:
    from adswitch.keys import cache_key

    def params(value: float) -> dict[str, Any]:
        return {k: np.full(2, value) for k in "wxyz"}

    first = cache_key(Plan((params(1.0), ad.Const(3))), len)  # makes the template
    again = cache_key(Plan((params(2.0), ad.Const(3))), len)  # takes it
    assert first == again
    assert cache_key(Plan((params(1.0), ad.Const(4))), len) != first  # constant value
    assert cache_key(Plan((params(1.0), ad.Const(3.0))), len) != first  # constant type
    assert cache_key(Plan((params(1.0), ad.Const(True))), len) != first
    assert cache_key(Plan((ad.Const(params(1.0)), 3.0)), len) != first  # activity
    assert cache_key(Plan((params(1.0), ad.Const(3))), sum) != first  # the function


SINGLE = [
    np.ones(3),
    np.ones((2, 2), dtype=np.float32),
    np.ones(2, dtype=np.float16),
    np.arange(3),
    np.ones(2, dtype=bool),
    np.ones(2, dtype=np.complex64),
    np.float32(2.0),
    np.float64(2.0),
    np.ones(4)[::2],  # a view
    np.ma.masked_array(np.ones(2)),  # a subclass
]


@pytest.mark.parametrize("x", SINGLE, ids=lambda x: f"{type(x).__name__}-{x.dtype}")
def test_one_array_shortcut_equals_the_general_path(
    x: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome([x])  # types classified, as on any later call
    shortcut = outcome([x])
    monkeypatch.setattr(Plan, "_one_array", lambda self, x: False)
    assert shortcut == outcome([x])
