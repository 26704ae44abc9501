"""The runner's verdicts, against engines and callers built to be right or wrong in one
known way (the finite-difference engine of the tests is the "right" one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from adswitch_conformance.case import Case
from adswitch_conformance.cases import catalogue
from adswitch_conformance.runner import (
    ERROR,
    PASS,
    UNSUPPORTED,
    WRONG,
    ReferenceCache,
    has_capability,
    run_case,
    run_suite,
)

import adswitch as ad
from adswitch.errors import UnsupportedError
from adswitch.spec import CallInfo, Capabilities, LossFn
from tests.support.fd_engine import FiniteDifferenceBackend

CASES = {c.id: c for c in catalogue()}


class Skewed(FiniteDifferenceBackend):
    """Right except for a 0.1 % error in every gradient: a silently wrong engine."""

    name = "skewed"

    def value_and_grad(
        self, fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], list[Any | None]]:
        out, grads = super().value_and_grad(fn, leaves, active, info)
        return out, [g if g is None else g * 1.001 for g in grads]


class Flat(FiniteDifferenceBackend):
    """Declares no nesting and refuses it with the documented error."""

    name = "flat"
    capabilities = Capabilities(nested=False)

    def value_and_grad(
        self, fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
    ) -> tuple[list[Any], list[Any | None]]:
        if info.depth > 0:
            raise UnsupportedError("flat: nested gradients are not supported; use tape")
        return super().value_and_grad(fn, leaves, active, info)


class Boasting(Flat):
    """Refuses nesting like Flat, but claims to support it."""

    name = "boasting"
    capabilities = Capabilities(nested=True)


class Crashing(FiniteDifferenceBackend):
    name = "crashing"

    def value_and_grad(self, *args: Any) -> tuple[list[Any], list[Any | None]]:
        raise RuntimeError("engine internals exploded")


@pytest.fixture
def engines(fresh_registry: Any) -> Any:
    for backend in (FiniteDifferenceBackend(), Skewed(), Flat(), Boasting(), Crashing()):
        fresh_registry.add(backend)
    return fresh_registry


@pytest.mark.parametrize(
    "case_id",
    [
        "basics.exp_log",
        "activity.mixture",
        "ties.shared_layer_plain",
        "activity.zero_false_accumulates",
        "activity.withgradient_tuple",
        "activity.dval_shape",
        "trees.dataclass",
        "mutation.seed003_write_then_read",
    ],
)
def test_a_right_engine_passes(engines: Any, case_id: str) -> None:
    record = run_case(CASES[case_id], "fd", cache=ReferenceCache())
    assert record.outcome == PASS, record.message


@pytest.mark.parametrize("case_id", ["basics.exp_log", "activity.mixture", "ties.across_arguments"])
def test_a_slightly_wrong_engine_is_wrong(engines: Any, case_id: str) -> None:
    record = run_case(CASES[case_id], "skewed", cache=ReferenceCache())
    assert record.outcome == WRONG and "expected" in record.message


def test_declared_and_refused_is_unsupported_but_undeclared_is_error(engines: Any) -> None:
    case = CASES["nested.hvp"]
    assert run_case(case, "flat").outcome == UNSUPPORTED
    assert run_case(case, "boasting").outcome == ERROR


def test_an_engine_crash_is_error_with_its_message(engines: Any) -> None:
    record = run_case(CASES["basics.exp_log"], "crashing")
    assert record.outcome == ERROR and "engine internals exploded" in record.message


def _fd_caller(entry: str, fn: Any, args: tuple[Any, ...], backend: str, zero: bool) -> Any:
    call = ad.gradient if entry == "gradient" else ad.withgradient
    return call(fn, *args, backend="fd", zero=zero)


def test_a_shadow_changed_before_an_error_is_wrong(engines: Any) -> None:
    def clobbering(entry: str, fn: Any, args: tuple[Any, ...], backend: str, zero: bool) -> Any:
        args[0].dval[...] = 0.0  # zeroed, then the call fails: data lost
        return _fd_caller(entry, fn, args, backend, zero)

    record = run_case(CASES["hygiene.user_error_keeps_shadow"], "fd", caller=clobbering)
    assert record.outcome == WRONG and "data lost" in record.message


def test_a_caller_mutating_an_input_is_wrong(engines: Any) -> None:
    def mutating(entry: str, fn: Any, args: tuple[Any, ...], backend: str, zero: bool) -> Any:
        result = _fd_caller(entry, fn, args, backend, zero)
        args[0][...] += 1.0
        return result

    record = run_case(CASES["basics.exp_log"], "fd", caller=mutating)
    assert record.outcome == WRONG and "changed during the call" in record.message


def test_a_stale_cached_result_is_wrong(engines: Any) -> None:
    memo: list[Any] = []

    def caching(entry: str, fn: Any, args: tuple[Any, ...], backend: str, zero: bool) -> Any:
        if not memo:
            memo.append(_fd_caller(entry, fn, args, backend, zero))
        return tuple(np.copy(g) for g in memo[0])

    assert run_case(CASES["hygiene.stale_cache_values"], "fd", caller=caching).outcome == WRONG


def test_a_reused_output_buffer_is_wrong(engines: Any) -> None:
    buffer: dict[str, Any] = {}

    def reusing(entry: str, fn: Any, args: tuple[Any, ...], backend: str, zero: bool) -> Any:
        (grad,) = _fd_caller(entry, fn, args, backend, zero)
        out = buffer.setdefault("g", np.empty_like(grad))
        out[...] = grad  # the second call overwrites what the first returned
        return (out,)

    record = run_case(CASES["hygiene.stale_cache_values"], "fd", caller=reusing)
    assert record.outcome == WRONG


def test_a_missing_error_is_wrong(engines: Any) -> None:
    def lenient(entry: str, fn: Any, args: tuple[Any, ...], backend: str, zero: bool) -> Any:
        return (np.zeros(3),)

    record = run_case(CASES["activity.output_vector"], "fd", caller=lenient)
    assert record.outcome == WRONG and "expected OutputError" in record.message


def test_a_check_that_compares_nothing_is_wrong(engines: Any) -> None:
    case = Case("x.ints", "basics", "integer input only", lambda n: 1.0, lambda: (np.arange(3),))

    def nones(entry: str, fn: Any, args: tuple[Any, ...], backend: str, zero: bool) -> Any:
        return (None,)

    record = run_case(case, "fd", caller=nones)
    assert record.outcome == WRONG and "compared no leaf" in record.message


def test_a_wrong_tie_placement_is_wrong(engines: Any) -> None:
    def last_tie(entry: str, fn: Any, args: tuple[Any, ...], backend: str, zero: bool) -> Any:
        (grads,) = _fd_caller(entry, fn, args, backend, zero)
        return ({"enc": None, "b": grads["b"], "dec": grads["enc"]},)

    record = run_case(CASES["ties.dict_tie_insertion_order"], "fd", caller=last_tie)
    assert record.outcome == WRONG and "'enc'" in record.message


def test_a_leaked_non_numpy_output_is_wrong(engines: Any) -> None:
    def leaky(entry: str, fn: Any, args: tuple[Any, ...], backend: str, zero: bool) -> Any:
        result = _fd_caller(entry, fn, args, backend, zero)
        val = list(result.val)
        val[2] = val[2].tolist()
        return ad.WithGradient(tuple(val), result.grad)

    record = run_case(CASES["activity.withgradient_tuple"], "fd", caller=leaky)
    assert record.outcome == WRONG and "val[2]" in record.message


def test_run_suite_shares_references_and_reports_progress(engines: Any) -> None:
    seen: list[str] = []
    cases = [CASES["basics.exp_log"], CASES["ops.dot_closed_form"]]
    records = run_suite(cases, ["fd", "skewed"], progress=lambda r: seen.append(r.outcome))
    assert [r.outcome for r in records] == [PASS, PASS, WRONG, WRONG] == seen


def test_has_capability_reads_flags_and_dtypes() -> None:
    caps = Capabilities(nested=True, dtypes=("float64",))
    assert has_capability(caps, "nested") and not has_capability(caps, "mutation")
    assert has_capability(caps, "float64") and not has_capability(caps, "float32")
    assert not has_capability(caps, "no_such_capability")
