"""Data-parallel modules: the gradient ``DistributedDataParallel``'s own backward pass gives.

DDP averages gradients over its process group inside ``loss.backward()``, through hooks on
the parameters' gradient accumulators. adswitch differentiates fresh leaf tensors, so those
hooks never fire: this module does DDP's part itself.

* A DDP module argument rebuilt inside ``f`` (by the tree walker, as the call starts), or
  a DDP inside a module argument, is noted with whether DDP synchronises gradients now:
  ``require_backward_grad_sync`` is ``False`` inside ``model.no_sync()``, and then the
  gradient stays local, as DDP's.
* Calling the view inside ``f`` runs DDP's own forward (buffer broadcast, input placement)
  with gradient sync switched off for that forward only, so DDP's reducer is not told to
  expect a backward pass that never reaches it; a plain ``model(x).backward()`` afterwards
  runs as it would have.
* After the backward pass the gradients of the parameters DDP synchronises are averaged
  over its process group: one all-reduce per DDP argument, dtype and device, divided by
  the group's size (DDP's default reduction). Parameters DDP was told to ignore keep their
  local gradient, as in DDP.
* ``Duplicated`` shadows: DDP averages the whole accumulated ``.grad`` (what a ``no_sync``
  loop accumulated plus this backward's gradient). So does the adapter: once the last
  gradient of a synchronised DDP argument is added into its shadows, the shadows are
  averaged in place (the average of ``acc + mean(g)`` is ``mean(acc + g)``).

Refused with ``UnsupportedError`` before the user's code runs: a synchronising DDP with a
communication hook, ``static_graph``, ``mixed_precision``, inside ``ddp.join()`` or with
optimizers applied in the backward pass (DDP's result would not be the plain average, or
would need its reducer); a synchronising DDP's parameters differentiated inside another
``ad.gradient`` (the all-reduce is not differentiated); FSDP modules (``FullyShardedDataParallel``,
``fully_shard``) and ``DTensor`` parameters, whose sharding runs in hooks adswitch bypasses.
Every rank must make the same adswitch calls, as with DDP itself.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from adswitch.errors import UnsupportedError

__all__ = [
    "BATCH",
    "DDPArgument",
    "ShadowBatch",
    "average",
    "calls",
    "check_sharded",
    "ddp_parts",
    "is_dtensor",
    "local_forward",
    "note",
    "refuse_synchronised",
]

BATCH = "_adswitch_ddp_batch"  # attribute of an averaged gradient: its ShadowBatch

_FIX_BACKWARD = (
    "Fix: compute this gradient with torch's own loss.backward(), or differentiate the "
    "unwrapped model.module (a local gradient)."
)


class _Calls(threading.local):
    """Per thread: the list a running call collects its DDP arguments in (``call`` sets
    it around ``f``, saving an enclosing call's), ``None`` outside calls; and the running
    call's traced values, so that a module rebuilt from them is known to be ``f``'s argument
    (``modules``)."""

    records: list[DDPArgument] | None = None
    values: Sequence[Any] | None = None


calls = _Calls()


class DDPArgument:
    """One DDP module rebuilt for ``f``: the traced values of its parameters."""

    __slots__ = ("ddp", "sync", "synced")

    def __init__(self, ddp: Any, sync: bool, values: dict[str, Any]) -> None:
        self.ddp = ddp
        self.sync = sync
        # id -> traced value of the parameters DDP averages (held, so no id is reused)
        self.synced = {
            id(values[name]): values[name] for name in _synchronised_names(ddp) if name in values
        }


def _synchronised_names(ddp: Any) -> list[str]:
    ignored: set[str] = getattr(ddp, "parameters_to_ignore", set())
    delayed = {id(p) for p in getattr(ddp, "_delay_all_reduce_params", ())}
    return [
        name
        for name, p in ddp.named_parameters()
        if name.partition(".")[2] not in ignored or id(p) in delayed
    ]


def ddp_parts(ddp_type: Any, module: Any, names: Any) -> list[tuple[str, Any]]:
    """``(name prefix, DDP module)`` for ``module`` itself if it is a DDP, else for each DDP
    inside it. ``names`` (its trainable parameters' names) rule out most modules at once:
    a DDP's parameters are named ``<prefix>module.<...>``."""
    if isinstance(module, ddp_type):
        return [("", module)]
    if "module." not in " ".join(names):
        return []
    return [(p + ".", m) for p, m in module.named_modules() if isinstance(m, ddp_type)]


def note(ddp_type: Any, module: Any, values: dict[str, Any]) -> None:
    """Called by the tree walker's unflatten for a module rebuilt from ``values``: notes
    the DDP modules among it (itself or inside) when a call is running."""
    records = calls.records
    if records is None:
        return  # a result or shadow being built, not an argument of a running call
    for prefix, ddp in ddp_parts(ddp_type, module, values):
        own = values if not prefix else _under(prefix, values)
        sync = bool(ddp.require_backward_grad_sync)
        if sync:
            _check_syncable(ddp)
        records.append(DDPArgument(ddp, sync, own))


def _under(prefix: str, values: dict[str, Any]) -> dict[str, Any]:
    n = len(prefix)
    return {name[n:]: v for name, v in values.items() if name.startswith(prefix)}


def _check_syncable(ddp: Any) -> None:
    reasons = []
    if getattr(ddp, "_comm_hooks", None):
        reasons.append("a communication hook (register_comm_hook)")
    if getattr(ddp, "static_graph", False):
        reasons.append("static_graph=True")
    if getattr(ddp, "mixed_precision", None) is not None:
        reasons.append("mixed_precision")
    join = getattr(ddp, "_join_config", None)
    if join is not None and getattr(join, "enable", False):
        reasons.append("the ddp.join() context")
    if any(hasattr(p, "_in_backward_optimizers") for p in ddp.parameters()):
        reasons.append("optimizers applied in the backward pass")
    if reasons:
        raise UnsupportedError(
            f"torch: a DistributedDataParallel module with {', '.join(reasons)}: its gradient "
            f"is not the plain average adswitch computes, or needs DDP's own reducer. "
            f"{_FIX_BACKWARD}"
        )


@contextmanager
def local_forward(torch: Any, ddps: Sequence[Any]) -> Iterator[None]:
    """Run the forward of the DDP modules ``ddps`` without preparing their reducers for a
    backward pass (as inside ``no_sync``), leaving DDP's flags as its own forward would."""
    syncs = [ddp.require_backward_grad_sync for ddp in ddps]
    for ddp in ddps:
        ddp.require_backward_grad_sync = False
    try:
        yield
    finally:
        grad_mode = torch.is_grad_enabled()
        for ddp, sync in zip(ddps, syncs, strict=True):
            ddp.require_backward_grad_sync = sync
            if sync and grad_mode:
                ddp.require_forward_param_sync = True  # DDP's synced forward sets it


def average(
    torch: Any,
    records: Sequence[DDPArgument],
    values: Sequence[Any],
    positions: Sequence[int],
    grads: list[Any],
    nested: bool,
) -> list[ShadowBatch]:
    """Average the gradients of synchronised DDP parameters over their process groups.

    Args:
        torch: the imported torch module.
        records: the DDP arguments of this call (:func:`recording`).
        values: what ``f`` received, per leaf.
        positions: the leaf of each gradient.
        grads: one gradient per position, replaced in place by the averages.
        nested: this call runs inside another differentiation.

    Returns:
        One :class:`ShadowBatch` per averaged DDP argument, for ``Duplicated`` shadows.
    """
    batches: list[ShadowBatch] = []
    done: set[int] = set()
    for record in records:
        if not record.sync:
            continue
        ks = [
            k for k, i in enumerate(positions) if id(values[i]) in record.synced and k not in done
        ]
        if not ks:
            continue
        if nested:
            raise UnsupportedError(
                "torch: the parameters of a DistributedDataParallel module are "
                "differentiated inside another ad.gradient; averaging them over the process "
                "group is not itself differentiated. Fix: differentiate model.module there, or "
                "call it inside model.no_sync() (a local gradient)."
            )
        done.update(ks)
        group = record.ddp.process_group
        batch = ShadowBatch(group, len(ks))
        reduced = _all_reduce_mean(torch, [grads[k] for k in ks], group)
        for k, g in zip(ks, reduced, strict=True):
            setattr(g, BATCH, batch)  # read by add_into, for Duplicated shadows
            grads[k] = g
        batches.append(batch)
    return batches


def refuse_synchronised(
    records: Sequence[DDPArgument], values: Sequence[Any], positions: Sequence[int], what: str
) -> None:
    """``UnsupportedError`` for a synchronising DDP argument differentiated by an operator
    other than a gradient (a pullback, a Jacobian, a Hessian, a tangent).

    DDP defines one derivative: the gradient of each rank's loss, averaged over the process
    group by ``loss.backward()``. A Jacobian, a pullback of arbitrary cotangents or a
    tangent has no DDP meaning (averaging it would differ by mode; not averaging it would
    differ from what the gradient gets), so it is refused while DDP synchronises; inside
    ``model.no_sync()`` every operator gives this rank's local result, as DDP's backward does.
    """
    for record in records:
        if record.sync and any(id(values[i]) in record.synced for i in positions):
            raise UnsupportedError(
                f"torch: {what} differentiates a DistributedDataParallel module while it "
                f"synchronises gradients; DDP averages only the gradient of a loss over its "
                f"process group (ad.gradient and ad.withgradient do so), and a pullback, "
                f"Jacobian, Hessian or tangent has no such average. Fix: call it inside "
                f"model.no_sync() (this rank's local result), or differentiate model.module."
            )


def _all_reduce_mean(torch: Any, tensors: list[Any], group: Any) -> list[Any]:
    """The mean over ``group`` of each tensor: one all-reduce per dtype and device."""
    dist = torch.distributed
    size = dist.get_world_size(group)
    by_kind: dict[tuple[Any, Any], list[int]] = {}
    for k, t in enumerate(tensors):
        by_kind.setdefault((t.dtype, t.device), []).append(k)
    out: list[Any] = list(tensors)
    for ks in by_kind.values():
        flat = torch.cat([tensors[k].reshape(-1) for k in ks])
        flat.div_(size)  # before the sum, as DDP's reducer divides
        dist.all_reduce(flat, group=group)
        offset = 0
        for k in ks:
            n = tensors[k].numel()
            out[k] = flat[offset : offset + n].view_as(tensors[k]).clone()
            offset += n
    return out


class ShadowBatch:
    """The ``Duplicated`` shadows of one synchronised DDP argument, averaged together
    once the last of its gradients has been added (see the module doc)."""

    __slots__ = ("group", "remaining", "shadows")

    def __init__(self, group: Any, count: int) -> None:
        self.group = group
        self.remaining = count
        self.shadows: list[Any] = []

    def added(self, torch: Any, shadow: Any) -> None:
        """Record that a gradient of this batch was added into ``shadow``."""
        self.shadows.append(shadow)
        self.remaining -= 1
        if self.remaining:
            return
        averaged = _all_reduce_mean(torch, self.shadows, self.group)
        with torch.no_grad():
            for shadow_, mean in zip(self.shadows, averaged, strict=True):
                shadow_.copy_(mean)
        self.shadows = []


def check_sharded(module: Any) -> None:
    """``UnsupportedError`` for FSDP modules (checked when a module is flattened)."""
    fsdp = sys.modules.get("torch.distributed.fsdp")
    if fsdp is None:
        return
    names = ("FullyShardedDataParallel", "FSDPModule")  # FSDP1, and fully_shard's modules
    kinds = tuple(k for k in (getattr(fsdp, n, None) for n in names) if k is not None)
    if kinds and any(isinstance(m, kinds) for m in module.modules()):
        raise UnsupportedError(
            "torch: FSDP modules (FullyShardedDataParallel, fully_shard) are not supported: "
            "their parameters are gathered and their gradients reduced by hooks that "
            f"adswitch's functional call bypasses, so the gradient would be wrong. {_FIX_BACKWARD}"
        )


def is_dtensor(value: Any) -> bool:
    """Whether ``value`` is a ``torch.distributed.tensor.DTensor``."""
    module = sys.modules.get("torch.distributed.tensor")
    dtensor = getattr(module, "DTensor", None)
    return dtensor is not None and isinstance(value, dtensor)
