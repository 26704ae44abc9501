"""``Backend.checkpoint`` on torch: ``torch.utils.checkpoint.checkpoint`` (non-reentrant).

torch's non-reentrant checkpoint keeps only the inputs of ``fn`` and runs it again when
the backward pass first needs one of its saved tensors; it nests (``create_graph``: the
recomputation is itself recorded) and passes forward AD through. It wants tensors as
its own arguments, so the front end's flat leaves ride in a list closed over by a
wrapper that takes the tensor leaves as ``*args`` and puts them back in place. Python
numbers and integer tensors are closed over as they are.

Where torch cannot checkpoint -- inside a ``torch.func`` transform (``vmap`` of a
batched pullback), which saved-tensor hooks do not support -- ``fn`` runs plainly: the
numbers are the same, only the memory is not saved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import private_api

__all__ = ["checkpoint"]


def _in_functorch(torch: Any) -> bool:
    """Whether a ``torch.func`` transform (vmap, grad, jvp) is running now."""
    return private_api.functorch_stack(torch)() is not None


def checkpoint(
    torch: Any,
    fn: Callable[[list[Any]], list[Any]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """``Backend.checkpoint`` on torch (module doc)."""
    if _in_functorch(torch):
        return list(fn(list(leaves)))
    slots = [i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
    base = list(leaves)

    def run(*tensors: Any) -> tuple[Any, ...]:
        flat = list(base)
        for i, t in zip(slots, tensors):
            flat[i] = t
        return tuple(fn(flat))

    from torch.utils.checkpoint import checkpoint as torch_checkpoint

    out = torch_checkpoint(run, *[leaves[i] for i in slots], use_reentrant=False)
    return list(out)
