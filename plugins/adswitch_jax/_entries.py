"""Bookkeeping of the jax engine's cached programs: entries, the owner shared by the
programs of one function, and counting compiles of look-alike functions."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any

from adswitch_jax._guard import Guard
from adswitch_jax._program import Trace
from adswitch_jax.notices import warn_once

__all__ = [
    "EAGER",
    "JIT",
    "JIT_AUX",
    "Entry",
    "Owner",
    "forget_compiles",
    "name_of",
    "note_compile",
    "owner_of",
]

JIT, JIT_AUX, EAGER = "jit", "jit+eager outputs", "eager"

# code object -> (how many function objects with that code were compiled, the last one)
_codes_compiled: dict[Any, tuple[int, weakref.ref[Any]]] = {}
_RECOMPILE_WARN_AFTER = 8


class Owner:
    """Shared by the programs of one front-end key (one function, many shapes): how many
    of them were dropped because what ``f`` reads changed."""

    __slots__ = ("__weakref__", "stale")

    def __init__(self) -> None:
        self.stale = 0


# Weak values: an owner lives as long as a cached program of its key does.
_owners: weakref.WeakValueDictionary[Hashable, Owner] = weakref.WeakValueDictionary()


class Entry:
    """One cached program, the objects it baked in, and how to run it."""

    __slots__ = ("guard", "mode", "output_structure", "owner", "program", "trace")

    def __init__(self, owner: Owner) -> None:
        self.mode = JIT
        self.output_structure: Hashable = None  # what the LossFn said when f was traced
        self.guard: Guard | None = None  # set once the program ran: what it baked in
        self.owner = owner
        self.trace = Trace()
        self.program: Callable[..., Any] | None = None


def owner_of(cache_key: Hashable) -> Owner:
    """The owner shared by every cached program of the front end's ``cache_key``."""
    owner = _owners.get(cache_key)
    if owner is None:
        owner = Owner()
        _owners[cache_key] = owner
    return owner


def name_of(func: Any) -> str:
    """``"f (qualified name)"`` for messages."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    return f"f ({name})" if name else "f"


def forget_compiles() -> None:
    """Forget the compile counts (for tests)."""
    _codes_compiled.clear()


def note_compile(func: Any) -> None:
    """Count a compile of ``func``; warn once when look-alikes keep compiling.

    A new function object with the same code on every call (a lambda or closure made
    inside a loop) compiles again every time. Only new function objects count;
    recompiles of one function for new shapes do not.
    """
    code = getattr(func, "__code__", None)
    if code is None:
        return
    if len(_codes_compiled) > 4096:
        _codes_compiled.clear()
    count, last = _codes_compiled.get(code, (0, None))
    if last is not None and last() is func:
        return
    count += 1
    try:
        _codes_compiled[code] = (count, weakref.ref(func))
    except TypeError:  # not weakly referenceable: not worth keeping alive
        return
    if count == _RECOMPILE_WARN_AFTER:
        warn_once(
            ("recompile", code),
            f"jax engine: {name_of(func)} was compiled {count} times: it is a new function "
            "object on each call (a lambda or closure defined inside a loop). Fix: define f "
            "once and pass the values that change as arguments (ad.Const(...) for those not "
            "differentiated).",
        )
