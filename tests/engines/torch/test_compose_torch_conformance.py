"""``adswitch conformance --under vmap`` on torch (issue 23): the suite's calls made
inside ``torch.func.vmap`` over two stacked copies of the inputs, judged against the
suite's independent references (closed forms, finite differences): a wrong number is
WRONG, a case that cannot run there is skipped with its reason, a clear refusal raised
only there is unsupported; torch declares no ``jit`` (``torch.compile``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")

from adswitch_conformance.capabilities import composes, engine_capabilities
from adswitch_conformance.case import Case, arr
from adswitch_conformance.cli import main
from adswitch_conformance.entries import ad_caller
from adswitch_conformance.runner import PASS, UNSUPPORTED, WRONG, run_case
from adswitch_conformance.under import SKIPPED

import adswitch as ad
from adswitch.errors import UnsupportedError


def _sum_sin(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * x)


CASE = Case(
    "basics.under_probe",
    "basics",
    "sum(sin(x) x) against its closed form",
    _sum_sin,
    lambda: (arr(11, 4),),
    closed_form=lambda x: (np.cos(x) * x + np.sin(x),),
)


def _out(x: Any, w: Any) -> Any:
    xp = ad.array_namespace(x, w)
    return xp.tanh(w @ x) * xp.sum(x)


def test_a_right_gradient_passes_under_vmap() -> None:
    record = run_case(CASE, "torch", under="vmap")
    assert (record.outcome, record.mode) == (PASS, "vmap"), record.message


def test_a_wrong_number_under_vmap_is_wrong() -> None:
    def doubled(entry: str, fn: Any, args: Any, backend: str, zero: bool, **o: Any) -> Any:
        (g,) = ad_caller(entry, fn, args, backend, zero, **o)
        return (g * 2.0,)

    record = run_case(CASE, "torch", under="vmap", caller=doubled)
    assert record.outcome == WRONG, record.message


@pytest.mark.parametrize("entry", ["vjp", "jvp", "jacobian", "hessian"])
def test_other_entries_pass_under_vmap(entry: str) -> None:
    # the vjp's pullback is called inside a new vmap (it cannot leave a functorch level);
    # references are the suite's finite differences
    w = arr(21, 3, 4)
    if entry == "hessian":
        fn: Any = _sum_sin
        make: Any = lambda: (arr(22, 4),)  # noqa: E731
        seeds = None
    else:
        fn, make = _out, lambda: (arr(22, 4), ad.Const(w))
        seeds = {"vjp": lambda: (arr(23, 3),), "jvp": lambda: (arr(24, 4), None)}.get(entry)
    case = Case(f"operators.under_{entry}", "operators", entry, fn, make, entry=entry, seeds=seeds)
    record = run_case(case, "torch", under="vmap")
    assert record.outcome == PASS, record.message


def test_cases_that_cannot_run_batched_are_skipped_with_the_reason() -> None:
    def branches(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x * x) if xp.sum(x) > 0 else xp.sum(x)

    record = run_case(
        Case("basics.under_branch", "basics", "a Python branch", branches, lambda: (arr(3, 3),)),
        "torch",
        under="vmap",
    )
    assert record.outcome == SKIPPED and "concrete value" in record.message, record.message
    dup = Case(
        "basics.under_dup",
        "basics",
        "a Duplicated argument",
        _sum_sin,
        lambda: (ad.Duplicated(arr(12, 3), np.zeros(3)),),
    )
    record = run_case(dup, "torch", under="vmap")
    assert record.outcome == SKIPPED and "Duplicated" in record.message


def test_a_refusal_raised_only_under_the_transform_is_unsupported() -> None:
    def refusing(entry: str, fn: Any, args: Any, backend: str, zero: bool, **o: Any) -> Any:
        raise UnsupportedError("cannot do this inside torch.func.vmap. Fix: call it outside.")

    record = run_case(CASE, "torch", under="vmap", caller=refusing)
    assert record.outcome == UNSUPPORTED and "under vmap" in record.message


def test_torch_declares_vmap_but_not_jit() -> None:
    caps = engine_capabilities("torch")
    assert composes(caps, "vmap") and not composes(caps, "jit")


def test_cli_under_vmap_on_torch(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["--backend", "torch", "--under", "vmap", "-k", "ops."])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "torch (vmap):" in err and " 0 WRONG, 0 ERROR" in err
    assert main(["--backend", "torch", "--under", "jit", "-k", "ops."]) == 2
    assert "declares under='jit'" in capsys.readouterr().err
