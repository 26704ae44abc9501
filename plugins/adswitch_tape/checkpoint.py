"""``Backend.checkpoint`` on the tape: one entry whose rules run ``fn`` again.

A checkpointed call is one primitive, ``checkpoint``, over the flat leaves. Its forward
pass runs ``fn`` on the plain values -- nothing inside is recorded at that level, so the
tape keeps only the inputs -- and returns the floating outputs packed into one array
(one output: itself), from which each output is read back by recorded slices. The
primitive is a primitive at every level like any other (``recording``): on the values
of an enclosing call it records itself there too.

Its gradient rule (one per argument, computed once per cotangent and shared) runs ``fn``
again under a fresh trace at the entry's inputs and sweeps that tape back from the
cotangent (``backward_many``, batched cotangents included). Its tangent rule does the
same with a forward sweep (``core.forward``). Both are written with the tape's own
machinery, so when the backward pass is itself recorded (a Hessian, a nested gradient)
the inputs are tracers of the enclosing call and the recomputation and its sweep are
recorded by that call: derivatives of any order.

``fn`` gets read-only views of the plain inputs in the forward pass: a write into them
would change the values the backward pass recomputes from (refused with
``MutationError``). A function closing over a traced value of an enclosing call (which
the primitive's plain forward pass cannot see through) is run plainly instead: the same
numbers, without the memory saving. A prepared call through it traces ``f`` on every call (the
recording refuses: the primitive runs Python code of ``f`` that a replay cannot see).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch.errors import MutationError
from adswitch.spec import leaf_kind

from .array.tracer import Tracer, raw
from .calls import roots, trace_leaves
from .core import BATCH, backward_many, forward
from .recording import defjvp, defvjp_variadic, nary
from .rules import primitives as P

__all__ = ["checkpoint"]

Fn = Callable[[list[Any]], list[Any]]


class _Closure(Exception):
    """``fn``'s output carries a traced value ``f`` did not get as an argument (it closes
    over a tracer of an enclosing call): the primitive cannot stand for it."""


class _Node:
    """One checkpointed call: ``fn``, its output layout, the cached gradients."""

    __slots__ = ("cache", "fn", "layout", "others", "traced")

    def __init__(self, fn: Fn, traced: list[bool]) -> None:
        self.fn = fn
        # which leaves are tracers (of any level); the others are constants at every
        # level, so the backward pass takes no gradient for them (Const weights...)
        self.traced = traced
        # per floating output: (output index, offset, size, shape, dtype); set by the
        # forward pass (the same at every level)
        self.layout: list[tuple[int, int, int, tuple[int, ...], Any]] = []
        self.others: list[Any] = []  # the output leaves, non-floating ones as fn gave them
        self.cache: tuple[Any, tuple[Any, ...], list[Any]] | None = None

    def single(self) -> bool:
        return len(self.layout) == 1


def _read_only(value: Any) -> Any:
    if type(value) is np.ndarray and value.flags.writeable:
        value = value.view()
        value.flags.writeable = False
    return value


def _impl(*values: Any, node: _Node) -> Any:
    """The forward pass on plain values: ``fn``, nothing recorded; floating outputs packed."""
    try:
        passed = [_read_only(v) for v in values]
        outs = list(node.fn(passed))
    except ValueError as exc:
        if "read-only" not in str(exc):
            raise
        raise MutationError(
            "ad.checkpoint: f wrote in place into one of its arguments; the backward "
            "pass recomputes f from its arguments, so the write would make the gradient "
            "wrong. Fix: write into a copy inside f (`h = xp.asarray(h, copy=True)`), or "
            "build the new value without mutation (xp.where, xp.concat)."
        ) from exc
    if any(type(o) is Tracer for o in outs):
        raise _Closure
    originals = {id(view): value for view, value in zip(passed, values)}
    outs = [originals.get(id(o), o) for o in outs]  # an input handed back: not our view
    node.others = outs
    node.layout = []
    offset = 0
    for j, o in enumerate(outs):
        if leaf_kind(o) != "f":
            continue
        shape = tuple(np.shape(o))
        size = int(np.prod(shape))
        dtype = o.dtype if hasattr(o, "dtype") else np.dtype(np.float64)
        node.layout.append((j, offset, size, shape, dtype))
        offset += size
    floats = [outs[j] for j, *_ in node.layout]
    return _pack(node, floats, ())


def _pack(node: _Node, values: Sequence[Any], batch: tuple[int, ...]) -> Any:
    """The floating outputs (or their tangents, with ``batch`` axes) as one array."""
    if node.single():
        v = values[0]
        return _as_array(v)
    if not values:
        return np.zeros((*batch, 0))
    dtype = np.result_type(*[d for *_, d in node.layout])
    parts = [P.reshape(_as_array(v), shape=(*batch, -1)) for v in values]
    parts = [p if p.dtype == dtype else P.astype(p, dtype=dtype) for p in parts]
    return P.concat(*parts, axis=-1)


def _as_array(v: Any) -> Any:
    """A Python float output as a 0-d float64 array (arrays and tracers as they are)."""
    return v if hasattr(v, "shape") else np.asarray(v, dtype=np.float64)


def _part(node: _Node, packed: Any, k: int, batch: tuple[int, ...]) -> Any:
    """Floating output ``k`` (of the layout) read from ``packed`` (batch axes in front)."""
    _, offset, size, shape, dtype = node.layout[k]
    if node.single():
        return packed
    part = P.reshape(packed[..., offset : offset + size], shape=batch + shape)
    return part if part.dtype == dtype else P.astype(part, dtype=dtype)


def _moving(node: _Node, args: Sequence[Any]) -> list[bool]:
    return [t and leaf_kind(raw(a)) == "f" for a, t in zip(args, node.traced)]


def _gradients(node: _Node, g: Any, args: tuple[Any, ...]) -> list[Any]:
    """Every argument's gradient: ``fn`` run again at ``args``, swept back from ``g``."""
    axes = BATCH.axes
    batch = tuple(g.shape[:axes])
    moving = _moving(node, args)
    trace, values, traced = trace_leaves(args, moving)
    try:
        outs = list(node.fn(values))
        slots, seeds = [], []
        for k, (j, *_rest) in enumerate(node.layout):
            slot = roots([outs[j]], trace)[0]
            if slot is not None:
                seed = _part(node, g, k, batch)
                want = raw(outs[j]).dtype
                slots.append(slot)
                seeds.append(seed if seed.dtype == want else P.astype(seed, dtype=want))
        grads = backward_many(trace, slots, seeds, batch=axes) if slots else []
    finally:
        trace.close()
    result: list[Any] = []
    for i, a in enumerate(args):
        found = grads[traced[i][2]] if grads and i in traced else None
        if found is None and moving[i]:  # (an argument f does not depend on)
            found = np.zeros(batch + np.shape(raw(a)), dtype=np.result_type(raw(a)))
        result.append(found)
    return result


def _vjp(k: int, g: Any, ans: Any, *args: Any, node: _Node) -> Any:
    """The gradient for argument ``k``: all of them once per cotangent, then cached."""
    cache = node.cache
    if cache is None or cache[0] is not g or any(a is not b for a, b in zip(cache[1], args)):
        cache = node.cache = (g, args, _gradients(node, g, args))
    return cache[2][k]


def _jvp(tangents: Sequence[Any], ans: Any, *args: Any, node: _Node) -> Any:
    """The output's tangent: ``fn`` run again at ``args`` under a forward sweep."""
    axes = BATCH.axes
    moving = [t is not None for t in tangents]
    batch = next(tuple(t.shape[:axes]) for t in tangents if t is not None)
    trace, values, traced = trace_leaves(args, moving)
    try:
        outs = list(node.fn(values))
        slots = roots([outs[j] for j, *_ in node.layout], trace)
        seeded = [traced[i][2] for i in range(len(args)) if moving[i]]
        given = [tangents[i] for i in range(len(args)) if moving[i]]
        wanted = [s for s in slots if s is not None]
        pushed = forward(trace, seeded, given, wanted, batch=axes) if wanted else {}
    finally:
        trace.close()
    out = []
    for (_, _, _, shape, dtype), slot in zip(node.layout, slots):
        t = None if slot is None else pushed.get(slot)
        out.append(np.zeros(batch + shape, dtype=dtype) if t is None else t)
    return _pack(node, out, batch)


_checkpoint = nary("checkpoint", _impl, saves=True, keep_ans=False, keep_args="values")
defvjp_variadic(_checkpoint, _vjp)
defjvp(_checkpoint, _jvp)


def checkpoint(fn: Fn, leaves: Sequence[Any], active: Sequence[bool]) -> list[Any]:
    """``Backend.checkpoint`` on the tape (module doc)."""
    for x in leaves:
        if type(x) is Tracer and x._trace.recording is not None:
            x._trace.recording.refuse(
                "calls ad.checkpoint (its backward pass runs f again, in Python)"
            )
    node = _Node(fn, [type(x) is Tracer for x in leaves])
    try:
        packed = _checkpoint(*leaves, node=node)
    except _Closure:  # f closes over a traced value: run it plainly (the same numbers)
        return list(fn(list(leaves)))
    outs = list(node.others)
    for k, (j, *_) in enumerate(node.layout):
        outs[j] = _part(node, packed, k, ())
    return outs
