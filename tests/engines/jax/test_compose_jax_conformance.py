"""``adswitch conformance --under jit|vmap`` (issue 23): the suite's calls made inside
jax's own transforms, judged against the suite's independent references (finite
differences, closed forms): a wrong number under the transform is WRONG, a case that
cannot run there is skipped with its reason, an engine that declares no such transform
is left out."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("jax")

from adswitch_conformance.case import Case, arr
from adswitch_conformance.cli import main
from adswitch_conformance.entries import ad_caller
from adswitch_conformance.runner import PASS, WRONG, run_case
from adswitch_conformance.under import SKIPPED

import adswitch as ad


def _sum_sq(x: Any) -> Any:
    return ad.array_namespace(x).sum(ad.array_namespace(x).sin(x) * x)


CASE = Case(
    "basics.under_probe",
    "basics",
    "sum(sin(x) x) by finite differences",
    _sum_sq,
    lambda: (arr(11, 4),),
    closed_form=lambda x: (np.cos(x) * x + np.sin(x),),
)


@pytest.mark.parametrize("under", ["jit", "vmap"])
def test_a_right_gradient_passes_under_the_transform(under: str) -> None:
    record = run_case(CASE, "jax", under=under)
    assert (record.outcome, record.mode) == (PASS, under), record.message


@pytest.mark.parametrize("under", ["jit", "vmap"])
def test_a_wrong_number_under_the_transform_is_wrong(under: str) -> None:
    def doubled(entry: str, fn: Any, args: Any, backend: str, zero: bool, **o: Any) -> Any:
        (g,) = ad_caller(entry, fn, args, backend, zero, **o)
        return (g * 2.0,)

    record = run_case(CASE, "jax", under=under, caller=doubled)
    assert record.outcome == WRONG, record.message


def test_duplicated_and_engines_without_the_transform_are_skipped() -> None:
    dup = Case(
        "basics.under_dup",
        "basics",
        "a Duplicated argument",
        _sum_sq,
        lambda: (ad.Duplicated(arr(12, 3), np.zeros(3)),),
    )
    record = run_case(dup, "jax", under="jit")
    assert record.outcome == SKIPPED and "Duplicated" in record.message
    record = run_case(CASE, "tape", under="jit")
    assert record.outcome == SKIPPED and "declares no" in record.message


def test_cli_under_jit_runs_jax_only(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["--backend", "jax", "--backend", "tape", "--under", "jit", "-k", "basics."])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "left out tape" in err
    assert "jax (jit):" in err and " 0 WRONG, 0 ERROR" in err


def test_cli_under_needs_an_engine_that_declares_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--backend", "tape", "--under", "vmap", "-k", "basics."]) == 2
    assert "declares under='vmap'" in capsys.readouterr().err
