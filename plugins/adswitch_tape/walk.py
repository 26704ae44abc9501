"""The walk over what ``f`` can read besides its arguments, for ``guard``.

:class:`Walk` starts at the user's function and follows its defaults, closure cells, the
globals its code names (in nested code too), the attributes its code names of the
modules it reads, into dicts, lists, tuples, sets, objects' attributes, classes (their
methods and class attributes), bound methods, ``functools.partial``, functions' own
attributes, and the functions found there. Each reference it follows becomes a *probe*
``(kind, owner, key, object found)`` that :func:`read` can follow again; the numpy
arrays met are collected (the guard compares them by value). Libraries (numpy, adswitch,
the standard library's pure modules) are taken as they are. What it cannot vouch for
raises :class:`Unprovable`: a source of fresh values (``random``, ``numpy.random``,
``time``, a random generator), an object whose state it cannot see (an iterator, a
file, a C object), more than :data:`MAX_OBJECTS` objects or :data:`MAX_ARRAY_BYTES` of
arrays.
"""

from __future__ import annotations

import functools
import random
import types
from typing import Any

import numpy as np

__all__ = [
    "ATTR", "CELL", "INDEX", "ITEM", "LEN", "MAX_ARRAY_BYTES", "MAX_OBJECTS", "MISSING", "SET",
    "Unprovable", "Walk", "read",
]  # fmt: skip

MAX_OBJECTS = 2048
MAX_ARRAY_BYTES = 16 * 2**20
MISSING = object()

# Values: never changed in place, compared by identity, not looked into.
_VALUES = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    range,
    slice,
    type(Ellipsis),
    type(NotImplemented),
    np.generic,
    np.dtype,
    np.ufunc,
    types.BuiltinFunctionType,
    types.CodeType,
    # a class's C-level descriptors (slots, methods of builtins): fixed with the class
    types.MemberDescriptorType,
    types.GetSetDescriptorType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
)
_VALUE_TYPES = frozenset(_VALUES) | {types.ModuleType, object}
# Libraries taken as they are (their modules' attributes and their functions not walked).
_LIBRARIES = frozenset(
    (
        "adswitch", "adswitch_tape", "numpy", "builtins", "math", "cmath", "functools",
        "operator", "itertools", "typing", "collections", "dataclasses", "abc", "types",
        "enum", "numbers", "array_api_compat", "scipy", "warnings", "contextlib",
    )
)  # fmt: skip
# Sources of fresh values: a call reading one is never replayed.
_FRESH_MODULES = frozenset(("random", "numpy.random", "time", "secrets", "uuid", "datetime"))
_FRESH_TYPES: tuple[type, ...] = (
    np.random.Generator,
    np.random.RandomState,
    np.random.BitGenerator,
    random.Random,
)


# What has a ``__module__`` that may be a source of fresh values (``from time import time``;
# numpy.random's functions are Cython functions: any callable is asked).
_CODE_TYPES = frozenset((types.FunctionType, types.BuiltinFunctionType, type))


def _from_fresh_module(obj: Any) -> bool:
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        return False
    return module in _FRESH_MODULES or module.startswith("numpy.random.")


class Unprovable(Exception):
    """The walk met something it cannot vouch for."""


def _library(obj: Any) -> bool:
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and module.partition(".")[0] in _LIBRARIES


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


# Probe kinds: how a probe reads its value again.
ATTR, ITEM, LEN, INDEX, CELL, SET = range(6)


class Walk:
    """One walk: *probes* that re-read every reference it followed (``(kind, owner, key,
    object found)``), and the arrays met (see the module doc)."""

    __slots__ = ("arrays", "bytes", "count", "probes", "seen")

    def __init__(self) -> None:
        self.probes: list[tuple[int, Any, Any, Any]] = []
        self.arrays: list[np.ndarray] = []
        self.seen: set[int] = set()
        self.bytes = 0
        self.count = 0

    def root(self, func: Any) -> None:
        """Walk the user's function (looked into wherever it is defined)."""
        if type(func) is types.FunctionType:
            self.seen.add(id(func))
            self.function(func)
        else:
            self.value(func)

    def probe(self, kind: int, owner: Any, key: Any, found: Any) -> None:
        """Note a reference followed, then walk what it holds."""
        self.probes.append((kind, owner, key, found))
        self.value(found)

    def value(self, obj: Any) -> None:
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
        if isinstance(obj, np.ndarray):
            if id(obj) in self.seen:
                return
            self.seen.add(id(obj))
            self.bytes += obj.nbytes
            if self.bytes > MAX_ARRAY_BYTES:
                raise Unprovable(
                    f"it reads more than {MAX_ARRAY_BYTES // 2**20} MiB of numpy arrays from "
                    "closures and globals (compared on every call)"
                )
            self.arrays.append(obj)
            return
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        if isinstance(obj, types.ModuleType):
            if obj.__name__ in _FRESH_MODULES:
                raise Unprovable(f"it uses the module {obj.__name__} (fresh values on each call)")
            return
        if isinstance(obj, _FRESH_TYPES):
            raise Unprovable(f"it uses a random generator ({kind.__name__})")
        if kind is types.FunctionType:
            if not _library(obj):
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
                self.probes.append((CELL, obj, None, MISSING))
        elif isinstance(obj, type):
            self.klass(obj)
        else:
            self.instance(obj)

    def klass(self, cls: type) -> None:
        """A class of the user's: what its methods read, its class attributes (library
        classes are taken as they are)."""
        for c in cls.__mro__:
            if c is object or _library(c) or (id(c) in self.seen and c is not cls):
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
        kind = type(obj)
        behaviour = getattr(kind, "__adswitch_state__", None)
        if type(behaviour) is tuple and _library(kind):
            # an adswitch object naming the attributes its results depend on (a rule's
            # function and derivatives); the rest are its caches, filled by the calls
            self.probe(ATTR, obj, "__class__", kind)
            for name in behaviour:
                self.probe(ATTR, obj, name, getattr(obj, name, MISSING))
            return
        attributes = getattr(obj, "__dict__", None)
        slots = [s for c in kind.__mro__ for s in getattr(c, "__slots__", ()) if type(s) is str]
        if type(attributes) is not dict and not slots:
            if _library(kind) and callable(obj):
                return  # a library's callable (a ufunc-like object, a namespace function)
            raise Unprovable(
                f"it reads a {kind.__module__}.{kind.__qualname__}, whose state the tape "
                "cannot see (an iterator, a file, a C object)"
            )
        self.probe(ATTR, obj, "__class__", kind)
        self.value(kind)
        if type(attributes) is dict:
            self.probe(ATTR, obj, "__dict__", attributes)
        for name in slots:
            self.probe(ATTR, obj, name, getattr(obj, name, MISSING))

    def function(self, fn: types.FunctionType) -> None:
        self.probe(ATTR, fn, "__code__", fn.__code__)
        self.probe(ATTR, fn, "__defaults__", fn.__defaults__)
        self.probe(ATTR, fn, "__kwdefaults__", fn.__kwdefaults__)
        self.probe(ATTR, fn, "__dict__", fn.__dict__)  # f.counter and such
        self.value(fn.__closure__)
        names = _code_names(fn.__code__)
        scope = fn.__globals__
        builtins = scope.get("__builtins__")
        for name in names:
            found = scope.get(name, MISSING)
            self.probe(ITEM, scope, name, found)
            if found is MISSING and type(builtins) is dict:
                self.probe(ITEM, builtins, name, builtins.get(name, MISSING))
            if isinstance(found, types.ModuleType):
                self.names(found, names)

    def names(self, owner: types.ModuleType, names: list[str]) -> None:
        """The attributes of a module that ``names`` may look up on it (a class's are all
        walked, see ``klass``)."""
        library = owner.__name__.partition(".")[0] in _LIBRARIES
        for name in names:
            found = getattr(owner, name, MISSING)
            if found is MISSING:
                continue
            if library:
                if isinstance(found, types.ModuleType) and found.__name__ in _FRESH_MODULES:
                    raise Unprovable(f"it uses the module {found.__name__} (fresh values)")
                continue
            self.probe(ATTR, owner, name, found)


def read(kind: int, owner: Any, key: Any) -> Any:
    if kind == ATTR:
        return getattr(owner, key, MISSING)
    if kind == ITEM:
        return owner.get(key, MISSING)
    if kind == LEN:
        return len(owner)
    if kind == INDEX:
        return owner[key] if key < len(owner) else MISSING
    if kind == CELL:
        try:
            return owner.cell_contents
        except ValueError:
            return MISSING
    return frozenset(map(id, owner))
