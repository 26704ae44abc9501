"""``value_and_grad`` on torch: trace the leaves, run ``fn``, run the backward pass, hand
back gradients and outputs in the caller's kinds (see ``plugin`` for the rules). Kept free
of per-call work that the common case does not need: this is the path the benchmark's
overhead ratios measure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adswitch.spec import CallInfo, LossFn

from ..compose import transforms
from ..integrations import ddp
from ..refusals.errors import translate_backward
from .backward import SEED_POINTERS, GradFn
from .convert import to_caller_kind
from .results import concrete, own_memory
from .trace import run, trace, write_back

__all__ = ["differentiate"]


def differentiate(
    torch: Any,
    grad: GradFn,
    fn: LossFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    info: CallInfo,
    copy_saved: bool,
    strict: bool = True,
) -> tuple[list[Any], list[Any | None]]:
    """``Backend.value_and_grad`` for torch.

    Args:
        torch: the imported torch module.
        grad: the backward pass (``backward.make_grad``).
        fn, leaves, active, info: as in ``Backend.value_and_grad``.
        copy_saved: copy every value torch saves for the backward pass, and hand ``f``
            copies of the differentiated arguments (written back to the caller after
            success), so that in-place writes anywhere in ``f`` are differentiated.
        strict: refuse float conversions of values being differentiated (``tensor_patches``;
            the exact ``**`` of ``tensor_patches`` applies either way).

    Returns:
        ``(out_leaves, grads)`` as ``Backend.value_and_grad`` specifies.
    """
    if transforms.inside(torch):  # under torch.func: its transforms, not autograd.grad
        if copy_saved:
            raise transforms.refuse_copy_saved(torch)
        return transforms.value_and_grad(torch, fn, leaves, active, info, strict)
    nested = info.depth > 0
    t = trace(torch, leaves, active, nested, copy_saved)
    records: list[ddp.DDPArgument] = []
    loss, out = run(torch, fn, t, copy_saved, strict, records)
    inputs = t.inputs

    grads: Sequence[Any] = ()
    if inputs and isinstance(loss, torch.Tensor) and loss.requires_grad:
        try:
            grads = grad(loss, inputs, nested, t.plain)
        except RuntimeError as exc:
            translated = translate_backward(exc)
            if translated is None:
                raise
            raise translated from exc
    if records:
        grads = [
            torch.zeros_like(x, requires_grad=False) if g is None else g
            for x, g in zip(inputs, grads or [None] * len(inputs), strict=True)
        ]
        ddp.average(torch, records, t.values, t.positions, grads, nested)

    # Only now that nothing can fail: writes f made reach the caller's arrays.
    write_back(torch, t)

    result: list[Any | None] = [None] * len(leaves)
    unique: set[int] | None = set() if len(inputs) > 1 else None
    tensor_type = torch.Tensor
    for k, i in enumerate(t.positions):
        g = grads[k] if grads else None
        if g is None:
            g = torch.zeros_like(inputs[k], requires_grad=False)
        g = own_memory(torch, g, nested, SEED_POINTERS, unique)
        leaf = leaves[i]
        result[i] = g if type(leaf) is tensor_type else to_caller_kind(torch, g, leaf, False)

    if not info.wants_outputs:
        # The caller discards the value: skip making it concrete (the spec allows it).
        return list(out), result
    return [concrete(torch, o, t, leaves, nested) for o in out], result
