"""What ``custom_vjp`` and ``custom_jvp`` share (:class:`RuleBase`): the function, its
output structure per input structure, and the checks of what the user's ``fwd``, ``bwd``
and jvp rule return -- so every engine, and host code, gets the same clear errors.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from adswitch import trees
from adswitch.errors import UsageError
from adswitch.leaves import describe, leaf_kind
from adswitch.rule_args import RuleArgs, check_argnums, primal, zero_tangent

__all__ = ["RuleBase"]


class RuleBase:
    """What custom_vjp and custom_jvp share: the function, and f's output structure per
    input structure (so a rule's output can be checked against it)."""

    kind = "rule"
    # What a rule's results depend on, for engines that watch what ``f`` reads (the
    # tape's replay guard): the function and its derivatives, not the caches.
    __adswitch_state__ = ("fun", "fwd", "bwd", "rule", "nondiff_argnums", "host", "out_shape")

    def __init__(
        self,
        fun: Callable[..., Any],
        nondiff_argnums: Sequence[int] = (),
        *,
        host: bool = False,
        out_shape: Any = None,
    ) -> None:
        self.fun = fun
        self.host, self.out_shape = host, out_shape  # host=True: adswitch.host_rules
        self.nondiff_argnums = check_argnums(nondiff_argnums)
        self.__name__ = getattr(fun, "__name__", type(self).__name__)
        self.__doc__ = getattr(fun, "__doc__", None)
        self.__wrapped__ = fun
        self._out_structure: dict[Hashable, trees.TreeDef] = {}
        # what ``primal(self)`` adds to the running rules (made once: rule calls are hot)
        self._me = frozenset((id(self),))

    def _name(self) -> str:
        return f"{self.kind}({self.__name__})"

    def _f_structure(self, split: RuleArgs, leaves: Sequence[Any]) -> trees.TreeDef:
        """f's output structure at these inputs: run f once per input structure."""
        key = split.key()
        if key is not None and key in self._out_structure:
            return self._out_structure[key]
        with primal(self):
            td = trees.flatten(self.fun(*split.all_args(leaves)))[1]
        if key is not None:
            self._out_structure[key] = td
        return td

    def _primal_fn(
        self, split: RuleArgs, out_td: list[trees.TreeDef]
    ) -> Callable[[list[Any]], list[Any]]:
        """The flat ``fn`` every rule hook takes: f on the leaves, its output structure
        recorded in ``out_td``."""

        def fn(leaves: list[Any]) -> list[Any]:
            with primal(self):
                out_leaves, td = trees.flatten(self.fun(*split.all_args(leaves)))
            out_td[:] = [td]
            return out_leaves

        # what the rule's callables close over besides the leaves (``Backend.custom_vjp``):
        # an engine that replays a recorded rule call checks that they stay the same
        fn.nondiff_args = split.nondiff_args  # type: ignore[attr-defined]
        return fn

    def _not_a_pair(self, pair: Any) -> UsageError:
        """The error for a ``fwd`` that did not return ``(out, residuals)``."""
        return UsageError(
            f"{self._name()}: fwd returned {describe(pair)}; it must return a pair "
            "(out, residuals)."
        )

    def _check_out(
        self, split: RuleArgs, leaves: Sequence[Any], out: Any, who: str
    ) -> tuple[list[Any], trees.TreeDef]:
        out_leaves, td = trees.flatten(out)
        f_td = self._f_structure(split, leaves)
        if td != f_td and trees.reorder(f_td, td) is None:
            where = trees.describe_mismatch(f_td, td, "out", ("from f", f"from {who}"))
            raise UsageError(
                f"{self._name()}: the output {who} returns differs from f's: {where}. "
                f"{who} must return f's output (same containers, same keys) as its out."
            )
        return out_leaves, td

    def _check_cotangents(self, split: RuleArgs, got: Any) -> list[Any]:
        n = len(split.positions)
        if isinstance(got, list):
            got = tuple(got)
        if not isinstance(got, tuple) or len(got) != n:
            given = f"{len(got)} values" if isinstance(got, tuple) else describe(got)
            raise UsageError(
                f"{self._name()}: bwd returned {given}; it must return a tuple of {n} "
                f"cotangent(s), one per argument not in nondiff_argnums (positions "
                f"{split.positions}), None for a zero -- e.g. `return (ct,)` for one argument."
            )
        if split.bare:  # one leaf per argument: no tree to match (RuleArgs.bare)
            fast: list[Any] = []
            for pos, leaf, ct in zip(split.positions, split.leaves, got):
                if ct is None:
                    fast.append(None)
                elif trees.flatten(ct)[1] is None:
                    # a float cotangent for a float leaf: only the shape to check
                    if (
                        leaf_kind(leaf) == "f"
                        and leaf_kind(ct) == "f"
                        and getattr(leaf, "shape", ()) == getattr(ct, "shape", ())
                    ):
                        fast.append(ct)
                        continue
                    fast.append(self._check_leaf(None, 0, pos, leaf, ct))
                else:
                    break  # a tree for a leaf: the structure's error below
            else:
                return fast
        flat: list[Any] = []
        start = 0
        for k, pos in enumerate(split.positions):
            td, count, ct = split.treedefs[k], split.counts[k], got[k]
            leaves = split.leaves[start : start + count]
            start += count
            if ct is None:
                flat.extend([None] * count)
                continue
            ct_leaves, ct_td = trees.flatten(ct)
            if ct_td != td:
                order = trees.reorder(td, ct_td)
                if order is None:
                    where = trees.describe_mismatch(
                        td, ct_td, f"args[{pos}]", ("in the argument", "in its cotangent")
                    )
                    raise UsageError(
                        f"{self._name()}: bwd's cotangent for argument {pos} has another "
                        f"structure than the argument: {where}. Return a tree like the "
                        "argument (None for a zero leaf)."
                    )
                ordered: list[Any] = [None] * count
                for j, i in enumerate(order):
                    ordered[i] = ct_leaves[j]
                ct_leaves = ordered
            for j, (leaf, c) in enumerate(zip(leaves, ct_leaves)):
                flat.append(self._check_leaf(td, j, pos, leaf, c))
        return flat

    def _check_leaf(self, td: trees.TreeDef, index: int, pos: int, leaf: Any, ct: Any) -> Any:
        if ct is None or leaf_kind(leaf) != "f":
            return None  # integer/bool/constant leaves take no cotangent
        # (the leaf's own shape first: np.shape costs a microsecond; a leaf whose shape
        # is not its attribute's, or differs in type only, takes the exact test below)
        if leaf_kind(ct) == "f" and getattr(leaf, "shape", ()) == getattr(ct, "shape", ()):
            return ct
        path = trees.leaf_path(td, f"args[{pos}]", index)  # (built for the message only)
        if leaf_kind(ct) != "f":
            raise UsageError(
                f"{self._name()}: bwd's cotangent at {path} (argument {pos}) is "
                f"{describe(ct)}; a cotangent must be a floating array or float like the "
                "argument's leaf, or None for a zero."
            )
        want, have = tuple(np.shape(leaf)), tuple(getattr(ct, "shape", ()))
        if want != have:
            raise UsageError(
                f"{self._name()}: bwd's cotangent at {path} (argument {pos}) has shape "
                f"{have} but the argument's leaf has shape {want}; return a cotangent "
                "shaped like the argument (sum over broadcast axes)."
            )
        return ct

    def _check_tangents(self, td: trees.TreeDef, out_leaves: list[Any], t: Any) -> list[Any]:
        t_leaves, t_td = trees.flatten(t)
        if t_td != td:
            order = trees.reorder(td, t_td)
            if order is None:
                where = trees.describe_mismatch(td, t_td, "out", ("in out", "in tangent_out"))
                raise UsageError(
                    f"{self._name()}: the jvp rule's tangent_out has another structure "
                    f"than its out: {where}. Return a tangent tree like the output."
                )
            ordered: list[Any] = [None] * len(t_leaves)
            for j, i in enumerate(order):
                ordered[i] = t_leaves[j]
            t_leaves = ordered
        result = []
        for j, (o, tl) in enumerate(zip(out_leaves, t_leaves)):
            if tl is None:
                result.append(zero_tangent(o))
                continue
            want, have = tuple(np.shape(o)), tuple(getattr(tl, "shape", ()))
            if want != have:
                path = trees.leaf_path(td, "out", j)
                raise UsageError(
                    f"{self._name()}: the jvp rule's tangent at {path} has shape {have} "
                    f"but the output there has shape {want}; return tangents shaped like "
                    "the output."
                )
            result.append(tl)
        return result
