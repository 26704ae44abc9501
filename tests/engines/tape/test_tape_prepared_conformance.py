"""Every case of the conformance suite, prepared on the tape at its point and called at
other points near it: each call returns exactly what the unprepared call returns there
(results, pullbacks, shadows, the arguments as ``f`` leaves them), or raises the same
error -- whether the call was replayed, recorded again, or traced because the replay was
refused.

Oracle: the unprepared call at the same point (the conformance suite checks it against
finite differences and closed forms)."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np
import pytest
from adswitch_conformance.cases import catalogue
from adswitch_conformance.entries import ad_caller, ad_preparer, invoke, options_for
from adswitch_conformance.reference import unwrap
from adswitch_conformance.trees import children, leaves, map_unique
from adswitch_tape.replay.notices import TapeReplayWarning

import adswitch as ad
from tests.engines.tape.test_tape_prepared import assert_identical

CASES = [c for c in catalogue() if "tape" not in getattr(c, "skip", ())]


def _moved(args: tuple[Any, ...], rng: np.random.Generator, consts: bool) -> tuple[Any, ...]:
    """``args`` with every floating leaf moved by up to 1 % (signs and ties kept); the
    ``Const`` ones too when ``consts``."""

    memo: dict[int, Any] = {}  # one per object: ties across arguments stay ties

    def move(leaf: Any) -> Any:
        if id(leaf) in memo:
            return memo[id(leaf)]
        new = leaf
        if isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f":
            factor = 1 + 0.01 * rng.uniform(-1, 1, leaf.shape)
            new = np.array(leaf * factor, dtype=leaf.dtype)
        elif type(leaf) is float:
            new = leaf * (1 + 0.01 * rng.uniform(-1, 1))
        memo[id(leaf)] = new
        return new

    moved: list[Any] = []
    for arg in args:
        if isinstance(arg, ad.Const):
            moved.append(ad.Const(map_unique(move, arg.val)) if consts else arg)
        elif isinstance(arg, ad.Duplicated):
            moved.append(ad.Duplicated(map_unique(move, arg.val), copy.deepcopy(arg.dval)))
        elif isinstance(arg, ad.Active):
            moved.append(ad.Active(map_unique(move, arg.val)))
        else:
            moved.append(map_unique(move, arg))
    return tuple(moved)


def _outcome(case: Any, args: tuple[Any, ...], caller: Any, seeds: tuple[Any, ...]) -> Any:
    """What a call gives, comparable: its results' leaves and structure (a pullback by what
    it pulls back), the arguments afterwards, or the exception's type."""
    try:
        got = invoke(case, args, "tape", caller, seeds)
    except Exception as exc:
        return ("raised", type(exc))
    result = got.result
    if case.entry == "vjp":
        result = (result[0], *result[2:], got.pulled)
    after = []
    for arg in args:
        kind, val = unwrap(arg)
        after += leaves(val) + (leaves(arg.dval) if kind == "dup" else [])
    return ("returned", _layout(result), leaves(result), after)


def _layout(tree: Any) -> Any:
    kids = children(tree)
    if kids is None:
        return None
    return (type(tree), [(name, _layout(kid)) for name, kid in kids])


@pytest.mark.parametrize("consts", [False, True], ids=["same-consts", "moved-consts"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_prepared_calls_are_unprepared_calls(case: Any, consts: bool) -> None:
    rng = np.random.default_rng(abs(hash(case.id)) % 2**32)
    seeds = case.seeds() if case.seeds is not None else ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TapeReplayWarning)
        try:
            prepared = ad_preparer(
                case.entry, case.fn, case.make_args(), "tape", case.zero,
                **options_for(case, seeds),
            )  # fmt: skip
        except Exception as exc:  # the unprepared call must raise the same
            want = _outcome(case, case.make_args(), ad_caller, seeds)
            assert want == ("raised", type(exc))
            return

        def call(entry: str, fn: Any, args: Any, backend: str, zero: bool, **options: Any) -> Any:
            return prepared(args, **options)

        base = case.make_args()
        for _ in range(3):
            args = _moved(base, rng, consts)
            mine, theirs = copy.deepcopy(args), copy.deepcopy(args)
            got = _outcome(case, mine, call, seeds)
            want = _outcome(case, theirs, ad_caller, seeds)
            if want[0] == "raised" or got[0] == "raised":
                assert got == want
                continue
            assert got[1] == want[1], f"{case.id}: result structure"
            assert_identical(got[2], want[2], f"{case.id}: result")
            assert_identical(got[3], want[3], f"{case.id}: arguments after the call")
