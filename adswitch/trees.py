"""Flatten and rebuild argument trees, with key paths for error messages.

Containers the walker knows: ``tuple``, ``list``, ``dict`` (and ``OrderedDict``,
``defaultdict``), namedtuples, dataclass instances, and any type taught with
:func:`register_tree` (a registration also covers subclasses). Everything else is a
leaf. Dict children come in insertion order -- that is the "flatten order" that
decides which occurrence of a tied array receives its total gradient.

A treedef is ``None`` for a leaf, or a tuple ``(handler, aux, children)``; treedefs
compare equal exactly when two trees have the same structure, and are hashable when
every ``aux`` is.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import numpy as np

__all__ = [
    "TreeDef",
    "describe_mismatch",
    "flatten",
    "leaf_path",
    "leaf_paths",
    "register_tree",
    "reorder",
    "unflatten",
]

TreeDef = Any  # None (a leaf) or tuple[_Handler, Hashable, tuple[TreeDef, ...]]


class _Handler:
    """How to take one container type apart and put it back together."""

    __slots__ = ("flatten", "keys", "name", "unflatten")

    def __init__(
        self,
        name: str,
        flatten: Callable[[Any], tuple[Sequence[Any], Hashable]],
        unflatten: Callable[[Hashable, list[Any]], Any],
        keys: Callable[[Hashable, int], list[str]],
    ) -> None:
        self.name = name
        self.flatten = flatten
        self.unflatten = unflatten
        self.keys = keys

    def __repr__(self) -> str:
        return f"<tree node {self.name}>"


_LEAF = _Handler("leaf", lambda x: ((), None), lambda aux, c: None, lambda aux, n: [])


def _index_keys(aux: Hashable, n: int) -> list[str]:
    return [f"[{i}]" for i in range(n)]


def _dict_keys(aux: Any, n: int) -> list[str]:
    return [f"[{k!r}]" for k in aux]


def _attr_keys(aux: Any, n: int) -> list[str]:
    return [f".{name}" for name in aux[0]]


_TUPLE = _Handler("tuple", lambda x: (x, None), lambda aux, c: tuple(c), _index_keys)
_LIST = _Handler("list", lambda x: (x, None), lambda aux, c: c, _index_keys)
_DICT = _Handler(
    "dict",
    lambda x: (list(x.values()), tuple(x)),
    lambda aux, c: dict(zip(aux, c)),  # type: ignore[call-overload]
    _dict_keys,
)
_ORDERED = _Handler(
    "OrderedDict",
    lambda x: (list(x.values()), tuple(x)),
    lambda aux, c: collections.OrderedDict(zip(aux, c)),  # type: ignore[call-overload]
    _dict_keys,
)
_DEFAULT = _Handler(
    "defaultdict",
    lambda x: (list(x.values()), (x.default_factory, *x)),
    lambda aux, c: collections.defaultdict(aux[0], zip(aux[1:], c)),  # type: ignore[index]
    lambda aux, n: [f"[{k!r}]" for k in aux[1:]],  # type: ignore[index]
)

_HANDLERS: dict[type, _Handler] = {
    tuple: _TUPLE,
    list: _LIST,
    dict: _DICT,
    collections.OrderedDict: _ORDERED,
    collections.defaultdict: _DEFAULT,
}
for _leaf_type in (np.ndarray, float, int, bool, complex, str, bytes, type(None)):
    _HANDLERS[_leaf_type] = _LEAF

# Types registered by the user or an engine plugin; they also cover subclasses.
_REGISTERED: dict[type, _Handler] = {}
# Called with a type the walker does not know, before it is taken as a leaf; a hook
# returns True when it registered something (the registry loads engine tree types here).
UNKNOWN_TYPE_HOOKS: list[Callable[[type], bool]] = []


def register_tree(
    cls: type,
    flatten: Callable[[Any], tuple[Any, Hashable]],
    unflatten: Callable[[Hashable, Any], Any],
) -> None:
    """Teach the tree walker a container type (and its subclasses).

    Args:
        cls: the container type.
        flatten: ``flatten(obj) -> (children, aux)``. ``children`` is a list (key paths
            read ``[i]``) or a dict name -> child (key paths read ``.name``); ``aux`` is
            any hashable static data needed to rebuild.
        unflatten: ``unflatten(aux, children) -> obj``, receiving children of the same
            kind ``flatten`` returned. It must accept ``None`` children (gradients of
            non-differentiable leaves are ``None``).

    Example:
        >>> import adswitch as ad, numpy as np
        >>> class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        >>> ad.register_tree(Pair, lambda p: ({"a": p.a, "b": p.b}, None),
        ...                  lambda aux, c: Pair(c["a"], c["b"]))
        >>> def f(p):
        ...     return ad.array_namespace(p.a).sum(p.a * p.b)
        >>> g = ad.gradient(f, Pair(np.ones(2), np.full(2, 3.0)))[0]
        >>> g.a.tolist(), g.b.tolist()
        ([3.0, 3.0], [1.0, 1.0])
    """

    def flat(obj: Any) -> tuple[Sequence[Any], Hashable]:
        children, aux = flatten(obj)
        if isinstance(children, dict):
            return list(children.values()), (True, tuple(children), aux)
        return list(children), (False, None, aux)

    def unflat(aux: Any, children: list[Any]) -> Any:
        is_dict, names, user_aux = aux
        return unflatten(user_aux, dict(zip(names, children)) if is_dict else children)

    def keys(aux: Any, n: int) -> list[str]:
        is_dict, names, _ = aux
        return [f".{name}" for name in names] if is_dict else _index_keys(None, n)

    handler = _Handler(cls.__qualname__, flat, unflat, keys)
    _REGISTERED[cls] = handler
    # Forget cached decisions about subclasses so that the registration applies to them.
    for known in list(_HANDLERS):
        if issubclass(known, cls) and known not in (tuple, list, dict):
            del _HANDLERS[known]
    _HANDLERS[cls] = handler


def _namedtuple_handler(cls: type) -> _Handler:
    fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
    return _Handler(
        cls.__qualname__,
        lambda x: (x, (fields,)),
        lambda aux, c: cls(*c),
        _attr_keys,
    )


def _dataclass_handler(cls: type) -> _Handler:
    names = tuple(f.name for f in dataclasses.fields(cls))

    def flat(obj: Any) -> tuple[Sequence[Any], Hashable]:
        return [getattr(obj, n) for n in names], (names,)

    def unflat(aux: Hashable, children: list[Any]) -> Any:
        # Bypass __init__/__post_init__ and frozen=True: we rebuild, not construct.
        obj: Any = object.__new__(cls)
        for name, child in zip(names, children):
            object.__setattr__(obj, name, child)
        return obj

    return _Handler(cls.__qualname__, flat, unflat, _attr_keys)


def _resolve(cls: type) -> _Handler:
    for base in cls.__mro__:
        if base in _REGISTERED:
            handler = _REGISTERED[base]
            break
    else:
        # Engines first: a dataclass an engine registers (an equinox module) keeps its
        # static fields out of the children only as the engine takes it apart.
        if any(hook(cls) for hook in UNKNOWN_TYPE_HOOKS):
            return _resolve(cls)
        if issubclass(cls, tuple) and hasattr(cls, "_fields"):
            handler = _namedtuple_handler(cls)
        elif dataclasses.is_dataclass(cls):
            handler = _dataclass_handler(cls)
        else:
            handler = _LEAF
    _HANDLERS[cls] = handler
    return handler


def flatten(tree: Any, leaves: list[Any] | None = None) -> tuple[list[Any], TreeDef]:
    """Flatten ``tree`` into ``(leaves, treedef)``; appends to ``leaves`` when given.

    Example:
        >>> from adswitch.trees import flatten, unflatten
        >>> leaves, td = flatten({"a": 1.0, "b": (2, [3.0])})
        >>> leaves
        [1.0, 2, 3.0]
        >>> unflatten(td, [10.0, 20, 30.0])
        {'a': 10.0, 'b': (20, [30.0])}
    """
    out: list[Any] = [] if leaves is None else leaves
    if (_HANDLERS.get(type(tree)) or _resolve(type(tree))) is _LEAF:  # a bare leaf, e.g. a loss
        out.append(tree)
        return out, None
    return out, _flatten_into(tree, out.append)


# The walkers recurse through module-level functions, not closures: a closure that calls
# itself is a reference cycle, which would keep the leaves list (the caller's arrays, the
# gradients) alive until the garbage collector happens to run.
def _flatten_into(x: Any, append: Callable[[Any], None]) -> TreeDef:
    handler = _HANDLERS.get(type(x)) or _resolve(type(x))
    if handler is _LEAF:
        append(x)
        return None
    children, aux = handler.flatten(x)
    defs: list[TreeDef] = []
    for child in children:
        if _HANDLERS.get(type(child)) is _LEAF:  # most children are arrays: no recursion
            append(child)
            defs.append(None)
        else:
            defs.append(_flatten_into(child, append))
    return (handler, aux, tuple(defs))


def unflatten(treedef: TreeDef, leaves: Sequence[Any] | Iterator[Any]) -> Any:
    """Rebuild a tree of ``treedef``'s structure from ``leaves`` (in flatten order)."""
    if treedef is None and isinstance(leaves, (list, tuple)):
        return leaves[0]  # a bare leaf, e.g. a scalar loss
    return _unflatten_from(treedef, iter(leaves))


def _unflatten_from(td: TreeDef, it: Iterator[Any]) -> Any:
    if td is None:
        return next(it)
    handler, aux, children = td
    return handler.unflatten(
        aux, [next(it) if c is None else _unflatten_from(c, it) for c in children]
    )


def leaf_paths(treedef: TreeDef, root: str) -> list[str]:
    """Key paths of every leaf, e.g. ``args[1].layers[0].W``, in flatten order."""
    paths: list[str] = []
    _collect_paths(treedef, root, paths)
    return paths


def _collect_paths(td: TreeDef, prefix: str, paths: list[str]) -> None:
    if td is None:
        paths.append(prefix)
        return
    handler, aux, children = td
    for key, child in zip(handler.keys(aux, len(children)), children):
        _collect_paths(child, prefix + key, paths)


def leaf_path(treedef: TreeDef, root: str, index: int) -> str:
    """The key path of leaf number ``index``."""
    return leaf_paths(treedef, root)[index]


def reorder(expected: TreeDef, given: TreeDef) -> list[int] | None:
    """Match ``given`` to ``expected`` when they differ only in the order of some dicts'
    keys (``jax.tree_util`` and optax hand dicts back with sorted keys: the same keys are
    the same structure). Returns, for each leaf of ``given`` in flatten order, the index
    of the leaf at the same key path in ``expected``; ``None`` when the structures differ
    otherwise (another key set, another container, another length).

    An ``OrderedDict``'s order is part of what it is (its ``==`` compares it): only plain
    dicts and defaultdicts are matched by key.

    Example:
        >>> given = flatten({"b": [2.0, 3.0], "a": 1.0})[1]
        >>> reorder(flatten({"a": 1.0, "b": [2.0, 3.0]})[1], given)
        [1, 2, 0]
    """
    out: list[int] = []
    return out if _match(expected, given, 0, out) else None


def _size(td: TreeDef) -> int:
    return 1 if td is None else sum(_size(c) for c in td[2])


def _key_order(handler: _Handler, x: Any, y: Any) -> list[int] | None:
    """For each child of ``y``, the index of the child with its key in ``x`` (dicts)."""
    if handler is _DEFAULT:
        if x[0] != y[0]:  # another default_factory
            return None
        x, y = x[1:], y[1:]
    elif handler is not _DICT:
        return None
    index = {k: i for i, k in enumerate(x)}
    if len(x) != len(y) or any(k not in index for k in y):
        return None
    return [index[k] for k in y]


def _match(x: TreeDef, y: TreeDef, base: int, out: list[int]) -> bool:
    if x is None or y is None:
        if x is None and y is None:
            out.append(base)
            return True
        return False
    if x == y:
        out.extend(range(base, base + _size(x)))
        return True
    handler, aux, children = x
    if handler is not y[0] or len(children) != len(y[2]):
        return False
    order = list(range(len(children))) if aux == y[1] else _key_order(handler, aux, y[1])
    if order is None:
        return False
    starts = []
    for child in children:
        starts.append(base)
        base += _size(child)
    return all(_match(children[i], cy, starts[i], out) for i, cy in zip(order, y[2]))


def describe_mismatch(
    a: TreeDef, b: TreeDef, root: str, labels: tuple[str, str] = ("in val", "in dval")
) -> str:
    """Where two treedefs first differ, as a key path and what each holds there;
    ``labels`` say where each comes from (``("prepared", "given")``...). Dicts are
    compared by key (their order does not matter: see :func:`reorder`)."""
    return _first_mismatch(a, b, root, root, labels) or root


def _node_kind(td: TreeDef) -> str:
    if td is None:
        return "a leaf"
    handler, aux, children = td
    keys = handler.keys(aux, len(children))
    article = "an" if handler.name[:1].lower() in "aeiou" else "a"
    return f"{article} {handler.name} with children {', '.join(keys) or 'none'}"


def _first_mismatch(
    x: TreeDef, y: TreeDef, prefix: str, root: str, labels: tuple[str, str]
) -> str | None:
    if x == y:
        return None
    here = prefix or root
    if x is None or y is None or x[0] is not y[0] or len(x[2]) != len(y[2]):
        return f"{here}: {_node_kind(x)} {labels[0]}, {_node_kind(y)} {labels[1]}"
    keys = x[0].keys(x[1], len(x[2]))
    order = list(range(len(x[2]))) if x[1] == y[1] else _key_order(x[0], x[1], y[1])
    if order is None:
        other = y[0].keys(y[1], len(y[2]))
        missing = ", ".join(k for k in keys if k not in other) or "none"
        extra = ", ".join(k for k in other if k not in keys) or "none"
        detail = ""
        if missing != extra:  # (both "none": the same keys, another kind of difference)
            detail = f" (only {labels[0]}: {missing}; only {labels[1]}: {extra})"
        return f"{here}: {_node_kind(x)} {labels[0]}, {_node_kind(y)} {labels[1]}{detail}"
    for i, cy in zip(order, y[2]):
        found = _first_mismatch(x[2][i], cy, prefix + keys[i], root, labels)
        if found:
            return found
    return None
