"""adswitch's levels on autograd's trace stack: one per call, each with its node type.

Every adswitch call opens one level of autograd's trace stack and records there with
one node type: ``VJPNode`` for reverse mode, :class:`~.pushforward.TangentNode` for
forward mode. Two facts about the open levels are needed away from the call that
opened them:

* a fresh buffer made inside ``f`` (``xp.zeros_like(x)``) is a constant root, and it
  must be a node of its level's type -- autograd takes a primitive's node type from the
  first traced argument, so two types on one level would mix (:func:`constant_root`);
* a pullback kept after its call (``ad.vjp``) may only run inside the very calls that
  enclosed it when it was made: each open level has a serial number, never reused, and
  :func:`enclosing` lists those of the open levels.

One thread at a time: autograd keeps its trace levels in one global counter, so two
threads tracing at once could hand a nested call its enclosing call's level. Every
entry point holds :data:`LOCK` (re-entrant, for nested calls).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from autograd.core import VJPNode
from autograd.tracer import trace_stack

__all__ = ["LOCK", "close_level", "constant_root", "enclosing", "open_level"]

LOCK = threading.RLock()

_OPEN: list[tuple[int, int, Callable[[], Any]]] = []  # (level, serial, constant root maker)
_SERIALS = itertools.count()
_new_vjp_root = VJPNode.new_root


def open_level(make_constant_root: Callable[[], Any]) -> int:
    """Open a new trace level recording with the node type ``make_constant_root`` makes
    roots of; returns the level (``trace_stack.top``)."""
    trace_stack.top += 1
    level: int = trace_stack.top
    _OPEN.append((level, next(_SERIALS), make_constant_root))
    return level


def close_level() -> None:
    """Close the level :func:`open_level` opened last."""
    _OPEN.pop()
    trace_stack.top -= 1


def constant_root() -> Any:
    """A root node without a derivative for the innermost trace level."""
    if _OPEN:
        level, _, make = _OPEN[-1]
        if level == trace_stack.top:
            return make()
    # autograd called directly inside f opened the innermost level; it records VJPNodes
    return _new_vjp_root()


def enclosing() -> tuple[int, ...]:
    """The serial numbers of the open adswitch levels, outermost first."""
    return tuple(serial for _, serial, _ in _OPEN)
