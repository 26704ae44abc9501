"""The gradient of a recorded program as one function: the forward replay and the sweep.

For ``value_and_grad`` -- one loss, one unbatched sweep -- the tape need not exist at
all: :func:`compile_gradient` writes the program's operations and then, in the order
``core.sweep.backward`` takes them (entries from the loss down, parents in argument
order), each gradient rule called on the values the entry would have kept and each
gradient accumulated as ``backward`` accumulates it (``old + g``, in place when nothing
else holds ``old``). The same operations in the same order: the same numbers as a
traced call, without the tape's tuples, the sweep's loop or its ``None`` tests (which
entries a gradient reaches is known from the recorded parents). Every value is deleted
after its last use, forward or backward, so memory is freed as the sweep goes.

Large results are written into buffers of the call's :class:`~adswitch_tape.replay.arena.Arena`
(``out=``): those of ufuncs and 2-D matrix products of the forward pass that the call
does not return, and the temporaries of the two hottest rules -- ``tanh``'s and the
matrix product's for its first argument -- computed with exactly the numpy calls of
those rules (``rules.primitives._tanh_grad``, ``_matmul_nt``), into the buffer.

A program whose rules are not all registered is not compiled (``None``): the tape-based
replay then raises the sweep's own error, as a traced call does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..core import IN_PLACE_FROM
from ..recording import PRIMS
from ..rules import primitives as P
from .arena import Arena
from .kernels import accumulate, matmul_x_rule, tanh_rule
from .program import Program

__all__ = ["GradientFn", "compile_gradient"]

RunFn = Callable[[Sequence[Any], Arena | None, Any], tuple[list[Any], list[tuple[int, Any, Any]]]]


class GradientFn(NamedTuple):
    """A compiled gradient: ``run(leaves, arena, seed) -> (output leaves, [(leaf index,
    the value it was traced with, its gradient or None)] per active leaf)``, the argument
    arrays ``f`` wrote into given their final values; ``pools``: whether it takes
    buffers from the arena (else ``arena`` may be ``None``)."""

    run: RunFn
    pools: bool


POOL_FROM = IN_PLACE_FROM  # elements: smaller results are cheaper to allocate


def compile_gradient(program: Program) -> GradientFn | None:
    """The forward replay and gradient sweep of ``program`` as one function, or ``None``
    when it has no loss slot or a needed rule is missing (see the module doc)."""
    loss = program.loss
    if loss is None or loss[0] != "v":
        return None
    root = loss[1]
    ops = {slot: (sources, kw) for slot, sources, kw in program.ops}
    leaves = set(program.leaf_slots.values())
    # the entries a gradient reaches: the loss and its ancestors
    reached = {root}
    for slot in sorted(ops, reverse=True):
        if slot in reached:
            parents = program.entries[slot][3]
            for j in (parents,) if isinstance(parents, int) else parents:
                if j is not None:
                    reached.add(j)
    names: dict[str, Any] = {"asarray": np.asarray, "float64": np.float64, "acc": accumulate}
    forward, uses = _forward(program, names)
    keep = set(program.result_slots)
    last_backward: dict[int, int] = {}  # value slot -> the lowest entry whose rule reads it
    for slot in reached:
        if slot in ops:
            for j in _read_by_rules(program, slot, ops[slot][0]):
                last_backward[j] = min(last_backward.get(j, slot), slot)
    freed: dict[int, list[int]] = {}  # entry -> the values dropped after its rules ran
    for j, at in last_backward.items():
        if j not in keep:
            freed.setdefault(at, []).append(j)
    lines = ["def run(L, A, seed):", *forward.lines(uses, last_backward, keep)]
    lines.append(f"    g{root} = seed")
    arrived = {root}
    for slot in sorted(reached, reverse=True):
        if slot not in ops:
            continue
        step = _backward_step(program, slot, ops[slot], names, arrived, leaves)
        if step is None:
            return None
        lines.extend(step)
        dead = [f"v{j}" for j in sorted(freed.get(slot, ()))]
        lines.append("    del " + ", ".join([*dead, f"g{slot}"]))
    for i, slot in program.writes:  # after the sweep, as calls.write_back
        lines.append(f'    copyto(L[{i}], v{slot}, casting="unsafe")')
    outs = "".join(f"{_output(source, k, names)}, " for k, source in enumerate(program.outs))
    found = "".join(
        f"({i}, v{slot}, {f'g{slot}' if slot in arrived else 'None'}), "
        for i, slot in program.leaf_slots.items()
    )
    lines.append(f"    return [{outs}], [{found}]")
    source = "\n".join(lines) + "\n"
    names["copyto"], names["copy"] = np.copyto, np.array
    exec(compile(source, "<adswitch_tape replayed gradient>", "exec"), names)
    run = names.pop("run")  # (a function held by its own globals: a reference cycle)
    return GradientFn(run, bool(names.get("pooled")))


def _output(source: Any, k: int, names: dict[str, Any]) -> str:
    """The expression of an output leaf (see ``Program.value``)."""
    kind, what = source
    if kind == "v":
        return f"v{what}"
    if kind == "L":
        return f"L[{what}]"
    names[f"out{k}"] = what
    return f"copy(out{k}, copy=True)" if kind == "copy" else f"out{k}"


def _read_by_rules(program: Program, slot: int, sources: Sequence[Any]) -> list[int]:
    """The value slots entry ``slot``'s rules read (its kept arguments, its result)."""
    prim = program.entries[slot][0]
    read = []
    if prim.keep_args == "values":
        read = [what for kind, what in sources if kind == "v"]
    if prim.keep_ans:
        read.append(slot)
    return read


class _Forward:
    """The forward part's lines, with the deletions decided once the backward is known."""

    def __init__(self) -> None:
        self.steps: list[tuple[int, str, list[int]]] = []  # (slot, line, slots it reads)
        self.head: list[str] = []

    def lines(
        self, uses: dict[int, int], last_backward: dict[int, int], keep: set[int]
    ) -> list[str]:
        out = list(self.head)
        dies: dict[int, list[int]] = {}
        for j, k in uses.items():
            if j not in keep and j not in last_backward:
                dies.setdefault(k, []).append(j)
        for k, (slot, line, _) in enumerate(self.steps):
            out.append(line)
            dead = list(dies.get(k, []))
            if slot not in uses and slot not in keep and slot not in last_backward:
                dead.append(slot)
            if dead:
                out.append("    del " + ", ".join(f"v{j}" for j in sorted(set(dead))))
        return out


def _forward(program: Program, names: dict[str, Any]) -> tuple[_Forward, dict[int, int]]:
    forward = _Forward()
    for i, slot in sorted(program.leaf_slots.items(), key=lambda item: item[1]):
        if program.kinds[i] == "float":
            forward.head.append(f"    v{slot} = asarray(L[{i}], dtype=float64)")
        else:
            forward.head.append(f"    v{slot} = L[{i}]")
    uses: dict[int, int] = {}  # value slot -> the last forward step reading it
    keep = set(program.result_slots)
    for k, (slot, sources, kw) in enumerate(program.ops):
        prim = program.entries[slot][0]
        args = _arguments(slot, sources, names)
        for kind, what in sources:
            if kind == "v":
                uses[what] = k
        call = ", ".join(args)
        names[f"f{slot}"] = prim.impl
        names[f"kw{slot}"] = kw
        if kw:
            call += f", **kw{slot}"
        out = _pooled_output(program, slot, sources, kw, prim, keep)
        if out is not None:
            names[f"f{slot}"], (shape, dtype) = out
            names[f"s{slot}"], names[f"d{slot}"] = shape, dtype
            call += f", out=A.take(s{slot}, d{slot})"
            names["pooled"] = True
        forward.steps.append((slot, f"    v{slot} = f{slot}({call})", []))
    return forward, uses


def _arguments(slot: int, sources: Sequence[Any], names: dict[str, Any]) -> list[str]:
    args = []
    for a, (kind, what) in enumerate(sources):
        if kind == "v":
            args.append(f"v{what}")
        elif kind == "L":
            args.append(f"L[{what}]")
        else:
            names[f"c{slot}_{a}"] = what
            args.append(f"c{slot}_{a}")
    return args


def _shape_of(program: Program, source: Any) -> Any:
    kind, what = source
    if kind == "v":
        return program.results.get(what, (None, None, None))[1]
    if kind == "c":
        return np.shape(what) if isinstance(what, np.ndarray) else None
    return program.leaf_shapes.get(what)


def _pooled_output(
    program: Program, slot: int, sources: Sequence[Any], kw: Any, prim: Any, keep: set[int]
) -> tuple[Any, tuple[Any, Any]] | None:
    """``(the function to call with out=, (shape, dtype))`` when the result of ``slot``
    goes into the arena (see the module doc), else ``None``."""
    kind, shape, dtype = program.results.get(slot, (None, None, None))
    if slot in keep or kind is not np.ndarray or shape is None:
        return None
    if int(np.prod(shape)) < POOL_FROM:
        return None
    impl = prim.impl
    if type(impl) is np.ufunc and impl.nout == 1 and not kw and len(sources) == impl.nin:
        return impl, (shape, dtype)
    if prim is _PRIMS_MATMUL and len(sources) == 2 and not kw:
        a, b = (_shape_of(program, s) for s in sources)
        if a is not None and b is not None and len(a) == 2 and len(b) == 2:
            return np.matmul, (shape, dtype)
    return None


def _backward_step(
    program: Program,
    slot: int,
    op: tuple[Sequence[Any], Any],
    names: dict[str, Any],
    arrived: set[int],
    leaves: set[int],
) -> list[str] | None:
    """The lines of entry ``slot``'s rules, or ``None`` if one is missing."""
    sources, kw = op
    prim, kept, has_kw, parents = program.entries[slot]
    args = _arguments(slot, sources, names)
    if kept is None:
        kept_args = args
    else:
        names[f"k{slot}"] = kept
        kept_args = [f"*k{slot}"]
    ans = f"v{slot}" if prim.keep_ans else "None"
    tail = ", ".join([ans, *kept_args])
    if has_kw and kw:
        tail += f", **kw{slot}"
    pairs = [(0, parents)] if isinstance(parents, int) else list(enumerate(parents))
    lines = []
    for k, j in pairs:
        if j is None:
            continue
        rules = prim.rules
        try:
            rule = rules[k]
        except (IndexError, TypeError):
            return None
        if rule is None:
            return None
        pooled = None
        if not has_kw or not kw:
            if prim is _PRIMS_TANH and k == 0:
                pooled = tanh_rule(rule)
            elif prim is _PRIMS_MATMUL and k == 0 and j not in leaves:
                pooled = matmul_x_rule(rule)
        if pooled is not None:
            names[f"r{slot}_{k}"] = pooled
            names["pooled"] = True
            call = f"r{slot}_{k}(A, g{slot}, {tail})"
        else:
            names[f"r{slot}_{k}"] = rule
            call = f"r{slot}_{k}(g{slot}, {tail})"
        if j in arrived:
            lines.append(f"    g{j} = acc(g{j}, {call})")
        else:
            lines.append(f"    g{j} = {call}")
            arrived.add(j)
    return lines


_PRIMS_TANH = PRIMS[P.tanh]
_PRIMS_MATMUL = PRIMS[P.matmul]
