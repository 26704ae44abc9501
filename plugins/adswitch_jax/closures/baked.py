"""The guard on what a compiled program baked in besides its arguments.

``jax.jit`` turns everything ``f`` reads from outside its arguments into constants of the
program. The arrays ``f`` captures in its closure and defaults are inputs instead
(:mod:`adswitch_jax.closures.captures`); what it reads from global arrays, from objects (a bound
method's, a captured model's) and from dicts without floating arrays stays baked in, and
those objects are in the program's key by identity only. A :class:`Guard` records, after
the program was traced, what can be reached from those objects (a bounded walk) and
copies of the writable numpy arrays among them; :meth:`Guard.holds` tells whether all are
still the same objects and the arrays hold the same values.

The walk goes into dicts, tuples, lists and objects' attributes (``__slots__`` too), and
into the functions found there (their defaults, closure cells and the globals they name),
three levels deep and at most :data:`MAX_TOKENS` objects. Lists too: a global ``weights =
[w0, w1]`` whose item is replaced must not run the program that baked in the old one (a
list ``f`` appends to, a log, then makes every call compile again: right, only slower).
Data reached only past those bounds is assumed constant, as ``jax.jit`` itself assumes of
everything. Arrays are compared bit for bit (``-0.0`` is not ``0.0``: ``1 / x`` tells them
apart). Objects are held by weak reference where Python allows (a guard keeps none of the
user's arrays alive). No jax import here.
"""

from __future__ import annotations

import types
import weakref
from typing import Any

import numpy as np

__all__ = ["MAX_COPY_BYTES", "MAX_TOKENS", "Guard", "collect"]

MAX_TOKENS = 512
MAX_COPY_BYTES = 16 * 2**20
_DEPTH = 3
_MISSING = object()
# Never looked into: immutable values, and objects whose contents are code or libraries.
_ATOMS = (
    str,
    bytes,
    int,
    float,
    complex,
    type(None),
    types.ModuleType,
    type,
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    np.dtype,
    np.generic,
    np.ufunc,
)
# The same as exact types, for a fast first test (the sentinel is a plain object).
_ATOM_TYPES = frozenset((*_ATOMS, bool, object, np.ufunc))


def collect(roots: list[Any]) -> tuple[list[Any], list[np.ndarray]]:
    """The objects reachable from ``roots``, and the writable numpy arrays among them
    (see the module docstring for how far the walk goes).

    Args:
        roots: objects a function reads (its closure's, its globals').

    Returns:
        ``(tokens, arrays)``: every object met, in a fixed order, and the arrays.

    Example:
        >>> w = np.ones(2)
        >>> tokens, arrays = collect([{"w": w}])
        >>> arrays[0] is w
        True
    """
    tokens: list[Any] = []
    arrays: list[np.ndarray] = []
    seen: set[int] = set()
    for root in roots:
        _walk(root, tokens, arrays, _DEPTH, seen)
    return tokens, arrays


def _reads(fn: types.FunctionType) -> list[Any]:
    """What ``fn`` itself reads besides its arguments: defaults, closure cells, the
    globals it names (attribute names are among ``co_names`` too: absent, so constant)."""
    values: list[Any] = [fn.__defaults__, fn.__kwdefaults__]
    if fn.__defaults__:
        values.extend(fn.__defaults__)
    closure = fn.__closure__
    if closure:
        for cell in closure:
            try:
                values.append(cell.cell_contents)
            except ValueError:  # an empty cell: the variable is not bound yet
                values.append(_MISSING)
    get = fn.__globals__.get
    values.extend([get(name, _MISSING) for name in fn.__code__.co_names])
    return values


def _walk_function(
    fn: types.FunctionType, tokens: list[Any], arrays: list[np.ndarray], depth: int, seen: set[int]
) -> None:
    for value in _reads(fn):
        if type(value) in _ATOM_TYPES:  # most globals: modules, absent names
            tokens.append(value)
        else:
            _walk(value, tokens, arrays, depth, seen)


def _walk(
    value: Any, tokens: list[Any], arrays: list[np.ndarray], depth: int, seen: set[int]
) -> None:
    if len(tokens) >= MAX_TOKENS:
        return
    tokens.append(value)
    kind = type(value)
    if kind in _ATOM_TYPES:
        return
    if kind is np.ndarray:
        if value.flags.writeable:
            arrays.append(value)
        return
    if depth <= 0 or isinstance(value, _ATOMS):
        return
    if id(value) in seen:
        return
    seen.add(id(value))
    depth -= 1
    if kind is types.FunctionType:
        _walk_function(value, tokens, arrays, depth, seen)
    elif kind is types.MethodType:
        _walk(value.__self__, tokens, arrays, depth, seen)
        _walk(value.__func__, tokens, arrays, depth + 1, seen)
    elif kind is dict:
        for key, item in value.items():
            tokens.append(key)
            _walk(item, tokens, arrays, depth, seen)
    elif kind is tuple or kind is list:
        for item in value:
            _walk(item, tokens, arrays, depth, seen)
    else:
        attributes = getattr(value, "__dict__", None)
        if type(attributes) is dict:
            for key, item in attributes.items():
                tokens.append(key)
                _walk(item, tokens, arrays, depth, seen)
        for cls in kind.__mro__[:-1]:  # and ``__slots__`` attributes (a model's weights)
            for name in cls.__dict__.get("__slots__", ()):
                if type(name) is str and name not in ("__dict__", "__weakref__"):
                    tokens.append(name)
                    _walk(getattr(value, name, _MISSING), tokens, arrays, depth, seen)


def _same_values(a: np.ndarray, b: np.ndarray | None) -> bool:
    if b is None:  # too big to keep a copy of: identity was checked
        return True
    # (bit for bit: array_equal says 0.0 == -0.0, and a program that baked in one of them
    # gives the other's 1/x; the same NaN bits compare equal)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


class _Held:
    """A strong reference with the call signature of a weak one."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value


def _pin(value: Any) -> Any:
    # Weakly where possible: the guard must not keep the user's objects (and the arrays in
    # them) alive; a token that died simply fails the check.
    try:
        return weakref.ref(value)
    except TypeError:
        return _Held(value)


def _is_pinned(pin: Any, value: Any) -> bool:
    return pin() is value


class Guard:
    """What a program baked in from the objects ``f`` reads by identity, checked before
    the program is reused.

    Args:
        roots: those objects (:attr:`adswitch_jax.closures.captures.Walk.roots`), right after the
            program was traced.

    Example:
        >>> state = {"scale": 1.0}
        >>> guard = Guard([state])
        >>> guard.holds([state])
        True
        >>> state["scale"] = 3.0
        >>> guard.holds([state])
        False
    """

    __slots__ = ("copies", "pins", "unchecked_bytes")

    def __init__(self, roots: list[Any]) -> None:
        tokens, arrays = collect(roots)
        self.pins = [_pin(token) for token in tokens]
        # Values are compared for arrays up to MAX_COPY_BYTES each; a bigger one is only
        # checked to be the same object (copying it on every compile would be too costly).
        self.unchecked_bytes = sum(a.nbytes for a in arrays if a.nbytes > MAX_COPY_BYTES)
        self.copies = [a.copy() if a.nbytes <= MAX_COPY_BYTES else None for a in arrays]

    def holds(self, roots: list[Any]) -> bool:
        """Whether everything recorded is still the same object, with the same values."""
        tokens, arrays = collect(roots)
        if len(tokens) != len(self.pins) or not all(map(_is_pinned, self.pins, tokens)):
            return False
        return all(map(_same_values, arrays, self.copies))
