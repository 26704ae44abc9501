"""The runner's prepared mode: a case through ``ad.prepare``, prepared at the case's point
and called at other, independent ones, with the plain mode's checks and outcomes.

The sequence, for a case without ``second_args``:

1. ``ad.prepare`` at ``make_args()`` (the example). It plans and checks the arguments but
   runs nothing of ``f``, so an error it raises (an ``ActivityError`` on the arguments'
   wrappers, an engine refusing a capability) is judged as the call's own would be: a
   case that expects that error passes whether ``ad.prepare`` or the prepared call raises
   it (the record's note says which); errors that need ``f`` to run (``OutputError``, the
   user's own exception) come from the prepared call.
2. The prepared call at a fresh ``make_args()``, checked like a plain call (values, result
   structure, the caller's data and shadows, expected errors; for ``vjp``/``jvp`` the
   adjoint identity, its other side a plain call).
3. Again at a fresh ``make_args()``; then the first result must be unchanged and a
   ``vjp``'s pullback still right.
4. The example itself must be untouched: preparing runs nothing.

A case with ``second_args`` takes its first prepared call (2.) at ``second_args()``: the
values change between preparing and calling, and the reference is the one at the point
called. A case whose ``second_args`` differ from ``make_args`` in structure, activity,
shapes or dtypes declares ``prepared_second_raises`` (``PreparationError``): a prepared
call is strict, so 2.-4. run at ``make_args`` points, then the call prepared there must
raise that error at ``second_args()`` (a result, right or not, is WRONG: the call accepted
arguments it was not prepared for), then 1.-4. run again at ``second_args`` points.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from .attempt import (
    ERROR,
    WRONG,
    ReferenceCache,
    Verdict,
    attempt,
    classify_failure,
    describe,
    replay_pullback,
    shadows_of,
    verify_again,
)
from .case import Case
from .checks import Mismatch, check_unchanged
from .entries import Caller, Prepared, Preparer, invoke, options_for, prepared_caller
from .reference import unwrap

__all__ = ["run_prepared"]

Points = list[tuple[Callable[[], tuple[Any, ...]], str]]


def run_prepared(
    case: Case, backend: str, caps: Any, cache: ReferenceCache, caller: Caller, preparer: Preparer
) -> list[str]:
    """Run ``case`` prepared on ``backend`` (the sequence above); return the record's
    notes, or raise the :class:`~adswitch_conformance.attempt.Verdict`.

    Args:
        case: the case.
        backend: the engine's name.
        caps: its declared capabilities.
        cache: the references, shared with the plain mode.
        caller: the plain caller (the other side of the adjoint check).
        preparer: how to prepare an entry (``ad.prepare``).
    """
    session = _Session(case, backend, caps, cache, caller, preparer)
    make, second = case.make_args, case.second_args
    if second is None:
        return session.run(make, [(make, "first"), (make, "first")])
    if case.prepared_second_raises is None:
        return session.run(make, [(second, "second"), (make, "first")])
    notes = session.run(make, [(make, "first"), (make, "first")], strict_at=second)
    return notes + session.run(second, [(second, "second"), (second, "second")])


class _Session:
    def __init__(
        self,
        case: Case,
        backend: str,
        caps: Any,
        cache: ReferenceCache,
        caller: Caller,
        preparer: Preparer,
    ) -> None:
        self.case, self.backend, self.caps = case, backend, caps
        self.cache, self.caller, self.preparer = cache, caller, preparer

    def run(
        self,
        make_example: Callable[[], tuple[Any, ...]],
        points: Points,
        strict_at: Callable[[], tuple[Any, ...]] | None = None,
    ) -> list[str]:
        """Prepare at ``make_example()``, call at each point in turn (the first one's
        result re-checked after the others), then at ``strict_at()`` (the case's
        ``prepared_second_raises`` expected); the example untouched throughout."""
        case = self.case
        example = make_example()
        before = copy.deepcopy([_parts(a) for a in example])
        prepared, notes = self._prepare(example)
        if prepared is not None:
            notes += self._calls(prepared, points)
            if strict_at is not None:
                notes.append(self._strict_call(prepared, strict_at()))
        try:
            check_unchanged(
                "ad.prepare's example args",
                [_parts(a) for a in example],
                before,
                "changed, but preparing runs nothing and the example is not called",
            )
        except Mismatch as exc:
            raise Verdict(WRONG, str(exc)) from exc
        if case.raises is not None and prepared is not None and not notes:
            notes.append(f"the prepared call raised the {case.raises.__name__}")
        return notes

    def _prepare(self, example: tuple[Any, ...]) -> tuple[Prepared | None, list[str]]:
        case = self.case
        seeds = case.seeds() if case.seeds is not None else ()
        shadows = shadows_of(example)
        try:
            prepared = self.preparer(
                case.entry, case.fn, example, self.backend, case.zero, **options_for(case, seeds)
            )
        except Exception as exc:
            notes = classify_failure(case, self.caps, exc, example, shadows)
            said = [f"from ad.prepare, {note}" for note in notes]
            return None, said or [f"ad.prepare raised the expected {type(exc).__name__}"]
        return prepared, []

    def _calls(self, prepared: Prepared, points: Points) -> list[str]:
        case, call = self.case, prepared_caller(prepared)
        make, which = points[0]
        args = make()
        first = attempt(
            case, self.backend, self.caps, args, which, self.cache, call, make, self.caller
        )
        if first.expected is None or first.got is None:
            return first.notes
        for make_again, which_again in points[1:]:
            again = make_again()
            attempt(case, self.backend, self.caps, again, which_again, self.cache, call, None)
        # The first result must survive the later calls (no reused output buffers).
        verify_again(case, args, first.got, first.expected, first.dvals_before, self.caps)
        replay_pullback(case, args, first.got, first.expected, first.dvals_before, self.caps)
        return first.notes

    def _strict_call(self, prepared: Prepared, args: tuple[Any, ...]) -> str:
        case = self.case
        expected = case.prepared_second_raises
        assert expected is not None
        shadows = shadows_of(args)
        seeds = case.seeds() if case.seeds is not None else ()
        what = f"prepared at make_args, called at second_args (expected {expected.__name__})"
        try:
            invoke(case, args, self.backend, prepared_caller(prepared), seeds)
        except Exception as exc:
            for i, arg in enumerate(args):
                if shadows[i] is not None:
                    try:
                        check_unchanged(f"args[{i}].dval", arg.dval, shadows[i])
                    except Mismatch as lost:
                        raise Verdict(WRONG, f"{what}: {lost} ({describe(exc)})") from exc
            if not isinstance(exc, expected):
                raise Verdict(ERROR, f"{what}: {describe(exc)}") from exc
            return f"at second_args, as documented: {type(exc).__name__}"
        raise Verdict(WRONG, f"{what} returned: it took arguments it was not prepared for")


def _parts(arg: Any) -> tuple[Any, Any]:
    """An argument's value and, for ``Duplicated``, its shadow."""
    kind, val = unwrap(arg)
    return val, arg.dval if kind == "dup" else None
