"""Backward sweeps over a recorded autograd graph: from many outputs, as often as needed.

autograd's own ``backward_pass`` starts from one output node and sorts the graph again
on every call. A pullback starts from every differentiated output at once and runs
once per cotangent, so the order is computed once (:func:`order`) and each sweep
(:func:`backward`) only walks it. The sweep collects the cotangent of every root it is
given instead of returning the last node's, so one sweep gives the gradient of every
leaf (a tied array is one leaf: its uses sum on its root).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from autograd.core import add_outgrads, sparse_object_types
from autograd.util import toposort

__all__ = ["backward", "order"]

_SPARSE = sparse_object_types


class _Outputs:
    """A stand-in node whose parents are the output nodes, so that one topological sort
    covers them all (a node listed twice counts twice, as autograd's sort expects)."""

    __slots__ = ("parents",)

    def __init__(self, nodes: Sequence[Any]) -> None:
        self.parents = tuple(nodes)


def order(nodes: Sequence[Any]) -> list[Any]:
    """Every ancestor of ``nodes`` (themselves included), each after all its children."""
    return list(toposort(_Outputs(nodes)))[1:]


def backward(
    nodes: Iterable[Any], seeds: Sequence[tuple[Any, Any]], roots: Mapping[Any, int]
) -> dict[Any, Any]:
    """One reverse sweep: the cotangent reaching each of ``roots``.

    Args:
        nodes: the nodes in an order where each comes after all its children (an
            :func:`order`, or autograd's ``toposort`` from a single output).
        seeds: ``(node, cotangent)`` pairs; a node may appear more than once (its
            cotangents add up). The cotangents are never written into.
        roots: the root nodes whose cotangents are wanted.

    Returns:
        ``{root: cotangent}`` for the roots the seeds reach (an absent root: zero).
    """
    outgrads: dict[Any, tuple[Any, bool]] = {}
    for node, seed in seeds:
        outgrads[node] = add_outgrads(outgrads.get(node), seed)
    found: dict[Any, Any] = {}
    pop, get = outgrads.pop, outgrads.get
    for node in nodes:
        entry = pop(node, None)
        if entry is None:
            continue  # nothing flows through this node
        if node in roots:
            found[node] = entry[0]
            continue
        for parent, ingrad in zip(node.parents, node.vjp(entry[0]), strict=False):
            previous = get(parent)
            if previous is None and type(ingrad) not in _SPARSE:
                outgrads[parent] = (ingrad, False)  # add_outgrads' first case, inlined
            else:
                outgrads[parent] = add_outgrads(previous, ingrad)
    return found
