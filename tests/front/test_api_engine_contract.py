"""What the front end promises engines (and users) around the contract's edges:
immutable shadows refused before ``f`` runs, compiled programs that skip ``fn``, CallInfo."""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.registry import Registry
from adswitch.spec import Capabilities
from tests.support.fd_engine import FiniteDifferenceBackend


class Frozen(np.ndarray):
    """An array kind whose engine cannot write in place (like jax's)."""


Frozen.__module__ = "frozenarrays"


class FrozenEngine(FiniteDifferenceBackend):
    name = "frozen"
    array_modules = ("frozenarrays",)

    def writable(self, value: Any) -> bool:
        return not isinstance(value, Frozen)


def test_immutable_shadow_is_refused_before_f_runs(fresh_registry: Registry, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "frozenarrays", types.ModuleType("frozenarrays"))
    engine = FrozenEngine()
    fresh_registry.add(engine)
    other = ad.Duplicated(np.ones(2), np.full(2, 5.0))
    frozen = np.ones(2).view(Frozen)
    ran = []

    def f(a: Any, b: Any) -> float:
        ran.append(True)
        return float(np.sum(np.asarray(a)) + np.sum(b))

    with pytest.raises(ad.ActivityError, match=r"dval at args\[0\].*cannot update in place"):
        ad.gradient(f, ad.Duplicated(frozen, np.zeros(2).view(Frozen)), other, backend=engine)
    assert ran == [] and engine.calls == []
    np.testing.assert_array_equal(other.dval, [5.0, 5.0])


class CachingEngine(FiniteDifferenceBackend):
    """Runs ``fn`` once per (cache key, shapes); afterwards returns remembered outputs
    without calling ``fn``, as a compiled program does -- and, as the contract asks of
    such engines, hands the output structure it saw back with ``fn.reuse``."""

    name = "caching"
    capabilities = Capabilities(compiles=True)

    def __init__(self) -> None:
        super().__init__()
        self.programs: dict[Any, Any] = {}

    def value_and_grad(self, fn, leaves, active, info):
        self.calls.append(info)
        key = (info.structure, tuple(np.shape(leaf) for leaf in leaves))
        if key not in self.programs:
            out, grads = FiniteDifferenceBackend.value_and_grad(self, fn, leaves, active, info)
            self.programs[key] = (out, grads, fn.output_structure)
        else:
            out, grads, structure = self.programs[key]
            fn.reuse(structure)
        return out, grads


def test_compiled_program_output_structure_is_remembered_per_shape() -> None:
    engine = CachingEngine()

    def f(x: Any) -> Any:
        # the output structure depends on the shape, as it may under a compiler
        pieces = tuple(float(v) for v in x)
        return (float(np.sum(x**2)), pieces)

    first = ad.withgradient(f, np.array([1.0, 2.0]), backend=engine)
    second = ad.withgradient(f, np.array([1.0, 2.0, 3.0]), backend=engine)
    again = ad.withgradient(f, np.array([1.0, 2.0]), backend=engine)  # a cache hit: fn not run
    assert len(first.val[1]) == 2 and len(second.val[1]) == 3 and len(again.val[1]) == 2
    np.testing.assert_allclose(again.grad[0], [2.0, 4.0], rtol=1e-6)
    structures = [info.structure for info in engine.calls]
    assert len(set(structures)) == 1 and None not in structures
    assert all(s is not None and s.func is f for s in structures)
    assert all(info.func is f for info in engine.calls)
    # the deprecated fields, still filled from the structure
    old_keys = {info.cache_key for info in engine.calls}
    assert len(old_keys) == 1 and None not in old_keys
    assert all(
        s is not None and info.structure_key == s.key for s, info in zip(structures, engine.calls)
    )


def test_an_engine_that_skips_fn_without_the_handshake_gets_a_clear_error() -> None:
    class Forgetful(CachingEngine):
        def value_and_grad(self, fn, leaves, active, info):
            key = (info.structure, tuple(np.shape(leaf) for leaf in leaves))
            if key in self.programs:
                return self.programs[key][:2]  # no fn.reuse: the front end cannot rebuild
            return super().value_and_grad(fn, leaves, active, info)

    def f(x: Any) -> Any:
        return float(np.sum(x)), 1

    engine = Forgetful()
    ad.withgradient(f, np.ones(2), backend=engine)
    with pytest.raises(ad.OutputError, match="engine bug"):
        ad.withgradient(f, np.ones(2), backend=engine)


class Mine:
    """An engine's own slot object (not a dict)."""


class SlotEngine(FiniteDifferenceBackend):
    """Keeps its own object per prepared structure (``prepare_slot``); its calls' infos
    are recorded (``calls``)."""

    name = "slots"

    def __init__(self, answer: Any = "object") -> None:
        super().__init__()
        self.answer = answer
        self.made: list[Any] = []  # the structures the hook was asked for

    def prepare_slot(self, structure: Any) -> Any:
        self.made.append(structure)
        return None if self.answer is None else Mine()


def test_an_engine_with_prepare_slot_gets_its_object_back_on_every_call() -> None:
    from adswitch.spec import Structure

    engine: Any = SlotEngine()  # (a Backend by its protocol)
    f = lambda x: ad.array_namespace(x).sum(x**3)  # noqa: E731
    prep = ad.prepare(ad.gradient, f, np.ones(3), backend=engine)
    assert engine.made == []  # asked on the structure's first call, not before
    for scale in (1.0, 2.0, -1.0):
        x = scale * np.array([1.0, 2.0, 3.0])
        np.testing.assert_allclose(prep(x)[0], 3 * x**2, rtol=1e-5)  # closed form
    (structure,) = engine.made
    assert type(structure) is Structure and structure.func is f and structure.entry == "gradient"
    slots = {id(info.prepared) for info in engine.calls}
    assert len(slots) == 1 and type(engine.calls[0].prepared) is Mine
    ad.gradient(f, np.ones(3), backend=engine)  # unprepared: no slot, no hook
    assert engine.calls[-1].prepared is None and len(engine.made) == 1


def test_a_prepare_slot_answer_of_none_gives_the_engine_a_dict() -> None:
    engine: Any = SlotEngine(answer=None)  # (a Backend by its protocol)
    f = lambda x: ad.array_namespace(x).sum(x * x)  # noqa: E731
    prep = ad.prepare(ad.gradient, f, np.ones(2), backend=engine)
    for x in (np.array([1.0, 2.0]), np.array([3.0, -1.0])):
        np.testing.assert_allclose(prep(x)[0], 2 * x, rtol=1e-5)  # closed form
    assert len(engine.made) == 1
    assert {id(info.prepared) for info in engine.calls} == {id(engine.calls[0].prepared)}
    assert type(engine.calls[0].prepared) is dict


def test_cache_key_changes_with_activity_and_constants() -> None:
    from adswitch.keys import cache_key
    from adswitch.plan import Plan

    x = np.ones(2)
    base = cache_key(Plan((x, ad.Const(3))), len)
    assert base == cache_key(Plan((np.zeros(2), ad.Const(3))), len)  # values do not matter
    assert base != cache_key(Plan((x, ad.Const(4))), len)  # static constants do
    assert base != cache_key(Plan((ad.Const(x), 3.0)), len)  # activity does
    assert base != cache_key(Plan((x, ad.Const(3))), sum)  # the function does


def _spec_example() -> dict[str, Any]:
    """The engine of ``adswitch.spec``'s module docstring, executed as it is written."""
    import textwrap

    from adswitch import spec

    doc = spec.__doc__ or ""
    start = doc.index("::\n", doc.index("Example (")) + 3
    end = doc.index("\n\nEvery operator then works", start)
    namespace: dict[str, Any] = {}
    exec(textwrap.dedent(doc[start:end]), namespace)
    return namespace


def test_the_spec_example_engine_runs_every_first_order_operator() -> None:
    example = _spec_example()
    engine = example["adswitch_backend"]()
    assert isinstance(engine, example["MyBackend"]) and engine.version() == "1.0"
    x = np.array([0.5, -1.0, 2.0])

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(xp.sin(x) * x)

    # closed forms: d/dx sum(x sin x) = sin x + x cos x; d/dx sin(x) = diag(cos x)
    (g,) = ad.gradient(f, x, backend=engine)
    np.testing.assert_allclose(g, np.sin(x) + x * np.cos(x), rtol=1e-5, atol=1e-6)
    (jac,) = ad.jacobian(lambda v: ad.array_namespace(v).sin(v), x, backend=engine)
    np.testing.assert_allclose(jac, np.diag(np.cos(x)), rtol=1e-5, atol=1e-6)
    out, pullback = ad.vjp(lambda v: v**2, x, backend=engine)
    np.testing.assert_allclose(pullback(np.ones(3))[0], 2 * x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, x**2)


def test_with_batched_keeps_every_other_field_by_name() -> None:
    from adswitch.derive_support import with_batched
    from adswitch.spec import CallInfo, Structure

    # every field away from its default, so that a field lost or shifted shows
    info = CallInfo(
        depth=2,
        cache_key=("key",),
        entry="jacobian",
        func=len,
        batched=False,
        prepared={},
        structure_key=("structure",),
        wants_outputs=False,
        structure=Structure(key=("structure",), func=len, entry="jacobian"),
    )
    flipped = with_batched(info, True)
    assert flipped == info._replace(batched=True) and type(flipped) is CallInfo
    assert flipped.prepared is info.prepared and with_batched(flipped, True) is flipped


@pytest.mark.parametrize(
    ("forward", "declared", "strategy"),
    [
        (True, "", "forward-over-reverse"),
        (False, "", "reverse-over-reverse"),
        (True, "reverse-over-reverse", "reverse-over-reverse"),
        (False, "forward-over-reverse", "forward-over-reverse"),
    ],
)
def test_second_order_is_the_one_field_that_decides(
    forward: bool, declared: str, strategy: str
) -> None:
    assert Capabilities(forward=forward, second_order=declared).second_order == strategy


def test_an_unknown_second_order_strategy_is_refused_with_the_choices() -> None:
    with pytest.raises(ad.UsageError, match=r"second_order='forward'.*reverse-over-reverse"):
        Capabilities(second_order="forward")
