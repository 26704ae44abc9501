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

from .case import Case
from .checks import Mismatch, check_grads, check_output, check_state, check_unchanged
from .reference import Expected, build_expected, unwrap

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

Caller = Callable[[str, Callable[..., Any], tuple[Any, ...], str, bool], Any]
"""``caller(entry, fn, args, backend, zero)`` -> what ``ad.gradient``/``ad.withgradient``
return. Injectable so that the runner's own logic can be tested without an engine."""


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


def _ad_caller(
    entry: str, fn: Callable[..., Any], args: tuple[Any, ...], backend: str, zero: bool
) -> Any:
    import adswitch as ad

    call = ad.gradient if entry == "gradient" else ad.withgradient
    return call(fn, *args, backend=backend, zero=zero)


class ReferenceCache:
    """References computed once per (case, argument set) and shared by every engine."""

    def __init__(self) -> None:
        self._store: dict[tuple[str, str], Expected] = {}
        self.seconds = 0.0  # spent computing references, kept out of the engines' timings

    def get(self, case: Case, which: str, args: Sequence[Any]) -> Expected:
        key = (case.id, which)
        if key not in self._store:
            start = time.perf_counter()
            self._store[key] = build_expected(case, args)
            self.seconds += time.perf_counter() - start
        return self._store[key]


_DEFAULT_CACHE = ReferenceCache()


def has_capability(capabilities: Any, name: str) -> bool:
    """Whether declared ``capabilities`` include ``name`` (a boolean field, or a dtype,
    device or array-kind name).

    Example:
        >>> from adswitch.spec import Capabilities
        >>> has_capability(Capabilities(nested=True), "nested"), has_capability(
        ...     Capabilities(), "float32")
        (True, True)
    """
    value = getattr(capabilities, name, None)
    if isinstance(value, bool):
        return value
    groups = ("dtypes", "devices", "array_kinds")
    return any(name in getattr(capabilities, group, ()) for group in groups)


def engine_capabilities(backend: str) -> Any:
    """The capabilities ``backend`` declares (from ``ad.backends()``).

    Example:
        >>> engine_capabilities("no-such-engine").nested  # nothing declared
        False
    """
    import adswitch as ad

    for info in ad.backends():
        if info.name == backend:
            return info.capabilities
    from adswitch.spec import Capabilities

    return Capabilities()


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
) -> tuple[Any, Expected | None, list[Any], list[str]]:
    """Run the entry on ``args`` and check everything; raise :class:`_Outcome` unless the
    case passed. Returns what the check needs to re-verify the result later."""
    from adswitch.errors import AdswitchError

    kinds = [unwrap(a)[0] for a in args]
    dvals_before = [
        copy.deepcopy(a.dval) if k == "dup" else None for a, k in zip(args, kinds, strict=True)
    ]
    expected = None if case.raises is not None else cache.get(case, which, args)
    try:
        for _ in range(case.repeat_same):
            result = caller(case.entry, case.fn, args, backend, case.zero)
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
        where = "".join(traceback.format_exception(exc)[-3:-1]).strip().splitlines()
        raise _Outcome(
            ERROR, _describe(exc) + (f" [at {where[0].strip()}]" if where else "")
        ) from exc
    if case.raises is not None:
        raise _Outcome(WRONG, f"expected {case.raises.__name__}, but the call returned")
    assert expected is not None
    notes = _verify(case, args, result, expected, dvals_before, caps)
    return result, expected, dvals_before, notes


def _verify(
    case: Case,
    args: tuple[Any, ...],
    result: Any,
    expected: Expected,
    dvals_before: list[Any],
    caps: Any,
) -> list[str]:
    try:
        grads = result.grad if case.entry == "withgradient" else result
        if case.check is not None:
            vals = [unwrap(a)[1] for a in args]
            problem = case.check(grads, *vals)
            if problem:
                raise Mismatch(problem)
            compared = 1
        else:
            compared = check_grads(
                grads, args, expected, case.tol, dvals_before, case.zero, case.repeat_same
            )
        if case.entry == "withgradient":
            compared += check_output(result.val, expected.output, case.tol)
        if compared == 0:
            raise Mismatch("the check compared no leaf")
        vals = [unwrap(a)[1] for a in args]
        return check_state(vals, expected, has_capability(caps, "mutation"))
    except Mismatch as exc:
        raise _Outcome(WRONG, str(exc)) from exc


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
        caller: how to call the entry point (``ad.gradient``/``ad.withgradient``).

    Returns:
        The :class:`Record`.

    Example:
        >>> from adswitch_conformance.cases import catalogue
        >>> run_case(catalogue()[0], "tape").outcome in OUTCOMES
        True
    """
    cache = cache or _DEFAULT_CACHE
    caller = caller or _ad_caller
    caps = engine_capabilities(backend) if caps is None else caps
    start, reference_seconds = time.perf_counter(), cache.seconds
    notes: list[str] = []
    caught = warnings.catch_warnings(record=True)
    seen = caught.__enter__()
    warnings.simplefilter("always")
    try:
        args = case.make_args()
        first, expected, dvals, notes = _attempt(case, backend, caps, args, "first", cache, caller)
        if expected is not None:
            second_args = (case.second_args or case.make_args)()
            which = "second" if case.second_args else "first"
            _attempt(case, backend, caps, second_args, which, cache, caller)
            # The first result must survive the second call (no reused output buffers).
            _verify(case, args, first, expected, dvals, caps)
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
