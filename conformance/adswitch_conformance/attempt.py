"""One checked call of a case's entry, and the verdicts it can end in: what the runner's
two modes (plain calls, and calls through ``ad.prepare``) share."""

from __future__ import annotations

import copy
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from .capabilities import has_capability
from .case import Case
from .checks import Mismatch, check_unchanged
from .consistency import check_adjoint
from .entries import Caller, Got, invoke
from .reference import Expected, unwrap
from .reference_ops import expected_for
from .verify import verify

__all__ = [
    "PASS",
    "UNSUPPORTED",
    "WRONG",
    "ERROR",
    "OUTCOMES",
    "Attempt",
    "ReferenceCache",
    "Verdict",
    "attempt",
    "classify_failure",
    "describe",
    "replay_pullback",
    "shadows_of",
    "verify_again",
]

PASS, UNSUPPORTED, WRONG, ERROR = "pass", "unsupported", "WRONG", "ERROR"
OUTCOMES = (PASS, UNSUPPORTED, WRONG, ERROR)


class ReferenceCache:
    """References computed once per (case, argument set) and shared by every engine."""

    def __init__(self) -> None:
        self._store: dict[tuple[str, str], Expected] = {}
        self.seconds = 0.0  # spent computing references, kept out of the engines' timings

    def get(self, case: Case, which: str, args: Sequence[Any]) -> Expected:
        key = (case.id, which)
        if key not in self._store:
            start = time.perf_counter()
            self._store[key] = expected_for(case, args)
            self.seconds += time.perf_counter() - start
        return self._store[key]


class Verdict(Exception):
    """How a run ended, when not in a pass: raised by the checks, caught by the runner."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message


class Attempt(NamedTuple):
    """What one checked call leaves for the checks after it.

    Attributes:
        got: the result (``None`` when the call raised an error that counts as a pass).
        expected: the reference (``None`` likewise, and for cases that expect an error).
        dvals_before: the ``Duplicated`` shadows as they were before the call.
        notes: what the record should say (accepted errors, values not compared).
    """

    got: Got | None
    expected: Expected | None
    dvals_before: list[Any]
    notes: list[str]


def describe(exc: BaseException) -> str:
    """``"Type: message"`` on one line, at most 400 characters."""
    text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
    return text if len(text) <= 400 else text[:397] + "..."


def where(exc: BaseException) -> str:
    """`` [at <the frame that raised>]`` (empty when there is no traceback)."""
    lines = "".join(traceback.format_exception(exc)[-3:-1]).strip().splitlines()
    return f" [at {lines[0].strip()}]" if lines else ""


def _chain(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def shadows_of(args: Sequence[Any]) -> list[Any]:
    """Deep copies of the ``Duplicated`` shadows in ``args`` (``None`` for other
    arguments): the snapshot an error must leave untouched."""
    return [copy.deepcopy(a.dval) if unwrap(a)[0] == "dup" else None for a in args]


def classify_failure(
    case: Case, caps: Any, exc: Exception, args: Sequence[Any], dvals_before: Sequence[Any]
) -> list[str]:
    """Judge an exception raised for ``case`` on ``args`` (by the call, or by
    ``ad.prepare`` at them): return the record's notes when it counts as a pass (the
    case's expected error, or one of ``also_ok``); otherwise raise the :class:`Verdict`
    (WRONG when a shadow changed, UNSUPPORTED for a declared and refused capability,
    ERROR else)."""
    from adswitch.errors import AdswitchError

    for i, arg in enumerate(args):
        if dvals_before[i] is not None:
            try:
                check_unchanged(f"args[{i}].dval", arg.dval, dvals_before[i])
            except Mismatch as lost:
                raise Verdict(WRONG, f"{lost} ({describe(exc)})") from exc
    if case.raises is not None and any(isinstance(e, case.raises) for e in _chain(exc)):
        return []
    if isinstance(exc, case.also_ok):
        return [f"accepted: {describe(exc)}"]
    missing = [name for name in case.requires if not has_capability(caps, name)]
    if missing and isinstance(exc, AdswitchError):
        raise Verdict(UNSUPPORTED, f"declares no {', '.join(missing)}; {describe(exc)}") from exc
    raise Verdict(ERROR, describe(exc) + where(exc)) from exc


def attempt(
    case: Case,
    backend: str,
    caps: Any,
    args: tuple[Any, ...],
    which: str,
    cache: ReferenceCache,
    caller: Caller,
    fresh: Callable[[], tuple[Any, ...]] | None,
    adjoint_caller: Caller | None = None,
) -> Attempt:
    """Run the entry on ``args`` through ``caller`` and check everything; raise
    :class:`Verdict` unless the case passed. ``which`` names the argument set for the
    reference cache (``"first"``: ``make_args``, ``"second"``: ``second_args``).
    ``fresh`` makes arguments equal to ``args`` for the extra calls of the adjoint check,
    made through ``adjoint_caller`` (default ``caller``; ``fresh=None``: no adjoint
    check)."""
    dvals_before = shadows_of(args)
    seeds = case.seeds() if case.seeds is not None else ()
    seeds_before = copy.deepcopy(seeds)
    expected = None if case.raises is not None else cache.get(case, which, args)
    try:
        got = invoke(case, args, backend, caller, seeds)
    except Exception as exc:
        notes = classify_failure(case, caps, exc, args, dvals_before)
        return Attempt(None, None, dvals_before, notes)
    if case.raises is not None:
        raise Verdict(WRONG, f"expected {case.raises.__name__}, but the call returned")
    assert expected is not None
    notes = verify_again(case, args, got, expected, dvals_before, caps)
    try:
        check_unchanged(
            "tangents" if case.entry != "vjp" else "cotangents",
            seeds,
            seeds_before,
            "changed during the call",
        )
        if case.entry in ("vjp", "jvp") and fresh is not None:
            other = adjoint_caller or caller
            check_adjoint(case, got, fresh(), backend, other, seeds, expected.output)
    except Mismatch as exc:
        raise Verdict(WRONG, str(exc)) from exc
    except Exception as exc:
        raise Verdict(ERROR, "adjoint check: " + describe(exc) + where(exc)) from exc
    return Attempt(got, expected, dvals_before, notes)


def verify_again(
    case: Case,
    args: tuple[Any, ...],
    got: Got,
    expected: Expected,
    dvals_before: list[Any],
    caps: Any,
) -> list[str]:
    """:func:`~adswitch_conformance.verify.verify`, its mismatch a WRONG :class:`Verdict`."""
    try:
        return verify(
            case,
            args,
            got,
            expected,
            dvals_before,
            has_capability(caps, "mutation"),
            getattr(caps, "accuracy", None),
        )
    except Mismatch as exc:
        raise Verdict(WRONG, str(exc)) from exc


def replay_pullback(
    case: Case,
    args: tuple[Any, ...],
    got: Got | None,
    expected: Expected,
    dvals_before: list[Any],
    caps: Any,
) -> None:
    """A ``vjp``'s pullback, called again after other calls, still gives its results
    (without ``Duplicated`` arguments, whose shadows a new call would change)."""
    if case.entry != "vjp" or got is None or any(unwrap(a)[0] == "dup" for a in args):
        return
    seeds = case.seeds() if case.seeds is not None else ()
    what = "the pullback, called again after other calls: "
    try:
        again = Got(got.result, [got.pullback(u) for u in seeds])
    except Exception as exc:
        raise Verdict(ERROR, what + describe(exc) + where(exc)) from exc
    try:
        verify(
            case,
            args,
            again,
            expected,
            dvals_before,
            has_capability(caps, "mutation"),
            getattr(caps, "accuracy", None),
        )
    except Mismatch as exc:
        raise Verdict(WRONG, what + str(exc)) from exc
