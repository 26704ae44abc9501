"""Prepared calls on the tape: record ``f`` once, then replay its operations without Python.

A call of an ``ad.prepare``-d operator comes with ``CallInfo.prepared``, a dict the
prepared call owns; every call passing it has the same argument structure, activity,
leaf types, shapes, dtypes and ties. Its first run is an ordinary traced call that is
also *recorded* (``recorder``): every operation with where its arguments come from.
Later calls whose ``f`` provably takes the same path run the recorded numpy code
(``program``) on the new leaves and sweep the tape it rebuilds with the usual sweeps --
``value_and_grad``, ``vjp`` (a reusable pullback), ``vjp_apply`` and ``jvp``, batched or
not -- so they return what a fresh trace returns, at the speed of the numpy code.

*Provably the same path*: a recording is refused, and ``f`` traced on every call, when
``f`` read a traced value (a ``bool``/``float``/``int`` of it, a comparison, a mask or
index made from it), called a differentiation inside, handed the tape objects it cannot
keep, changed what it reads from its closure and globals, or wrote into a ``Const``
array; or when what it reads cannot be vouched for (a random generator, the ``time``
module, an iterator, more than ``guard.MAX_OBJECTS`` objects: see ``guard``). The first
refusal of a function is warned (:class:`~adswitch_tape.notices.TapeReplayWarning`).
Before each replay the replay checks that what ``f`` read is unchanged -- the objects its
closure, globals and the modules it names hold, numpy arrays among them by value --, that
the ``Const`` arrays hold the values they held when recorded, and that non-array ``Const``
values (``Const(3)``) are the same (a recording is kept per such values, up to
:data:`MAX_PROGRAMS`). Any difference records again; a prepared call whose checks keep
failing (:data:`MAX_MISSES` times in a row) stops recording and traces ``f`` every time,
warned once.

Nested prepared calls (``depth > 0``) are traced every time. Threads: a program holds
nothing of a call, and the state below is changed under a lock.
"""

from __future__ import annotations

import random as _random
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple

import numpy as np

from adswitch.spec import CallInfo, LossFn, OutputFn, SeedFn

from . import engine, operators
from .arena import Arenas
from .calls import Traced
from .core import Trace, backward
from .fused import GradientFn, compile_gradient
from .guard import Snapshot, snapshot
from .notices import warn_once
from .program import Program
from .recorder import Recording

__all__ = ["MAX_MISSES", "MAX_PROGRAMS", "jvp", "value_and_grad", "vjp", "vjp_apply"]

MAX_PROGRAMS = 8
MAX_MISSES = 3
_VALUE_LEAVES = (type(None), bool, int, float, complex, str, bytes, np.generic)


class _Stored(NamedTuple):
    program: Program
    snapshot: Snapshot  # what f read besides its arguments
    arrays: list[tuple[int, np.ndarray]]  # the Const arrays' values when recorded
    structure: Hashable  # fn.output_structure
    gradient: GradientFn | None  # value_and_grad as one function (``fused``), once compiled
    arenas: Arenas  # the buffers it owns
    others: list[int]  # the leaves walked with f's reads (neither arrays nor plain values)
    unfused: bool = False  # compile_gradient found no fused form


class _State:
    """What one prepared call keeps for one primitive (in ``CallInfo.prepared``)."""

    __slots__ = ("lock", "misses", "programs", "refused")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.programs: dict[Hashable, _Stored] = {}
        self.refused: str | None = None
        self.misses = 0

    def lookup(self, key: Hashable, leaves: Sequence[Any], func: Any) -> _Stored | str | None:
        """The recorded program for this call, if its checks hold (see the module doc);
        ``None`` if not, or the reason to stop recording when they keep failing."""
        stored = self.programs.get(key)
        if stored is not None:
            changed = _changed(stored, leaves, func)
            if changed is None:
                if self.misses:
                    self.misses = 0
                return stored
        else:
            changed = "its non-array Const values" if self.programs else None
        if changed is not None:
            with self.lock:
                self.programs.pop(key, None)
                self.misses += 1
                misses = self.misses
            if misses == MAX_MISSES:
                return (
                    f"reads data that changes between calls ({changed}); a recording is "
                    "replayed only while what f reads stays the same"
                )
        return None

    def compiled(self, key: Hashable, stored: _Stored) -> _Stored:
        """``stored`` with its fused gradient compiled (a race compiles it twice)."""
        gradient = compile_gradient(stored.program)
        stored = stored._replace(gradient=gradient, unfused=gradient is None)
        with self.lock:
            if self.programs.get(key) is not None:
                self.programs[key] = stored
        return stored

    def store(self, key: Hashable, stored: _Stored) -> None:
        with self.lock:
            if len(self.programs) >= MAX_PROGRAMS:
                self.programs.pop(next(iter(self.programs)))
            self.programs[key] = stored


def _changed(stored: _Stored, leaves: Sequence[Any], func: Any) -> str | None:
    """What differs from the recording (``None``: nothing)."""
    snap = stored.snapshot
    if not snap.holds(func, [leaves[i] for i in stored.others] if stored.others else ()):
        return "what f reads from its closure, its globals or the modules it names"
    for i, copy in stored.arrays:
        leaf = leaves[i]
        if not np.array_equal(leaf, copy, equal_nan=copy.dtype.kind in "fc"):
            return "the values of its Const arrays"
    return None


def _state(info: CallInfo, primitive: str) -> _State:
    prepared = info.prepared
    assert prepared is not None
    state = prepared.get(("tape", primitive))
    if state is None:
        state = prepared.setdefault(("tape", primitive), _State())
    return state  # type: ignore[no-any-return]


def _key(leaves: Sequence[Any], active: Sequence[bool]) -> tuple[Any, ...]:
    """The non-array values of the inactive leaves (a program is recorded per key)."""
    if all(active):
        return ()
    key: list[Any] = []
    for i, (leaf, a) in enumerate(zip(leaves, active)):
        if not a and isinstance(leaf, _VALUE_LEAVES):
            key.append((i, type(leaf), leaf))
    return tuple(key)


def _other_leaves(leaves: Sequence[Any], active: Sequence[bool]) -> list[int]:
    """Inactive leaves that are neither arrays nor plain values: walked like ``f``'s reads."""
    return [
        i
        for i, (leaf, a) in enumerate(zip(leaves, active))
        if not a and type(leaf) is not np.ndarray and not isinstance(leaf, _VALUE_LEAVES)
    ]


def _const_arrays(leaves: Sequence[Any], active: Sequence[bool]) -> list[tuple[int, np.ndarray]]:
    return [
        (i, np.array(leaf, copy=True))
        for i, (leaf, a) in enumerate(zip(leaves, active))
        if not a and type(leaf) is np.ndarray
    ]


def _refuse(state: _State, func: Any, entry: str, reason: str) -> None:
    with state.lock:
        if state.refused is None:
            state.refused = reason
    name = getattr(func, "__qualname__", None) or type(func).__qualname__
    if entry in ("hessian", "hvp") and reason.startswith("calls a differentiation"):
        because = f"ad.{entry} differentiates a gradient call, and nested calls are not replayed"
        fix = "Nothing to change: this is how the tape computes second derivatives."
    else:
        because = f"f {reason}"
        fix = (
            "To be replayed, f must compute the same numpy operations on every call: use xp "
            "functions on traced values without converting them to Python numbers or "
            "branching on them (xp.where instead of if), pass data that changes as arguments "
            "(ad.Const), and differentiate only outside f."
        )
    warn_once(
        (getattr(func, "__code__", None) or id(func), reason),
        f"tape: the prepared ad.{entry} of {name} traces f in Python on every call instead "
        f"of replaying the operations it recorded, because {because}. The results are "
        f"right, only slower. {fix}",
    )


def _record(
    state: _State,
    info: CallInfo,
    fn: LossFn | OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    key: Hashable,
    run: Callable[[Recording | None], Any],
    fuse: bool = False,
) -> Any:
    """Run the call the plain way, recorded (or not, once refused); keep its program."""
    func = info.func
    assert func is not None  # (always set by the front end)
    if state.refused is not None:
        return run(None)
    others = _other_leaves(leaves, active)
    watched = snapshot(func, [leaves[i] for i in others])
    if watched.reason is not None:
        _refuse(state, func, info.entry, watched.reason)
        return run(None)
    arrays = _const_arrays(leaves, active)
    recording = Recording(leaves, active)
    generators = _generator_states()
    result = run(recording)
    reason = recording.reason
    if reason is None and _generator_states() != generators:
        reason = "draws random numbers (numpy's or Python's global generator)"
    if reason is None and not watched.holds(func, [leaves[i] for i in others]):
        reason = "changes what it reads from its closure or globals"
    if reason is None and any(not _same(leaves[i], copy) for i, copy in arrays):
        reason = "writes into its Const arrays"
    if reason is not None:
        _refuse(state, func, info.entry, reason)
        return result
    captured = {id(a) for a, _ in watched.copies}
    program = Program(recording, captured)
    # Compiled now, unless the last program was just found stale: then at its first
    # replay (data that changes on every call would pay a compilation per call).
    gradient = compile_gradient(program) if fuse and not state.misses else None
    stored = _Stored(
        program, watched, arrays, fn.output_structure, gradient, Arenas(), others,
        unfused=not fuse or (gradient is None and not state.misses),
    )  # fmt: skip
    state.store(key, stored)
    return result


def _generator_states() -> tuple[Any, ...]:
    """What numpy's and Python's global random generators would draw next (a draw in
    ``f``, even inside a library, changes it: a replay would repeat the first draw)."""
    state = np.random.get_state(legacy=False)
    mt = state["state"]
    assert isinstance(state, dict) and isinstance(mt, dict)
    return (mt["key"].tobytes(), mt["pos"], state["has_gauss"], _random.getstate())


def _same(a: Any, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b, equal_nan=b.dtype.kind in "fc"))


def _replayable(
    info: CallInfo, primitive: str, leaves: Sequence[Any], active: Sequence[bool]
) -> tuple[_State, Hashable, _Stored | None]:
    state = _state(info, primitive)
    key = _key(leaves, active)
    if state.refused is not None:
        return state, key, None
    stored = state.lookup(key, leaves, info.func)
    if isinstance(stored, str):
        _refuse(state, info.func, info.entry, stored)
        return state, key, None
    return state, key, stored


def _trace(tape: list[Any]) -> Trace:
    """A trace holding a replayed tape (nothing records on it)."""
    trace = Trace()
    trace.tape = tape
    trace.live = False
    return trace


def _traced(program: Program, values: dict[int, Any]) -> Traced:
    return {i: (None, values[slot], slot) for i, slot in program.leaf_slots.items()}  # type: ignore[misc]


def _write_back(program: Program, leaves: Sequence[Any], values: dict[int, Any]) -> None:
    """Give the argument arrays ``f`` wrote into their final values (as ``calls.write_back``)."""
    for i, slot in program.writes:
        np.copyto(leaves[i], values[slot], casting="unsafe")


# -- the primitives ------------------------------------------------------------------------
def value_and_grad(
    fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], list[Any | None]]:
    """``engine.value_and_grad`` of a prepared call: replayed when it can be."""
    state, key, stored = _replayable(info, "value_and_grad", leaves, active)
    if stored is None:
        return _record(  # type: ignore[no-any-return]
            state, info, fn, leaves, active, key,
            lambda rec: engine.value_and_grad(fn, leaves, active, info, rec), fuse=True,
        )  # fmt: skip
    program = stored.program
    fn.reuse(stored.structure)
    if stored.gradient is None and not stored.unfused:
        stored = state.compiled(key, stored)
    if stored.gradient is not None:
        return _fused(stored, leaves)
    tape, values = program.run(leaves)
    grads = None
    loss = program.loss
    if loss is not None and loss[0] == "v":
        grads = backward(_trace(tape), loss[1], engine.unit_seed(program.loss_dtype))
    outs = [program.value(s, leaves, values) for s in program.outs]
    _write_back(program, leaves, values)
    found = [
        (i, values[slot], grads[slot] if grads else None) for i, slot in program.leaf_slots.items()
    ]
    return outs, engine.leaf_results(leaves, found)


def _fused(stored: _Stored, leaves: Sequence[Any]) -> tuple[list[Any], list[Any | None]]:
    """``value_and_grad`` by the program's fused function, in one of its arenas."""
    gradient = stored.gradient
    assert gradient is not None
    seed = engine.unit_seed(stored.program.loss_dtype)
    if not gradient.pools:
        outs, found = gradient.run(leaves, None, seed)
        return outs, engine.leaf_results(leaves, found)
    arena = stored.arenas.lend()
    try:
        outs, found = gradient.run(leaves, arena, seed)
        results = engine.leaf_results(leaves, found)
        arena.forget([*results, *outs])  # the caller's arrays from now on
    finally:
        stored.arenas.give_back(arena)
    return outs, results


def vjp(
    fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], operators.TapePullback]:
    """``operators.vjp`` of a prepared call: replayed when it can be."""
    state, key, stored = _replayable(info, "vjp", leaves, active)
    if stored is None:
        return _record(  # type: ignore[no-any-return]
            state, info, fn, leaves, active, key,
            lambda rec: operators.vjp(fn, leaves, active, info, rec),
        )  # fmt: skip
    program = stored.program
    fn.reuse(stored.structure)
    tape, values = program.run(leaves)
    _own(tape, leaves)  # the pullback outlives the call: it must not read the caller's memory
    outs = []
    for source in program.outs:
        value = program.value(source, leaves, values)
        if source[0] == "v" and type(value) is np.ndarray:  # the tape may read it
            value = np.array(value, copy=True)
        outs.append(value)
    _write_back(program, leaves, values)
    slots = [what if kind == "v" else None for kind, what in program.diffs]
    trace = _trace(tape)
    pullback = operators.TapePullback(
        trace, slots, program.diff_dtypes, leaves, _traced(program, values)
    )
    return outs, pullback


def vjp_apply(
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    seed: SeedFn,
    info: CallInfo,
) -> tuple[list[Any], list[Any | None]]:
    """``operators.vjp_apply`` of a prepared call: replayed when it can be."""
    state, key, stored = _replayable(info, "vjp_apply", leaves, active)
    if stored is None:
        return _record(  # type: ignore[no-any-return]
            state, info, fn, leaves, active, key,
            lambda rec: operators.vjp_apply(fn, leaves, active, seed, info, rec),
        )  # fmt: skip
    program = stored.program
    fn.reuse(stored.structure)
    tape, values = program.run(leaves)
    outs = [program.value(s, leaves, values) for s in program.outs]
    cotangents = seed([program.value(s, leaves, values) for s in program.diffs])
    slots = [what if kind == "v" else None for kind, what in program.diffs]
    grads, batch, seeds = operators.pull(
        _trace(tape), slots, program.diff_dtypes, cotangents, info.batched, keep=False
    )
    _write_back(program, leaves, values)
    return outs, operators.results(grads, leaves, _traced(program, values), batch, seeds)


def jvp(
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    tangents: Sequence[Any],
    info: CallInfo,
) -> tuple[list[Any], list[Any]]:
    """``operators.jvp`` of a prepared call: replayed when it can be."""
    state, key, stored = _replayable(info, "jvp", leaves, active)
    if stored is None:
        return _record(  # type: ignore[no-any-return]
            state, info, fn, leaves, active, key,
            lambda rec: operators.jvp(fn, leaves, active, tangents, info, rec),
        )  # fmt: skip
    program = stored.program
    fn.reuse(stored.structure)
    tape, values = program.run(leaves)
    outs = [program.value(s, leaves, values) for s in program.outs]
    diffs = [program.value(s, leaves, values) for s in program.diffs]
    slots = [what if kind == "v" else None for kind, what in program.diffs]
    trace = _trace(tape)
    out_tangents = operators.push(
        trace, slots, diffs, _traced(program, values), tangents, info.batched
    )
    _write_back(program, leaves, values)
    return outs, out_tangents


def _own(tape: list[Any], leaves: Sequence[Any]) -> None:
    """Copy, on a replayed tape, every array that is or views an argument array (what
    ``ownership.own`` does for a traced call, whose locks say what to copy)."""
    user = {id(leaf) for leaf in leaves if type(leaf) is np.ndarray}
    if not user:
        return
    copies: dict[int, np.ndarray] = {}

    def owned(v: Any) -> Any:
        if type(v) is not np.ndarray:
            return v
        a: Any = v
        while type(a) is np.ndarray and id(a) not in user:
            a = a.base
        if type(a) is not np.ndarray:
            return v
        copy = copies.get(id(v))
        if copy is None:
            copy = copies[id(v)] = np.array(v, copy=True)
        return copy

    for i, entry in enumerate(tape):
        if entry is None:
            continue
        prim, args, ans, kw, parents = entry
        new_args = tuple(owned(a) for a in args)
        new_ans = owned(ans)
        if new_ans is not ans or any(n is not a for n, a in zip(new_args, args)):
            tape[i] = (prim, new_args, new_ans, kw, parents)
