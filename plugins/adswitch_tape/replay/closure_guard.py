"""What ``f`` reads besides its arguments, kept so that a replay can be refused when it changed.

A replay of a prepared call skips ``f``'s Python: it is the same computation only while
everything ``f`` can read outside its arguments is as it was when the call was recorded.
:func:`snapshot` walks what ``f`` can reach (the kit's ``walk_closures``: closures,
globals, the modules it names, containers, objects, classes, the functions found there)
and keeps every reference the walk followed, with the object found, as a *probe*, and
copies of the numpy arrays met. :meth:`Snapshot.holds` follows each reference again -- one compiled
function of identity tests -- and compares the arrays by value: the same objects
everywhere mean a walk now would take the same path and meet the same objects.

What the walk cannot vouch for makes the snapshot *unprovable* (:attr:`Snapshot.reason`)
and the call is never replayed (a random generator, the ``time`` module, an iterator,
too many objects: see ``adswitch.closures``).
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch.spec import NOT_FOUND, ClosureWalk, ProbeKind, Unprovable, read_probe, walk_closures

__all__ = ["Snapshot", "same_bits", "snapshot"]


class Snapshot:
    """What ``f`` could read besides its arguments when it was recorded (see module doc).

    Attributes:
        reason: why the walk cannot vouch for ``f`` (``None`` when it can).
    """

    __slots__ = ("_check", "copies", "extra", "probes", "reason")

    def __init__(self, walk: ClosureWalk | None, extra: Sequence[Any], reason: str | None) -> None:
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
        return all(same_bits(np.asarray(live), copy) for live, copy in self.copies)


def _compile_probes(probes: list[tuple[ProbeKind, Any, Any, Any]]) -> Callable[[], bool]:
    """The probes as one function of straight-line tests (a probe costs tens of
    nanoseconds: this runs before every replay)."""
    names: dict[str, Any] = {"M": NOT_FOUND, "read": read_probe, "ids": _ids}
    tests = []
    for n, (kind, owner, key, found) in enumerate(probes):
        names[f"o{n}"], names[f"k{n}"], names[f"e{n}"] = owner, key, found
        if kind == ProbeKind.ITEM and type(owner) is dict:
            # (a missing key raises KeyError: the check fails, see below)
            tests.append(f"k{n} not in o{n}" if found is NOT_FOUND else f"o{n}[k{n}] is e{n}")
        elif kind == ProbeKind.ATTR and found is not NOT_FOUND and _plain_name(key):
            tests.append(f"o{n}.{key} is e{n}")
        elif kind == ProbeKind.ATTR:
            tests.append(f"getattr(o{n}, k{n}, M) is e{n}")
        elif kind == ProbeKind.LEN:
            tests.append(f"len(o{n}) == e{n}")
        elif kind == ProbeKind.SET:
            tests.append(f"ids(o{n}) == e{n}")
        else:
            tests.append(f"read({int(kind)}, o{n}, k{n}) is e{n}")
    body = "".join(f"        if not ({t}): return False\n" for t in tests)
    source = (
        "def check():\n    try:\n" + (body or "        pass\n")
        + "    except (KeyError, AttributeError):\n        return False\n    return True\n"
    )  # fmt: skip
    exec(compile(source, "<adswitch_tape guard>", "exec"), names)
    check: Callable[[], bool] = names.pop("check")  # (no cycle with its globals)
    return check


def _plain_name(key: Any) -> bool:
    return type(key) is str and key.isidentifier() and not keyword.iskeyword(key)


def _ids(owner: Any) -> frozenset[int]:
    return frozenset(map(id, owner))


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` holds exactly ``b``'s values, bit for bit (``-0.0`` is not ``0.0``:
    ``1 / x`` tells them apart; a NaN is itself)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.hasobject:
        return bool(np.array_equal(a, b))
    if not (a.flags.c_contiguous and b.flags.c_contiguous):
        a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if a.ndim == 0:
        return a.tobytes() == b.tobytes()
    return bool(np.array_equal(a.view(np.uint8), b.view(np.uint8)))


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
    try:
        walk = walk_closures(func, extra, libraries=("adswitch_tape",))
    except Unprovable as exc:
        return Snapshot(None, extra, str(exc))
    return Snapshot(walk, extra, None)
