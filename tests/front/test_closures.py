"""The kit's closure walker (``adswitch.closures``), on its own.

The oracle for "changed" is the user's own edit: each test changes one thing ``f`` reads
(a cell, a global, an attribute, a dict item, an array's values) and expects some probe
to read differently -- and, with nothing changed, every probe to read as it was. Arrays
are compared by value against a copy taken before (``numpy.array_equal``).
"""

from __future__ import annotations

import itertools
import random
import time
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.closures import MAX_ARRAY_BYTES, MAX_OBJECTS, ClosureWalk, walk_closures
from adswitch.spec import NOT_FOUND, ProbeKind, Unprovable, read_probe

SCALE = 2.0
TABLE: dict[str, float] = {"w": 1.0}


def _changed(walk: ClosureWalk) -> bool:
    """Whether some probe reads differently now (identity; ``==`` for lengths, id sets)."""
    for kind, owner, key, found in walk.probes:
        now = read_probe(kind, owner, key)
        if kind in (ProbeKind.LEN, ProbeKind.SET):
            if now != found:
                return True
        elif now is not found:
            return True
    return False


def test_a_rebound_closure_cell_is_a_change() -> None:
    w = 1.0

    def f(x: Any) -> Any:
        return x * w

    walk = walk_closures(f)
    assert not _changed(walk)
    w = 3.0  # (read through f's cell)
    assert _changed(walk)


def test_an_unbound_cell_is_probed_as_not_found() -> None:
    def f(x: Any) -> Any:
        return x * later

    walk = walk_closures(f)
    cells = [p for p in walk.probes if p[0] == ProbeKind.CELL]
    assert [p[3] for p in cells] == [NOT_FOUND]
    later = 1.0
    assert _changed(walk) and later == 1.0


def test_a_reassigned_global_is_a_change() -> None:
    global SCALE
    walk = walk_closures(lambda x: x * SCALE)
    assert not _changed(walk)
    old, SCALE = SCALE, 5.0
    try:
        assert _changed(walk)
    finally:
        SCALE = old
    assert not _changed(walk)  # the same object back: the same path


def test_globals_named_in_nested_code_are_walked() -> None:
    def f(xs: Any) -> Any:
        return [(lambda y: y * TABLE["w"])(x) for x in xs]

    walk = walk_closures(f)
    assert any(p[0] == ProbeKind.ITEM and p[2] == "TABLE" for p in walk.probes)
    TABLE["w"] = 2.0
    try:
        assert _changed(walk)
    finally:
        TABLE["w"] = 1.0


def test_helpers_are_walked_into() -> None:
    state = {"k": 1}

    def helper(x: Any) -> Any:
        return x * state["k"]

    walk = walk_closures(lambda x: helper(x) + 1)
    state["k"] = 2
    assert _changed(walk)


def test_object_attributes_slots_and_class_attributes() -> None:
    class Model:
        bias = 0.0

        def __init__(self) -> None:
            self.w = 1.0

        def __call__(self, x: Any) -> Any:
            return x * self.w + self.bias

    class Slotted:
        __slots__ = ("w",)

        def __init__(self) -> None:
            self.w = 1.0

    model, slotted = Model(), Slotted()
    walk = walk_closures(lambda x: model(x) * slotted.w)
    assert not _changed(walk)
    model.w = 2.0
    assert _changed(walk)
    model.w = 1.0
    walk = walk_closures(lambda x: model(x) * slotted.w)
    slotted.w = 4.0
    assert _changed(walk)
    walk = walk_closures(lambda x: model(x) * slotted.w)
    Model.bias = 1.0
    assert _changed(walk)


def test_dicts_lists_and_sets_changed_in_place() -> None:
    d: dict[str, float] = {"a": 1.0}
    items: list[float] = [1.0]
    members = {1.5}
    walk = walk_closures(lambda x: x * d["a"] * len(items) * len(members))
    assert not _changed(walk)
    d["b"] = 2.0
    assert _changed(walk)
    del d["b"]
    assert not _changed(walk)
    items.append(2.0)
    assert _changed(walk)
    items.pop()
    members.add(2.5)
    assert _changed(walk)


def test_arrays_met_once_each_and_compared_by_value() -> None:
    w = np.arange(3.0)
    pair = (w, {"again": w})
    walk = walk_closures(lambda x: x * pair[0] + pair[1]["again"])
    assert len(walk.arrays) == 1 and walk.arrays[0] is w
    copy = w.copy()
    w[1] = -1.0  # in place: the probes cannot tell, the values can
    assert not _changed(walk)
    assert not np.array_equal(walk.arrays[0], copy)


def test_adswitch_state_names_what_a_rule_depends_on() -> None:
    rule = ad.custom_vjp(lambda x: x * 2.0)
    rule.defvjp(lambda x: (x * 2.0, None), lambda _, g: (2.0 * g,))
    walk = walk_closures(lambda x: rule(x))
    rule._out_structure[("a cache",)] = None
    rule.cache_of_mine = 1  # type: ignore[attr-defined]
    assert not _changed(walk)  # its caches are not its behaviour
    rule.defvjp(lambda x: (x * 2.0, None), lambda _, g: (3.0 * g,))
    assert _changed(walk)


def test_libraries_are_taken_as_they_are() -> None:
    walk = walk_closures(lambda x: np.sum(np.sin(x)))
    owners = {id(p[1]) for p in walk.probes}
    assert id(np.__dict__) not in owners and id(np) not in owners
    assert walk.arrays == []


def test_an_engine_names_its_own_library() -> None:
    def helper(x: Any) -> Any:
        return x

    helper.__module__ = "my_engine.kit"
    assert any(p[1] is helper for p in walk_closures(lambda x: helper(x)).probes)
    walk = walk_closures(lambda x: helper(x), libraries=("my_engine",))
    assert not any(p[1] is helper for p in walk.probes)


def test_extra_objects_are_walked_too() -> None:
    config = {"scale": 1.0}
    walk = walk_closures(lambda x, c: x * c["scale"], extra=[config])
    config["scale"] = 2.0
    assert _changed(walk)


@pytest.mark.parametrize(
    "source, match",
    [
        (np.random.default_rng(0), "random generator"),
        (random.Random(0), "random generator"),
        (np.random.RandomState(0), "random generator"),
        (time.time, "fresh values"),
        (np.random.normal, "fresh values"),
        (itertools.count(), "cannot see"),
        (iter([1, 2]), "cannot see"),
    ],
)
def test_sources_of_fresh_values_and_hidden_state_are_refused(source: Any, match: str) -> None:
    holder = {"source": source}
    with pytest.raises(Unprovable, match=match):
        walk_closures(lambda x: x * holder["source"])


def test_a_fresh_module_named_by_the_code_is_refused() -> None:
    with pytest.raises(Unprovable, match="random"):
        walk_closures(lambda x: x * random.random())
    with pytest.raises(Unprovable, match="time"):
        walk_closures(lambda x: x * time.perf_counter())


def test_too_much_is_refused() -> None:
    many: list[object] = [object.__new__(type("Plain", (), {})) for _ in range(MAX_OBJECTS + 1)]
    with pytest.raises(Unprovable, match="objects"):
        walk_closures(lambda x: x * len(many))
    big = np.zeros(MAX_ARRAY_BYTES // 8 + 1)
    with pytest.raises(Unprovable, match="MiB"):
        walk_closures(lambda x: x * big)


def test_read_probe_reads_every_kind() -> None:
    class Box:
        pass

    box, d, lst, st = Box(), {"k": 1}, [1], {2}
    box.a = 5  # type: ignore[attr-defined]
    cell = (lambda: d).__closure__[0]  # type: ignore[index]
    assert read_probe(ProbeKind.ATTR, box, "a") == 5
    assert read_probe(ProbeKind.ATTR, box, "b") is NOT_FOUND
    assert read_probe(ProbeKind.ITEM, d, "k") == 1 and read_probe(ProbeKind.LEN, d, None) == 1
    assert read_probe(ProbeKind.INDEX, lst, 3) is NOT_FOUND
    assert read_probe(ProbeKind.CELL, cell, None) is d
    assert read_probe(ProbeKind.SET, st, None) == frozenset(map(id, st))
