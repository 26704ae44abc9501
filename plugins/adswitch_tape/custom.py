"""The rule hooks on the tape: ``custom_vjp`` and ``custom_jvp`` (the ``Backend`` hooks of
``adswitch.spec``, called by ``adswitch.custom`` on the flat leaves).

A rule call is one tape entry per level (``rule`` below: its inputs' slots as parents,
a :class:`_Node` as its value) and one ``pick`` entry per floating output, whose parent
is the rule's entry. As for any primitive, the call on level-``L`` tracers computes its
outputs by calling itself on their values, which records it on the lower levels; at the
bottom the user's code runs on numpy arrays (``fwd`` for a vjp rule, ``f`` for a jvp
rule), so nothing inside it is recorded. In the backward sweep each ``pick`` hands its
cotangent to the rule's entry (:class:`_Cotangents` gather them, summed as the sweep
sums), which calls the user's code once for all its inputs:

* ``custom_vjp``: ``bwd(residuals, cotangents)``. When the sweep is itself recorded (a
  Hessian, a nested gradient: the entry's inputs are tracers of an enclosing level), the
  residuals kept from the bottom would be constants, so ``fwd`` runs again on the traced
  inputs and ``bwd``'s operations on those residuals are differentiated. Forward mode
  (``ad.jvp``, ``jacobian(mode='forward')``, forward-over-reverse, and the forward mode
  by transposition of ``operators``) is the contract's ``NoForwardRuleError``: a vjp rule
  has no pushforward, and a transposed ``bwd`` is the Jacobian only for a ``bwd`` linear
  in its cotangent (a clipped gradient would come out unclipped).
* ``custom_jvp``: forward mode calls ``rule(primals, tangents)``; reverse mode is the vjp
  of ``t -> rule(x, t)[1]`` at ``t = 0`` (the rule is linear in the tangents), taken by
  the tape's own reverse mode on a fresh trace above every level, so it nests.

Batched sweeps (``BATCH.axes``: reverse-mode Jacobians, batched pullbacks and
pushforwards): the user's ``bwd``/``rule`` are written for one cotangent, so they are
called once per row and the rows stacked (a ``custom_jvp``'s reverse sweep is batched
natively: it is an ordinary tape sweep).

Prepared calls (``ad.prepare``): a rule call is recorded as one operation (the rule
entry, whose replayed ``impl`` runs the user's ``fwd`` -- ``f`` for a jvp rule -- on the
new values) and one per output (its ``pick``), so a replay calls the user's code again
and sweeps through the same rule. The front end's callables close over the call's
non-differentiated arguments (``fn.nondiff_args``) and tree structures, which a replay
does not recompute: the recording refuses -- ``f`` is traced on every call, warned once
(``TapeReplayWarning``) -- when a non-differentiated argument could differ at the next
call (a traced array, or an object other than numbers, strings and numpy arrays: numpy
arrays are either ``Const`` arguments, whose values key the recorded program, or made
from constants ``f``'s guard watches), and when the rule has a non-floating output (a
replay would hand back the recorded one). The callables are shared by the replays of
one prepared call, so one prepared call with a rule replays in one thread at a time.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from adswitch.errors import NoForwardRuleError

from .array.tracer import Tracer, raw
from .core import BATCH, Trace, backward_many, escaped, sync
from .custom_rows import batch_shape, cotangent, filled, per_row, stacked, unbatched
from .recording import Prim

__all__ = ["NO_FORWARD", "custom_jvp", "custom_vjp", "transposing"]

NO_FORWARD = (
    "tape: custom_vjp has no forward-mode rule (ad.jvp, ad.derivative and forward-mode "
    "operators push tangents through it). Fix: define ad.custom_jvp for this function, or "
    "use a reverse-mode operator (ad.gradient, ad.vjp, jacobian mode='reverse')."
)
_REFUSE = (
    "calls a custom rule (ad.custom_vjp / ad.custom_jvp) whose non-differentiated "
    "arguments or non-floating outputs a replay could not recompute"
)
_STATIC = (type(None), bool, int, float, complex, str, bytes, np.generic, np.dtype, np.ndarray)

Fn = Callable[[list[Any]], list[Any]]

# Set while ``operators`` computes a forward mode by transposing the reverse sweep: a
# ``bwd`` met there would be transposed (see the module doc), which is refused.
_transposing: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "adswitch_tape_transposing", default=False
)


@contextlib.contextmanager
def transposing() -> Iterator[None]:
    """The backward sweeps run inside are transposed (forward mode by reverse)."""
    token = _transposing.set(True)
    try:
        yield
    finally:
        _transposing.reset(token)


class _Node:
    """A rule entry's value: the user's callables, the residuals of the bottom ``fwd``,
    and each output's ``(shape, dtype)`` (``None``: not floating, no derivative)."""

    __slots__ = ("kind", "outs", "residuals", "spec", "values")

    def __init__(
        self,
        kind: str,
        spec: tuple[Any, ...],
        residuals: Any,
        outs: list[Any],
        values: list[Any] | None = None,
    ):
        self.kind = kind
        self.spec = spec
        self.residuals = residuals
        self.outs = outs
        self.values = values  # the outputs, in a replay (its picks read them)


class _Cotangents:
    """The cotangents of one rule entry's outputs, as its ``pick`` entries hand them back
    (``None``: none reached that output); ``+`` is the sweep's accumulation. ``pulled``
    memoizes the rule's results, so the user's code runs once for all inputs."""

    __slots__ = ("batch", "items", "pulled")

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.pulled: list[Any] | None = None
        self.batch: tuple[int, ...] = ()  # the sweep's batch shape, set with ``pulled``

    def __add__(self, other: _Cotangents) -> _Cotangents:
        return _Cotangents(
            [a if b is None else b if a is None else a + b for a, b in zip(self.items, other.items)]
        )


class _PerArgument:
    """A rule table answering every argument ``k`` (as the sweeps index ``p.rules``)."""

    __slots__ = ("rule",)

    def __init__(self, rule: Callable[..., Any]) -> None:
        self.rule = rule

    def __len__(self) -> int:
        return 1 << 30

    def __getitem__(self, k: int) -> Callable[..., Any]:
        rule = self.rule
        return lambda g, node, *args: rule(k, g, node, args)


def _pick_vjp(g: Any, ans: Any, *_: Any, i: int, n: int) -> _Cotangents:
    items: list[Any] = [None] * n
    items[i] = g
    return _Cotangents(items)


def _pick_jvp(ts: tuple[Any, ...], ans: Any, *_: Any, i: int, n: int) -> Any:
    return ts[0][i]


def _pick_impl(node: _Node, i: int, n: int) -> Any:
    """A replayed pick: output ``i`` of the replayed rule entry."""
    assert node.values is not None
    return node.values[i]


_PICK = Prim("custom_rule_output", _pick_impl, False, False, "none")
_PICK.rules = [_pick_vjp]
_PICK.jvp = _pick_jvp


# -- the hooks ---------------------------------------------------------------------------
def custom_vjp(
    fn: Fn, fwd: Any, bwd: Any, leaves: Sequence[Any], active: Sequence[bool]
) -> list[Any]:
    """``Backend.custom_vjp`` on the tape (module doc)."""
    return _call(_VJP, (fn, fwd, bwd), list(leaves))[0]


def custom_jvp(fn: Fn, rule: Any, leaves: Sequence[Any], active: Sequence[bool]) -> list[Any]:
    """``Backend.custom_jvp`` on the tape (module doc)."""
    return _call(_JVP, (fn, rule), list(leaves))[0]


def _call(p: Prim, spec: tuple[Any, ...], leaves: list[Any]) -> tuple[list[Any], Any]:
    """The rule's outputs at the highest level among ``leaves`` (recorded there and, by
    recursion, below), and the residuals of the bottom ``fwd``."""
    top: Trace | None = None
    for a in leaves:
        if type(a) is Tracer:
            if a._base is not None:
                sync(a)
            if a._trace.level and (top is None or a._trace.level > top.level):
                top = a._trace
    if top is None:  # the bottom: the user's code on plain values, nothing recorded
        return _bottom(p, spec, [raw(a) if type(a) is Tracer else a for a in leaves])
    if not top.live:
        raise escaped(p.name)
    recording = top.recording
    if recording is not None and not _static(getattr(spec[0], "nondiff_args", [object()])):
        recording.refuse(_REFUSE)
    vals: list[Any] = []
    parents: list[int | None] = []
    for a in leaves:
        if type(a) is Tracer and a._trace is top:
            vals.append(a._value)
            parents.append(a._idx)
            continue
        if type(a) is Tracer and not a._trace.level:
            a = raw(a)  # a fresh buffer of constants
        elif type(a) is np.ndarray and id(a) not in top.locked:
            a = top.guard(a, f"a constant argument of `{p.name}`")  # bwd may read it
        vals.append(a)
        parents.append(None)
    outs, residuals = _call(p, spec, vals)
    if all(j is None for j in parents):  # constant at this level
        return outs, residuals
    shapes = _shapes(outs)
    tape = top.tape
    node = _Node(p.name, spec, residuals, shapes)
    tape.append((p, tuple(vals), node, None, tuple(parents)))
    if recording is not None:
        if None in shapes:
            recording.refuse(_REFUSE)
        recording.op(tuple(vals), None, node, trusted={"spec": spec})
    slot = len(tape) - 1
    n = len(outs)
    results = []
    for i, (o, s) in enumerate(zip(outs, shapes)):
        if s is None:
            results.append(o)
            continue
        kw = {"i": i, "n": n}
        tape.append((_PICK, (None,), None, kw, slot))
        if recording is not None:
            recording.op((node,), kw, o)
        results.append(Tracer(o, top, len(tape) - 1))
    return results, residuals


def _bottom(p: Prim, spec: tuple[Any, ...], values: list[Any]) -> tuple[list[Any], Any]:
    """The user's code on plain values: the outputs, and ``fwd``'s residuals."""
    if p is _VJP:
        outs, residuals = spec[1](values)
    else:
        outs, residuals = spec[0](values), None
    return [np.asarray(o, dtype=np.float64) if type(o) is float else o for o in outs], residuals


def _replayed(p: Prim) -> Callable[..., _Node]:
    """The ``impl`` a replay calls for a rule entry: the rule at the bottom, as a node."""

    def impl(*values: Any, spec: tuple[Any, ...]) -> _Node:
        outs, residuals = _bottom(p, spec, list(values))
        return _Node(p.name, spec, residuals, _shapes(outs), outs)

    return impl


def _static(nondiff: Any) -> bool:
    """Whether a rule's non-differentiated arguments stay the same in a replay (module
    doc): numbers, strings, numpy arrays and containers of them, no tracers."""
    if isinstance(nondiff, (tuple, list)):
        return all(_static(v) for v in nondiff)
    if isinstance(nondiff, dict):
        return all(_static(v) for v in nondiff.values())
    return type(nondiff) is not Tracer and isinstance(nondiff, _STATIC)


def _shapes(outs: Sequence[Any]) -> list[Any]:
    """Per output, ``(shape, dtype)`` -- ``None`` where it is not floating (no derivative)."""
    return [(tuple(o.shape), o.dtype) if _floating(o) else None for o in outs]


def _floating(o: Any) -> bool:
    dtype = getattr(o, "dtype", None)
    return dtype is not None and np.dtype(dtype).kind == "f"


# -- the sweeps --------------------------------------------------------------------------
def _vjp_rule(k: int, g: _Cotangents, node: _Node, args: tuple[Any, ...]) -> Any:
    """The cotangent of argument ``k``: ``bwd`` on all the outputs' cotangents, once."""
    if g.pulled is None:
        if _transposing.get():
            raise NoForwardRuleError(NO_FORWARD)
        _, fwd, bwd = node.spec
        residuals = node.residuals
        if any(type(a) is Tracer for a in args):  # the sweep is recorded (module doc)
            residuals = fwd(list(args))[1]
        g.batch = batch_shape(g.items, BATCH.axes)
        cts = filled(g.items, node.outs, g.batch)
        g.pulled = per_row(functools.partial(bwd, residuals), cts, g.batch, args)
    return cotangent(g.pulled[k], args[k], g.batch)


def _vjp_tangent(ts: tuple[Any, ...], node: _Node, *args: Any) -> Any:
    raise NoForwardRuleError(NO_FORWARD)


def _jvp_rule(k: int, g: _Cotangents, node: _Node, args: tuple[Any, ...]) -> Any:
    """The cotangent of argument ``k``: the transpose of the rule in its tangents, once."""
    if g.pulled is None:
        b = BATCH.axes
        g.batch = batch_shape(g.items, b)
        g.pulled = _transpose(node.spec[1], args, filled(g.items, node.outs, g.batch), b)
    return cotangent(g.pulled[k], args[k], g.batch)


def _jvp_tangent(ts: tuple[Any, ...], node: _Node, *args: Any) -> tuple[Any, ...]:
    """The outputs' tangents: the rule on the arguments' tangents (row by row)."""
    rule = node.spec[1]
    b = BATCH.axes
    if not b:
        return tuple(unbatched(functools.partial(_tangents_of, rule, args, list(ts))))
    batch = batch_shape(ts, b)
    rows = []
    for r in np.ndindex(*batch):
        row = [None if t is None else t[r] for t in ts]
        rows.append(unbatched(functools.partial(_tangents_of, rule, args, row)))
    return tuple(
        None if s is None else stacked([row[i] for row in rows], batch, s[0], s[1])
        for i, s in enumerate(node.outs)
    )


def _tangents_of(rule: Any, args: tuple[Any, ...], tangents: list[Any]) -> list[Any]:
    return rule(list(args), tangents)[1]  # type: ignore[no-any-return]


def _transpose(rule: Any, args: tuple[Any, ...], cts: list[Any], b: int) -> list[Any]:
    """The vjp of ``t -> rule(args, t)[1]`` at ``t = 0``, seeded with ``cts`` (``b``
    batch axes): the rule recorded on a fresh trace above every level, then swept."""
    dual = Trace()
    try:
        ts: list[Any] = []
        for a in args:
            if _floating(a):
                dual.tape.append(None)
                ts.append(Tracer(np.zeros(a.shape, dtype=a.dtype), dual, len(dual.tape) - 1))
            else:
                ts.append(None)
        out_t = unbatched(functools.partial(_tangents_of, rule, args, ts))
        roots, seeds = [], []
        for o, c in zip(out_t, cts):
            if type(o) is Tracer:
                if o._base is not None:
                    sync(o)
                if o._trace is dual and o._idx is not None and c is not None:
                    roots.append(o._idx)
                    seeds.append(c)
        grads = backward_many(dual, roots, seeds, b) if roots else [None] * len(dual.tape)
        return [None if t is None else grads[t._idx] for t in ts]
    finally:
        dual.close()


_VJP = Prim("custom_vjp", lambda *a: None, True, True, "values")
_VJP.impl = _replayed(_VJP)
_VJP.rules = _PerArgument(_vjp_rule)  # type: ignore[assignment]
_VJP.jvp = _vjp_tangent
_JVP = Prim("custom_jvp", lambda *a: None, True, True, "values")
_JVP.impl = _replayed(_JVP)
_JVP.rules = _PerArgument(_jvp_rule)  # type: ignore[assignment]
_JVP.jvp = _jvp_tangent
