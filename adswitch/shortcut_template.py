"""A prepared call's result as a template (``adswitch.shortcut``): how to flatten it to
its arrays and rebuild it from them, for results made of arrays, ``None`` and tuples
(named ones included) or dicts of them; and whether two such results are the same, value
for value and key for key.

An engine's own sparse matrix (jax's ``BCOO``: an object with ``shape``, ``dtype`` and
array ``data`` and ``indices``) is one entry, handed through as a whole (jax's ``jit``
gives it back as the pytree it is); two are the same when their types, shapes and
structure arrays (``indices``, ``indptr`` where present) are equal, their ``data`` dtypes
are, and their ``data`` values are equal to rounding: a sparse shortcut's program has the
colors' seeds as constants, which the compiler folds in, and may round a product and a
sum as one where the full path rounds twice (:data:`ROUNDING_ULPS`). A ``scipy.sparse``
result is no template: it is built on the host from concrete values, which no traced
shortcut has, so such calls keep the full path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["NOT_AN_ARRAY", "ROUNDING_ULPS", "arrays_of", "builder", "flat", "same", "template"]

#: How far a sparse shortcut's ``data`` may lie from the full path's: this many units of
#: the data's dtype epsilon, relative to the matrix's largest stored magnitude. Folding
#: seeds moves entries by one ulp (Brusselator N = 32: 213 of 12,288 entries, 1.2e-16
#: relative); a stale or otherwise wrong program moves them by far more.
ROUNDING_ULPS = 8

NOT_AN_ARRAY = (int, float, complex, bool, str, bytes, type(None), list, tuple, dict)
_ARRAY, _NONE, _SPARSE = "array", "none", "sparse"
# (the arrays of a sparse matrix that say where its values are)
_STRUCTURE = ("indices", "indptr")


def _sparse_kind(result: Any) -> str | None:
    """``_SPARSE`` for an engine's sparse matrix, ``None`` for a scipy one (no template),
    ``_ARRAY`` for anything else (a dense array, as far as the template goes)."""
    # (torch's ``indices`` is a method, numpy has none: ``data`` is read only after, as
    # torch refuses to give a tensor's ``data`` under ``torch.func.vmap``)
    indices = getattr(result, "indices", None)
    if callable(indices) or not hasattr(indices, "shape"):
        return _ARRAY
    if not hasattr(getattr(result, "data", None), "dtype"):
        return _ARRAY
    return None if type(result).__module__.startswith("scipy.") else _SPARSE


def template(result: Any) -> Any:
    """How to rebuild ``result`` from its arrays, or ``None`` where it holds anything
    else (a Python number, a string, a pullback...)."""
    if result is None:
        return _NONE
    cls = type(result)
    if cls is tuple or (issubclass(cls, tuple) and hasattr(cls, "_fields")):
        parts = [template(r) for r in result]
        return None if None in parts else (cls, tuple(parts))
    if cls is dict:
        parts = [template(r) for r in result.values()]
        return None if None in parts else (dict, tuple(result), tuple(parts))
    if cls in NOT_AN_ARRAY or isinstance(result, np.generic | list):
        return None
    if not (hasattr(result, "shape") and hasattr(result, "dtype")):
        return None
    return _sparse_kind(result)


def arrays_of(template: Any) -> list[Any]:
    """One entry per array of ``template``."""
    if template in (_ARRAY, _SPARSE):
        return [template]
    if template == _NONE:
        return []
    return [a for sub in template[-1] for a in arrays_of(sub)]


def flat(template: Any, result: Any, out: list[Any]) -> None:
    """``result``'s arrays, in ``template``'s order, appended to ``out``."""
    if template in (_ARRAY, _SPARSE):
        out.append(result)
    elif template != _NONE:
        values = result.values() if template[0] is dict else result
        for sub, value in zip(template[-1], values):
            flat(sub, value, out)


def _filled(template: Any, arrays: Any) -> Any:
    if template in (_ARRAY, _SPARSE):
        return next(arrays)
    if template == _NONE:
        return None
    cls = template[0]
    if cls is dict:
        return {key: _filled(sub, arrays) for key, sub in zip(template[1], template[2])}
    items = [_filled(sub, arrays) for sub in template[1]]
    return tuple(items) if cls is tuple else cls(*items)


def builder(template: Any) -> Callable[[Sequence[Any]], Any]:
    """``template``'s rebuild from its arrays, made once: a plain tuple of arrays and
    ``None`` (the commonest result, a gradient's) without recursion."""
    if type(template) is tuple and template[0] is tuple and set(template[1]) <= {_ARRAY, _NONE}:
        parts = template[1]
        if all(part == _ARRAY for part in parts):
            return tuple
        at = [i for i, part in enumerate(parts) if part == _ARRAY]
        n = len(parts)

        def flat_tuple(arrays: Sequence[Any]) -> tuple[Any, ...]:
            out: list[Any] = [None] * n
            for i, array in zip(at, arrays):
                out[i] = array
            return tuple(out)

        return flat_tuple
    return lambda arrays: _filled(template, iter(arrays))


def same(template: Any, ours: Any, theirs: Any) -> bool:
    """Whether the shortcut's result is the full path's, value for value."""
    if template == _NONE:
        return ours is None and theirs is None
    if type(ours) is not type(theirs):
        return False
    if template == _ARRAY:
        return bool(np.array_equal(np.asarray(ours), np.asarray(theirs), equal_nan=True))
    if template == _SPARSE:
        return _same_sparse(ours, theirs)
    if template[0] is dict:
        if tuple(ours) != template[1] or tuple(theirs) != template[1]:
            return False
        return all(map(same, template[2], ours.values(), theirs.values()))
    return len(ours) == len(theirs) and all(map(same, template[1], ours, theirs))


def _same_sparse(ours: Any, theirs: Any) -> bool:
    """Two sparse matrices of one type: the same shape and structure arrays exactly, the
    same ``data`` dtype, and ``data`` values equal to rounding (NaN where NaN, infinities
    where the same infinities; :data:`ROUNDING_ULPS`). (Never ``np.asarray`` of the
    matrix itself: jax's BCOO would be read element by element.)"""
    if tuple(ours.shape) != tuple(theirs.shape):
        return False
    for name in _STRUCTURE:
        a, b = getattr(ours, name, None), getattr(theirs, name, None)
        if (a is None) != (b is None):
            return False
        if a is not None and not np.array_equal(np.asarray(a), np.asarray(b)):
            return False
    a, b = np.asarray(ours.data), np.asarray(theirs.data)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if not np.issubdtype(a.dtype, np.inexact) or a.size == 0:
        return bool(np.array_equal(a, b))
    finite = np.isfinite(b)
    if not np.array_equal(finite, np.isfinite(a)):
        return False
    if not np.array_equal(a[~finite], b[~finite], equal_nan=True):
        return False
    scale = float(np.max(np.abs(b[finite]), initial=0.0))
    tol = ROUNDING_ULPS * float(np.finfo(a.dtype).eps) * scale
    return bool(np.all(np.abs(a[finite] - b[finite]) <= tol))
