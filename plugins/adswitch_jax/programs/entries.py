"""Bookkeeping of the jax engine's cached programs: entries, the owner shared by the
programs of one function, and counting compiles of look-alike functions."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any

from adswitch_jax.closures.baked import Guard
from adswitch_jax.notices import warn_once
from adswitch_jax.primitives.calls import Holder, Layout, Trace
from adswitch_jax.primitives.results import Kinds

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
    "warning_key",
]

JIT, JIT_AUX, EAGER = "jit", "jit+eager outputs", "eager"

# id of a code object -> (the code, how many programs were compiled for it with other
# values read besides the arguments, the last such description)
_codes_compiled: dict[int, tuple[Any, int, Hashable]] = {}
_RECOMPILE_WARN_AFTER = 8
_lock = threading.Lock()


class Owner:
    """Shared by the programs of one function description and argument structure (many
    shapes): how many of them were dropped because what ``f`` baked in changed."""

    __slots__ = ("__weakref__", "stale")

    def __init__(self) -> None:
        self.stale = 0


# Weak values: an owner lives as long as a cached program of its key does.
_owners: weakref.WeakValueDictionary[Hashable, Owner] = weakref.WeakValueDictionary()


class Entry:
    """One cached program, what it needs to run, and what it baked in.

    Attributes:
        mode: ``JIT``; ``JIT_AUX`` (outputs from an extra eager call); ``EAGER``.
        program: the jitted program; ``holder`` its body until compiled.
        layout: where its arguments go; ``trace``: what tracing it found.
        kinds: what the results must look like (the leaves' kinds and dtypes).
        output_structure: what the front end's function said when ``f`` was traced.
        guard: what the program baked in, checked before reuse (``None``: nothing).
        held: the objects identified by ``id`` in its key, kept so their ids stay theirs.
        appliers: a vjp program's pullback programs, made on first use.
    """

    __slots__ = (
        "appliers",
        "guard",
        "held",
        "holder",
        "kinds",
        "layout",
        "mode",
        "output_structure",
        "owner",
        "program",
        "trace",
    )

    def __init__(self, owner: Owner, layout: Layout, kinds: Kinds) -> None:
        self.mode = JIT
        self.output_structure: Hashable = None
        self.guard: Guard | None = None
        self.held: list[Any] = []
        self.owner = owner
        self.layout = layout
        self.kinds = kinds
        self.trace = Trace()
        self.program: Callable[..., Any] | None = None
        self.holder: Holder | None = None
        self.appliers: tuple[Callable[..., Any], Callable[..., Any]] | None = None


def owner_of(key: Hashable) -> Owner:
    """The owner shared by every cached program of ``key`` (function and structure)."""
    owner = _owners.get(key)
    if owner is None:
        owner = Owner()
        _owners[key] = owner
    return owner


def name_of(func: Any) -> str:
    """``"f (qualified name)"`` for messages."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    return f"f ({name})" if name else "f"


def warning_key(what: str, func: Any) -> Hashable:
    """What a warning about ``func`` is remembered by: its code (a lambda made anew on
    every call is warned about once), else its type -- never ``func`` itself, whose
    closure (and the arrays in it) the remembered key would keep alive."""
    code = getattr(func, "__code__", None) or getattr(
        getattr(func, "__func__", None), "__code__", None
    )
    return (what, code if code is not None else type(func))


def forget_compiles() -> None:
    """Forget the compile counts (for tests)."""
    with _lock:
        _codes_compiled.clear()


def note_compile(func: Any, description: Hashable) -> None:
    """Count a compile of ``func``; warn once when its code keeps compiling because the
    values it reads besides its arguments (``description``, from
    :func:`adswitch_jax.closures.captures.walk`) keep changing. Recompiles for new argument
    shapes or structures do not count."""
    code = getattr(func, "__code__", None)
    if code is None:
        return
    with _lock:
        if len(_codes_compiled) > 4096:
            _codes_compiled.clear()
        known, count, last = _codes_compiled.get(id(code), (None, 0, None))
        if known is not code:
            count, last = 0, None
        if last == description:
            return
        count += 1
        _codes_compiled[id(code)] = (code, count, description)
    if count == _RECOMPILE_WARN_AFTER:
        warn_once(
            warning_key("recompile", func),
            f"jax engine: {name_of(func)} was compiled {count} times because values it "
            "reads besides its arguments (closure variables, defaults, globals: numbers, "
            "strings, objects -- each baked into its program) differ from call to call. Fix: "
            "pass the values that change as arguments (ad.Const(...) for those not "
            "differentiated); arrays in its closure need no fix (they are inputs of the "
            "program, not baked in).",
        )
