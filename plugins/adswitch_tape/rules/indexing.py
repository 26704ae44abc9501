"""The numpy code of the indexing primitives (``getitem``, ``scatter``, ``index_update``)
and what they need to know of keys.

The three take ``lead``: the number of leading axes the key skips (0 in user code).
Their gradient and tangent rules need it in a batch, for advanced keys: numpy lays out
the result of index arrays by rules of its own (``x[0, :, [1, 2]]`` puts the indexed
axis first), so instead of prefixing the key, the leading axes are moved to the end --
which numpy keeps in order, after everything the key makes -- and back. (Basic keys
are simply prefixed with ``slice(None)``s: see ``shapes.keyed``.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "explicit_key", "getitem", "index_update", "indexed_shape", "is_basic_key", "scatter",
]  # fmt: skip


def getitem(x: Any, key: Any, lead: int = 0) -> Any:
    """``x[key]``, the key skipping ``lead`` leading axes (kept in front)."""
    x = np.asarray(x)
    if not lead:
        return x[key]
    out = _trailing(x, lead)[explicit_key(key, x.ndim - lead)]
    return _leading(out, lead)


def indexed_shape(shape: tuple[int, ...], key: Any, lead: int = 0) -> tuple[int, ...]:
    """The shape of ``getitem(x, key=key, lead=lead)`` for ``x`` of ``shape`` (indexing
    a broadcast scalar: nothing of that size is allocated for a basic key)."""
    return tuple(getitem(np.broadcast_to(False, shape), key, lead).shape)


def is_basic_key(key: Any) -> bool:
    """Whether numpy returns a view for ``x[key]`` (ints, slices, ``...``, ``None``)."""
    parts = key if type(key) is tuple else (key,)
    for k in parts:
        if k is None or k is Ellipsis or type(k) is slice:
            continue
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            continue
        return False
    return True


def explicit_key(key: Any, ndim: int) -> tuple[Any, ...]:
    """``key`` for an ``ndim``-d array with its ``...`` spelled out as slices, so that it
    addresses exactly the first ``ndim`` axes of an array with more."""
    parts = key if type(key) is tuple else (key,)
    if not any(k is Ellipsis for k in parts):
        return parts
    used = 0
    for k in parts:
        if k is None or k is Ellipsis:
            continue
        if isinstance(k, (bool, np.bool_)) or (
            isinstance(k, np.ndarray) and k.dtype == np.bool_
        ):  # a mask indexes as many axes as it has
            used += np.ndim(k)
        else:
            used += 1
    out: list[Any] = []
    for k in parts:
        if k is Ellipsis:
            out.extend([slice(None)] * (ndim - used))
        else:
            out.append(k)
    return tuple(out)


def _trailing(a: Any, lead: int) -> Any:
    """A view of ``a`` with its first ``lead`` axes moved to the end."""
    return np.moveaxis(a, tuple(range(lead)), tuple(range(-lead, 0)))


def _leading(a: Any, lead: int) -> Any:
    """A view of ``a`` with its last ``lead`` axes moved to the front."""
    return np.moveaxis(a, tuple(range(-lead, 0)), tuple(range(lead)))


def scatter(g: Any, key: Any, shape: tuple[int, ...], lead: int = 0) -> Any:
    """Zeros of ``shape`` with ``g`` added at ``key`` (repeated indices accumulate); the
    key skips ``lead`` leading axes."""
    out = np.zeros(shape, dtype=np.result_type(g))
    if lead:
        np.add.at(_trailing(out, lead), explicit_key(key, len(shape) - lead), _trailing(g, lead))
    elif is_basic_key(key):
        out[key] = g
    else:
        np.add.at(out, key, g)
    return out


def index_update(x: Any, v: Any, key: Any, lead: int = 0) -> Any:
    """A copy of ``x`` with ``x[key] = v``: the copy-on-write form of an in-place write;
    the key skips ``lead`` leading axes, ``v`` laid out as ``getitem``'s result."""
    out = np.array(x, copy=True)
    if not lead:
        out[key] = v
        return out
    view = _trailing(out, lead)
    key = explicit_key(key, out.ndim - lead)
    if np.ndim(v):  # v is laid out like getitem's result: leading axes first
        target = view[key].shape
        v = _trailing(np.broadcast_to(v, target[-lead:] + target[:-lead]), lead)
    view[key] = v
    return out
