"""``--under`` on torch (the adapter :mod:`~adswitch_conformance.under` imports when
torch is run): ``"vmap"`` is ``torch.func.vmap`` over two stacked copies of the inputs
(as torch tensors), each row checked. ``torch.compile`` (a ``"jit"``) is left out: it
compiles each case anew, seconds a case, too slow for the suite.

``torch.func.vmap`` returns tensors only, so the tensors among the call's results
leave the transform and the rest of the result (its containers, ``None``, a string aux,
a Python number: none can depend on a batched value, which torch refuses to make
concrete) is kept from the one traced run. A ``vjp``'s pullback cannot leave a
functorch level: called with a cotangent, it makes the call again inside a new
``torch.func.vmap`` over the inputs and stacked copies of the cotangent, and calls the
pullback made there. Results come back as numpy, as the plain call gives them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import trees
from .under import Skip, chain, raised_in_case, same_rows

__all__ = ["KINDS", "call"]

KINDS = ("vmap",)
_ENGINE_PACKAGES = ("torch", "functorch")
# What torch raises when code under vmap asks for a batched value's number or memory.
_UNTRACEABLE = (
    "data-dependent control flow",
    "calling .item() on a Tensor",
    "Cannot access data pointer of Tensor that doesn't have storage",
)


def call(kind: str, inner: Callable[..., Any], arrays: list[np.ndarray]) -> Any:
    """``inner(*arrays)`` made inside ``torch.func.vmap`` (``arrays`` stacked twice, row
    0 returned after checking row 1), as numpy; raises
    :class:`~adswitch_conformance.under.Skip`."""
    import torch

    stacked = [torch.from_numpy(np.stack([a, a])) for a in arrays]
    return _judged(lambda: _batched(torch, inner, stacked))


def _batched(torch: Any, fn: Callable[..., Any], inputs: Sequence[Any]) -> Any:
    """``fn``'s result under ``torch.func.vmap`` over ``inputs``: its tensors as row 0
    in numpy (row 1 checked equal), a pullback as a :class:`_Pulled`."""
    import adswitch as ad

    traced: list[Any] = []

    def tensors_of(*values: Any) -> tuple[Any, ...]:
        tree = fn(*values)
        leaves = trees.leaves(tree)
        traced[:] = [tree, leaves]
        return tuple(leaf for leaf in leaves if isinstance(leaf, torch.Tensor))

    out = iter(torch.func.vmap(tensors_of)(*inputs))
    tree, leaves = traced
    host: list[Any] = []
    for k, leaf in enumerate(leaves):
        if isinstance(leaf, torch.Tensor):
            batch = next(out)
            first, second = _numpy(batch[0]), _numpy(batch[1])
            same_rows(first, second)
            host.append(first)
        elif isinstance(leaf, ad.Pullback):
            host.append(_Pulled(fn, inputs, k))
        else:
            host.append(leaf)
    return trees.unflatten_like(tree, host)


def _numpy(tensor: Any) -> np.ndarray:
    return np.array(tensor.detach().cpu().resolve_conj().resolve_neg().numpy())


class _Pulled:
    """A ``vjp``'s pullback (the ``index``-th result leaf of ``fn``), called inside a
    new ``torch.func.vmap`` that makes ``fn``'s call again on ``inputs`` and pulls
    stacked copies of the cotangent back through the pullback made there."""

    def __init__(self, fn: Callable[..., Any], inputs: Sequence[Any], index: int) -> None:
        self.fn, self.inputs, self.index = fn, list(inputs), index

    def __call__(self, cotangent: Any) -> Any:
        import torch

        given = trees.leaves(cotangent)
        where = [k for k, u in enumerate(given) if _is_number(u)]
        stacked = [torch.from_numpy(np.stack([np.asarray(given[k])] * 2)) for k in where]
        n = len(self.inputs)

        def pulled(*values: Any) -> Any:
            leaves = list(given)
            for k, u in zip(where, values[n:]):
                leaves[k] = u
            pullback = trees.leaves(self.fn(*values[:n]))[self.index]
            return pullback(trees.unflatten_like(cotangent, leaves))

        return _judged(lambda: _batched(torch, pulled, [*self.inputs, *stacked]))


def _is_number(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "fc"
    return isinstance(value, (float, complex, np.floating, np.complexfloating))


def _judged(run: Callable[[], Any]) -> Any:
    """``run()``, a case's own code that needs a batched value's number raised as
    :class:`~adswitch_conformance.under.Skip` (anything else propagates)."""
    try:
        return run()
    except Exception as exc:
        for current in chain(exc):
            text = str(current)
            if (
                isinstance(current, RuntimeError)
                and any(m in text for m in _UNTRACEABLE)
                and raised_in_case(current, _ENGINE_PACKAGES)
            ):
                raise Skip("the case's function needs a concrete value of a vmapped input") from exc
        raise
