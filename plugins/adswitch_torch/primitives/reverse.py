"""Reverse mode beyond a scalar loss: ``vjp`` (a reusable pullback) and ``vjp_apply``.

``f`` runs once on the traced leaves (``trace``); a pullback is one backward pass with
the cotangents as ``grad_outputs`` (``pull``), keeping the graph (``retain_graph``) so
that it can run again; a batch of cotangents is one pass under vmap.

A pullback owns what it needs: numpy leaves are copied into the graph and numpy outputs
are handed out as copies (no version counter sees a write into a numpy array), and a
later in-place write into a torch tensor the graph saved (an argument, a ``Const``, an
output) is caught by torch's version counter and becomes a ``MutationError`` saying what
to do. In a nested
call (``depth > 0``) the backward pass builds its own graph (``create_graph``), so the
results stay differentiable by the enclosing call.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from adswitch.spec import CallInfo, OutputFn, Pullback, SeedFn

from ..compose import transforms
from ..integrations import ddp
from .backward import Passes
from .pull import pull_grads
from .results import as_tensor_like, concrete, finish_grads, storage_of
from .trace import run, trace, write_back

__all__ = ["TorchPullback", "vjp", "vjp_apply"]

_SEEDS = "seeds"  # key of the converted seed tensors in a prepared call's slot


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
        # numpy leaves only say their kind to the results: stand-ins without their data,
        # so that a pullback kept by the caller does not keep the caller's arrays alive
        self._leaves = [_stand_in(leaf) for leaf in leaves]
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


def _stand_in(leaf: Any) -> Any:
    if type(leaf) is np.ndarray:
        return np.broadcast_to(np.zeros((), dtype=leaf.dtype), leaf.shape)
    return leaf


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
) -> tuple[list[Any], Pullback]:
    """``Backend.vjp`` for torch (see the module doc)."""
    if transforms.inside(torch):  # under torch.func: its transforms, not autograd.grad
        if copy_saved:
            raise transforms.refuse_copy_saved(torch)
        return transforms.vjp(torch, fn, leaves, active, info, strict)
    nested = info.depth > 0
    t = trace(torch, leaves, active, nested, copy_saved, own=not copy_saved)
    records: list[ddp.DDPArgument] = []
    diffs, out = run(torch, fn, t, copy_saved, strict, records)
    ddp.refuse_synchronised(records, t.values, t.positions, "ad.vjp")
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
    if transforms.inside(torch):
        if copy_saved:
            raise transforms.refuse_copy_saved(torch)
        return transforms.vjp_apply(torch, fn, leaves, active, seed, info, strict)
    nested = info.depth > 0
    t = trace(torch, leaves, active, nested, copy_saved)
    records: list[ddp.DDPArgument] = []
    diffs, out = run(torch, fn, t, copy_saved, strict, records)
    ddp.refuse_synchronised(records, t.values, t.positions, "this operator")
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
    """The seed's cotangents as tensors like their outputs (as the seed made them for
    outputs that are not tensors: constants, which no backward pass sees); kept in a
    prepared call's slot."""
    slot = info.prepared
    key: Hashable = (_SEEDS, info.batched)
    tensor_type = torch.Tensor
    if slot is not None:
        cached = slot.get(key)
        if cached is not None and _fits(tensor_type, cached, diffs, info.batched):
            return cached  # type: ignore[no-any-return]
    made = [
        as_tensor_like(torch, c, d) if isinstance(d, tensor_type) else c
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
