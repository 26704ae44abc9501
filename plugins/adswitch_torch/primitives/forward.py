"""Forward mode: ``jvp`` on torch.

One tangent per leaf (``info.batched`` false): torch's forward AD
(``torch.autograd.forward_ad``). Each active leaf's fresh tensor (``trace``) becomes a
dual tensor carrying a copy of its tangent; ``f`` runs once and the outputs' tangents are
read off. At top level the fresh tensors do not require grad -- recording a reverse graph
nobody runs cost a tenth of the mlp workload's jvp -- so what requiring grad gave for free
is done here: ``float(x)`` of a value carrying a tangent is refused (``tensor_patches``), the exact
``**`` applies to an exponent carrying one (``namespace``), a call nested in the jvp keeps
its leaves' tangents (``trace``). torch no longer refuses ``f``'s in-place writes into
its arguments, so they are refused after ``f`` by the version counters (``trace.run``),
as every other operator refuses them; the tangent forward AD updates in place is the
copy, never the caller's. With ``copy_saved=True`` ``f`` writes into copies and forward
AD differentiates the writes. Measured on the mlp workload, torch's forward AD alone:
0.91x the time of ``torch.func.jvp`` this way, 1.01x with leaves that require grad.

A batch of tangents (a Jacobian's identity basis, ``info.batched``), a jvp nested inside
another forward-mode jvp, and a jvp while another thread holds torch's one forward-AD
level use reverse mode instead: ``J t`` is the derivative along ``t`` of the pullback
``u -> J^T u`` (linear in ``u``): one run of ``f``, a backward pass with ``create_graph``,
and a second backward pass along the tangents -- batched under vmap
(``pull.batched_pull``). torch supports a single forward-AD level, shared by every
thread, hence the lock; the numbers are the same either way.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.errors import AdswitchError, UnsupportedError
from adswitch.spec import CallInfo, OutputFn

from .. import private_api
from ..compose import transforms
from ..integrations import ddp
from ..integrations.custom import transposing
from ..integrations.jax_arrays import to_jax
from .backward import Passes
from .convert import to_caller_kind
from .forward_mode import forward, traced
from .pull import batched_pull, translated_backward
from .results import as_tensor_like, concrete, own_memory, storage_of
from .trace import Trace, run, trace, write_back

__all__ = ["jvp"]

_LEVEL_LOCK = threading.Lock()  # torch's forward-AD level is one for the whole process
_LOADED: list[bool] = []  # torch's decompositions for forward AD imported (once)


def _load_decompositions(torch: Any) -> None:
    """Import what torch's first ``make_dual`` imports, without its warning: torch 2.13
    builds those decompositions with ``torch.jit.script``, which warns (a
    ``DeprecationWarning`` about torch's own code, nothing the caller can act on)."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=".*torch.jit.script.*", category=DeprecationWarning
        )
        private_api.load_forward_decompositions(torch)
    _LOADED.append(True)


def jvp(
    torch: Any,
    passes: Passes,
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    tangents: Sequence[Any],
    info: CallInfo,
    copy_saved: bool,
    strict: bool,
) -> tuple[list[Any], list[Any]]:
    """``Backend.jvp`` for torch (see the module doc)."""
    if not _LOADED:
        _load_decompositions(torch)
    if transforms.inside(torch):  # under torch.func: torch.func.jvp, not forward_ad
        if copy_saved:
            raise transforms.refuse_copy_saved(torch)
        return transforms.jvp(torch, fn, leaves, active, tangents, info, strict)
    if not info.batched and not forward.depth and _LEVEL_LOCK.acquire(blocking=False):
        try:
            level = torch.autograd.forward_ad.dual_level()
            try:
                level.__enter__()
            except RuntimeError:
                level = None  # the caller's own code holds a forward-AD level
            if level is not None:
                forward.depth += 1
                try:
                    return _dual(
                        torch, fn, leaves, active, tangents, info, copy_saved, strict, level
                    )
                finally:
                    forward.depth -= 1
        finally:
            _LEVEL_LOCK.release()
    return _by_reverse(torch, passes, fn, leaves, active, tangents, info, copy_saved, strict)


def _dual(
    torch: Any,
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    tangents: Sequence[Any],
    info: CallInfo,
    copy_saved: bool,
    strict: bool,
    level: Any,
) -> tuple[list[Any], list[Any]]:
    nested = info.depth > 0
    forward_ad = torch.autograd.forward_ad
    try:
        t = trace(torch, leaves, active, nested, copy_saved, forward=not nested)
        given: list[Any] = []
        for k, i in enumerate(t.positions):
            # f may write into its argument, and forward AD then updates the tangent in
            # place: never the caller's.
            tangent = as_tensor_like(torch, tangents[i], t.inputs[k]).clone()
            given.append(tangent)
            t.values[i] = forward_ad.make_dual(t.values[i], tangent)
        records: list[ddp.DDPArgument] = []
        diffs, out = run(torch, fn, t, copy_saved, strict, records)
        ddp.refuse_synchronised(records, t.values, t.positions, "ad.jvp")
        found = [
            forward_ad.unpack_dual(d).tangent if isinstance(d, torch.Tensor) else None
            for d in diffs
        ]
    finally:
        level.__exit__(None, None, None)
    write_back(torch, t)
    foreign = {storage_of(g) for g in given}
    out_tangents = _finish(torch, found, diffs, t, nested, None, foreign)
    return [concrete(torch, o, t, leaves, nested) for o in out], out_tangents


def _by_reverse(
    torch: Any,
    passes: Passes,
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    tangents: Sequence[Any],
    info: CallInfo,
    copy_saved: bool,
    strict: bool,
) -> tuple[list[Any], list[Any]]:
    nested = info.depth > 0
    t = trace(torch, leaves, active, nested, copy_saved)
    records: list[ddp.DDPArgument] = []
    diffs, out = run(torch, fn, t, copy_saved, strict, records)
    ddp.refuse_synchronised(records, t.values, t.positions, "ad.jvp")
    batch = _batch_of(tangents) if info.batched else None
    which = [k for k, d in enumerate(diffs) if isinstance(d, torch.Tensor) and d.requires_grad]
    found: list[Any] = [None] * len(diffs)
    given = [as_tensor_like(torch, tangents[i], x) for i, x in zip(t.positions, t.inputs)]
    if which and t.inputs:
        outs = [diffs[k] for k in which]
        probes = [torch.zeros_like(y, requires_grad=True) for y in outs]
        try:
            with transposing():  # J^T u, linear in u
                pulled = passes.pull(outs, probes, t.inputs, True, True, t.plain)
            used = [(g, v) for g, v in zip(pulled, given) if g is not None and g.requires_grad]
            if used:
                gs, vs = [g for g, _ in used], [v for _, v in used]
                if batch is not None:
                    pushed = batched_pull(torch, passes, gs, vs, probes, nested, True)
                else:
                    pushed = list(passes.pull(gs, vs, probes, True, nested, True))
                for k, j in enumerate(which):
                    found[j] = pushed[k]
        except RuntimeError as exc:
            raise _not_twice_differentiable(exc) from exc
    write_back(torch, t)
    foreign = {storage_of(g) for g in given}
    out_tangents = _finish(torch, found, diffs, t, nested, batch, foreign)
    return [concrete(torch, o, t, leaves, nested) for o in out], out_tangents


def _not_twice_differentiable(exc: RuntimeError) -> Exception:
    if isinstance(exc, AdswitchError):  # a rule's own refusal (xp.linalg at a degenerate
        return exc  # point): it says the fix already
    translated = translated_backward(exc, False)
    if translated is not None:
        return translated
    return UnsupportedError(
        f"torch: this jvp (a batch of tangents, e.g. ad.jacobian(mode='forward'), or a jvp "
        f"inside another ad.jvp) runs as the derivative of a pullback, which needs f's "
        f"backward pass to be differentiable; torch says: {str(exc).splitlines()[0]}. "
        f"Fix: use reverse mode (ad.vjp, ad.jacobian(mode='reverse')), or make the custom "
        f"autograd.Function twice differentiable."
    )


def _batch_of(tangents: Sequence[Any]) -> int:
    for v in tangents:
        if v is not None:
            return int(v.shape[0])
    return 0


def _finish(
    torch: Any,
    found: Sequence[Any],
    diffs: Sequence[Any],
    t: Trace,
    nested: bool,
    batch: int | None,
    foreign: set[int],
) -> list[Any]:
    """Per differentiated output, its tangent in the output's kind and dtype (zeros where
    it does not depend on the inputs), batched with ``batch`` rows when not ``None``."""
    tensor_type = torch.Tensor
    result: list[Any] = []
    for tangent, y in zip(found, diffs, strict=True):
        if not isinstance(y, tensor_type):
            result.append(_constant_tangent(y, batch))
            continue
        if tangent is None:
            shape = y.shape if batch is None else (batch, *y.shape)
            tangent = torch.zeros(shape, dtype=y.dtype, device=y.device)
        elif not nested:
            tangent = tangent.detach()
        tangent = own_memory(torch, tangent, nested, foreign, None, by_storage=True)
        if tangent.dtype != y.dtype:
            tangent = tangent.to(y.dtype)
        result.append(_in_kind(torch, tangent, t.kind))
    return result


def _in_kind(torch: Any, tangent: Any, kind: str) -> Any:
    if kind == "torch" or traced(torch, tangent):
        return tangent
    if kind == "jax":
        return to_jax(torch, tangent, None)
    return to_caller_kind(torch, tangent, None, True)


def _constant_tangent(y: Any, batch: int | None) -> Any:
    """The tangent of an output that is not a tensor (a constant of ``f``)."""
    if isinstance(y, float):
        return 0.0 if batch is None else np.zeros(batch)
    shape = np.shape(y)
    dtype = getattr(y, "dtype", np.float64)
    return np.zeros(shape if batch is None else (batch, *shape), dtype=dtype)
