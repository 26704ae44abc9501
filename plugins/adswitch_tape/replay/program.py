"""A recorded program: the operations of one run of ``f``, replayed on new leaf values.

:class:`Program` is built from a :class:`~adswitch_tape.replay.recorder.Recording` and the tape
the run left, before any sweep frees it. Its :meth:`~Program.run` computes, for new
leaves, every recorded operation with the primitive's numpy code and returns a tape laid
out exactly as the recorded one (the same slots, primitives, parameters and parents; the
values kept for the rules are the new ones), which the usual sweeps then read -- so a
replayed gradient, pullback or forward sweep is the one a fresh trace would compute.

The operations are compiled once into one Python function of straight-line numpy calls
(``v7 = f7(v5, c7_1)``; ``T[7] = (p7, (v5, c7_1), None, None, 5)``), each value deleted
after its last use so that memory is freed as the forward pass goes, as in a plain call.
A program holds no state of a call: several threads may run it at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .recorder import Recording, Source

__all__ = ["Program"]

Op = tuple[int, tuple[Source, ...], dict[str, Any] | None]


class Program:
    """The replayable form of one recorded run (see the module doc).

    Args:
        recording: the recording, ended (``Recording.end``) and not refused.
        captured: ids of the arrays ``f`` read from its closure and globals (an output
            that is one of them is handed back as it is, as ``f`` would return it).

    Attributes:
        loss_dtype, diff_dtypes: the dtypes of the loss and of the differentiated outputs.
        leaf_slots: per active leaf index, its tape slot.
        outs: where each output leaf comes from (``Source``).
        loss: where the loss comes from (``value_and_grad``), or ``None``.
        diffs: where each differentiated output comes from (``vjp``, ``jvp``...).
        writes: ``(leaf, slot)``: argument leaves ``f`` wrote into, and their final value.
    """

    __slots__ = (
        "_run", "diff_dtypes", "diffs", "entries", "kinds", "leaf_shapes", "leaf_slots",
        "loss", "loss_dtype", "n", "ops", "outs", "result_slots", "results", "writes",
    )  # fmt: skip

    def __init__(self, recording: Recording, captured: set[int]):
        self.n = recording.n
        self.ops: list[Op] = recording.ops
        self.entries = recording.entries
        self.leaf_slots: dict[int, int] = {}
        self.kinds: dict[int, str] = {}
        self.results = dict(recording.results)  # slot -> (type, shape, dtype) of its value
        for i, (_, value, slot) in recording.traced.items():
            leaf = recording.leaves[i]
            self.leaf_slots[i] = slot
            self.kinds[i] = "float" if value is not leaf and isinstance(leaf, float) else "same"
            self.results[slot] = (type(value), np.shape(value), getattr(value, "dtype", None))
        # per array leaf index: its shape
        self.leaf_shapes = {
            i: leaf.shape for i, leaf in enumerate(recording.leaves) if type(leaf) is np.ndarray
        }

        def output(source: Source) -> Source:
            kind, what = source
            if kind == "copy":
                obj, copy = what
                return ("same", obj) if id(obj) in captured else ("copy", copy)
            return source

        self.outs = [output(s) for s in recording.outs]
        self.loss = None if recording.loss is None else output(recording.loss)
        self.diffs = [output(s) for s in recording.diffs]
        self.writes = recording.writes
        self.loss_dtype = recording.loss_dtype
        self.diff_dtypes = recording.diff_dtypes
        needed = {slot for kind, slot in (*self.outs, *self.diffs) if kind == "v"}
        needed.update(slot for _, slot in self.writes)
        needed.update(self.leaf_slots.values())
        if self.loss is not None and self.loss[0] == "v":
            needed.add(self.loss[1])
        self.result_slots = sorted(needed)
        self._run: Callable[[Sequence[Any]], tuple[list[Any], tuple[Any, ...]]] | None = None

    def run(self, leaves: Sequence[Any]) -> tuple[list[Any], dict[int, Any]]:
        """Every recorded operation on ``leaves``: ``(tape, {slot: value})`` for the slots
        the results need (``result_slots``). Compiled on first use (a race compiles it
        twice, harmlessly)."""
        run = self._run
        if run is None:
            run = self._run = _compile(self)
        tape, values = run(leaves)
        return tape, dict(zip(self.result_slots, values))

    def value(self, source: Source, leaves: Sequence[Any], values: dict[int, Any]) -> Any:
        """The value of an output ``source`` in a replayed call."""
        kind, what = source
        if kind == "v":
            return values[what]
        if kind == "L":
            return leaves[what]
        if kind == "copy":
            return np.array(what, copy=True)
        return what  # "same", "c"


def _compile(program: Program) -> Callable[[Sequence[Any]], tuple[list[Any], tuple[Any, ...]]]:
    """The program as one Python function (see the module doc)."""
    names: dict[str, Any] = {"asarray": np.asarray, "float64": np.float64}
    lines = ["def run(L):", f"    T = [None] * {program.n}"]
    for i, slot in sorted(program.leaf_slots.items(), key=lambda item: item[1]):
        if program.kinds[i] == "float":
            lines.append(f"    v{slot} = asarray(L[{i}], dtype=float64)")
        else:
            lines.append(f"    v{slot} = L[{i}]")
    last: dict[int, int] = {}  # slot -> the op after which its value is no longer needed
    for k, (_, sources, _) in enumerate(program.ops):
        for kind, what in sources:
            if kind == "v":
                last[what] = k
    keep = set(program.result_slots)
    dies: dict[int, list[int]] = {}  # op -> the slots whose value is dropped after it
    for j, k in last.items():
        if j not in keep:
            dies.setdefault(k, []).append(j)
    for k, (slot, sources, kw) in enumerate(program.ops):
        prim, kept, has_kw, parents = program.entries[slot]
        names[f"f{slot}"], names[f"p{slot}"] = prim.impl, prim
        args = []
        for a, (kind, what) in enumerate(sources):
            if kind == "v":
                args.append(f"v{what}")
            elif kind == "L":
                args.append(f"L[{what}]")
            else:
                names[f"c{slot}_{a}"] = what
                args.append(f"c{slot}_{a}")
        call = ", ".join(args)
        names[f"kw{slot}"] = kw
        if kw:
            call += f", **kw{slot}"
        lines.append(f"    v{slot} = f{slot}({call})")
        if kept is None:
            kept_text = "(" + "".join(f"{a}, " for a in args) + ")"
        else:
            names[f"k{slot}"] = kept
            kept_text = f"k{slot}"
        ans = f"v{slot}" if prim.keep_ans else "None"
        kw_text = f"kw{slot}" if has_kw else "None"
        names[f"q{slot}"] = parents
        lines.append(f"    T[{slot}] = (p{slot}, {kept_text}, {ans}, {kw_text}, q{slot})")
        dead = dies.get(k, [])
        if slot not in last and slot not in keep:
            dead.append(slot)
        if dead:
            lines.append("    del " + ", ".join(f"v{j}" for j in sorted(dead)))
    results = "".join(f"v{slot}, " for slot in program.result_slots)
    lines.append(f"    return T, ({results})")
    source = "\n".join(lines) + "\n"
    code = compile(source, "<adswitch_tape replay>", "exec")
    exec(code, names)
    # (popped: a function held by its own globals would be a reference cycle)
    run: Callable[[Sequence[Any]], tuple[list[Any], tuple[Any, ...]]] = names.pop("run")
    return run
