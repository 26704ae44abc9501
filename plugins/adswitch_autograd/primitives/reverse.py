"""Reverse mode with a kept graph: ``vjp`` (a reusable pullback) and ``vjp_apply``.

``f`` runs once, recording autograd's ``VJPNode`` graph from every active leaf to every
differentiated output; the graph's order is sorted once, and each pullback call is one
backward sweep over it (:mod:`.sweeps`). A batch of cotangents is one sweep per entry on
the same graph -- never one array with a leading axis: autograd's VJPs ``unbroadcast``
their cotangent to the argument's shape, which would sum a batch axis away.

A pullback owns what it needs. autograd's recorded VJPs keep references to the values
``f`` read, so ``vjp`` gives ``f`` private copies of the caller's numpy arguments (and, in
a nested call, traced copies of the enclosing call's arrays, which that call may still
write into), and hands out copies of the outputs the graph saved; writes ``f`` makes into
a differentiated argument reach the caller's array right after the run. ``vjp_apply``
sweeps before returning, so it needs no copies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from autograd.core import VJPNode
from autograd.tracer import Box

from adswitch.errors import UnsupportedError
from adswitch.spec import CallInfo, OutputFn, SeedFn

from ..mutation.writes import copy_of
from ..tracing import levels
from ..tracing.boxes import GuardedBox, raw_value
from ..tracing.run import run, write_back
from .results import as_leaf_gradient, concrete, owned, stack
from .sweeps import backward, order

__all__ = ["Pullback", "vjp", "vjp_apply"]

_BOX_TYPES = Box.types
_new_root = VJPNode.new_root


def _root(i: int) -> Any:
    return _new_root()


class Pullback:
    """The linear map of one recorded run: ``pullback(cotangents, batched=False)``.

    Holds the graph's nodes in sweep order, the output nodes and the leaves' roots; see
    :class:`adswitch.spec.Pullback` for the contract.
    """

    __slots__ = ("_enclosing", "_ends", "_leaves", "_order", "_roots")

    def __init__(
        self,
        ends: list[tuple[int, Any]],
        roots: dict[Any, int],
        leaves: Sequence[Any],
    ) -> None:
        self._ends = ends  # (output position, output node) of the traced outputs
        self._order = order([node for _, node in ends])
        self._roots = roots
        self._leaves = list(leaves)
        self._enclosing = levels.enclosing()

    def __call__(self, cotangents: Sequence[Any], /, batched: bool = False) -> list[Any | None]:
        with levels.LOCK:
            if levels.enclosing() != self._enclosing:
                raise UnsupportedError(
                    "this autograd pullback was made inside another differentiation call "
                    "than the one running now; its derivatives would not reach the "
                    "enclosing call. Call ad.vjp and its pullback inside the same call of f."
                )
            return sweep(self._order, self._ends, self._roots, self._leaves, cotangents, batched)

    def __repr__(self) -> str:
        return f"<autograd pullback over {len(self._order)} nodes>"


def sweep(
    nodes: list[Any],
    ends: list[tuple[int, Any]],
    roots: dict[Any, int],
    leaves: Sequence[Any],
    cotangents: Sequence[Any],
    batched: bool,
) -> list[Any | None]:
    """The gradients per leaf for ``cotangents`` (one per differentiated output), one
    backward sweep per batch entry."""
    if not batched:
        found = _found(nodes, ends, roots, cotangents)
        grads: list[Any | None] = [None] * len(leaves)
        for node, i in roots.items():
            grads[i] = as_leaf_gradient(found.get(node), leaves[i])
        return owned(grads, cotangents)
    size = next((len(c) for c in cotangents if c is not None), 0)
    rows = [_found(nodes, ends, roots, [c[b] for c in cotangents]) for b in range(size)]
    out: list[Any | None] = [None] * len(leaves)
    for node, i in roots.items():
        out[i] = stack([row.get(node) for row in rows], leaves[i])
    return out


def _found(
    nodes: list[Any], ends: list[tuple[int, Any]], roots: dict[Any, int], cotangents: Sequence[Any]
) -> dict[Any, Any]:
    if not ends:
        return {}
    return backward(nodes, [(node, cotangents[k]) for k, node in ends], roots)


def _ends(diffs: Sequence[Any], level: int) -> list[tuple[int, Any]]:
    return [
        (k, d._node) for k, d in enumerate(diffs) if type(d) in _BOX_TYPES and d._trace == level
    ]


def vjp(
    fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], Pullback]:
    """Run ``fn`` once and return its concrete outputs and a reusable :class:`Pullback`.

    Example:
        >>> import autograd.numpy as anp
        >>> fn = lambda leaves: ([leaves[0] * leaves[0]], [leaves[0] * leaves[0]])
        >>> out, pullback = vjp(fn, [np.array([1.0, 2.0])], [True], CallInfo())
        >>> pullback([np.array([1.0, 10.0])])[0]
        array([ 2., 40.])
    """
    with levels.LOCK:
        return _vjp(fn, leaves, active, info.depth == 0)


def _vjp(
    fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], outermost: bool
) -> tuple[list[Any], Pullback]:
    seen, writable = _private(leaves, active, outermost)
    level, values, roots, (diffs, out_leaves) = run(
        fn, seen, active, _root, _new_root, outermost, writable
    )
    ends = _ends(diffs, level)
    if outermost:
        write_back(leaves, seen, values, roots)
    handed = _Handed(leaves, seen)
    outs = [handed.out(concrete(value, level)) for value in out_leaves]
    # The private copies stand for the leaves (same kind, shape, dtype): the caller's own
    # arrays are not kept alive by the pullback.
    return outs, Pullback(ends, roots, seen)


def _private(
    leaves: Sequence[Any], active: Sequence[bool], outermost: bool
) -> tuple[list[Any], set[int]]:
    """What ``f`` gets instead of the caller's arrays, and which of them it may write.

    numpy arrays become read-only copies (writes into a differentiated one go to its box
    and reach the caller's array through ``write_back``; into any other, they are refused
    as for a frozen argument). An enclosing call's traced arrays become traced copies:
    that call may write into its own arrays after this one, which would change a box
    the graph refers to.
    """
    seen = list(leaves)
    writable: set[int] = set()
    for i, leaf in enumerate(leaves):
        if type(leaf) is np.ndarray:
            copy = seen[i] = leaf.copy()
            copy.flags.writeable = False
            if outermost and active[i] and leaf.flags.writeable:
                writable.add(id(copy))
        elif type(leaf) in _BOX_TYPES and type(raw_value(leaf)) is np.ndarray:
            seen[i] = copy_of(leaf)
    return seen, writable


class _Handed:
    """Outputs as the caller gets them: not an array the graph refers to.

    An output that is a private copy as ``f`` got it is the caller's own argument back
    (as a plain call returns it); every other array is copied (numpy), or copied as a
    traced array (at depth > 0).
    """

    __slots__ = ("_copied", "_mine")

    def __init__(self, leaves: Sequence[Any], seen: Sequence[Any]) -> None:
        self._mine = {id(s): leaf for leaf, s in zip(leaves, seen, strict=True) if s is not leaf}
        self._copied: dict[int, Any] = {}

    def out(self, value: Any) -> Any:
        if type(value) is np.ndarray or (
            isinstance(value, GuardedBox) and type(raw_value(value)) is np.ndarray
        ):
            key = id(value)
            if key in self._mine:
                return self._mine[key]
            copied = self._copied.get(key)
            if copied is None:  # one copy per array: an output listed twice stays one
                copied = self._copied[key] = (
                    value.copy() if type(value) is np.ndarray else (copy_of(value))
                )
            return copied
        return value


def vjp_apply(
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    seed: SeedFn,
    info: CallInfo,
) -> tuple[list[Any], list[Any | None]]:
    """Run ``fn`` once and sweep back the cotangents ``seed`` makes from its outputs."""
    with levels.LOCK:
        return _vjp_apply(fn, leaves, active, seed, info.batched, info.depth == 0)


def _vjp_apply(
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    seed: Callable[[Sequence[Any]], list[Any]],
    batched: bool,
    outermost: bool,
) -> tuple[list[Any], list[Any | None]]:
    level, values, roots, (diffs, out_leaves) = run(fn, leaves, active, _root, _new_root, outermost)
    ends = _ends(diffs, level)
    cotangents = seed([concrete(d, level) for d in diffs])
    nodes = order([node for _, node in ends])
    grads = sweep(nodes, ends, roots, leaves, cotangents, batched)
    if outermost:
        # Only now, after the sweeps: until then the graph refers to the caller's arrays.
        write_back(leaves, leaves, values, roots)
    return [concrete(value, level) for value in out_leaves], grads
