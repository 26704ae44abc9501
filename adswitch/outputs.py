"""What an engine runs: the user's function on one value per leaf, its output checked and
flattened (the engine contract's ``LossFn``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from adswitch import trees
from adswitch.errors import OutputError
from adswitch.leaves import describe, is_float_dtype, leaf_kind
from adswitch.plan import Plan

__all__ = ["LossFunction", "loss_of"]

_UNSEEN: Any = object()


class LossFunction:
    """``fn(values) -> (loss, out_leaves)`` for one call: rebuilds the arguments from one
    value per unique leaf (tied positions share one value), calls ``f``, checks that the
    output holds a real scalar loss first, and flattens the whole output.

    ``output_structure`` is the last output's tree structure; a compiled engine that
    returns outputs without calling this function says which structure they have with
    :meth:`reuse` (the handshake of :class:`adswitch.spec.LossFn`).
    """

    __slots__ = ("args", "bare", "f", "output_structure")

    def __init__(self, f: Callable[..., Any], plan: Plan) -> None:
        self.f = f
        self.args = plan.args
        self.bare = plan.bare
        self.output_structure: Hashable = _UNSEEN

    def __call__(self, values: Sequence[Any]) -> tuple[Any, list[Any]]:
        bare = self.bare
        if bare is not None:
            out = self.f(*[values[u] for u in bare])
        else:
            out = self.f(
                *[
                    values[p.leaf_ids[0]]
                    if p.treedef is None
                    else trees.unflatten(p.treedef, [values[u] for u in p.leaf_ids])
                    for p in self.args
                ]
            )
        loss = loss_of(out)
        out_leaves, self.output_structure = trees.flatten(out)
        return loss, out_leaves

    def reuse(self, structure: Hashable) -> None:
        self.output_structure = structure

    def output(self, out_leaves: list[Any]) -> Any:
        """The output rebuilt from the engine's concrete ``out_leaves``."""
        if self.output_structure is _UNSEEN:
            raise OutputError(
                "the engine returned outputs without running the function or declaring "
                "their structure (LossFn.reuse); this is an engine bug"
            )
        return trees.unflatten(self.output_structure, out_leaves)


def loss_of(out: Any) -> Any:
    """The differentiated part of ``f``'s output, checked to be a real scalar."""
    if leaf_kind(out) == "f" and (isinstance(out, float) or out.shape == ()):
        return out  # the loss alone, the commonest output: nothing else to check
    loss = out
    if isinstance(out, (tuple, list)):
        if not out:
            raise OutputError(f"f returned an empty {type(out).__name__}; return the loss first.")
        loss = out[0]
    elif isinstance(out, dict):
        if not out:
            raise OutputError("f returned an empty dict; put the loss first.")
        loss = next(iter(out.values()))
    if isinstance(loss, (int, float)) and not isinstance(loss, bool):
        return loss
    shape = getattr(loss, "shape", None)
    dtype = getattr(loss, "dtype", None)
    where = "f returned" if loss is out else "the first element of f's output is"
    if shape is None or dtype is None:
        raise OutputError(
            f"{where} {describe(loss)}; gradient needs a real scalar loss (a Python float or "
            "a 0-d floating array) there. Return the loss first, e.g. (loss, aux)."
        )
    if tuple(shape) != ():
        raise OutputError(
            f"{where} an array of shape {tuple(shape)}; gradient needs a scalar loss. Reduce "
            "it (xp.sum(y) or xp.mean(y)), or for a vector function compute a Jacobian: one "
            "gradient per output element."
        )
    if not is_float_dtype(dtype):
        raise OutputError(
            f"{where} a 0-d array of dtype {dtype}; the loss must be real floating point. "
            "Compute it in floating point (x.astype(float)); complex losses are not "
            "differentiable here -- take xp.real(...) or abs(...)**2."
        )
    return loss
