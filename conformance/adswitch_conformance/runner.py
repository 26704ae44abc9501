"""Run cases on engines and classify each (engine, case) as pass / unsupported / WRONG / ERROR.

* **pass** -- the numbers match the reference (or the expected error was raised), and
  every hygiene check holds.
* **unsupported** -- the case needs a capability the engine declared missing, and the
  engine raised an ``AdswitchError`` subclass saying so.
* **WRONG** -- a number, a structure or the caller's data differs from the reference
  (always a failure, whatever the engine declares), an expected error was not raised, or
  the check compared nothing.
* **ERROR** -- any other exception.
"""

from __future__ import annotations

import copy
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .capabilities import engine_capabilities, has_capability
from .case import Case
from .checks import Mismatch, check_unchanged
from .consistency import check_adjoint
from .entries import Caller, Got, ad_caller, invoke
from .reference import Expected, unwrap
from .reference_ops import expected_for
from .verify import verify

__all__ = [
    "PASS",
    "UNSUPPORTED",
    "WRONG",
    "ERROR",
    "OUTCOMES",
    "Record",
    "ReferenceCache",
    "Caller",
    "run_case",
    "run_suite",
    "has_capability",
    "engine_capabilities",
]

PASS, UNSUPPORTED, WRONG, ERROR = "pass", "unsupported", "WRONG", "ERROR"
OUTCOMES = (PASS, UNSUPPORTED, WRONG, ERROR)


@dataclass
class Record:
    """One line of the report: the outcome of one case on one engine."""

    backend: str
    case: str
    outcome: str
    seconds: float
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


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


_DEFAULT_CACHE = ReferenceCache()


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
    return text if len(text) <= 400 else text[:397] + "..."


def _chain(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


class _Outcome(Exception):
    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message


def _attempt(
    case: Case,
    backend: str,
    caps: Any,
    args: tuple[Any, ...],
    which: str,
    cache: ReferenceCache,
    caller: Caller,
    fresh: Callable[[], tuple[Any, ...]] | None,
) -> tuple[Got | None, Expected | None, list[Any], list[str]]:
    """Run the entry on ``args`` and check everything; raise :class:`_Outcome` unless the
    case passed. Returns what the check needs to re-verify the result later. ``fresh``
    makes arguments equal to ``args`` for the extra calls of the adjoint check (``None``:
    no adjoint check)."""
    from adswitch.errors import AdswitchError

    kinds = [unwrap(a)[0] for a in args]
    dvals_before = [
        copy.deepcopy(a.dval) if k == "dup" else None for a, k in zip(args, kinds, strict=True)
    ]
    seeds = case.seeds() if case.seeds is not None else ()
    seeds_before = copy.deepcopy(seeds)
    expected = None if case.raises is not None else cache.get(case, which, args)
    try:
        got = invoke(case, args, backend, caller, seeds)
    except Exception as exc:
        for i, (arg, kind) in enumerate(zip(args, kinds, strict=True)):
            if kind == "dup":
                try:
                    check_unchanged(f"args[{i}].dval", arg.dval, dvals_before[i])
                except Mismatch as lost:
                    raise _Outcome(WRONG, f"{lost} ({_describe(exc)})") from exc
        if case.raises is not None and any(isinstance(e, case.raises) for e in _chain(exc)):
            return None, None, dvals_before, []
        if isinstance(exc, case.also_ok):
            return None, None, dvals_before, [f"accepted: {_describe(exc)}"]
        missing = [name for name in case.requires if not has_capability(caps, name)]
        if missing and isinstance(exc, AdswitchError):
            raise _Outcome(
                UNSUPPORTED, f"declares no {', '.join(missing)}; {_describe(exc)}"
            ) from exc
        raise _Outcome(ERROR, _describe(exc) + _where(exc)) from exc
    if case.raises is not None:
        raise _Outcome(WRONG, f"expected {case.raises.__name__}, but the call returned")
    assert expected is not None
    notes = _verify(case, args, got, expected, dvals_before, caps)
    try:
        check_unchanged("tangents" if case.entry != "vjp" else "cotangents", seeds, seeds_before)
        if case.entry in ("vjp", "jvp") and fresh is not None:
            check_adjoint(case, got, fresh(), backend, caller, seeds, expected.output)
    except Mismatch as exc:
        raise _Outcome(WRONG, str(exc)) from exc
    except Exception as exc:
        raise _Outcome(ERROR, "adjoint check: " + _describe(exc) + _where(exc)) from exc
    return got, expected, dvals_before, notes


def _where(exc: BaseException) -> str:
    where = "".join(traceback.format_exception(exc)[-3:-1]).strip().splitlines()
    return f" [at {where[0].strip()}]" if where else ""


def _verify(
    case: Case,
    args: tuple[Any, ...],
    got: Got,
    expected: Expected,
    dvals_before: list[Any],
    caps: Any,
) -> list[str]:
    try:
        return verify(case, args, got, expected, dvals_before, has_capability(caps, "mutation"))
    except Mismatch as exc:
        raise _Outcome(WRONG, str(exc)) from exc


def _replay_pullback(
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
        raise _Outcome(ERROR, what + _describe(exc) + _where(exc)) from exc
    try:
        verify(case, args, again, expected, dvals_before, has_capability(caps, "mutation"))
    except Mismatch as exc:
        raise _Outcome(WRONG, what + str(exc)) from exc


def run_case(
    case: Case,
    backend: str,
    *,
    caps: Any = None,
    cache: ReferenceCache | None = None,
    caller: Caller | None = None,
) -> Record:
    """Run one case on one engine, twice (the second time on fresh or different
    arguments, re-checking the first result afterwards: no stale state or cache).

    Args:
        case: the case.
        backend: the engine's name.
        caps: its declared capabilities (looked up when ``None``).
        cache: where references are kept across engines.
        caller: how to call the entry point (default: adswitch's own functions).

    Returns:
        The :class:`Record`.

    Example:
        >>> from adswitch_conformance.cases import catalogue
        >>> run_case(catalogue()[0], "tape").outcome in OUTCOMES
        True
    """
    cache = cache or _DEFAULT_CACHE
    caller = caller or ad_caller
    caps = engine_capabilities(backend) if caps is None else caps
    start, reference_seconds = time.perf_counter(), cache.seconds
    notes: list[str] = []
    caught = warnings.catch_warnings(record=True)
    seen = caught.__enter__()
    warnings.simplefilter("always")
    try:
        args = case.make_args()
        first, expected, dvals, notes = _attempt(
            case, backend, caps, args, "first", cache, caller, case.make_args
        )
        if expected is not None and first is not None:
            second_args = (case.second_args or case.make_args)()
            which = "second" if case.second_args else "first"
            _attempt(case, backend, caps, second_args, which, cache, caller, None)
            # The first result must survive the second call (no reused output buffers).
            _verify(case, args, first, expected, dvals, caps)
            _replay_pullback(case, args, first, expected, dvals, caps)
        outcome, message = PASS, "; ".join(notes)
    except _Outcome as verdict:
        outcome, message = verdict.outcome, verdict.message
    except Exception as exc:  # a broken case or reference: never hide it
        outcome, message = ERROR, "conformance harness: " + _describe(exc)
    finally:
        caught.__exit__(None, None, None)
    if seen:
        # Engines' warnings go into the record, not the progress line.
        kinds = sorted({w.category.__name__ for w in seen})
        message = "; ".join(filter(None, [message, f"warned: {', '.join(kinds)}"]))
    seconds = time.perf_counter() - start - (cache.seconds - reference_seconds)
    return Record(backend, case.id, outcome, seconds, message)


def run_suite(
    cases: Sequence[Case],
    backends: Sequence[str],
    *,
    progress: Callable[[Record], None] | None = None,
    cache: ReferenceCache | None = None,
    caller: Caller | None = None,
) -> list[Record]:
    """Run every case on every engine (engine by engine), sharing references.

    Example:
        >>> from adswitch_conformance import catalogue
        >>> records = run_suite(catalogue()[:1], ["tape"])
        >>> records[0].outcome in OUTCOMES
        True
    """
    cache = cache or ReferenceCache()
    records = []
    for backend in backends:
        caps = engine_capabilities(backend)
        for case in cases:
            record = run_case(case, backend, caps=caps, cache=cache, caller=caller)
            records.append(record)
            if progress is not None:
                progress(record)
    return records
