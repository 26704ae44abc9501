"""Everything one result is checked for, whatever the entry: the numbers against the
reference, the outputs, and the caller's data afterwards. Raises
:class:`~adswitch_conformance.checks.Mismatch` (the runner's WRONG)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from .case import GRADIENT_ENTRIES, Case, Tolerance
from .checks import Mismatch, check_grads, check_output, check_state
from .checks_ops import verify_operator
from .entries import Got
from .reference import Expected, unwrap

__all__ = ["scaled_tolerances", "verify"]


def scaled_tolerances(
    tols: Mapping[str, Tolerance], accuracy: float | None
) -> dict[str, Tolerance]:
    """``tols`` widened to an approximate engine's declared ``accuracy``
    (``Capabilities.accuracy``, relative, for float64): never tighter than the exact-AD
    tolerances; float32 keeps its own, already wider, ones when they are wider.

    Example:
        >>> scaled_tolerances({"float64": (1e-8, 1e-10)}, 1e-6)
        {'float64': (1e-06, 1e-06)}
    """
    if accuracy is None:
        return dict(tols)
    return {k: (max(r, accuracy), max(a, accuracy)) for k, (r, a) in tols.items()}


def verify(
    case: Case,
    args: Sequence[Any],
    got: Got,
    expected: Expected,
    dvals_before: Sequence[Any],
    mutation: bool,
    accuracy: float | None = None,
) -> list[str]:
    """Check ``got`` (from ``case``'s entry on ``args``) against ``expected``; ``mutation``:
    the engine declares it, so inputs ``f`` writes must end as a plain call leaves them;
    ``accuracy``: the engine's declared ``Capabilities.accuracy`` (``None``: exact AD),
    which widens the case's tolerances.

    Returns:
        Notes on what was not compared (mutated inputs on engines without mutation).
    """
    if accuracy is not None:
        case = dataclasses.replace(case, tol=scaled_tolerances(case.tol, accuracy))
    if case.entry not in GRADIENT_ENTRIES:
        compared = verify_operator(case, args, got, expected, dvals_before)
    else:
        grads = got.result.grad if case.entry == "withgradient" else got.result
        if case.check is not None:
            problem = case.check(grads, *[unwrap(a)[1] for a in args])
            if problem:
                raise Mismatch(problem)
            compared = 1
        else:
            compared = check_grads(
                grads, args, expected, case.tol, dvals_before, case.zero, case.repeat_same
            )
        if case.entry == "withgradient":
            compared += check_output(got.result.val, expected.output, case.tol)
    if compared == 0:
        raise Mismatch("the check compared no leaf")
    return check_state([unwrap(a)[1] for a in args], expected, mutation)
