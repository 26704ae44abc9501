"""One differentiation call on torch: prepare the leaves, run ``fn``, run the backward
pass, hand back gradients and outputs in the caller's kinds (see ``plugin`` for the
rules). Kept free of per-call work that the common case does not need: this is the
path the benchmark's overhead ratios measure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError
from adswitch.spec import CallInfo, LossFn

from . import _distributed
from ._backward import SEED_POINTERS, GradFn
from ._convert import tensor_from_numpy, to_caller_kind
from ._errors import mutated_argument, translate_backward, translate_forward
from ._foreign import foreign_kind, from_jax, refuse, to_jax
from ._guard import CallGuard

__all__ = ["differentiate"]


def _snapshot(t: Any) -> Any:
    # A saved value is copied when saved, so later in-place writes cannot change it;
    # torch re-attaches the copy to the original's place in the graph when unpacking.
    return t.detach().clone()


def _same(t: Any) -> Any:
    return t


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
        grad: the backward pass (``_backward.make_grad``).
        fn, leaves, active, info: as in ``Backend.value_and_grad``.
        copy_saved: copy every value torch saves for the backward pass, and hand ``f``
            copies of the differentiated arguments (written back to the caller after
            success), so that in-place writes anywhere in ``f`` are differentiated.
        strict: refuse float conversions of values being differentiated (``_guard``;
            the exact ``**`` of ``_guard`` applies either way).

    Returns:
        ``(out_leaves, grads)`` as ``Backend.value_and_grad`` specifies.
    """
    tensor_type = torch.Tensor
    nested = info.depth > 0
    values = list(leaves)
    inputs: list[Any] = []
    positions: list[int] = []
    copies: list[tuple[np.ndarray, Any]] = []  # numpy leaves torch could not wrap in place
    written: list[tuple[Any, Any]] = []  # (input, the copy f received) in copy_saved mode
    versions: list[int] = []
    any_tensor = False
    any_numpy = False
    any_jax = False
    plain = True  # every input a plain torch.Tensor: the backward's fast path applies
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, tensor_type):
            any_tensor = True
            if not active[i]:
                continue
            if type(leaf) is not tensor_type and _distributed.is_dtensor(leaf):
                raise UnsupportedError(
                    f"torch: differentiated leaf #{i} is a DTensor (a sharded or replicated "
                    f"parameter of torch.distributed); adswitch's torch engine does not "
                    f"differentiate DTensors. Fix: compute this gradient with torch's own "
                    f"loss.backward(), or pass local tensors (x.to_local())."
                )
            if nested and leaf.requires_grad:
                # A fresh view: attached to the outer graph, but only uses through it
                # count for this call (no confusion with the outer value in closures).
                value = leaf.view_as(leaf)
            else:
                value = leaf.detach().requires_grad_()
        elif isinstance(leaf, np.ndarray):
            any_numpy = True
            value, shared = tensor_from_numpy(torch, leaf)
            if value is None:
                if active[i]:
                    raise UnsupportedError(
                        f"torch: cannot differentiate a numpy array of dtype {leaf.dtype} "
                        f"(torch has no such dtype). Fix: convert it, e.g. "
                        f"x.astype(np.float64)."
                    )
                continue
            if not shared:
                copies.append((leaf, value))
            if active[i]:
                value.requires_grad_()
        elif isinstance(leaf, (float, np.generic)):
            if not active[i]:
                continue
            if isinstance(leaf, np.generic):
                value = torch.from_numpy(np.array(leaf)).requires_grad_()
            else:
                value = torch.tensor(leaf, dtype=torch.float64, requires_grad=True)
        else:
            kind = foreign_kind(leaf)
            if kind is None:
                continue  # not an array: ints, strings, callables reach f as they are
            if kind != "jax":
                raise refuse(kind, i)
            any_jax = True
            value = from_jax(torch, leaf, i)
            if active[i]:
                value.requires_grad_()
        if active[i]:
            inputs.append(value)
            positions.append(i)
            versions.append(value._version)
            plain = plain and type(value) is tensor_type
            if copy_saved and not nested:
                seen_by_f = value.clone()
                written.append((value, seen_by_f))
                value = seen_by_f
        values[i] = value

    guard = CallGuard(torch, strict)
    calls = _distributed.calls  # DDP arguments rebuilt for f note themselves here
    outer_records = calls.records
    records: list[_distributed.DDPArgument] = []
    calls.records = records
    try:
        if copy_saved:
            with torch.autograd.graph.saved_tensors_hooks(_snapshot, _same), guard:
                loss, out = fn(values)
        else:
            with guard:  # (an ExitStack for both cases costs 2 µs of a 45 µs call)
                loss, out = fn(values)
    except (RuntimeError, TypeError, ValueError) as exc:
        translated = translate_forward(exc)
        if translated is None:
            raise
        raise translated from exc
    finally:
        calls.records = outer_records
    for k in range(len(inputs)):
        if inputs[k]._version != versions[k]:
            raise mutated_argument(positions[k])

    grads: Sequence[Any] = ()
    if inputs and isinstance(loss, tensor_type) and loss.requires_grad:
        try:
            grads = grad(loss, inputs, nested, plain)
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
        _distributed.average(torch, records, values, positions, grads, nested)

    # Only now that nothing can fail: writes f made reach the caller's arrays, as a
    # plain call would have left them.
    for value, seen_by_f in written:
        if seen_by_f._version:
            with torch.no_grad():
                value.copy_(seen_by_f)
    for original, copy in copies:
        if copy._version and original.flags.writeable:
            np.copyto(original, copy.detach().numpy())

    result: list[Any | None] = [None] * len(leaves)
    strided = torch.strided
    unique: set[int] = set()
    several = len(positions) > 1
    for k, i in enumerate(positions):
        g = grads[k] if grads else None
        if g is None:
            g = torch.zeros_like(inputs[k], requires_grad=False)
        elif g.layout is not strided:
            g = g.to_dense()  # a sparse gradient (embedding(sparse=True)): dense, like its leaf
        elif g.data_ptr() in SEED_POINTERS:
            g = g.clone()  # the shared seed itself (the loss is this input): never hand it out
        elif not nested:
            # torch hands the same tensor to both inputs of an addition, and expanded
            # (stride-0) tensors for sums: give each leaf its own, writable memory.
            if not g.is_contiguous():
                g = g.clone(memory_format=torch.contiguous_format)
            if several:
                ptr = g.data_ptr()
                if ptr in unique:
                    g = g.clone()
                    ptr = g.data_ptr()
                unique.add(ptr)
        leaf = leaves[i]
        result[i] = g if type(leaf) is tensor_type else to_caller_kind(torch, g, leaf, False)

    if info.entry == "gradient":
        # The caller discards the value: skip making it concrete (the spec allows it).
        return list(out), result
    # Outputs in the caller's kind: torch when any leaf was a tensor, jax when every
    # array leaf was a jax array, else numpy.
    kind = "torch" if any_tensor else "jax" if any_jax and not any_numpy else "numpy"
    outputs = [_concrete(torch, o, values, leaves, nested, kind) for o in out]
    return outputs, result


def _concrete(
    torch: Any,
    value: Any,
    values: Sequence[Any],
    leaves: Sequence[Any],
    nested: bool,
    kind: str,
) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    for traced, leaf in zip(values, leaves, strict=True):
        # f returned one of its arguments: give back the caller's own object.
        if value is traced:
            return leaf
    if not nested:
        value = value.detach()
    if kind == "jax" and not value.requires_grad:
        return to_jax(torch, value, None)
    return to_caller_kind(torch, value, None, kind == "numpy")
