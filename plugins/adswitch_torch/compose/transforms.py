"""The engine's primitives inside torch's functional transforms (``torch.func``).

Inside ``torch.func.grad``/``vjp``/``jvp``/``vmap``/``jacrev``/``jacfwd``/``hessian`` the
values ``f`` sees are functorch's wrapped tensors: ``requires_grad_()`` on them is refused
by torch, and ``torch.autograd.grad`` would not differentiate at the transform's level.
So while a transform is active (:func:`inside`: functorch's interpreter stack is not
empty, 0.04 µs to ask) every primitive computes with torch's functional transforms
themselves, which nest with the caller's: ``value_and_grad`` and ``vjp``/``vjp_apply``
through ``torch.func.vjp`` (a batch of cotangents: ``torch.func.vmap`` of its pullback),
``jvp`` through ``torch.func.jvp`` (a batch of tangents: ``vmap`` of it, as
``torch.func.jacfwd`` does). Nothing is detached: results stay at the caller's level, so
the enclosing transform differentiates or batches through them; a call nested in another
adswitch call opens a level of its own, so ``depth`` and ``create_graph`` play no part.

adswitch's rules stay: only active leaves are primals (``Const`` leaves are constants of
the transform), outputs and gradients come back in the leaves' kinds where they are
concrete, the guard refuses float conversions of differentiated values, a write into a
differentiated argument is a ``MutationError`` (functorch's primals are leaves that
require grad, so torch refuses the write, and a version counter catches ``.data``).
What cannot compose says so (``UnsupportedError`` naming the transform): the
``copy_saved`` engine, and ``torch.autograd.Function`` s without functorch support.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch.spec import CallInfo, LossFn, OutputFn, SeedFn

from .. import private_api
from ..primitives.results import as_tensor_like
from .inner_call import FuncCall, Split, backward_error, refuse_copy_saved, shares

__all__ = ["inside", "jvp", "refuse_copy_saved", "value_and_grad", "vjp", "vjp_apply"]


def inside(torch: Any) -> bool:
    """Whether a ``torch.func`` transform is active in this thread."""
    return private_api.functorch_stack(torch)() is not None


def value_and_grad(
    torch: Any,
    fn: LossFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    info: CallInfo,
    strict: bool,
) -> tuple[list[Any], list[Any | None]]:
    """``Backend.value_and_grad`` inside a transform: ``torch.func.vjp`` of the loss."""
    c = FuncCall(torch, leaves, active, strict)
    split = Split()
    constant = [False]

    def g(*primals: Any) -> tuple[Any, tuple[Any, ...]]:
        loss, out = c.run(fn, primals)
        if not isinstance(loss, torch.Tensor):
            constant[0] = True  # a Python float: nothing to differentiate
            loss = torch.zeros((), dtype=torch.float64)
        return loss, split.tensors(torch, out)

    if not c.primals:
        loss, out = c.run(fn, ())
        return c.outputs(out, leaves), [None] * len(leaves)
    loss, pull, aux = torch.func.vjp(g, *c.primals, has_aux=True)
    seed = torch.ones_like(loss)
    try:
        found = pull(seed)
    except RuntimeError as exc:
        raise backward_error(exc, False) from exc
    if constant[0]:
        found = [None] * len(c.primals)
    return c.outputs(split.join(aux), leaves), c.grads(found, leaves, None, (seed,))


class FuncPullback:
    """The pullback of one ``vjp`` call inside a transform (``adswitch.spec.Pullback``)."""

    __slots__ = ("_call", "_leaves", "_outs", "_pull", "_which")

    def __init__(
        self, c: FuncCall, pull: Any, outs: Sequence[Any], which: Sequence[int], leaves: Any
    ) -> None:
        self._call = c
        self._pull = pull
        self._outs = list(outs)
        self._which = list(which)
        self._leaves = list(leaves)

    def __call__(self, cotangents: Sequence[Any], batched: bool = False) -> list[Any | None]:
        c = self._call
        torch = c.torch
        cots = tuple(
            as_tensor_like(torch, cotangents[k], y) for k, y in zip(self._which, self._outs)
        )
        batch = _batch_of(cots if cots else cotangents) if batched else None
        return _pull(c, self._pull, cots, batch, self._leaves, True)

    def __repr__(self) -> str:
        return f"<adswitch torch.func pullback of {len(self._outs)} output(s)>"


def _pull(
    c: FuncCall,
    pull: Any,
    cots: tuple[Any, ...],
    batch: int | None,
    leaves: Sequence[Any],
    after: bool,
) -> list[Any | None]:
    """The gradients along ``cots`` (a leading axis of ``batch`` rows each when not
    ``None``: one ``torch.func.vmap`` of the pullback), per leaf."""
    found: Sequence[Any] = [None] * len(c.primals)
    if cots and c.primals and batch != 0:
        try:
            vmap = c.torch.func.vmap
            found = pull(cots) if batch is None else vmap(lambda *cs: pull(cs))(*cots)
        except RuntimeError as exc:
            raise backward_error(exc, after) from exc
    return c.grads(found, leaves, batch, cots)


def _batch_of(values: Sequence[Any]) -> int:
    for v in values:
        shape = getattr(v, "shape", None)
        if shape is not None and len(shape):
            return int(shape[0])
    return 0


def _diff_function(
    c: FuncCall, fn: OutputFn, split: Split, diffs_seen: list[Any]
) -> Callable[..., tuple[tuple[Any, ...], tuple[Any, ...]]]:
    """``g(*primals) -> (the tensor outputs differentiated, aux tensors)`` for functorch;
    ``diffs_seen`` gets ``f``'s differentiated leaves as ``f`` gave them."""
    torch = c.torch

    def g(*primals: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        diffs, out = c.run(fn, primals)
        diffs_seen[:] = diffs
        return tuple(d for d in diffs if isinstance(d, torch.Tensor)), split.tensors(torch, out)

    return g


def _with_tensors(diffs: Sequence[Any], tensors: Sequence[Any], torch: Any) -> list[Any]:
    """``f``'s differentiated leaves with the tensors at the caller's level."""
    ts = iter(tensors)
    return [next(ts) if isinstance(d, torch.Tensor) else d for d in diffs]


def vjp(
    torch: Any,
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    info: CallInfo,
    strict: bool,
) -> tuple[list[Any], FuncPullback]:
    """``Backend.vjp`` inside a transform: ``torch.func.vjp``; its pullback reusable."""
    c = FuncCall(torch, leaves, active, strict, own=True)
    split = Split()
    seen: list[Any] = []
    g = _diff_function(c, fn, split, seen)
    outs, pull, aux = torch.func.vjp(g, *c.primals, has_aux=True)
    diffs = _with_tensors(seen, outs, torch)
    which = [k for k, d in enumerate(diffs) if isinstance(d, torch.Tensor)]
    return c.outputs(split.join(aux), leaves), FuncPullback(c, pull, outs, which, leaves)


def vjp_apply(
    torch: Any,
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    seed: SeedFn,
    info: CallInfo,
    strict: bool,
) -> tuple[list[Any], list[Any | None]]:
    """``Backend.vjp_apply`` inside a transform: ``torch.func.vjp`` along the seed's
    cotangents (``vmap`` of the pullback when batched, as ``torch.func.jacrev`` does)."""
    c = FuncCall(torch, leaves, active, strict)
    split = Split()
    seen: list[Any] = []
    g = _diff_function(c, fn, split, seen)
    outs, pull, aux = torch.func.vjp(g, *c.primals, has_aux=True)
    diffs = _with_tensors(seen, outs, torch)
    cots = seed(diffs)
    tensors = tuple(
        as_tensor_like(torch, s, d) for s, d in zip(cots, diffs) if isinstance(d, torch.Tensor)
    )
    batch = _batch_of(cots) if info.batched else None
    found = _pull(c, pull, tensors, batch, leaves, False)
    return c.outputs(split.join(aux), leaves), found


def jvp(
    torch: Any,
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    tangents: Sequence[Any],
    info: CallInfo,
    strict: bool,
) -> tuple[list[Any], list[Any]]:
    """``Backend.jvp`` inside a transform: ``torch.func.jvp`` (a batch of tangents:
    ``torch.func.vmap`` of it, ``f`` run once, as ``torch.func.jacfwd`` does)."""
    c = FuncCall(torch, leaves, active, strict)
    split = Split()
    seen: list[Any] = []
    g = _diff_function(c, fn, split, seen)
    given = tuple(as_tensor_like(torch, tangents[i], p) for i, p in zip(c.positions, c.primals))
    batch = _batch_of(tangents) if info.batched else None
    if c.primals and batch is None:
        outs, found, aux = torch.func.jvp(g, tuple(c.primals), given, has_aux=True)
    elif c.primals and batch:

        def push(*ts: Any) -> tuple[Any, Any, Any]:
            return torch.func.jvp(g, tuple(c.primals), ts, has_aux=True)  # type: ignore[no-any-return]

        outs, found, aux = torch.func.vmap(push)(*given)
        # f's values do not depend on the tangents: vmap hands them back expanded
        outs = tuple(o[0] for o in outs)
        aux = tuple(a[0] for a in aux)
    else:  # nothing to push (no primals, or no rows): f once, zero tangents
        outs, aux = g(*c.primals)
        found = tuple(
            torch.zeros(
                o.shape if batch is None else (batch, *o.shape), dtype=o.dtype, device=o.device
            )
            for o in outs
        )
    diffs = _with_tensors(seen, outs, torch)
    tans = iter(found)
    result: list[Any] = []
    for d in diffs:
        if not isinstance(d, torch.Tensor):  # a constant of f
            if isinstance(d, float) and batch is None:
                result.append(0.0)
                continue
            shape = np.shape(d) if batch is None else (batch, *np.shape(d))
            result.append(np.zeros(shape, dtype=getattr(d, "dtype", np.float64)))
            continue
        tangent = next(tans)
        if tangent.dtype != d.dtype:
            tangent = tangent.to(d.dtype)
        elif shares(c, tangent, given):  # f returned its argument: the caller's tangent
            tangent = tangent.clone()
        result.append(tangent if c.kind == "torch" else c.in_kind(tangent, None))
    return c.outputs(split.join(aux), leaves), result
