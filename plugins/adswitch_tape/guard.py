"""What ``f`` reads besides its arguments, kept so that a replay can be refused when it changed.

A replay of a prepared call skips ``f``'s Python: it is the same computation only while
everything ``f`` can read outside its arguments is as it was when the call was recorded.
:func:`snapshot` walks what ``f`` can reach -- its defaults, closure cells, the globals its
code names (in nested functions too), the attributes its code names of the modules and
classes it reads, and into dicts, lists, tuples, sets, objects' attributes, the classes
of objects and of globals (their methods and class attributes), bound methods,
``functools.partial``, functions' own attributes and the functions found there -- and
keeps, as *probes*, every reference it followed with the object found (compared by
identity), and copies of the numpy arrays met (compared by value). :meth:`Snapshot.holds`
follows each reference again: the same objects everywhere mean a walk now would take the
same path and meet the same objects.

What the walk cannot vouch for makes the snapshot *unprovable* (:attr:`Snapshot.reason`)
and the call is never replayed: a source of fresh values (``random``, ``numpy.random``,
``time``, ``secrets``, ``uuid``, a random generator object), an object whose state it
cannot see (an iterator, a file, any object without attributes that is not a known
value type), more than :data:`MAX_OBJECTS` objects or :data:`MAX_ARRAY_BYTES` of arrays.
Libraries (numpy, adswitch, the standard library's pure modules) are taken as they are:
their functions and attributes are not walked.
"""

from __future__ import annotations

import functools
import keyword
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["MAX_ARRAY_BYTES", "MAX_OBJECTS", "Snapshot", "snapshot"]

MAX_OBJECTS = 2048
MAX_ARRAY_BYTES = 16 * 2**20
_MISSING = object()

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
)


class _Unprovable(Exception):
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
_ATTR, _ITEM, _LEN, _INDEX, _CELL, _SET = range(6)


class _Walk:
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
            raise _Unprovable(f"it reads more than {MAX_OBJECTS} objects besides its arguments")
        kind = type(obj)
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
                raise _Unprovable(
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
                raise _Unprovable(f"it uses the module {obj.__name__} (fresh values on each call)")
            return
        if isinstance(obj, _FRESH_TYPES):
            raise _Unprovable(f"it uses a random generator ({kind.__name__})")
        if kind is types.FunctionType:
            if not _library(obj):
                self.function(obj)
        elif kind is types.MethodType:
            self.value(obj.__self__)
            self.value(obj.__func__)
        elif kind in (dict, types.MappingProxyType):
            self.probes.append((_LEN, obj, None, len(obj)))
            for key, item in list(obj.items()):
                self.value(key)
                self.probe(_ITEM, obj, key, item)
        elif kind is list:
            self.probes.append((_LEN, obj, None, len(obj)))
            for k, item in enumerate(list(obj)):
                self.probe(_INDEX, obj, k, item)
        elif kind in (tuple, frozenset):
            for item in obj:
                self.value(item)
        elif kind is set:
            self.probes.append((_SET, obj, None, frozenset(map(id, obj))))
            for item in list(obj):
                self.value(item)
        elif kind is functools.partial:
            self.value(obj.func)
            self.value(obj.args)
            self.value(obj.keywords)
        elif kind is types.CellType:
            try:
                self.probe(_CELL, obj, None, obj.cell_contents)
            except ValueError:  # an empty cell: the variable is not bound yet
                self.probes.append((_CELL, obj, None, _MISSING))
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
            self.probe(_LEN, c.__dict__, None, len(c.__dict__))
            for name, item in list(c.__dict__.items()):
                if name.startswith("__") and name.endswith("__") and name != "__call__":
                    continue  # (the class's machinery: __dict__, __module__, __doc__...)
                self.probe(_ITEM, c.__dict__, name, item)
                if isinstance(item, (staticmethod, classmethod)):
                    self.value(item.__func__)
                elif isinstance(item, property):
                    self.value(item.fget)

    def instance(self, obj: Any) -> None:
        kind = type(obj)
        attributes = getattr(obj, "__dict__", None)
        slots = [s for c in kind.__mro__ for s in getattr(c, "__slots__", ()) if type(s) is str]
        if type(attributes) is not dict and not slots:
            if _library(kind) and callable(obj):
                return  # a library's callable (a ufunc-like object, a namespace function)
            raise _Unprovable(
                f"it reads a {kind.__module__}.{kind.__qualname__}, whose state the tape "
                "cannot see (an iterator, a file, a C object)"
            )
        self.probe(_ATTR, obj, "__class__", kind)
        self.value(kind)
        if type(attributes) is dict:
            self.probe(_ATTR, obj, "__dict__", attributes)
        for name in slots:
            self.probe(_ATTR, obj, name, getattr(obj, name, _MISSING))

    def function(self, fn: types.FunctionType) -> None:
        self.probe(_ATTR, fn, "__code__", fn.__code__)
        self.probe(_ATTR, fn, "__defaults__", fn.__defaults__)
        self.probe(_ATTR, fn, "__kwdefaults__", fn.__kwdefaults__)
        self.probe(_ATTR, fn, "__dict__", fn.__dict__)  # f.counter and such
        self.value(fn.__closure__)
        names = _code_names(fn.__code__)
        scope = fn.__globals__
        builtins = scope.get("__builtins__")
        for name in names:
            found = scope.get(name, _MISSING)
            self.probe(_ITEM, scope, name, found)
            if found is _MISSING and type(builtins) is dict:
                self.probe(_ITEM, builtins, name, builtins.get(name, _MISSING))
            if isinstance(found, types.ModuleType):
                self.names(found, names)

    def names(self, owner: types.ModuleType, names: list[str]) -> None:
        """The attributes of a module that ``names`` may look up on it (a class's are all
        walked, see ``klass``)."""
        library = owner.__name__.partition(".")[0] in _LIBRARIES
        for name in names:
            found = getattr(owner, name, _MISSING)
            if found is _MISSING:
                continue
            if library:
                if isinstance(found, types.ModuleType) and found.__name__ in _FRESH_MODULES:
                    raise _Unprovable(f"it uses the module {found.__name__} (fresh values)")
                continue
            self.probe(_ATTR, owner, name, found)


def _read(kind: int, owner: Any, key: Any) -> Any:
    if kind == _ATTR:
        return getattr(owner, key, _MISSING)
    if kind == _ITEM:
        return owner.get(key, _MISSING)
    if kind == _LEN:
        return len(owner)
    if kind == _INDEX:
        return owner[key] if key < len(owner) else _MISSING
    if kind == _CELL:
        try:
            return owner.cell_contents
        except ValueError:
            return _MISSING
    return frozenset(map(id, owner))


class Snapshot:
    """What ``f`` could read besides its arguments when it was recorded (see module doc).

    Attributes:
        reason: why the walk cannot vouch for ``f`` (``None`` when it can).
    """

    __slots__ = ("_check", "copies", "extra", "probes", "reason")

    def __init__(self, walk: _Walk | None, extra: Sequence[Any], reason: str | None) -> None:
        self.probes = walk.probes if walk is not None else []
        self.copies = [(a, np.array(a, copy=True)) for a in (walk.arrays if walk else ())]
        self.extra = list(extra)
        self.reason = reason
        self._check = _compile_probes(self.probes)

    def holds(self, func: Callable[..., Any], extra: Sequence[Any] = ()) -> bool:
        """Whether ``func`` (and ``extra``) reads the same objects, its arrays holding the
        same values: each reference the walk followed is read again and must give the
        same object (so a walk now would follow the same path and meet the same objects)."""
        if extra or self.extra:
            if len(extra) != len(self.extra):
                return False
            for a, b in zip(extra, self.extra):
                if a is not b:
                    return False
        if not self._check():
            return False
        return all(_same(np.asarray(live), copy) for live, copy in self.copies)


def _compile_probes(probes: list[tuple[int, Any, Any, Any]]) -> Callable[[], bool]:
    """The probes as one function of straight-line tests (a probe costs tens of
    nanoseconds: this runs before every replay)."""
    names: dict[str, Any] = {"M": _MISSING, "read": _read, "ids": _ids}
    tests = []
    for n, (kind, owner, key, found) in enumerate(probes):
        names[f"o{n}"], names[f"k{n}"], names[f"e{n}"] = owner, key, found
        if kind == _ITEM and type(owner) is dict:
            # (a missing key raises KeyError: the check fails, see below)
            tests.append(f"k{n} not in o{n}" if found is _MISSING else f"o{n}[k{n}] is e{n}")
        elif kind == _ATTR and found is not _MISSING and _plain_name(key):
            tests.append(f"o{n}.{key} is e{n}")
        elif kind == _ATTR:
            tests.append(f"getattr(o{n}, k{n}, M) is e{n}")
        elif kind == _LEN:
            tests.append(f"len(o{n}) == e{n}")
        elif kind == _SET:
            tests.append(f"ids(o{n}) == e{n}")
        else:
            tests.append(f"read({kind}, o{n}, k{n}) is e{n}")
    body = "".join(f"        if not ({t}): return False\n" for t in tests)
    source = (
        "def check():\n    try:\n" + (body or "        pass\n")
        + "    except (KeyError, AttributeError):\n        return False\n    return True\n"
    )  # fmt: skip
    exec(compile(source, "<adswitch_tape guard>", "exec"), names)
    check: Callable[[], bool] = names["check"]
    return check


def _plain_name(key: Any) -> bool:
    return type(key) is str and key.isidentifier() and not keyword.iskeyword(key)


def _ids(owner: Any) -> frozenset[int]:
    return frozenset(map(id, owner))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return (
        a.shape == b.shape
        and a.dtype == b.dtype
        and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    )


def snapshot(func: Callable[..., Any], extra: Sequence[Any] = ()) -> Snapshot:
    """Walk what ``func`` can read besides its arguments, and the objects ``extra`` (the
    arguments that are neither arrays nor plain values), see the module doc.

    Example:
        >>> state = {"scale": 1.0}
        >>> f = lambda x: state["scale"] * x
        >>> s = snapshot(f)
        >>> s.reason is None and s.holds(f)
        True
        >>> state["scale"] = 3.0
        >>> s.holds(f)
        False
    """
    walk = _Walk()
    try:
        walk.root(func)
        for obj in extra:
            walk.value(obj)
    except _Unprovable as exc:
        return Snapshot(None, extra, str(exc))
    return Snapshot(walk, extra, None)
