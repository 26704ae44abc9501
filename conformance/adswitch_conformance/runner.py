"""Run cases on engines and classify each (engine, case) as pass / unsupported / WRONG / ERROR.

* **pass** -- the numbers match the reference (or the expected error was raised), and
  every hygiene check holds.
* **unsupported** -- the case needs a capability the engine declared missing, and the
  engine raised an ``AdswitchError`` subclass saying so.
* **WRONG** -- a number, a structure or the caller's data differs from the reference
  (always a failure, whatever the engine declares), an expected error was not raised, or
  the check compared nothing.
* **ERROR** -- any other exception.

Two modes: :data:`PLAIN` calls the entry (``ad.gradient(f, *args)``...) on each point;
:data:`PREPARED` prepares it once with ``ad.prepare`` and calls the prepared call at other
points (see :mod:`adswitch_conformance.prepared_run`). Both give the same outcome, case by
case: a case's expected error counts whether ``ad.prepare`` or the prepared call raises
it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .attempt import (
    ERROR,
    OUTCOMES,
    PASS,
    UNSUPPORTED,
    WRONG,
    ReferenceCache,
    Verdict,
    attempt,
    describe,
    replay_pullback,
    verify_again,
)
from .capabilities import engine_capabilities, has_capability
from .case import Case
from .entries import Caller, Preparer, ad_caller, ad_preparer
from .prepared_run import run_prepared

__all__ = [
    "PASS",
    "UNSUPPORTED",
    "WRONG",
    "ERROR",
    "OUTCOMES",
    "PLAIN",
    "PREPARED",
    "MODES",
    "Record",
    "ReferenceCache",
    "Caller",
    "Preparer",
    "run_case",
    "run_suite",
    "has_capability",
    "engine_capabilities",
]

PLAIN, PREPARED = "plain", "prepared"
MODES = (PLAIN, PREPARED)
"""How a case's entry is called: directly, or through ``ad.prepare`` (prepared at the
case's point, called at others)."""


@dataclass
class Record:
    """One line of the report: the outcome of one case on one engine, in one mode."""

    backend: str
    case: str
    outcome: str
    seconds: float
    message: str = ""
    mode: str = PLAIN

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_DEFAULT_CACHE = ReferenceCache()


def _run_plain(
    case: Case, backend: str, caps: Any, cache: ReferenceCache, caller: Caller
) -> list[str]:
    """The entry on ``make_args()``, then on ``second_args()`` (or ``make_args()`` again),
    then the first result re-checked; returns the notes or raises the verdict."""
    args = case.make_args()
    first = attempt(case, backend, caps, args, "first", cache, caller, case.make_args)
    if first.expected is not None and first.got is not None:
        second_args = (case.second_args or case.make_args)()
        which = "second" if case.second_args else "first"
        attempt(case, backend, caps, second_args, which, cache, caller, None)
        # The first result must survive the second call (no reused output buffers).
        verify_again(case, args, first.got, first.expected, first.dvals_before, caps)
        replay_pullback(case, args, first.got, first.expected, first.dvals_before, caps)
    return first.notes


def run_case(
    case: Case,
    backend: str,
    *,
    caps: Any = None,
    cache: ReferenceCache | None = None,
    caller: Caller | None = None,
    mode: str = PLAIN,
    preparer: Preparer | None = None,
    under: str | None = None,
) -> Record:
    """Run one case on one engine, twice (the second time on fresh or different
    arguments, re-checking the first result afterwards: no stale state or cache).

    Args:
        case: the case.
        backend: the engine's name.
        caps: its declared capabilities (looked up when ``None``).
        cache: where references are kept across engines (and modes).
        caller: how to call the entry point (default: adswitch's own functions).
        mode: :data:`PLAIN`, or :data:`PREPARED`: prepared at ``make_args()``, called at
            ``second_args()`` (or a fresh ``make_args()``) and again at ``make_args()``.
        preparer: how to prepare the entry in :data:`PREPARED` mode (default:
            ``ad.prepare``); ``caller`` then still makes the adjoint check's other side.
        under: ``"jit"`` or ``"vmap"``: the plain calls made inside that transform of the
            engine's (jax: ``jax.jit``/``jax.vmap``; torch: ``torch.func.vmap``;
            :mod:`adswitch_conformance.under`; the record's mode is its name, a case
            that cannot run there is ``"skipped"``).

    Returns:
        The :class:`Record`.

    Example:
        >>> from adswitch_conformance.cases import catalogue
        >>> run_case(catalogue()[0], "tape").outcome in OUTCOMES
        True
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: one of {', '.join(MODES)}")
    cache = cache or _DEFAULT_CACHE
    caller = caller or ad_caller
    caps = engine_capabilities(backend) if caps is None else caps
    start, reference_seconds = time.perf_counter(), cache.seconds
    caught = warnings.catch_warnings(record=True)
    seen = caught.__enter__()
    warnings.simplefilter("always")
    try:
        if under is not None:
            from .under import run_under  # (an engine's adapter imported only for this mode)

            mode = under
            notes = run_under(
                case, caps, caller, under, lambda c: _run_plain(case, backend, caps, cache, c)
            )
        elif mode == PREPARED:
            notes = run_prepared(case, backend, caps, cache, caller, preparer or ad_preparer)
        else:
            notes = _run_plain(case, backend, caps, cache, caller)
        outcome, message = PASS, "; ".join(notes)
    except Verdict as verdict:
        outcome, message = verdict.outcome, verdict.message
    except Exception as exc:  # a broken case or reference: never hide it
        outcome, message = ERROR, "conformance harness: " + describe(exc)
    finally:
        caught.__exit__(None, None, None)
    if seen:
        # Engines' warnings go into the record, not the progress line.
        kinds = sorted({w.category.__name__ for w in seen})
        message = "; ".join(filter(None, [message, f"warned: {', '.join(kinds)}"]))
    seconds = time.perf_counter() - start - (cache.seconds - reference_seconds)
    return Record(backend, case.id, outcome, seconds, message, mode)


def run_suite(
    cases: Sequence[Case],
    backends: Sequence[str],
    *,
    progress: Callable[[Record], None] | None = None,
    cache: ReferenceCache | None = None,
    caller: Caller | None = None,
    modes: Sequence[str] = (PLAIN,),
    preparer: Preparer | None = None,
    under: str | None = None,
) -> list[Record]:
    """Run every case on every engine (engine by engine, and on each engine mode by mode:
    ``modes`` holds :data:`PLAIN` and/or :data:`PREPARED`), sharing references; with
    ``under``, the plain calls inside that transform instead (see :func:`run_case`).

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
        for mode in modes:
            for case in cases:
                record = run_case(
                    case,
                    backend,
                    caps=caps,
                    cache=cache,
                    caller=caller,
                    mode=mode,
                    preparer=preparer,
                    under=under,
                )
                records.append(record)
                if progress is not None:
                    progress(record)
    return records
