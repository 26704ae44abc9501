"""``vjp``, ``vjp_apply`` and ``jvp`` on the tape: one trace, one sweep per result.

* ``vjp``: ``f`` runs once; the pullback sweeps the same tape from every differentiated
  output at once (``core.backward_many``) without freeing it, so it can be called any
  number of times, batched or not. The tape is made its own first (``ownership``): later
  writes into the caller's arrays do not change the pullback's results.
* ``vjp_apply``: ``vjp`` with one pullback call fused, the tape freed as it is swept.
* ``jvp``: a true forward mode, "record, then push" -- ``f`` is recorded as for reverse
  mode (copy-on-write mutation, views and nesting included), then the tangents are
  pushed through the tape by each primitive's tangent rule (``core.forward``,
  ``rules/forward_*``), batched: one pass for every tangent, about the cost of the
  forward pass again, so the engine declares ``Capabilities.forward``. Jacobians with
  fewer inputs than outputs then run by columns, Hessians and Hessian-vector products
  forward-over-reverse. Should a primitive on the tape have no tangent rule (one
  registered with ``defvjp`` alone), ``jvp`` falls back to transposing the reverse mode,
  exact wherever the reverse mode is: the sweep runs with a traced cotangent ``u``,
  recorded on a dual trace that then holds ``u -> J^T u``; sweeping that from ``J^T u``
  with the tangents gives ``(J^T)^T v = J v`` (about three gradients' cost).

Nested calls (``depth > 0``): the tape's values and the seeds may be tracers of the
enclosing call, whose trace then records the sweeps -- results stay differentiable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from adswitch.spec import CallInfo, OutputFn, SeedFn

from .array.tracer import Tracer, raw
from .calls import Traced, TracedRun, conform, roots, unwrap
from .core import NoTangentRule, Trace, backward_many, forward
from .custom import transposing
from .ownership import own, owned_output
from .replay.recorder import Recording, note_nested

__all__ = ["TapePullback", "jvp", "pull", "push", "results", "vjp", "vjp_apply"]


class TapePullback:
    """The pullback of one ``vjp`` call: ``pullback(cotangents, batched=False)``, one
    gradient per leaf (``None`` where inactive), as the engine contract's ``Pullback``."""

    __slots__ = ("_dtypes", "_leaves", "_roots", "_trace", "_traced")

    def __init__(
        self,
        trace: Trace,
        slots: list[int | None],
        dtypes: list[Any],
        leaves: Sequence[Any],
        traced: Traced,
    ) -> None:
        self._trace = trace
        self._roots = slots
        self._dtypes = dtypes
        # Results need each leaf's type, shape and dtype, not its data: keep stand-ins, so
        # that a pullback the caller keeps does not keep the caller's arrays alive.
        self._leaves = [leaf if isinstance(leaf, float) else None for leaf in leaves]
        self._traced = {i: (None, _stand_in(first), slot) for i, (_, first, slot) in traced.items()}

    def __call__(self, cotangents: Sequence[Any], batched: bool = False) -> list[Any | None]:
        if len(cotangents) != len(self._roots):
            raise ValueError("tape: one cotangent per differentiated output")
        grads, batch, seeds = pull(
            self._trace, self._roots, self._dtypes, cotangents, batched, keep=True
        )
        return results(grads, self._leaves, self._traced, batch, seeds)

    def __repr__(self) -> str:
        return f"<tape pullback of {len(self._roots)} outputs>"


def _run(
    fn: OutputFn, values: list[Any], trace: Trace, traced: Traced, recording: Recording | None
) -> tuple[list[Any], list[Any]]:
    """``fn(values)``, recorded for replay when there is a ``recording``."""
    if recording is None:
        return fn(values)
    recording.begin(trace, traced)
    diffs, outs = fn(values)
    recording.end(outs, diffs=diffs)
    return diffs, outs


def vjp(
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    info: CallInfo,
    recording: Recording | None = None,
) -> tuple[list[Any], TapePullback]:
    """Run ``fn`` once on traced leaves; return its concrete outputs and a reusable pullback
    (``recording``: ``f``'s run is recorded for replay, see ``replay.prepared``)."""
    if info.depth:
        note_nested()
    with TracedRun(leaves, active, recording) as run:
        trace = run.trace
        diffs, outs = _run(fn, run.values, trace, run.traced, recording)
        slots = roots(diffs, trace)
        dtypes = [_dtype(d) for d in diffs]
        out_leaves = [owned_output(o, unwrap(o, trace), trace) for o in outs]
        own(trace)  # before the locks go and f's writes reach the arguments
    return out_leaves, TapePullback(trace, slots, dtypes, leaves, run.traced)


def vjp_apply(
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    seed: SeedFn,
    info: CallInfo,
    recording: Recording | None = None,
) -> tuple[list[Any], list[Any | None]]:
    """``vjp`` and one pullback of the cotangents ``seed(diff_leaves)``, fused (batched
    when ``info.batched``); the tape is freed as it is swept."""
    if info.depth:
        note_nested()
    with TracedRun(leaves, active, recording) as run:
        trace = run.trace
        diffs, outs = _run(fn, run.values, trace, run.traced, recording)
        slots = roots(diffs, trace)
        dtypes = [_dtype(d) for d in diffs]
        out_leaves = [unwrap(o, trace) for o in outs]
        cotangents = seed([unwrap(d, trace) for d in diffs])
        grads, batch, seeds = pull(trace, slots, dtypes, cotangents, info.batched, keep=False)
    return out_leaves, results(grads, leaves, run.traced, batch, seeds)


def jvp(
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    tangents: Sequence[Any],
    info: CallInfo,
    recording: Recording | None = None,
) -> tuple[list[Any], list[Any]]:
    """``J @ tangents``: ``f`` recorded, then the tangents pushed forward through its tape
    (batched when ``info.batched``); by transposition when a primitive on the tape has
    no tangent rule (see the module doc)."""
    if info.depth:
        note_nested()
    with TracedRun(leaves, active, recording) as run:
        trace = run.trace
        diffs, outs = _run(fn, run.values, trace, run.traced, recording)
        slots = roots(diffs, trace)
        out_leaves = [unwrap(o, trace) for o in outs]
        out_tangents = push(trace, slots, diffs, run.traced, tangents, info.batched)
    return out_leaves, out_tangents


def push(
    trace: Trace,
    slots: list[int | None],
    diffs: Sequence[Any],
    traced: Traced,
    tangents: Sequence[Any],
    batched: bool,
) -> list[Any]:
    """The tangents of the differentiated outputs ``diffs`` (at tape ``slots``) for the
    leaves' ``tangents``: the forward sweep of ``trace``, or its transposition."""
    nb = 1 if batched else 0
    leaf_slots: list[int] = []
    seeds: list[Any] = []
    for i, (_, value, slot) in traced.items():
        if tangents[i] is not None:
            leaf_slots.append(slot)
            seeds.append(_seed(tangents[i], raw(value).dtype))
    at = {s: raw(d) for d, s in zip(diffs, slots) if s is not None}  # slot -> value
    wanted = sorted(at)
    pushed: dict[int, Any] = {}
    dual: Trace | None = None
    try:
        if seeds and wanted:
            try:
                pushed = forward(trace, leaf_slots, seeds, wanted, nb)
            except NoTangentRule:  # (raised before the tape is touched)
                dual = Trace()  # above every level f's values live on
                with transposing():  # (a custom_vjp's bwd met there refuses)
                    pushed = _transposed(trace, dual, at, leaf_slots, seeds, nb)
        batch = _batch_of(tangents) if nb else ()
        seen: set[int] = {id(s) for s in seeds}
        out_tangents = []
        for d, out_slot in zip(diffs, slots):
            y = unwrap(d, trace)
            like = d if hasattr(d, "dtype") else np.asarray(d, dtype=np.float64)
            t = None if out_slot is None else pushed.get(out_slot)
            out_tangents.append(conform(t, y, like, seen, batch))
    finally:
        if dual is not None:
            dual.close()
    return out_tangents


def _transposed(
    trace: Trace,
    dual: Trace,
    at: dict[int, Any],
    leaf_slots: list[int],
    seeds: list[Any],
    nb: int,
) -> dict[int, Any]:
    """The tangents of the output slots ``at`` (slot -> value) by transposition: ``trace``
    swept from a traced cotangent ``u`` per slot, recorded on ``dual`` (the map
    ``u -> J^T u``), then ``dual`` swept from ``J^T u`` seeded with the tangents."""
    wanted = list(at)
    us: list[Tracer] = []
    for slot in wanted:
        value = at[slot]
        dual.tape.append(None)
        # u's value is irrelevant (the map is linear in u); ones give the values of a
        # plain gradient's sweep, so also its warnings and nothing more
        us.append(Tracer(np.ones(np.shape(value), dtype=value.dtype), dual, len(dual.tape) - 1))
    grads = backward_many(trace, wanted, us)
    transposed: list[int] = []
    kept: list[Any] = []
    for slot, t in zip(leaf_slots, seeds):
        g = grads[slot]
        if type(g) is Tracer and g._trace is dual and g._idx is not None:
            transposed.append(g._idx)
            kept.append(t)
    if not transposed:
        return {}
    pushed = backward_many(dual, transposed, kept, nb)
    return {slot: pushed[u._idx] for slot, u in zip(wanted, us)}  # type: ignore[index]


# -- shared --------------------------------------------------------------------------------
def pull(
    trace: Trace,
    slots: list[int | None],
    dtypes: list[Any],
    cotangents: Sequence[Any],
    batched: bool,
    keep: bool,
) -> tuple[list[Any] | None, tuple[int, ...], list[Any]]:
    """One sweep of ``trace`` from the differentiated outputs seeded with ``cotangents``:
    ``(gradients per slot or None, the batch shape, the seeds)``."""
    present: list[int] = []
    seeds: list[Any] = []
    for slot, c, dtype in zip(slots, cotangents, dtypes):
        if slot is not None and c is not None:
            present.append(slot)
            seeds.append(_seed(c, dtype))
    batch = _batch_of(cotangents) if batched else ()
    if not present:
        return None, batch, seeds
    return backward_many(trace, present, seeds, 1 if batched else 0, keep), batch, seeds


def results(
    grads: list[Any] | None,
    leaves: Sequence[Any],
    traced: Mapping[int, tuple[Any, Any, int]],
    batch: tuple[int, ...],
    seeds: list[Any],
) -> list[Any | None]:
    """One result per leaf from a sweep's gradients; a seed that reached a leaf unchanged
    (``f(x) = x``) is copied, so no result is the caller's own cotangent."""
    seen: set[int] = {id(s) for s in seeds}
    out: list[Any | None] = [None] * len(leaves)
    for i, (_, value, slot) in traced.items():
        out[i] = conform(grads[slot] if grads else None, leaves[i], value, seen, batch)
    return out


def _stand_in(value: Any) -> Any:
    """No data, ``value``'s shape and dtype (one element, broadcast); an enclosing call's
    tracer stays itself (its gradients are recorded against it)."""
    if type(value) is not np.ndarray:
        return value
    return np.broadcast_to(np.zeros((), dtype=value.dtype), value.shape)


def _seed(c: Any, dtype: Any) -> Any:
    """A cotangent (or tangent) as the sweep takes it: an array in ``dtype`` (a tracer of
    an enclosing call stays one)."""
    if type(c) is Tracer:
        return c
    if type(c) is np.ndarray and c.dtype == dtype:
        return c
    return np.asarray(c, dtype=dtype)


def _dtype(d: Any) -> Any:
    """The dtype of a differentiated output (float64 for a Python float)."""
    value = raw(d)
    return value.dtype if hasattr(value, "dtype") else np.dtype(np.float64)


def _batch_of(arrays: Sequence[Any]) -> tuple[int, ...]:
    """The leading batch axis of a batch of cotangents or tangents (``()`` if empty)."""
    for a in arrays:
        if a is not None:
            return (int(np.shape(raw(a))[0]),)
    return ()
