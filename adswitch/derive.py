"""Every differentiation primitive from the ones an engine has.

An engine implements at least one of ``value_and_grad``, ``vjp``, ``vjp_apply`` and
``jvp`` (see :mod:`adswitch.spec`); the functions here call the engine's own where it has
it and derive the rest -- correctly, if more slowly:

* a gradient is a pullback of the unit seed, or ``n`` directional derivatives;
* a pullback of an engine with only ``value_and_grad`` differentiates ``<y, u>``, one
  run of ``f`` per call; of an engine with only ``jvp``, it contracts the Jacobian's
  columns;
* a ``jvp`` of an engine without forward mode contracts the Jacobian's rows (one batched
  pullback);
* a batch of cotangents or tangents for an engine without ``Capabilities.batching`` is
  a loop of single calls, stacked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adswitch.bases import Layout, basis, shape_of
from adswitch.derive_support import (
    RawLoss,
    Replay,
    ScalarOutputs,
    batch_size,
    const_seed,
    diff_leaves,
    in_dtype_of,
    like,
    natives,
    spread,
    stack_columns,
    stack_rows,
    unit_seed,
    with_batched,
    zeros_seed,
)
from adswitch.errors import UnsupportedError
from adswitch.namespace import array_namespace
from adswitch.spec import PRIMITIVES, Backend, CallInfo, LossFn, OutputFn, Pullback, SeedFn
from adswitch.zero_safe import matmul_zero_safe

__all__ = [
    "Replay",
    "diff_leaves",
    "jvp",
    "natives",
    "uncached",
    "unit_seed",
    "value_and_grad",
    "vjp",
    "vjp_apply",
    "with_batched",
]


def _none_at_all(engine: Backend) -> UnsupportedError:
    return UnsupportedError(
        f"engine {engine.name!r} implements none of {', '.join(PRIMITIVES)}; an engine must "
        "implement at least one (see adswitch.spec)."
    )


# -- value_and_grad ---------------------------------------------------------------------
def value_and_grad(
    engine: Backend, fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], list[Any | None]]:
    """``Backend.value_and_grad``, native or derived."""
    have = natives(engine)
    if "value_and_grad" in have:
        return engine.value_and_grad(fn, leaves, active, info)
    scalar = ScalarOutputs(fn)
    if "vjp" in have or "vjp_apply" in have:
        return vjp_apply(engine, scalar, leaves, active, unit_seed, info)
    if "jvp" in have:
        layout = Layout([leaf for leaf, a in zip(leaves, active) if a])
        tangents = spread(basis([v for v, a in zip(leaves, active) if a], layout), active)
        out, (loss_tangent,) = jvp(
            engine, scalar, leaves, active, tangents, with_batched(info, True)
        )
        grads: list[Any | None] = [None] * len(leaves)
        k = 0
        for i, a in enumerate(active):
            if a:
                start, size = layout.offsets[k], layout.sizes[k]
                grads[i] = like(engine, loss_tangent[start : start + size], leaves[i])
                k += 1
        return out, grads
    raise _none_at_all(engine)


# -- vjp --------------------------------------------------------------------------------
def vjp(
    engine: Backend, fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], Pullback]:
    """``Backend.vjp``, native or derived; the pullback takes batches on every engine."""
    have = natives(engine)
    if "vjp" in have:
        out, pullback = engine.vjp(fn, leaves, active, info)
        if engine.capabilities.batching:
            return out, pullback
        return out, _Looped(engine, pullback)
    if "vjp_apply" in have:
        return _vjp_by_apply(engine, fn, leaves, active, info)
    if "value_and_grad" in have:
        return _vjp_by_gradients(engine, fn, leaves, active, info)
    if "jvp" in have:
        return _vjp_by_columns(engine, fn, leaves, active, info)
    raise _none_at_all(engine)


class _Looped:
    """A pullback of an engine without batching, taking batches one row at a time."""

    __slots__ = ("engine", "pullback")

    def __init__(self, engine: Backend, pullback: Pullback) -> None:
        self.engine = engine
        self.pullback = pullback

    def __call__(self, cotangents: Sequence[Any], batched: bool = False) -> list[Any | None]:
        if not batched:
            return self.pullback(cotangents)
        rows = [self.pullback([c[b] for c in cotangents]) for b in range(batch_size(cotangents))]
        return stack_rows(self.engine, rows)


def uncached(info: CallInfo) -> CallInfo:
    """``info`` for a call whose program must not be cached nor kept in a prepared slot
    (its seed bakes values in): no structure, no slot."""
    return info._replace(cache_key=None, prepared=None, structure=None, structure_key=None)


def _vjp_by_apply(
    engine: Backend, fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], Pullback]:
    # The seeds below are values, which a compiled program must not bake in: no keys.
    info = uncached(info)
    replay = Replay(engine, leaves)
    out, _ = engine.vjp_apply(fn, leaves, active, zeros_seed, with_batched(info, False))

    def run(cotangents: list[Any], batched: bool) -> list[Any | None]:
        seed = const_seed(cotangents)
        values = replay.values()
        return engine.vjp_apply(fn, values, active, seed, with_batched(info, batched))[1]

    def pullback(cotangents: Sequence[Any], batched: bool = False) -> list[Any | None]:
        fixed = list(cotangents)
        if batched and not engine.capabilities.batching:
            rows = [run([c[b] for c in fixed], False) for b in range(batch_size(fixed))]
            return stack_rows(engine, rows)
        return run(fixed, batched)

    return out, pullback


def _vjp_by_gradients(
    engine: Backend, fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], Pullback]:
    """Through ``value_and_grad`` of ``<y, u>``: ``f`` runs once per pullback call (and
    once now, for the outputs)."""

    def grads_of(
        cotangents: Sequence[Any] | None, values: Sequence[Any]
    ) -> tuple[list[Any], list[Any | None]]:
        def loss_fn(values: Sequence[Any]) -> tuple[Any, list[Any]]:
            diffs, out = fn(values)
            total: Any = 0.0  # no cotangents: a run for the outputs only
            if cotangents is not None:
                xp = array_namespace(*diffs)
                for y, u in zip(diffs, cotangents):
                    if isinstance(y, float):
                        total = total + y * float(u)
                    else:
                        total = total + xp.sum(y * xp.asarray(u))
            return total, out

        # The loss bakes the cotangents in: a compiled program of it must not be reused.
        return engine.value_and_grad(RawLoss(loss_fn, fn), values, active, unkeyed)

    unkeyed = uncached(info)
    replay = Replay(engine, leaves)
    out, _ = grads_of(None, leaves)

    def pullback(cotangents: Sequence[Any], batched: bool = False) -> list[Any | None]:
        if not batched:
            return grads_of(list(cotangents), replay.values())[1]
        rows = [
            grads_of([c[b] for c in cotangents], replay.values())[1]
            for b in range(batch_size(cotangents))
        ]
        return stack_rows(engine, rows)

    return out, pullback


def _vjp_by_columns(
    engine: Backend, fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], Pullback]:
    """Through the Jacobian's columns (one batched jvp over the inputs' basis)."""
    inputs = [leaf for leaf, a in zip(leaves, active) if a]
    layout = Layout(inputs)
    tangents = spread(basis(inputs, layout), active)
    out, columns = jvp(engine, fn, leaves, active, tangents, with_batched(info, True))
    # columns[k]: (n_inputs, *y_k.shape) -- row r is d y_k / d input element r

    def pullback(cotangents: Sequence[Any], batched: bool = False) -> list[Any | None]:
        xp = array_namespace(*columns, *cotangents)
        total: Any = None
        for col, u in zip(columns, cotangents):
            flat_col = xp.reshape(col, (layout.total, -1))  # (n, m_k)
            u = xp.asarray(u)
            flat_u = xp.reshape(u, (-1, flat_col.shape[1])) if batched else xp.reshape(u, (-1, 1))
            part = (  # (a zero cotangent times an infinite entry: 0, never nan)
                matmul_zero_safe(xp, flat_u, xp.matrix_transpose(flat_col))
                if batched
                else xp.reshape(matmul_zero_safe(xp, flat_col, flat_u), (-1,))
            )
            total = part if total is None else total + part
        grads: list[Any | None] = [None] * len(leaves)
        k = 0
        for i, a in enumerate(active):
            if a:
                start, size = layout.offsets[k], layout.sizes[k]
                if batched:
                    piece = total[:, start : start + size]
                    grads[i] = in_dtype_of(
                        xp.reshape(piece, (piece.shape[0], *layout.shapes[k])), leaves[i]
                    )
                else:
                    grads[i] = like(engine, total[start : start + size], leaves[i])
                k += 1
        return grads

    return out, pullback


# -- vjp_apply ---------------------------------------------------------------------------
def vjp_apply(
    engine: Backend,
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    seed: SeedFn,
    info: CallInfo,
) -> tuple[list[Any], list[Any | None]]:
    """``Backend.vjp_apply``, native or derived."""
    have = natives(engine)
    if "vjp_apply" in have and (not info.batched or engine.capabilities.batching):
        return engine.vjp_apply(fn, leaves, active, seed, info)
    out, pullback = vjp(engine, fn, leaves, active, with_batched(info, False))
    return out, pullback(seed(diff_leaves(fn, out)), batched=info.batched)


# -- jvp ---------------------------------------------------------------------------------
def jvp(
    engine: Backend,
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    tangents: Sequence[Any],
    info: CallInfo,
) -> tuple[list[Any], list[Any]]:
    """``Backend.jvp``, native or derived (from the Jacobian's rows)."""
    have = natives(engine)
    if "jvp" in have:
        if not info.batched or engine.capabilities.batching:
            return engine.jvp(fn, leaves, active, tangents, info)
        n = batch_size([t for t in tangents if t is not None])
        replay = Replay(engine, leaves)
        runs = [
            engine.jvp(
                fn,
                leaves if b == 0 else replay.values(),  # f writes into the caller's once
                active,
                [None if t is None else t[b] for t in tangents],
                with_batched(info, False),
            )
            for b in range(n)
        ]
        return runs[0][0], stack_columns(engine, [r[1] for r in runs])
    out, pullback = vjp(engine, fn, leaves, active, with_batched(info, False))
    diffs = diff_leaves(fn, out)
    out_layout = Layout(diffs)
    rows = pullback(basis(diffs, out_layout), batched=True)  # per leaf: (m, *leaf.shape)
    xp = array_namespace(*[r for r in rows if r is not None], *diffs)
    total: Any = None
    for r, t in zip(rows, tangents):
        if r is None or t is None:
            continue
        flat_r = xp.reshape(r, (out_layout.total, -1))  # (m, n_u)
        t = xp.asarray(t)
        if info.batched:  # (a zero tangent times an infinite entry: 0, never nan)
            part = matmul_zero_safe(
                xp, xp.reshape(t, (t.shape[0], -1)), xp.matrix_transpose(flat_r)
            )
        else:
            part = xp.reshape(matmul_zero_safe(xp, flat_r, xp.reshape(t, (-1, 1))), (-1,))
        total = part if total is None else total + part
    out_tangents = []
    for k, y in enumerate(diffs):
        start, size = out_layout.offsets[k], out_layout.sizes[k]
        if info.batched:
            piece = total[:, start : start + size]
            out_tangents.append(in_dtype_of(xp.reshape(piece, (piece.shape[0], *shape_of(y))), y))
        else:
            out_tangents.append(like(engine, total[start : start + size], y))
    return out, out_tangents
