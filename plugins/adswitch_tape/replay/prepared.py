"""Prepared calls on the tape: record ``f`` once, then replay its operations without Python.

A call of an ``ad.prepare``-d operator comes with ``CallInfo.prepared``, a dict the
prepared call owns; every call passing it has the same argument structure, activity,
leaf types, shapes, dtypes and ties. Its first run is an ordinary traced call that is
also *recorded* (``recorder``): every operation, with where each argument comes from (an
earlier result, an argument leaf, a constant). Later calls whose ``f`` provably takes the
same path (``recordings``: what ``f`` reads is unchanged, its ``Const`` arrays hold the
same values) do not run ``f``: ``value_and_grad`` runs the recorded operations and the
gradient sweep as one generated function (``fused``), writing large temporaries into
buffers it owns (``arena``); ``vjp`` (a reusable pullback), ``vjp_apply`` and ``jvp``,
batched or not, run the operations (``program``) and sweep the tape they rebuild with
the usual sweeps. Either way the same numpy operations in the same order as a traced
call: the same numbers, outputs, shadows and writes into the arguments.

*Provably the same path*: a recording is refused, and ``f`` traced on every call (warned
once, :class:`~adswitch_tape.replay.notices.TapeReplayWarning`), when ``f`` read a traced value
(a ``bool``/``float``/``int`` of it, a comparison, a mask or index made from it), called
a differentiation inside, drew random numbers, changed what it reads, wrote into a
``Const`` array or changed ``np.errstate``, or reads something the checks cannot vouch
for (an iterator, a file, too much state: ``adswitch.closures``); see ``recorder`` and
``recordings``.

Nested prepared calls (``depth > 0``) are traced every time. Threads: a program holds
nothing of a call, and what a prepared call keeps is changed under a lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.spec import CallInfo, LossFn, OutputFn, SeedFn

from .. import engine, operators
from ..calls import Traced
from ..core import Trace, backward
from .program import Program
from .recordings import Stored, record, replayable

__all__ = ["jvp", "value_and_grad", "vjp", "vjp_apply"]


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
    state, key, stored = replayable(info, "value_and_grad", leaves, active)
    if stored is None:
        return record(  # type: ignore[no-any-return]
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


def _fused(stored: Stored, leaves: Sequence[Any]) -> tuple[list[Any], list[Any | None]]:
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
    state, key, stored = replayable(info, "vjp", leaves, active)
    if stored is None:
        return record(  # type: ignore[no-any-return]
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
    state, key, stored = replayable(info, "vjp_apply", leaves, active)
    if stored is None:
        return record(  # type: ignore[no-any-return]
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
    state, key, stored = replayable(info, "jvp", leaves, active)
    if stored is None:
        return record(  # type: ignore[no-any-return]
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
