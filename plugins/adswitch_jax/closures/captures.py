"""What ``f`` is, as a cache key: its code and what it reads besides its arguments.

A compiled program is reused by every function that *is* the same computation: the same
code object, reading the same values from its closure, defaults and globals. A lambda
written inside a loop is a new function object on every pass, yet it is the same
computation each time, so it finds the program compiled on the first pass.

:func:`walk` describes ``f`` by what it reads, recursively into the plain functions it
reads (helpers), within :data:`DEPTH` levels and :data:`MAX_TOKENS` tokens:

* **floating arrays** (numpy, jax, traced) in a closure cell or a default, directly or in
  tuples and dicts there, are *lifted*: the key holds their shape and dtype, and their
  values become inputs of the program (:class:`Walk.lifted`), so a new value neither
  recompiles nor goes stale. While jax traces ``f`` they are swapped for traced values
  in place (:func:`adswitch_jax.closures.swaps.substituted`);
* immutable values (numbers, strings, tuples of them, dtypes) by value;
* modules, classes, code and builtins by identity (held: they live as long anyway);
* everything else -- objects, lists, dicts without floating arrays, arrays read from
  globals -- by identity (not held: see :class:`~adswitch_jax.closures.baked.Guard`, which checks
  what the program baked in from them).

No jax import here: jax's types are handed in by :func:`configure`.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from adswitch_jax.closures.reads import MISSING, known_names

__all__ = ["DEPTH", "MAX_TOKENS", "Walk", "bake", "configure", "unbake", "walk"]

DEPTH = 3
MAX_TOKENS = 512

# Tags between the tokens of a key (each says how the tokens after it read).
_FN, _IDENT, _ROOT, _LIFT, _TUPLE, _DICT, _SEEN, _EMPTY, _CUT, _METHOD = (
    object() for _ in range(10)
)
_MISSING = MISSING
# Compared by value (with their type: 1, 1.0 and True are equal in Python).
_VALUE_TYPES = frozenset((int, bool, str, bytes, type(None), complex, np.dtype, range))
# Compared by identity and held: nothing user-sized lives in them.
_HELD_TYPES = frozenset(
    (
        types.ModuleType,
        types.CodeType,
        types.BuiltinFunctionType,
        types.BuiltinMethodType,
        types.MethodWrapperType,
        types.WrapperDescriptorType,
        np.ufunc,
        type(Ellipsis),
        type(NotImplemented),
    )
)
_FLOATING = frozenset("fc")
_WIDE = frozenset((np.dtype(np.float64), np.dtype(np.complex128)))  # need 64-bit mode
_MAX_TUPLE = 64  # longer tuples are identified by identity

# jax's concrete array type and its Tracer (set by configure once jax is imported).
_jax_array: Any = type(None)
_jax_types: tuple[type, ...] = ()


def configure(array_type: type, tracer_type: type) -> None:
    """Tell the walker jax's concrete array type and its ``Tracer`` (jax-free module)."""
    global _jax_array, _jax_types
    _jax_array = array_type
    _jax_types = (array_type, tracer_type)


class Walk:
    """What one walk over ``f`` found.

    Attributes:
        key: a hashable description of ``f`` (tuple of tokens).
        lifted: the values of the lifted arrays, in order: the program's extra inputs.
        slots: where the lifted arrays sit, for :func:`substituted` (only needed when
            compiling).
        held: the objects identified in ``key`` by ``id`` that a cache entry must hold, so
            that their ids stay theirs (code objects, modules, classes).
        roots: the objects identified in ``key`` by ``id`` and not held; what the
            program baked in from them is the guard's to check.
        wide: some lifted array is 64-bit (the program then runs in 64-bit mode).
        reads: per plain function walked, what it read (for
            :func:`adswitch_jax.closures.recall.recall`).
        reusable: the walk can be reused while those reads are the same objects (not
            when it lifted arrays from a dict, which may change in place).
    """

    __slots__ = ("held", "key", "lifted", "reads", "reusable", "roots", "slots", "wide")

    def __init__(self) -> None:
        self.key: Any = ()
        self.lifted: list[Any] = []
        self.slots: list[tuple[Any, ...]] = []
        self.held: list[Any] = []
        self.roots: list[Any] = []
        self.wide = False
        self.reads: list[tuple[types.FunctionType, list[Any]]] = []
        self.reusable = True


class _Walker:
    __slots__ = ("out", "seen", "tokens")

    def __init__(self) -> None:
        self.tokens: list[Any] = []
        self.out = Walk()
        self.seen: dict[int, int] = {}  # id of a function or cell -> its order

    def root(self, value: Any) -> None:
        self.tokens += (_ROOT, id(value))
        self.out.roots.append(value)

    def held(self, value: Any) -> None:
        self.tokens += (_IDENT, id(value))
        self.out.held.append(value)

    def lift(self, value: Any) -> Any:
        """Record ``value`` (a floating array) as an input; its template for rebuilding."""
        if type(value) is np.ndarray:
            self.tokens += (_LIFT, value.shape, value.dtype)
        elif type(value) is _jax_array:
            self.tokens += (_LIFT, value.aval, value.sharding)
        else:  # a tracer of an enclosing transformation
            self.tokens += (_LIFT, value.shape, value.dtype, getattr(value, "weak_type", False))
        self.out.wide = self.out.wide or value.dtype in _WIDE
        self.out.lifted.append(value)
        return ("L", len(self.out.lifted) - 1)

    def value(self, value: Any, depth: int, liftable: bool) -> Any:
        """Append ``value``'s tokens. Returns its rebuild template when ``liftable`` (it
        sits in a closure cell or default) and it holds lifted arrays, else ``None``."""
        tokens = self.tokens
        if value is _MISSING:  # a global not defined (a builtin, or not yet assigned)
            tokens.append(_MISSING)
            return None
        if len(tokens) >= MAX_TOKENS:  # beyond the bounds: assumed constant
            tokens.append(_CUT)
            return None
        kind = type(value)
        if kind in _VALUE_TYPES:
            tokens += (kind, value)
            return None
        if kind is float:  # 0.0 == -0.0: the sign of a zero is told by hex
            tokens += (float, value if value else value.hex())
            return None
        if kind in _HELD_TYPES or isinstance(value, type):
            self.held(value)
            return None
        if kind is np.ndarray:
            if liftable and value.dtype.kind in _FLOATING:
                return self.lift(value)
            self.root(value)  # baked in, guarded by value
            return None
        if kind in _jax_types or isinstance(value, _jax_types):
            if liftable and value.dtype.kind in _FLOATING:
                return self.lift(value)
            self.root(value)
            return None
        if isinstance(value, np.generic):
            tokens += (kind, value.tobytes())
            return None
        if kind is types.FunctionType:
            if depth > 0:
                self.function(value, depth - 1)
            else:
                self.root(value)
            return None
        if kind is tuple and len(value) <= _MAX_TUPLE:
            tokens += (_TUPLE, len(value))
            parts = [self.value(item, depth - 1, liftable) for item in value]
            if any(part is not None for part in parts):
                return ("T", tuple(p if p is not None else ("K", v) for p, v in zip(parts, value)))
            return None
        if kind is dict and liftable and depth > 0 and _holds_floating_arrays(value):
            self.out.reusable = False  # a dict may change in place: walk it every call
            tokens += (_DICT, len(value))
            keys = tuple(value)
            parts = []
            for k in keys:
                self.value(k, 0, False)
                parts.append(self.value(value[k], depth - 1, True))
            subs = tuple(p if p is not None else ("K", value[k]) for p, k in zip(parts, keys))
            return ("D", keys, subs)
        if kind is types.MethodType:
            tokens.append(_METHOD)
            self.value(value.__func__, depth, False)
            self.root(value.__self__)
            return None
        self.root(value)
        return None

    def function(self, fn: types.FunctionType, depth: int) -> None:
        tokens = self.tokens
        order = self.seen.get(id(fn))
        if order is not None:  # recursion, or a helper read twice
            tokens += (_SEEN, order)
            return
        self.seen[id(fn)] = len(self.seen)
        code = fn.__code__
        lift = _baked.get(id(code)) is not code
        defaults = fn.__defaults__
        kwdefaults = fn.__kwdefaults__
        reads: list[Any] = [code, defaults, kwdefaults]
        self.out.reads.append((fn, reads))
        tokens += (_FN, id(code))
        self.out.held.append(code)
        if defaults is None:
            tokens.append(None)
        else:
            template = self.value(defaults, depth, lift)
            if template is not None:
                self.out.slots.append(("defaults", fn, template))
        if kwdefaults is None:
            tokens.append(None)
        else:
            template = self.kwdefaults(kwdefaults, depth, lift)
            if template is not None:
                self.out.slots.append(("kwdefaults", fn, template))
        closure = fn.__closure__
        if closure:
            for cell in closure:
                reads.append(self.cell(cell, depth, lift))
        names = known_names(code)
        get = fn.__globals__.get
        held = self.out.held
        for name in names:
            value = get(name, _MISSING)
            reads.append(value)
            # the commonest globals first: modules, builtins not shadowed, helper functions
            if value is _MISSING:
                tokens.append(_MISSING)
            elif type(value) in _HELD_TYPES:
                tokens += (_IDENT, id(value))
                held.append(value)
            elif type(value) is types.FunctionType and depth > 0:
                self.function(value, depth - 1)
            else:
                self.value(value, depth, False)

    def kwdefaults(self, kwdefaults: dict[str, Any], depth: int, lift: bool) -> Any:
        self.tokens += (_DICT, len(kwdefaults))
        keys = tuple(kwdefaults)
        parts = []
        for k in keys:
            self.tokens.append(k)
            parts.append(self.value(kwdefaults[k], depth, lift))
        if all(p is None for p in parts):
            return None
        self.out.reusable = False  # a dict may change in place: walk it every call
        return (
            "D",
            keys,
            tuple(p if p is not None else ("K", kwdefaults[k]) for p, k in zip(parts, keys)),
        )

    def cell(self, cell: Any, depth: int, lift: bool) -> Any:
        """Append the tokens of a closure cell's contents; return the contents."""
        try:
            contents = cell.cell_contents
        except ValueError:  # not bound yet
            self.tokens.append(_EMPTY)
            self.out.reusable = False
            return _EMPTY
        order = self.seen.get(id(cell))
        if order is not None:  # shared with a function walked already
            self.tokens += (_SEEN, order)
            return contents
        self.seen[id(cell)] = len(self.seen)
        template = self.value(contents, depth, lift)
        if template is not None:
            self.out.slots.append(("cell", cell, template))
        return contents


def _holds_floating_arrays(mapping: dict[Any, Any]) -> bool:
    for item in mapping.values():
        kind = type(item)
        if (kind is np.ndarray or kind in _jax_types or isinstance(item, _jax_types)) and (
            item.dtype.kind in _FLOATING
        ):
            return True
        if kind is tuple or kind is dict:
            values = item.values() if kind is dict else item
            if any(type(v) is np.ndarray or isinstance(v, _jax_types) for v in values):
                return True
    return False


# Code whose captured arrays stay baked into its programs: tracing it with them as traced
# inputs failed (Python control flow on their values). id -> the code (held: ids stay).
_baked: dict[int, types.CodeType] = {}


def bake(walk: Walk) -> None:
    """From now on, walks of the functions in ``walk`` lift none of their arrays: they are
    baked into the program (and guarded by value) as ``jax.jit`` bakes them."""
    if len(_baked) > 4096:
        _baked.clear()
    for fn, _ in walk.reads:
        _baked[id(fn.__code__)] = fn.__code__


def unbake() -> None:
    """Forget which code keeps its arrays baked in (for tests)."""
    _baked.clear()


def walk(func: Any) -> Walk:
    """Describe ``func`` by what it is (see the module docstring).

    Args:
        func: the user's function: a plain function, a bound method, or any callable
            (then identified by itself).

    Returns:
        A :class:`Walk`.

    Example:
        >>> def scaled(w):
        ...     return lambda x: x * w  # a new function object on every call
        >>> w = np.ones(2)
        >>> first, second = walk(scaled(w)), walk(scaled(w))
        >>> first.key == second.key, first.lifted[0] is w
        (True, True)
    """
    walker = _Walker()
    if type(func) is types.FunctionType:
        walker.function(func, DEPTH)
    else:
        walker.value(func, DEPTH, False)
    out = walker.out
    out.key = tuple(walker.tokens)
    return out
