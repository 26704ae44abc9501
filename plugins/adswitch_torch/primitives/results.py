"""Results in the caller's kinds: gradients and tangents in memory of their own, outputs
made concrete, cotangents and tangents the caller passed as tensors like what they go with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from ..integrations.jax_arrays import foreign_kind, from_jax, to_jax
from .convert import tensor_from_numpy, to_caller_kind
from .forward_mode import traced
from .trace import Trace

__all__ = [
    "as_tensor_like",
    "batched_result",
    "concrete",
    "finish_grads",
    "own_memory",
    "storage_of",
]


def storage_of(value: Any) -> int:
    """The address of a tensor's storage (views of one storage share it)."""
    return int(value.untyped_storage().data_ptr())


def own_memory(
    torch: Any,
    g: Any,
    nested: bool,
    foreign: set[int],
    unique: set[int] | None,
    by_storage: bool = False,
) -> Any:
    """A gradient or tangent from torch, in memory of its own.

    Dense; never memory the caller or torch still uses -- ``foreign`` holds the addresses
    of the seeds, cotangents or tangents handed to torch, which it hands back as a result
    when an output is an input, compared by data pointer or, with ``by_storage``, by
    storage (views included); at top level contiguous and, when ``unique`` collects the
    results' addresses, not shared with another result.
    """
    if g.layout is not torch.strided:
        return g.to_dense()  # a sparse gradient (embedding(sparse=True)): dense, like its leaf
    if g._is_zerotensor():
        # torch's storage-less zero (e.g. the second derivative of abs): real zeros
        return torch.zeros(g.shape, dtype=g.dtype, device=g.device)
    if g.data_ptr() in foreign or (by_storage and storage_of(g) in foreign):
        return g.clone()
    if not nested:
        if not g.is_contiguous():
            # torch hands out expanded (stride-0) tensors for sums
            g = g.clone(memory_format=torch.contiguous_format)
        if unique is not None:
            ptr = g.data_ptr()
            if ptr in unique:
                g = g.clone()  # torch hands the same tensor to both inputs of an addition
                ptr = g.data_ptr()
            unique.add(ptr)
    return g


def batched_result(torch: Any, g: Any, like: Any) -> Any:
    """A result with a leading batch axis in ``like``'s kind: a numpy array for numpy
    leaves and for Python or numpy floats (their batch is a 1-d array)."""
    if isinstance(like, torch.Tensor) or traced(torch, g):
        return g
    if isinstance(like, (np.ndarray, float, np.generic)):
        return to_caller_kind(torch, g, None, True)
    if foreign_kind(like) == "jax":
        out = to_jax(torch, g, None)
        return out if out.dtype == like.dtype else out.astype(like.dtype)
    return g


def concrete(
    torch: Any, value: Any, t: Trace, leaves: Sequence[Any], nested: bool, owned: bool = False
) -> Any:
    """An output of ``f`` for the caller: detached at top level, in the caller's kind;
    ``f``'s own argument given back as the caller's object. ``owned``: the graph outlives
    the call (a pullback's), so a numpy output is a copy -- a write into a numpy array
    bumps no version counter, and the graph may have saved the tensor it views; a torch
    output shares the graph's version counter, which refuses such a write when the
    pullback runs."""
    if not isinstance(value, torch.Tensor):
        return value
    for seen_by_f, leaf in zip(t.values, leaves, strict=True):
        # f returned one of its arguments: give back the caller's own object.
        if value is seen_by_f:
            return leaf
    kind = t.kind
    if not nested:
        value = value.detach()
        if owned and kind == "numpy":
            value = value.clone()
    if kind == "jax" and not traced(torch, value):
        return to_jax(torch, value, None)
    return to_caller_kind(torch, value, None, kind == "numpy")


def as_tensor_like(torch: Any, value: Any, like: Any) -> Any:
    """A cotangent or tangent the caller passed (numpy, Python float, tensor, jax array)
    as a tensor of ``like``'s dtype and device (``like``: a tensor)."""
    if isinstance(value, torch.Tensor):
        tensor = value
    elif isinstance(value, np.ndarray):
        tensor, _ = tensor_from_numpy(torch, value)
        if tensor is None:
            raise UnsupportedError(
                f"torch: a cotangent or tangent of dtype {value.dtype} cannot be a torch "
                f"tensor. Fix: pass it in the dtype of what it goes with ({like.dtype})."
            )
    elif isinstance(value, (float, int, np.generic)):
        return torch.tensor(float(value), dtype=like.dtype, device=like.device)
    elif foreign_kind(value) == "jax":
        tensor = from_jax(torch, value, 0)
    else:
        raise UnsupportedError(
            f"torch: a cotangent or tangent of type {type(value).__name__} is none of "
            f"numpy, torch or jax arrays or Python floats. Fix: pass an array shaped like "
            f"what it goes with."
        )
    if tensor.dtype != like.dtype or tensor.device != like.device:
        tensor = tensor.to(device=like.device, dtype=like.dtype)
    return tensor


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
