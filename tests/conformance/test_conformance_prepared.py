"""The runner's prepared mode: prepared at the case's point, called at others, with the
plain mode's verdicts -- against the finite-difference engine of the tests (the "right"
one, prepared by ``ad.prepare``) and preparers built to be wrong in one known way."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from adswitch_conformance.case import Case, arr
from adswitch_conformance.cases import catalogue
from adswitch_conformance.cli import main
from adswitch_conformance.report import differences, matrix_markdown, to_json
from adswitch_conformance.runner import (
    ERROR,
    PASS,
    PLAIN,
    PREPARED,
    UNSUPPORTED,
    WRONG,
    ReferenceCache,
    run_case,
    run_suite,
)

import adswitch as ad
from adswitch.errors import ActivityError, PreparationError, UnsupportedError
from tests.conformance.test_conformance_cli import _pytest
from tests.conformance.test_conformance_runner import Boasting, Flat, Skewed
from tests.support.fd_engine import FiniteDifferenceBackend

CASES = {c.id: c for c in catalogue()}


@pytest.fixture
def engines(fresh_registry: Any) -> Any:
    for backend in (FiniteDifferenceBackend(), Skewed(), Flat(), Boasting()):
        fresh_registry.add(backend)
    return fresh_registry


def _prepared(case_id: str, preparer: Any = None, backend: str = "fd") -> Any:
    case = CASES[case_id] if isinstance(case_id, str) else case_id
    return run_case(case, backend, cache=ReferenceCache(), mode=PREPARED, preparer=preparer)


@pytest.mark.parametrize(
    "case_id",
    [
        "basics.exp_log",
        "activity.mixture",
        "ties.shared_layer_plain",
        "activity.zero_false_accumulates",
        "trees.dataclass",
        "mutation.seed003_write_then_read",
        "hygiene.stale_cache_values",
        "hygiene.closure_state_changes",
        "hygiene.value_dependent_branch",
        "hygiene.user_error_keeps_shadow",
        "hygiene.output_error_keeps_shadow",
    ],
)
def test_a_right_engine_passes_prepared(engines: Any, case_id: str) -> None:
    record = _prepared(case_id)
    assert (record.outcome, record.mode) == (PASS, PREPARED), record.message


def test_an_expected_error_counts_from_prepare_or_from_the_prepared_call(engines: Any) -> None:
    # ad.prepare checks the wrappers (f does not run); an OutputError needs f to run.
    from_prepare = _prepared("activity.dval_shape")
    from_call = _prepared("activity.output_vector")
    assert from_prepare.outcome == from_call.outcome == PASS
    assert "ad.prepare raised the expected ActivityError" in from_prepare.message
    assert "the prepared call raised the OutputError" in from_call.message


@pytest.mark.parametrize("case_id", ["hygiene.stale_cache_shapes", "hygiene.stale_cache_activity"])
def test_a_changed_structure_gets_the_documented_preparation_error(
    engines: Any, case_id: str
) -> None:
    assert CASES[case_id].prepared_second_raises is PreparationError
    record = _prepared(case_id)
    assert record.outcome == PASS, record.message
    assert "at second_args, as documented: PreparationError" in record.message


def _fd_preparer(lenient: bool = False, stale: bool = False) -> Any:
    """``ad.prepare`` on fd, or wrong in one way: ``lenient`` calls the plain operator
    (no structure check), ``stale`` differentiates at the example whatever it is given."""

    def preparer(entry: str, fn: Any, example: tuple[Any, ...], backend: str, zero: bool) -> Any:
        assert entry == "gradient"
        prep = ad.prepare(ad.gradient, fn, *example, backend="fd", zero=zero)
        kept = copy.deepcopy(example)

        def call(args: tuple[Any, ...]) -> Any:
            if stale:
                return prep(*copy.deepcopy(kept))
            if lenient:
                return ad.gradient(fn, *args, backend="fd", zero=zero)
            return prep(*args)

        return call

    return preparer


def test_a_prepared_call_answering_for_the_example_is_wrong(engines: Any) -> None:
    assert _prepared("hygiene.stale_cache_values", _fd_preparer()).outcome == PASS
    record = _prepared("hygiene.stale_cache_values", _fd_preparer(stale=True))
    assert record.outcome == WRONG and "expected" in record.message


def test_a_prepared_call_taking_a_new_structure_is_wrong_even_with_the_right_numbers(
    engines: Any,
) -> None:
    assert _prepared("hygiene.stale_cache_values", _fd_preparer(lenient=True)).outcome == PASS
    record = _prepared("hygiene.stale_cache_shapes", _fd_preparer(lenient=True))
    assert record.outcome == WRONG
    assert "expected PreparationError" in record.message and "returned" in record.message


def test_a_structure_change_without_the_declaration_is_error(engines: Any) -> None:
    case = Case(
        "x.reshaped",
        "hygiene",
        "a new shape, not declared",
        CASES["hygiene.stale_cache_shapes"].fn,
        lambda: (arr(1, 3),),
        second_args=lambda: (arr(2, 4),),
    )
    record = _prepared(case)
    assert record.outcome == ERROR and "PreparationError" in record.message
    assert run_case(case, "fd", cache=ReferenceCache()).outcome == PASS


def _squares(x: Any) -> Any:
    return ad.array_namespace(x).sum(x * x)


def test_preparing_that_runs_f_on_the_example_is_wrong(engines: Any) -> None:
    case = Case("x.dup", "activity", "a Duplicated", _squares, lambda: (ad.Duplicated(arr(3, 3)),))
    assert _prepared(case).outcome == PASS

    def eager(entry: str, fn: Any, example: tuple[Any, ...], backend: str, zero: bool) -> Any:
        ad.gradient(fn, *example, backend="fd")  # writes the example's shadow
        return _fd_preparer()(entry, fn, example, backend, zero)

    record = _prepared(case, eager)
    assert record.outcome == WRONG and "ad.prepare's example args[0]" in record.message


def test_a_shadow_changed_by_a_failing_prepare_is_wrong(engines: Any) -> None:
    def clobbering(entry: str, fn: Any, example: tuple[Any, ...], *rest: Any) -> Any:
        example[0].dval[...] = 0.0
        raise ActivityError("args[1] is Active: gradients take plain arguments")

    record = _prepared("hygiene.activity_error_keeps_shadow", clobbering)
    assert record.outcome == WRONG and "data lost" in record.message


def test_a_prepared_call_dropping_the_expected_error_is_wrong(engines: Any) -> None:
    def lenient(*args: Any, **options: Any) -> Any:
        return lambda call_args, **call_options: (np.zeros(3),)

    record = _prepared("activity.output_vector", lenient)
    assert record.outcome == WRONG and "expected OutputError" in record.message


def test_a_preparer_refusing_everything_is_error(engines: Any) -> None:
    def strict(*args: Any, **options: Any) -> Any:
        def call(call_args: Any, **call_options: Any) -> Any:
            raise PreparationError("this call differs from the prepared ad.gradient")

        return call

    record = _prepared("basics.exp_log", strict)
    assert record.outcome == ERROR and "PreparationError" in record.message


def test_a_refusal_at_prepare_is_unsupported_only_where_declared(engines: Any) -> None:
    def refusing(*args: Any, **options: Any) -> Any:
        raise UnsupportedError("flat: nested gradients are not supported; use tape")

    assert _prepared("nested.hvp", refusing, backend="flat").outcome == UNSUPPORTED
    assert _prepared("basics.exp_log", refusing, backend="flat").outcome == ERROR
    assert _prepared("nested.hvp", backend="flat").outcome == UNSUPPORTED
    assert _prepared("nested.hvp", backend="boasting").outcome == ERROR


def test_a_wrong_engine_is_wrong_prepared(engines: Any) -> None:
    record = _prepared("basics.exp_log", backend="skewed")
    assert record.outcome == WRONG and "expected" in record.message


def test_an_unknown_mode_is_refused(engines: Any) -> None:
    with pytest.raises(ValueError, match="unknown mode 'eager'"):
        run_case(CASES["basics.exp_log"], "fd", mode="eager")


def test_run_suite_runs_both_modes_and_the_report_tells_them_apart(engines: Any) -> None:
    cases = [CASES["basics.exp_log"], CASES["hygiene.stale_cache_shapes"]]

    def lenient(*args: Any, **options: Any) -> Any:
        return _fd_preparer(lenient=True)(*args, **options)

    records = run_suite(cases, ["fd"], modes=(PLAIN, PREPARED), preparer=lenient)
    assert [(r.mode, r.outcome) for r in records] == [
        (PLAIN, PASS),
        (PLAIN, PASS),
        (PREPARED, PASS),
        (PREPARED, WRONG),
    ]
    assert differences(records) == [("fd", "hygiene.stale_cache_shapes", PASS, WRONG)]
    report = to_json(records)
    assert report["modes"] == [PLAIN, PREPARED]
    assert report["totals"]["fd (prepared)"][WRONG] == 1 and report["totals"]["fd"][WRONG] == 0
    assert {r["mode"] for r in report["records"]} == {PLAIN, PREPARED}
    assert report["differences"] == [
        {"backend": "fd", "case": "hygiene.stale_cache_shapes", PLAIN: PASS, PREPARED: WRONG}
    ]
    table = matrix_markdown(records, cases, {"fd": "1.0"})
    assert table.splitlines()[0] == "| case | family | fd 1.0 | fd 1.0 (prepared) |"
    assert "| `hygiene.stale_cache_shapes` | hygiene | pass | **WRONG** |" in table


def test_cli_prepared_both_writes_a_column_per_mode(
    engines: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json = tmp_path / "r.json"
    argv = ["--backend", "fd", "-k", "basics.exp", "--prepared", "both", "--json", str(out_json)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "| case | family | fd test | fd test (prepared) |" in captured.out
    assert "| `basics.exp_log` | basics | pass | pass |" in captured.out
    assert "fd (prepared) ." in captured.err
    assert "prepared vs plain: 0 case(s) with another outcome" in captured.err
    report = json.loads(out_json.read_text())
    assert report["modes"] == [PLAIN, PREPARED] and report["differences"] == []


def test_cli_prepared_alone_runs_only_prepared_and_names_failures_by_mode(
    engines: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--backend", "skewed", "-k", "ops.dot", "--prepared"]) == 1
    captured = capsys.readouterr()
    assert "WRONG skewed (prepared) ops.dot_closed_form" in captured.err
    assert "| case | family | skewed test (prepared) |" in captured.out
    assert "prepared vs plain" not in captured.err


def test_pytest_plugin_runs_cases_prepared() -> None:
    available = [b.name for b in ad.backends() if b.available]
    if not available:
        pytest.skip("no engine installed")
    name = available[0]
    result = _pytest(
        "--adswitch-backend", name, "--adswitch-prepared", "both", "-k", "exp_log", "-rA"
    )
    assert result.returncode == 0, result.stdout[-2000:]
    assert "2 passed" in result.stdout
    assert f"{name}:prepared:basics.exp_log" in result.stdout
