"""Turn autograd's raw failures inside ``f`` into adswitch errors that say the fix.

A write into a plain numpy array that the trace has already read raises nothing under
autograd and makes the gradient silently wrong (autograd keeps references, not copies).
So, for the duration of ``f``, the caller's numpy leaves are made read-only -- writes into
differentiated arguments go through the traced arrays instead (:mod:`.writes`) -- and a
write into a constant argument is refused. autograd's own failures (a traced value put
into a numpy array, ``float(traced)``, a primitive without a derivative) are re-raised as
``MutationError``/``UnsupportedError`` chained to the original. Anything else ``f``
raises passes through unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.errors import MutationError, UnsupportedError
from adswitch.spec import restorable, same_contents

from .writes import mutation_message

__all__ = ["freeze", "restorable", "thaw", "translate", "unchanged"]

_VJP_MISSING = re.compile(r"^VJP of (?P<name>\S+) wrt argnums? .* not defined")


def freeze(leaves: Sequence[Any]) -> tuple[list[np.ndarray], list[Any], set[int]]:
    """Make the writable numpy leaves read-only. Returns the arrays frozen (for
    :func:`thaw`), what ``f`` gets (the leaves, or a read-only copy where numpy could not
    make a leaf writeable again: see :func:`restorable`) and the ids of what ``f`` gets
    for the leaves the caller could write."""
    frozen: list[np.ndarray] = []
    given = list(leaves)
    writable: set[int] = set()
    for i, array in enumerate(leaves):
        if type(array) is not np.ndarray or not array.flags.writeable:
            continue
        if restorable(array):
            array.flags.writeable = False
            frozen.append(array)
        else:  # the caller's flags must stay as they are: f reads a private copy
            copy = given[i] = array.copy()
            copy.flags.writeable = False
        writable.add(id(given[i]))
    return frozen, given, writable


def unchanged(leaves: Sequence[Any], given: Sequence[Any]) -> None:
    """Refuse a write by ``f`` into a caller's array that :func:`freeze` could not make
    read-only (``given`` holds its copy): ``f`` read the copy, so it did not see the write
    a plain call would."""
    for i, (leaf, copy) in enumerate(zip(leaves, given)):
        if copy is not leaf and not same_contents(leaf, copy):
            raise MutationError(
                f"autograd (HIPS): f wrote in place into its numpy argument {i} (shape "
                f"{copy.shape}) through another reference to it (a global, a closure, a "
                "view). That array could not be made read-only during the call (numpy "
                "cannot make it writeable again: its memory belongs to another object, "
                "e.g. a torch tensor or C code), so f read a copy and the gradient would "
                "be wrong. Fix: write through the argument f is given, or into a copy "
                "(`a = xp.asarray(a, copy=True)`), or use backend='tape'."
            )


def thaw(arrays: list[np.ndarray]) -> None:
    """Make :func:`freeze`'s arrays writable again."""
    # A view can only be made writeable again once its base is; bases first, then retry.
    pending = sorted(arrays, key=lambda a: a.base is not None) if len(arrays) > 1 else arrays
    while pending:
        failed = []
        for array in pending:
            try:
                array.flags.writeable = True
            except ValueError:
                failed.append(array)
        if len(failed) == len(pending):
            break
        pending = failed


def translate(exc: Exception, froze_inputs: bool) -> Exception | None:
    """The adswitch error for an exception raised inside ``f``, or ``None`` to re-raise it."""
    if not isinstance(exc, (TypeError, ValueError, NotImplementedError)):
        return None
    return _translate(exc, froze_inputs)


def _translate(exc: Exception, froze_inputs: bool) -> Exception | None:
    text = str(exc)
    if isinstance(exc, NotImplementedError):
        match = _VJP_MISSING.match(text)
        if match is None:
            return None
        name = match.group("name")
        return UnsupportedError(
            f"autograd (HIPS) has no derivative for `{name}` (it raised {text!r}). Fix: write "
            f"it with differentiable operations of `ad.array_namespace(x)`, or use another "
            "engine: backend='tape', 'torch' or 'jax'."
        )
    if isinstance(exc, TypeError):
        if "does not support item assignment" in text and "Box" in text:
            return MutationError(
                mutation_message(
                    "x[index] = value",
                    "this array is traced by autograd called directly inside f, whose boxes "
                    "are immutable; adswitch records writes only on its own traced arrays",
                )
            )
        if "returned NotImplemented from __array_ufunc__" in text and "Box" in text:
            return MutationError(
                mutation_message(
                    "numpy_array += traced",
                    "a plain numpy array (or a ufunc's `out=`) cannot hold a traced value",
                )
            )
        if "not 'ArrayBox'" in text or "not 'GuardedBox'" in text:
            return UnsupportedError(
                "autograd (HIPS) cannot convert a traced array to a Python number "
                f"(`float(x)`, `int(x)`, `x.item()`): {text}. Fix: keep the value an array "
                "and use `ad.array_namespace(x)` functions on it."
            )
        return None
    if text == "setting an array element with a sequence.":
        return MutationError(
            mutation_message(
                "numpy_buffer[index] = traced",
                "a plain numpy array (from `np.zeros`, or created outside the trace) cannot "
                "hold a traced value -- make it with the namespace, `xp.zeros_like(x)`",
            )
        )
    if froze_inputs and "assignment destination is read-only" in text:
        return MutationError(
            "autograd (HIPS) cannot differentiate a function that writes in place into one of "
            "its own numpy arguments (a differentiated, Const or integer input): autograd keeps "
            "references to the arrays it has read, so the gradient would be silently wrong; "
            "adswitch makes them read-only during the call. Fix: copy first "
            "(`a = xp.asarray(a, copy=True)`) and write into the copy, or use backend='tape'."
        )
    return None
