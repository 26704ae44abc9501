"""One walk over what a user's ``f`` reads besides its arguments (engine-free).

An engine that skips ``f``'s Python on a later call (a replayed tape, a compiled program)
must know when what ``f`` reads outside its arguments changed. :func:`walk_closures`
follows ``f``'s defaults, closure cells, the globals its code names (nested code too),
the attributes it names of the modules it reads, into dicts, lists, tuples, sets,
objects (an adswitch object's ``__adswitch_state__`` only: the rest are its caches),
classes, bound methods, ``functools.partial``, functions' attributes, and the functions
found there. It yields every reference followed as a *probe* ``(kind, owner, key, object
found)`` that :func:`read_probe` reads again, and the numpy arrays met (to compare by
value); libraries (:data:`LIBRARIES`, and those the engine names) are taken as they are.
What it cannot vouch for raises :class:`Unprovable`: a source of fresh values (``random``,
``numpy.random``, ``time``, a random generator), an object whose state it cannot see (an
iterator, a file, a C object), more than :data:`MAX_OBJECTS` objects or
:data:`MAX_ARRAY_BYTES` of arrays. What to do with a walk is the engine's policy.
"""

from __future__ import annotations

import enum
import functools
import random
import types
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = [
    "LIBRARIES", "MAX_ARRAY_BYTES", "MAX_OBJECTS", "NOT_FOUND", "ClosureWalk", "ProbeKind",
    "Unprovable", "read_probe", "walk_closures",
]  # fmt: skip

MAX_OBJECTS = 2048
MAX_ARRAY_BYTES = 16 * 2**20
NOT_FOUND: Any = object()  # what a probe finds where nothing is (an unset global, a cell)

# Values: never changed in place, compared by identity, not looked into.
_VALUES = (
    type(None), bool, int, float, complex, str, bytes, range, slice, type(Ellipsis),
    type(NotImplemented), np.generic, np.dtype, np.ufunc, types.BuiltinFunctionType,
    types.CodeType,
    # a class's C-level descriptors (slots, methods of builtins): fixed with the class
    types.MemberDescriptorType, types.GetSetDescriptorType, types.WrapperDescriptorType,
    types.MethodDescriptorType, types.ClassMethodDescriptorType,
)  # fmt: skip
_VALUE_TYPES = frozenset(_VALUES) | {types.ModuleType, object}
# Libraries taken as they are (their modules' attributes and their functions not walked).
LIBRARIES = frozenset(
    (
        "adswitch", "numpy", "builtins", "math", "cmath", "functools", "operator",
        "itertools", "typing", "collections", "dataclasses", "abc", "types", "enum",
        "numbers", "array_api_compat", "scipy", "warnings", "contextlib",
    )
)  # fmt: skip
# Sources of fresh values: a call reading one is never the same computation twice.
_FRESH_MODULES = frozenset(("random", "numpy.random", "time", "secrets", "uuid", "datetime"))
_FRESH_TYPES = (np.random.Generator, np.random.RandomState, np.random.BitGenerator, random.Random)
# What has a ``__module__`` that may be a source of fresh values (``from time import time``;
# numpy.random's functions are Cython functions: any callable is asked).
_CODE_TYPES = frozenset((types.FunctionType, types.BuiltinFunctionType, type))


class ProbeKind(enum.IntEnum):
    """How a probe reads its object again (see :func:`read_probe`)."""

    ATTR = 0  # getattr(owner, key)
    ITEM = 1  # owner.get(key): a dict, a mapping proxy
    LEN = 2  # len(owner): a container's size
    INDEX = 3  # owner[key]: a list
    CELL = 4  # owner.cell_contents: a closure cell
    SET = 5  # the ids of a set's members


ATTR, ITEM, LEN, INDEX, CELL, SET = ProbeKind


class Unprovable(Exception):
    """The walk met something it cannot vouch for (the message says what)."""


def _from_fresh_module(obj: Any) -> bool:
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        return False
    return module in _FRESH_MODULES or module.startswith("numpy.random.")


def _code_names(code: types.CodeType) -> list[str]:
    """The names ``code`` and the code nested in it (lambdas, comprehensions) look up, in
    a fixed order (cached per code object)."""
    names = _NAMES.get(code)
    if names is None:
        found: set[str] = set()
        pending = [code]
        while pending:
            c = pending.pop()
            found.update(c.co_names)
            pending.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        names = _NAMES[code] = sorted(found)
        if len(_NAMES) > 4096:
            _NAMES.clear()
            _NAMES[code] = names
    return names


_NAMES: dict[types.CodeType, list[str]] = {}


class ClosureWalk:
    """One walk (see the module doc).

    Args:
        libraries: the top-level packages taken as they are, besides :data:`LIBRARIES`
            (an engine names its own adapter).

    Attributes:
        probes: ``(kind, owner, key, object found)`` per reference followed, in order.
        arrays: the numpy arrays met (each once).
    """

    __slots__ = ("arrays", "bytes", "count", "libraries", "probes", "seen")

    def __init__(self, libraries: Iterable[str] = ()) -> None:
        self.probes: list[tuple[ProbeKind, Any, Any, Any]] = []
        self.arrays: list[np.ndarray] = []
        self.seen: set[int] = set()
        self.bytes = 0
        self.count = 0
        self.libraries = LIBRARIES | frozenset(libraries)

    def _library(self, obj: Any) -> bool:
        module = getattr(obj, "__module__", None)
        return isinstance(module, str) and module.partition(".")[0] in self.libraries

    def root(self, func: Any) -> None:
        """Walk the user's function (looked into wherever it is defined)."""
        if type(func) is types.FunctionType:
            self.seen.add(id(func))
            self.function(func)
        else:
            self.value(func)

    def probe(self, kind: ProbeKind, owner: Any, key: Any, found: Any) -> None:
        """Note a reference followed, then walk what it holds."""
        self.probes.append((kind, owner, key, found))
        self.value(found)

    def value(self, obj: Any) -> None:
        """Walk what ``obj`` holds (raises :class:`Unprovable`, see the module doc)."""
        self.count += 1
        if self.count > MAX_OBJECTS:
            raise Unprovable(f"it reads more than {MAX_OBJECTS} objects besides its arguments")
        kind = type(obj)
        if (kind in _CODE_TYPES or callable(obj)) and _from_fresh_module(obj):
            raise Unprovable(
                f"it uses {getattr(obj, '__qualname__', obj)} of the module {obj.__module__} "
                "(fresh values on each call)"
            )
        if kind is types.BuiltinFunctionType:
            owner = getattr(obj, "__self__", None)  # a bound builtin method: its object
            if owner is not None and not isinstance(owner, types.ModuleType):
                self.value(owner)
            return
        if kind in _VALUE_TYPES or isinstance(obj, _VALUES):
            return
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            self.bytes += obj.nbytes
            if self.bytes > MAX_ARRAY_BYTES:
                raise Unprovable(
                    f"it reads more than {MAX_ARRAY_BYTES // 2**20} MiB of numpy arrays from "
                    "closures and globals (compared on every call)"
                )
            self.arrays.append(obj)
        elif isinstance(obj, types.ModuleType):
            if obj.__name__ in _FRESH_MODULES:
                raise Unprovable(f"it uses the module {obj.__name__} (fresh values on each call)")
        elif isinstance(obj, _FRESH_TYPES):
            raise Unprovable(f"it uses a random generator ({kind.__name__})")
        else:
            self._contents(obj, kind)

    def _contents(self, obj: Any, kind: type) -> None:
        if kind is types.FunctionType:
            if not self._library(obj):
                self.function(obj)
        elif kind is types.MethodType:
            self.value(obj.__self__)
            self.value(obj.__func__)
        elif kind in (dict, types.MappingProxyType):
            self.probes.append((LEN, obj, None, len(obj)))
            for key, item in list(obj.items()):
                self.value(key)
                self.probe(ITEM, obj, key, item)
        elif kind is list:
            self.probes.append((LEN, obj, None, len(obj)))
            for k, item in enumerate(list(obj)):
                self.probe(INDEX, obj, k, item)
        elif kind in (tuple, frozenset):
            for item in obj:
                self.value(item)
        elif kind is set:
            self.probes.append((SET, obj, None, frozenset(map(id, obj))))
            for item in list(obj):
                self.value(item)
        elif kind in (staticmethod, classmethod):
            self.value(obj.__func__)
        elif kind is property:
            for accessor in (obj.fget, obj.fset, obj.fdel):
                self.value(accessor)
        elif kind is functools.cached_property:
            self.value(obj.func)
        elif kind is functools.partial:
            self.value(obj.func)
            self.value(obj.args)
            self.value(obj.keywords)
        elif kind is types.CellType:
            try:
                self.probe(CELL, obj, None, obj.cell_contents)
            except ValueError:  # an empty cell: the variable is not bound yet
                self.probes.append((CELL, obj, None, NOT_FOUND))
        elif isinstance(obj, type):
            self.klass(obj)
        else:
            self.instance(obj)

    def klass(self, cls: type) -> None:
        """A class of the user's: what its methods read, its class attributes (library
        classes are taken as they are)."""
        for c in cls.__mro__:
            if c is object or self._library(c) or (id(c) in self.seen and c is not cls):
                continue
            self.seen.add(id(c))
            self.probe(LEN, c.__dict__, None, len(c.__dict__))
            for name, item in list(c.__dict__.items()):
                if name.startswith("__") and name.endswith("__") and name != "__call__":
                    continue  # (the class's machinery: __dict__, __module__, __doc__...)
                if name.startswith("_abc_"):
                    continue  # (an abc.ABC's registry: isinstance bookkeeping)
                self.probe(ITEM, c.__dict__, name, item)

    def instance(self, obj: Any) -> None:
        """An object: its class, its ``__dict__`` and slots."""
        kind = type(obj)
        behaviour = getattr(kind, "__adswitch_state__", None)
        if type(behaviour) is tuple and self._library(kind):
            # a library object naming the attributes its results depend on (a rule's
            # function and derivatives); the rest are its caches, filled by the calls
            self.probe(ATTR, obj, "__class__", kind)
            for name in behaviour:
                self.probe(ATTR, obj, name, getattr(obj, name, NOT_FOUND))
            return
        attributes = getattr(obj, "__dict__", None)
        slots = [s for c in kind.__mro__ for s in getattr(c, "__slots__", ()) if type(s) is str]
        if type(attributes) is not dict and not slots:
            if self._library(kind) and callable(obj):
                return  # a library's callable (a ufunc-like object, a namespace function)
            raise Unprovable(
                f"it reads a {kind.__module__}.{kind.__qualname__}, whose state adswitch "
                "cannot see (an iterator, a file, a C object)"
            )
        self.probe(ATTR, obj, "__class__", kind)
        self.value(kind)
        if type(attributes) is dict:
            self.probe(ATTR, obj, "__dict__", attributes)
        for name in slots:
            self.probe(ATTR, obj, name, getattr(obj, name, NOT_FOUND))

    def function(self, fn: types.FunctionType) -> None:
        """A plain function: its code, defaults, attributes, closure and globals."""
        self.probe(ATTR, fn, "__code__", fn.__code__)
        self.probe(ATTR, fn, "__defaults__", fn.__defaults__)
        self.probe(ATTR, fn, "__kwdefaults__", fn.__kwdefaults__)
        self.probe(ATTR, fn, "__dict__", fn.__dict__)  # f.counter and such
        self.value(fn.__closure__)
        names = _code_names(fn.__code__)
        scope = fn.__globals__
        builtins = scope.get("__builtins__")
        for name in names:
            found = scope.get(name, NOT_FOUND)
            self.probe(ITEM, scope, name, found)
            if found is NOT_FOUND and type(builtins) is dict:
                self.probe(ITEM, builtins, name, builtins.get(name, NOT_FOUND))
            if isinstance(found, types.ModuleType):
                self.names(found, names)

    def names(self, owner: types.ModuleType, names: list[str]) -> None:
        """The attributes of a module that ``names`` may look up on it (a class's are all
        walked, see :meth:`klass`)."""
        library = owner.__name__.partition(".")[0] in self.libraries
        for name in names:
            found = getattr(owner, name, NOT_FOUND)
            if found is NOT_FOUND:
                continue
            if library:
                if isinstance(found, types.ModuleType) and found.__name__ in _FRESH_MODULES:
                    raise Unprovable(f"it uses the module {found.__name__} (fresh values)")
                continue
            self.probe(ATTR, owner, name, found)


def read_probe(kind: ProbeKind, owner: Any, key: Any) -> Any:
    """What a probe's reference holds now (:data:`NOT_FOUND` where nothing is).

    Args:
        kind, owner, key: the first three fields of a probe.

    Returns:
        The object found (``LEN``: the length, ``SET``: the members' ids); unchanged while
        it ``is`` the probe's (``==`` for those two).
    """
    if kind == ATTR:
        return getattr(owner, key, NOT_FOUND)
    if kind == ITEM:
        return owner.get(key, NOT_FOUND)
    if kind == LEN:
        return len(owner)
    if kind == INDEX:
        return owner[key] if key < len(owner) else NOT_FOUND
    if kind == CELL:
        try:
            return owner.cell_contents
        except ValueError:
            return NOT_FOUND
    return frozenset(map(id, owner))


def walk_closures(
    func: Any, extra: Iterable[Any] = (), libraries: Iterable[str] = ()
) -> ClosureWalk:
    """Walk what ``func`` (and the objects ``extra``) can read besides its arguments.

    Args:
        func: the user's function (any callable).
        extra: more objects to walk (arguments that are neither arrays nor plain values).
        libraries: top-level packages taken as they are, besides :data:`LIBRARIES`.

    Returns:
        The :class:`ClosureWalk`; raises :class:`Unprovable` for what it cannot vouch for.

    Example:
        >>> state = {"scale": 1.0}
        >>> found = walk_closures(lambda x: state["scale"] * x)
        >>> state["scale"] = 3.0
        >>> any(read_probe(k, o, key) is not e for k, o, key, e in found.probes
        ...     if k in (ProbeKind.ITEM, ProbeKind.ATTR))
        True
    """
    walk = ClosureWalk(libraries)
    walk.root(func)
    for obj in extra:
        walk.value(obj)
    return walk
