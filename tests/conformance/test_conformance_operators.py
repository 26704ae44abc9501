"""The runner's verdicts on operator cases (vjp, jvp, jacobian, hessian, hvp, derivative),
against the tests' finite-difference engine (right) and callers built to be wrong in one
known way each."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from adswitch_conformance.cases import catalogue
from adswitch_conformance.entries import ad_caller, options_for
from adswitch_conformance.runner import ERROR, PASS, UNSUPPORTED, WRONG, ReferenceCache, run_case

from tests.conformance.test_conformance_runner import Boasting, Flat, Skewed
from tests.support.fd_engine import FiniteDifferenceBackend

CASES = {c.id: c for c in catalogue()}


@pytest.fixture
def engines(fresh_registry: Any) -> Any:
    for backend in (FiniteDifferenceBackend(), Skewed(), Flat(), Boasting()):
        fresh_registry.add(backend)
    return fresh_registry


def _fd(entry: str, fn: Any, args: tuple[Any, ...], backend: str, zero: bool, **kw: Any) -> Any:
    return ad_caller(entry, fn, args, "fd", zero, **kw)


@pytest.mark.parametrize(
    "case_id",
    [
        "operators.vjp_array",
        "operators.vjp_tree",
        "operators.vjp_dataclass",
        "operators.vjp_tied",
        "operators.vjp_duplicated",
        "operators.vjp_duplicated_accumulates",
        "operators.vjp_aux",
        "operators.vjp_cotangent_shape",
        "operators.jvp_tree",
        "operators.jvp_tied",
        "operators.jvp_const_tangent",
        "operators.jacobian_array",
        "operators.jacobian_forward",
        "operators.jacobian_tied",
        "operators.jacobian_aux",
        "operators.jacobian_duplicated",
        "operators.derivative_float",
    ],
)
def test_a_right_engine_passes_operator_cases(engines: Any, case_id: str) -> None:
    record = run_case(CASES[case_id], "fd", cache=ReferenceCache())
    assert record.outcome == PASS, record.message


@pytest.mark.parametrize(
    "case_id", ["operators.vjp_array", "operators.jvp_array", "operators.jacobian_reverse"]
)
def test_a_slightly_wrong_engine_is_wrong(engines: Any, case_id: str) -> None:
    record = run_case(CASES[case_id], "skewed", cache=ReferenceCache())
    assert record.outcome == WRONG and "expected" in record.message


def test_second_order_without_nesting_is_unsupported_only_when_declared(engines: Any) -> None:
    case = CASES["operators.hessian_array"]
    assert run_case(case, "flat").outcome == UNSUPPORTED
    nested = CASES["operators.pinn_jvp_residual"]
    assert run_case(nested, "flat").outcome == UNSUPPORTED
    assert run_case(nested, "boasting").outcome == ERROR


def test_a_transposed_jacobian_is_wrong(engines: Any) -> None:
    def transposed(entry: str, fn: Any, args: tuple[Any, ...], *rest: Any, **kw: Any) -> Any:
        jac = _fd(entry, fn, args, *rest, **kw)
        return (jac[0].T, None, jac[2])

    record = run_case(CASES["operators.jacobian_array"], "fd", caller=transposed)
    assert (
        record.outcome == WRONG and "jacobian[0]: shape (4, 3), expected (3, 4)" in record.message
    )


def test_zeros_instead_of_none_for_a_const_is_wrong(engines: Any) -> None:
    def zeros(entry: str, fn: Any, args: tuple[Any, ...], *rest: Any, **kw: Any) -> Any:
        jac = _fd(entry, fn, args, *rest, **kw)
        return (jac[0], np.zeros((3, 3, 4)), jac[2], jac[3])

    record = run_case(CASES["operators.jacobian_array"], "fd", caller=zeros)
    assert record.outcome == WRONG and "jacobian[1]: expected None" in record.message


def test_a_jacobian_tie_at_the_later_place_is_wrong(engines: Any) -> None:
    def last_tie(entry: str, fn: Any, args: tuple[Any, ...], *rest: Any, **kw: Any) -> Any:
        (blocks, const) = _fd(entry, fn, args, *rest, **kw)
        return ({"enc": None, "b": blocks["b"], "dec": blocks["enc"]}, const)

    record = run_case(CASES["operators.jacobian_tied"], "fd", caller=last_tie)
    assert record.outcome == WRONG and "jacobian[0]['enc']" in record.message


def test_a_tangent_in_the_wrong_dtype_is_wrong(engines: Any) -> None:
    def float64(entry: str, fn: Any, args: tuple[Any, ...], *rest: Any, **kw: Any) -> Any:
        _, t = _fd(entry, fn, args, *rest, **kw)
        return fn(*[a.val if hasattr(a, "val") else a for a in args]), t.astype(np.float64)

    record = run_case(CASES["operators.jvp_float32"], "fd", caller=float64)
    assert record.outcome == WRONG and "dtype float64, expected float32" in record.message


def test_a_pullback_inconsistent_with_the_forward_mode_is_wrong(engines: Any) -> None:
    """Right pullbacks, but the jvp the adjoint check calls is off by 1 %."""

    def skewed_jvp(entry: str, fn: Any, args: tuple[Any, ...], *rest: Any, **kw: Any) -> Any:
        out = _fd(entry, fn, args, *rest, **kw)
        return (out[0], out[1] * 1.01) if entry == "jvp" else out

    record = run_case(CASES["operators.vjp_array"], "fd", caller=skewed_jvp)
    assert record.outcome == WRONG and "disagree" in record.message


def test_a_jvp_inconsistent_with_the_pullback_is_wrong(engines: Any) -> None:
    """Right tangents, but the pullback the adjoint check calls is off by 1 %."""

    def skewed_vjp(entry: str, fn: Any, args: tuple[Any, ...], *rest: Any, **kw: Any) -> Any:
        out = _fd(entry, fn, args, *rest, **kw)
        if entry != "vjp":
            return out
        return out[0], lambda u: tuple(g if g is None else g * 1.01 for g in out[1](u))

    record = run_case(CASES["operators.jvp_array"], "fd", caller=skewed_vjp)
    assert record.outcome == WRONG and "disagree" in record.message


def test_a_pullback_that_fails_when_reused_is_error(engines: Any) -> None:
    def single_use(entry: str, fn: Any, args: tuple[Any, ...], *rest: Any, **kw: Any) -> Any:
        if entry != "vjp":
            return _fd(entry, fn, args, *rest, **kw)
        y, pullback = _fd(entry, fn, args, *rest, **kw)
        calls = [0]

        def once_per_cotangent(u: Any) -> Any:
            calls[0] += 1
            if calls[0] > 2:
                raise RuntimeError("pullback already consumed")
            return pullback(u)

        return y, once_per_cotangent

    record = run_case(CASES["operators.vjp_array"], "fd", caller=single_use)
    assert record.outcome == ERROR and "called again" in record.message


def test_a_caller_writing_into_the_tangents_is_wrong(engines: Any) -> None:
    def writing(entry: str, fn: Any, args: tuple[Any, ...], *rest: Any, **kw: Any) -> Any:
        out = _fd(entry, fn, args, *rest, **kw)
        if entry == "jvp":
            kw["tangents"][0][...] = 0.0
        return out

    record = run_case(CASES["operators.jvp_array"], "fd", caller=writing)
    assert record.outcome == WRONG and "tangents[0] changed" in record.message


def test_a_shadow_that_does_not_accumulate_is_wrong(engines: Any) -> None:
    def restarting(
        entry: str, fn: Any, args: tuple[Any, ...], backend: str, zero: bool, **kw: Any
    ) -> Any:
        return ad_caller(entry, fn, args, "fd", True, **kw)  # ignores zero=False

    record = run_case(CASES["operators.vjp_duplicated_accumulates"], "fd", caller=restarting)
    assert record.outcome == WRONG and "(shadow)" in record.message


def test_a_missing_error_is_wrong(engines: Any) -> None:
    def lenient(entry: str, fn: Any, args: tuple[Any, ...], *rest: Any, **kw: Any) -> Any:
        return np.zeros(3), lambda u: (np.zeros(4), None, np.zeros(3))

    record = run_case(CASES["operators.vjp_cotangent_shape"], "fd", caller=lenient)
    assert record.outcome == WRONG and "expected ActivityError" in record.message


def test_gradient_entries_get_no_options_and_operators_only_theirs() -> None:
    seeds = (np.ones(2),)
    assert options_for(CASES["basics.exp_log"], seeds) == {}
    assert options_for(CASES["operators.jvp_aux"], seeds) == {"tangents": seeds, "has_aux": True}
    assert options_for(CASES["operators.jacobian_forward"], ()) == {
        "mode": "forward",
        "has_aux": False,
    }
    assert options_for(CASES["operators.hvp_array"], seeds) == {"tangents": seeds}
    assert options_for(CASES["operators.hessian_array"], seeds) == {}
