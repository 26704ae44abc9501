"""The suite's own tree walker, kept apart from adswitch's so that references and checks
do not trust the code under test.

It knows the containers the core rules name -- dicts (insertion order), lists, tuples,
namedtuples, dataclass instances (field order) -- plus types the catalogue registers with
:func:`register`, which teaches both this walker and adswitch the same flatten/unflatten
pair. Everything else is a leaf. Paths are spelled like adswitch's key paths
(``args[1]['W']``, ``args[0].layers[0].b``) so that failure messages name the leaf.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = [
    "register",
    "children",
    "rebuild",
    "leaves_with_paths",
    "containers_with_paths",
    "leaves",
    "unflatten_like",
    "map_unique",
    "is_float_leaf",
    "is_float_array",
]

Flatten = Callable[[Any], tuple[list[Any], Any]]
Unflatten = Callable[[Any, list[Any]], Any]

_REGISTRY: dict[type, tuple[Flatten, Unflatten]] = {}


def register(cls: type, flatten: Flatten, unflatten: Unflatten) -> None:
    """Teach this walker and adswitch the same container type.

    Args:
        cls: the container class.
        flatten: ``flatten(obj) -> (children, aux)``.
        unflatten: ``unflatten(aux, children) -> obj``.

    Example:
        >>> class Pair:
        ...     def __init__(self, a, b):
        ...         self.a, self.b = a, b
        >>> register(Pair, lambda p: ([p.a, p.b], None), lambda aux, c: Pair(*c))
        >>> [path for path, _ in leaves_with_paths(Pair(1.0, 2.0), "x")]
        ['x<Pair>[0]', 'x<Pair>[1]']
    """
    import adswitch as ad

    _REGISTRY[cls] = (flatten, unflatten)
    ad.register_tree(cls, flatten, unflatten)


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def children(obj: Any) -> list[tuple[str, Any]] | None:
    """The ``(path step, child)`` pairs of a container, or ``None`` for a leaf.

    Example:
        >>> children({"a": 1, "b": [2]})
        [("['a']", 1), ("['b']", [2])]
        >>> children(3.0) is None
        True
    """
    kind = type(obj)
    if kind in _REGISTRY:
        kids, _ = _REGISTRY[kind][0](obj)
        return [(f"<{kind.__name__}>[{i}]", kid) for i, kid in enumerate(kids)]
    if isinstance(obj, dict):
        return [(f"[{key!r}]", value) for key, value in obj.items()]
    if _is_namedtuple(obj):
        return [(f".{name}", value) for name, value in zip(obj._fields, obj, strict=True)]
    if isinstance(obj, list | tuple):
        return [(f"[{i}]", value) for i, value in enumerate(obj)]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [(f".{field.name}", getattr(obj, field.name)) for field in dataclasses.fields(obj)]
    return None


def rebuild(obj: Any, new_children: list[Any]) -> Any:
    """A container like ``obj`` holding ``new_children`` (in :func:`children` order).

    Example:
        >>> rebuild((1, 2), [3, 4])
        (3, 4)
    """
    kind = type(obj)
    if kind in _REGISTRY:
        flatten, unflatten = _REGISTRY[kind]
        return unflatten(flatten(obj)[1], list(new_children))
    if isinstance(obj, dict):
        return kind(zip(obj.keys(), new_children, strict=True))
    if _is_namedtuple(obj):
        return kind(*new_children)
    if isinstance(obj, list | tuple):
        return kind(new_children)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # copy.copy keeps init=False fields and frozen instances working alike.
        clone = copy.copy(obj)
        for field, value in zip(dataclasses.fields(obj), new_children, strict=True):
            object.__setattr__(clone, field.name, value)
        return clone
    raise TypeError(f"not a container: {kind.__name__}")


def leaves_with_paths(tree: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """Every leaf of ``tree`` in flatten order, with its path.

    Example:
        >>> list(leaves_with_paths({"w": [1.0, "s"]}, "args[0]"))
        [("args[0]['w'][0]", 1.0), ("args[0]['w'][1]", 's')]
    """
    kids = children(tree)
    if kids is None:
        yield prefix, tree
        return
    for step, kid in kids:
        yield from leaves_with_paths(kid, prefix + step)


def containers_with_paths(tree: Any, prefix: str) -> Iterator[tuple[str, str]]:
    """Every container of ``tree`` as ``(path, type name)``: the tree's shape.

    Example:
        >>> list(containers_with_paths({"w": (1.0,)}, "x"))
        [('x', 'dict'), ("x['w']", 'tuple')]
    """
    kids = children(tree)
    if kids is None:
        return
    yield prefix, type(tree).__qualname__
    for step, kid in kids:
        yield from containers_with_paths(kid, prefix + step)


def leaves(tree: Any) -> list[Any]:
    """The leaves of ``tree`` in flatten order.

    Example:
        >>> leaves([1, {"a": 2}])
        [1, 2]
    """
    return [leaf for _, leaf in leaves_with_paths(tree, "")]


def unflatten_like(tree: Any, new_leaves: list[Any]) -> Any:
    """``tree`` rebuilt with ``new_leaves`` in flatten order.

    Example:
        >>> unflatten_like([1, {"a": 2}], [5, 6])
        [5, {'a': 6}]
    """
    return _rebuild_from(tree, iter(new_leaves))


def _rebuild_from(node: Any, feed: Any) -> Any:
    # Module-level recursion: a self-calling closure would be a reference cycle.
    kids = children(node)
    if kids is None:
        return next(feed)
    return rebuild(node, [_rebuild_from(kid, feed) for _, kid in kids])


def map_unique(fn: Callable[[Any], Any], tree: Any) -> Any:
    """Apply ``fn`` to each leaf, once per object, so that tied leaves stay tied.

    Example:
        >>> import numpy as np
        >>> w = np.ones(2)
        >>> copied = map_unique(np.copy, {"a": w, "b": w})
        >>> copied["a"] is copied["b"] and copied["a"] is not w
        True
    """
    memo: dict[int, Any] = {}

    def apply(leaf: Any) -> Any:
        if id(leaf) not in memo:
            memo[id(leaf)] = fn(leaf)
        return memo[id(leaf)]

    return unflatten_like(tree, [apply(leaf) for leaf in leaves(tree)])


def is_float_array(value: Any) -> bool:
    """A numpy array of a real floating dtype.

    Example:
        >>> is_float_array(np.ones(2)), is_float_array(np.arange(2))
        (True, False)
    """
    return isinstance(value, np.ndarray) and value.dtype.kind == "f"


def is_float_leaf(value: Any) -> bool:
    """A differentiable leaf by the core rules: a floating array or a Python float.

    Example:
        >>> is_float_leaf(1.0), is_float_leaf(1), is_float_leaf(np.ones(1, np.float32))
        (True, False, True)
    """
    return is_float_array(value) or type(value) is float
