"""Reverse mode beyond a scalar loss: ``vjp`` (a reusable pullback) and ``vjp_apply``.

``f`` runs once on the traced leaves (``_trace``); a pullback is one backward pass with
the cotangents as ``grad_outputs`` (``_backward.make_pull``), keeping the graph
(``retain_graph``) so that it can run again. A batch of cotangents (a Jacobian's identity
basis) is one backward pass under ``torch.func.vmap``, which measured 3x faster than
``is_grads_batched`` (torch's older vmap) on a 64 x 64 Jacobian; should torch fail to
batch an operation's backward, the batch runs as a loop of single passes (same numbers).

A pullback owns what it needs: numpy leaves are copied into the graph (no version
counter sees a write into a numpy array), outputs are handed out as copies, and a later
in-place write into a torch tensor the graph saved (an argument, a ``Const``) is caught by
torch's version counter and becomes a ``MutationError`` saying what to do. In a nested
call (``depth > 0``) the backward pass builds its own graph (``create_graph``), so the
results stay differentiable by the enclosing call.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from adswitch.errors import MutationError
from adswitch.spec import CallInfo, OutputFn, SeedFn

from . import _distributed
from ._backward import Passes
from ._convert import to_caller_kind
from ._errors import translate_backward
from ._trace import (
    as_tensor_like,
    batched_result,
    concrete,
    own_memory,
    run,
    storage_of,
    trace,
    write_back,
)

__all__ = [
    "TorchPullback",
    "batched_pull",
    "finish_grads",
    "translated_backward",
    "vjp",
    "vjp_apply",
]

_SEEDS = "seeds"  # key of the converted seed tensors in a prepared call's slot

_AFTER = (
    "torch: a value this pullback needs was overwritten in place (torch says: {detail}) -- "
    "either inside f after f used it, or after ad.vjp returned: an argument, a Const, or an "
    "output of the call was written into. The result would be wrong, so none is returned. "
    "Fix: write into a copy (x = xp.asarray(x, copy=True)), or call ad.vjp again after "
    "the write."
)


def translated_backward(exc: RuntimeError, after: bool) -> Exception | None:
    """The adswitch error for torch's error in a backward pass (``None``: not ours);
    ``after``: the graph was recorded by an earlier call (a ``vjp``'s pullback)."""
    translated = translate_backward(exc)
    if translated is None or not after:
        return translated
    detail = str(exc).split("Hint:")[0].strip()
    return MutationError(_AFTER.format(detail=detail))


def batched_pull(
    torch: Any,
    passes: Passes,
    outs: Sequence[Any],
    cotangents: Sequence[Any],
    inputs: Sequence[Any],
    create_graph: bool,
    plain: bool,
) -> list[Any]:
    """One backward pass per row of the cotangents (each with a leading batch axis of
    the same length), under ``torch.func.vmap``; a loop of single passes if torch cannot
    batch it. Returns per input a batched gradient, or ``None`` where unused."""

    pull = passes.pull

    def one(*rows: Any) -> tuple[Any, ...]:
        return tuple(pull(outs, rows, inputs, True, create_graph, plain))

    n = int(cotangents[0].shape[0])
    try:
        return passes.batched(one, cotangents, n)
    except RuntimeError as exc:
        if translate_backward(exc) is not None:
            raise
    # torch cannot batch some operation's backward: the same numbers, one row at a time
    rows = [one(*[c[b] for c in cotangents]) for b in range(n)]
    stacked: list[Any] = []
    for k, x in enumerate(inputs):
        column = [r[k] for r in rows]
        if all(g is None for g in column):
            stacked.append(None)
        else:
            zeros = torch.zeros_like(x, requires_grad=False)
            stacked.append(torch.stack([zeros if g is None else g for g in column]))
    return stacked


def finish_grads(
    torch: Any,
    grads: Sequence[Any | None],
    inputs: Sequence[Any],
    positions: Sequence[int],
    leaves: Sequence[Any],
    nested: bool,
    batch: int | None,
    foreign: set[int],
) -> list[Any | None]:
    """Per leaf: ``None`` where inactive, else its gradient in the leaf's kind (zeros
    where unused), batched with ``batch`` rows when ``batch`` is not ``None``."""
    result: list[Any | None] = [None] * len(leaves)
    unique: set[int] | None = set() if len(inputs) > 1 else None
    tensor_type = torch.Tensor
    for k, i in enumerate(positions):
        g = grads[k]
        x = inputs[k]
        if g is None:
            shape = x.shape if batch is None else (batch, *x.shape)
            g = torch.zeros(shape, dtype=x.dtype, device=x.device)
        g = own_memory(torch, g, nested, foreign, unique, by_storage=True)
        leaf = leaves[i]
        if batch is not None:
            result[i] = batched_result(torch, g, leaf)
        else:
            result[i] = g if type(leaf) is tensor_type else to_caller_kind(torch, g, leaf, False)
    return result


class TorchPullback:
    """The pullback of one ``vjp`` call: ``pullback(cotangents, batched=False)`` (see
    ``adswitch.spec.Pullback``)."""

    __slots__ = (
        "_inputs",
        "_leaves",
        "_nested",
        "_outs",
        "_passes",
        "_plain",
        "_positions",
        "_torch",
        "_which",
    )

    def __init__(
        self,
        torch: Any,
        passes: Passes,
        diffs: Sequence[Any],
        inputs: Sequence[Any],
        positions: Sequence[int],
        leaves: Sequence[Any],
        nested: bool,
        plain: bool,
    ) -> None:
        self._torch = torch
        self._passes = passes
        # Only outputs attached to the graph have a pullback; the others add nothing.
        self._which = [
            k for k, d in enumerate(diffs) if isinstance(d, torch.Tensor) and d.requires_grad
        ]
        self._outs = [diffs[k] for k in self._which]
        self._inputs = list(inputs)
        self._positions = list(positions)
        self._leaves = list(leaves)
        self._nested = nested
        self._plain = plain

    def __call__(self, cotangents: Sequence[Any], batched: bool = False) -> list[Any | None]:
        torch = self._torch
        batch = _batch_of(cotangents) if batched else None
        cots = [as_tensor_like(torch, cotangents[k], y) for k, y in zip(self._which, self._outs)]
        grads = pull_grads(
            torch,
            self._passes,
            self._outs,
            cots,
            self._inputs,
            self._nested,
            self._plain,
            batch is not None,
            True,
        )
        foreign = {storage_of(c) for c in cots}
        return finish_grads(
            torch,
            grads,
            self._inputs,
            self._positions,
            self._leaves,
            self._nested,
            batch,
            foreign,
        )

    def __repr__(self) -> str:
        return f"<adswitch torch pullback of {len(self._outs)} output(s)>"


def pull_grads(
    torch: Any,
    passes: Passes,
    outs: Sequence[Any],
    cots: Sequence[Any],
    inputs: Sequence[Any],
    nested: bool,
    plain: bool,
    batched: bool,
    after: bool,
) -> list[Any | None]:
    """The backward pass of ``outs`` along ``cots`` (batched or not), torch's errors
    translated (``after``: the graph was recorded by an earlier call, a ``vjp``)."""
    if not outs or not inputs:
        return [None] * len(inputs)
    try:
        if batched:
            return batched_pull(torch, passes, outs, cots, inputs, nested, plain)
        return list(passes.pull(outs, cots, inputs, True, nested, plain))
    except RuntimeError as exc:
        translated = translated_backward(exc, after)
        if translated is None:
            raise
        raise translated from exc


def _batch_of(cotangents: Sequence[Any]) -> int:
    for c in cotangents:
        shape = getattr(c, "shape", None)
        if shape is not None and len(shape):
            return int(shape[0])
    return 0


def vjp(
    torch: Any,
    passes: Passes,
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    info: CallInfo,
    copy_saved: bool,
    strict: bool,
) -> tuple[list[Any], TorchPullback]:
    """``Backend.vjp`` for torch (see the module doc)."""
    nested = info.depth > 0
    t = trace(torch, leaves, active, nested, copy_saved, own=not copy_saved)
    records: list[_distributed.DDPArgument] = []
    diffs, out = run(torch, fn, t, copy_saved, strict, records)
    _distributed.refuse_synchronised(records, t.values, t.positions, "ad.vjp")
    write_back(torch, t)
    pullback = TorchPullback(torch, passes, diffs, t.inputs, t.positions, leaves, nested, t.plain)
    return [concrete(torch, o, t, leaves, nested, owned=True) for o in out], pullback


def vjp_apply(
    torch: Any,
    passes: Passes,
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    seed: SeedFn,
    info: CallInfo,
    copy_saved: bool,
    strict: bool,
) -> tuple[list[Any], list[Any | None]]:
    """``Backend.vjp_apply`` for torch: one run of ``f``, one backward pass along the
    seed's cotangents (batched when ``info.batched``). In a prepared call the seed's
    tensors are made once (the seed depends on shapes and dtypes only)."""
    nested = info.depth > 0
    t = trace(torch, leaves, active, nested, copy_saved)
    records: list[_distributed.DDPArgument] = []
    diffs, out = run(torch, fn, t, copy_saved, strict, records)
    _distributed.refuse_synchronised(records, t.values, t.positions, "this operator")
    cots = _seed_tensors(torch, seed, diffs, info)
    which = [k for k, d in enumerate(diffs) if isinstance(d, torch.Tensor) and d.requires_grad]
    batch = _batch_of(cots) if info.batched else None
    grads = pull_grads(
        torch,
        passes,
        [diffs[k] for k in which],
        [cots[k] for k in which],
        t.inputs,
        nested,
        t.plain,
        batch is not None,
        False,
    )
    write_back(torch, t)
    foreign = {storage_of(c) for c in cots if isinstance(c, torch.Tensor)}
    result = finish_grads(torch, grads, t.inputs, t.positions, leaves, nested, batch, foreign)
    return [concrete(torch, o, t, leaves, nested) for o in out], result


def _seed_tensors(torch: Any, seed: SeedFn, diffs: Sequence[Any], info: CallInfo) -> list[Any]:
    """The seed's cotangents as tensors like their outputs (``None`` for outputs that are
    not tensors); kept in a prepared call's slot."""
    slot = info.prepared
    key: Hashable = (_SEEDS, info.batched)
    tensor_type = torch.Tensor
    if slot is not None:
        cached = slot.get(key)
        if cached is not None and _fits(tensor_type, cached, diffs, info.batched):
            return cached  # type: ignore[no-any-return]
    made = [
        as_tensor_like(torch, c, d) if isinstance(d, tensor_type) else None
        for c, d in zip(seed(diffs), diffs, strict=True)
    ]
    if slot is not None:
        slot[key] = made
    return made


def _fits(tensor_type: Any, seeds: list[Any], diffs: Sequence[Any], batched: bool) -> bool:
    """Whether seeds made for an earlier call of a prepared structure go with ``diffs``
    (outputs' types and shapes may still depend on the values f computes with)."""
    if len(seeds) != len(diffs):
        return False
    for c, d in zip(seeds, diffs):
        if isinstance(d, tensor_type):
            if c is None or c.dtype != d.dtype or c.device != d.device:
                return False
            if (c.shape[1:] if batched else c.shape) != d.shape:
                return False
    return True
