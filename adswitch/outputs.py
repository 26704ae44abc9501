"""What an engine runs: the user's function on one value per leaf, its output checked and
flattened -- the engine contract's ``LossFn`` (a scalar loss) and ``OutputFn`` (any
floating outputs, for vjp, jvp and Jacobians)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from adswitch import trees
from adswitch.errors import OutputError, UnsupportedError
from adswitch.leaves import describe, is_float_dtype, leaf_kind
from adswitch.plan import Plan

__all__ = ["LossFunction", "OutputFunction", "Outputs", "loss_of"]

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
        self.bare = bare = plan.bare
        # (treedef, leaf ids) per argument, needed only when some argument is a tree: the
        # structure only -- engines may keep this function (a pullback does), and it must
        # not keep the caller's arrays alive
        self.args = [(p.treedef, p.leaf_ids) for p in plan.args] if bare is None else []
        self.output_structure: Hashable = _UNSEEN

    def call_f(self, values: Sequence[Any]) -> Any:
        """``f`` on the arguments rebuilt from one value per unique leaf."""
        bare = self.bare
        if bare is not None:
            return self.f(*[values[u] for u in bare])
        return self.f(
            *[
                values[ids[0]]
                if treedef is None
                else trees.unflatten(treedef, [values[u] for u in ids])
                for treedef, ids in self.args
            ]
        )

    def __call__(self, values: Sequence[Any]) -> tuple[Any, list[Any]]:
        bare = self.bare  # (``call_f`` inline for bare arguments: every call runs this)
        if bare is None:
            out = self.call_f(values)
        elif len(bare) == 1:
            out = self.f(values[bare[0]])
        else:
            out = self.f(*[values[u] for u in bare])
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


class Outputs:
    """How ``f``'s output of an ``OutputFn`` is laid out: the differentiated part ``y``
    (its tree, and which of its leaves are floating), the aux part when ``has_aux``."""

    __slots__ = ("aux_def", "diff_positions", "n_y", "y_def")

    def __init__(
        self, y_def: trees.TreeDef, n_y: int, diff_positions: tuple[int, ...], aux_def: Any
    ) -> None:
        self.y_def = y_def
        self.n_y = n_y  # leaves of y; the aux leaves follow them
        self.diff_positions = diff_positions
        self.aux_def = aux_def

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Outputs) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[Any, ...]:
        return (self.y_def, self.n_y, self.diff_positions, self.aux_def)


class OutputFunction(LossFunction):
    """``fn(values) -> (diff_leaves, out_leaves)`` for vjp, jvp and Jacobians: the
    floating leaves of ``y`` are differentiated, where ``y`` is ``f``'s whole output, or
    its first element with ``has_aux`` (``f`` returns ``(y, aux)``).

    ``output_structure`` is an :class:`Outputs`.
    """

    __slots__ = ("has_aux", "operator")

    def __init__(self, f: Callable[..., Any], plan: Plan, has_aux: bool, operator: str) -> None:
        super().__init__(f, plan)
        self.has_aux = has_aux
        self.operator = operator

    def __call__(self, values: Sequence[Any]) -> tuple[Any, list[Any]]:
        out = self.call_f(values)
        aux_leaves: list[Any] = []
        aux_def: Any = None
        if self.has_aux:
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise OutputError(
                    f"ad.{self.operator}(..., has_aux=True) needs f to return a pair (y, aux); "
                    f"got {describe(out)}. Return (y, aux), or drop has_aux."
                )
            y, aux = out
            aux_leaves, aux_def = trees.flatten(aux)
        else:
            y = out
        y_leaves, y_def = trees.flatten(y)
        diff_positions = []
        for k, leaf in enumerate(y_leaves):
            kind = leaf_kind(leaf)
            if kind == "f":
                diff_positions.append(k)
            elif kind == "c":
                raise UnsupportedError(
                    f"{trees.leaf_path(y_def, 'the output', k)} is complex ({describe(leaf)}); "
                    "adswitch differentiates real functions. Return its real and imaginary "
                    "parts (xp.real, xp.imag) as separate outputs."
                )
        if not diff_positions:
            raise OutputError(
                f"f's output {describe(y)} has no floating-point leaf to differentiate; "
                f"ad.{self.operator} needs a float array (or a tree holding some)."
            )
        positions = tuple(diff_positions)
        self.output_structure = Outputs(y_def, len(y_leaves), positions, aux_def)
        return [y_leaves[k] for k in positions], y_leaves + aux_leaves

    def outputs(self) -> Outputs:
        """The layout of the last output (see :meth:`LossFunction.output`)."""
        structure = self.output_structure
        if not isinstance(structure, Outputs):
            raise OutputError(
                "the engine returned outputs without running the function or declaring "
                "their structure (OutputFn.reuse); this is an engine bug"
            )
        return structure

    def output(self, out_leaves: list[Any]) -> Any:
        """``y`` (and ``aux`` with ``has_aux``: ``(y, aux)``) rebuilt from ``out_leaves``."""
        layout = self.outputs()
        y = trees.unflatten(layout.y_def, out_leaves[: layout.n_y])
        if not self.has_aux:
            return y
        return y, trees.unflatten(layout.aux_def, out_leaves[layout.n_y :])


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
