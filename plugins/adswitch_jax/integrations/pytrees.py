"""jax's pytree nodes as containers of adswitch's tree walker.

A class registered with jax (``jax.tree_util.register_pytree_node``, an equinox module, a
flax ``nnx`` module, a ``flax.struct`` dataclass) is taken apart the way jax takes it
apart: its children are differentiated, its static data (jax's *aux data*: equinox's
static fields, ``nnx``'s attributes that are not pytrees) stays in the structure, and the
gradient is an object of the same type rebuilt by jax's own unflatten -- what ``jax.grad``
returns for it.

No jax import here: :func:`tree_node` is asked only once jax is imported (a class cannot be
registered with jax before that), and reads it from ``sys.modules``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable
from typing import Any

from adswitch.errors import ActivityError
from adswitch_jax.integrations.nnx import is_graph_node, note_rebuilt

__all__ = ["TreeNode", "tree_node"]

#: ``(flatten, unflatten)`` as :func:`adswitch.register_tree` takes them.
TreeNode = tuple[Callable[[Any], tuple[Any, Hashable]], Callable[[Hashable, Any], Any]]


def tree_node(cls: type) -> TreeNode | None:
    """How the walker takes ``cls`` apart when jax knows it as a pytree node, else ``None``.

    Namedtuples are left to the walker (it takes them apart as jax does). Two kinds of
    class are no jax pytree but would silently lose their gradients as leaves: a subclass
    of a registered class that has no registration of its own (jax registers exact
    types), and a flax ``nnx`` object made with ``pytree=False``. For those the answer is
    a node whose flatten raises :class:`~adswitch.errors.ActivityError` saying the fix
    (register the subclass; ``nnx.split``/``nnx.merge``).

    Args:
        cls: a type the walker does not know.

    Returns:
        ``(flatten, unflatten)`` for :func:`adswitch.register_tree`, or ``None``.

    Example:
        >>> import jax
        >>> class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        >>> jax.tree_util.register_pytree_node(
        ...     Pair, lambda p: ((p.a, p.b), None), lambda aux, c: Pair(*c))
        >>> flatten, unflatten = tree_node(Pair)
        >>> children, aux = flatten(Pair(1.0, 2.0))
        >>> children, unflatten(aux, [3.0, 4.0]).b
        ([1.0, 2.0], 4.0)
    """
    jax = sys.modules.get("jax")
    tree_util = getattr(jax, "tree_util", None)
    if tree_util is None or _is_namedtuple(cls):
        return None
    if tree_util.is_tree_node(cls):
        return _flatten, _unflatten
    if is_graph_node(cls) or any(
        tree_util.is_tree_node(base) for base in cls.__mro__[1:] if base.__module__ not in _STDLIB
    ):
        return _flatten, _unflatten  # whose flatten raises: jax takes it for a leaf
    return None


# Subclasses of these modules' containers (a dict subclass) are left to the walker: jax
# takes them for leaves like any unregistered type, and they are no mistake of jax's users.
_STDLIB = frozenset({"builtins", "collections"})


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


def _flatten(obj: Any) -> tuple[Any, Hashable]:
    tree_util = sys.modules["jax"].tree_util
    # One level only: every child is a leaf to jax here, so the walker recurses itself
    # (and None children stay children, where jax would drop them as empty nodes).
    pairs, treedef = tree_util.tree_flatten_with_path(obj, is_leaf=lambda child: child is not obj)
    if len(pairs) == 1 and not pairs[0][0]:  # the empty key path: obj itself is the leaf
        # A subclass of a registered class (the walker's registrations cover subclasses,
        # jax's do not), or an nnx object made with pytree=False.
        raise _not_a_node(type(obj))
    children = [child for _, child in pairs]
    names = [getattr(path[0], "name", None) for path, _ in pairs]
    if all(isinstance(name, str) for name in names) and len(set(names)) == len(names):
        return dict(zip(names, children)), treedef  # key paths read .name
    return children, treedef  # key paths read [i]


def _unflatten(treedef: Any, children: Any) -> Any:
    leaves = list(children.values()) if isinstance(children, dict) else children
    obj = sys.modules["jax"].tree_util.tree_unflatten(treedef, leaves)
    note_rebuilt(obj)  # f's writes into an nnx Variable of this copy would be lost
    return obj


def _not_a_node(cls: type) -> ActivityError:
    name = cls.__qualname__
    if is_graph_node(cls):
        return ActivityError(
            f"a flax nnx {name} made with pytree=False is not a jax pytree, so adswitch "
            "cannot see its parameters (it would return no gradient for them). Fix: split it "
            "and differentiate its state: graphdef, state = nnx.split(model); "
            "ad.gradient(lambda state, x: loss(nnx.merge(graphdef, state), x), state, x) -- "
            f"or define {name} without pytree=False."
        )
    return ActivityError(
        f"{name} subclasses a class registered as a jax pytree, but jax takes it for a "
        "leaf: jax's registrations are per exact type and this subclass has none, so its "
        "arrays would not be differentiated. Fix: register it too "
        "(jax.tree_util.register_pytree_node, or ad.register_tree)."
    )
