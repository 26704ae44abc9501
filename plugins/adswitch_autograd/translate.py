"""Turn autograd's raw failures inside ``f`` into adswitch errors that say the fix.

autograd reports a write into a traced array as a bare ``TypeError`` or ``ValueError``
from numpy, and a primitive without a derivative as ``NotImplementedError("VJP of ...")``.
Worse, a write into a plain numpy array that the trace has already read raises nothing
and makes the gradient silently wrong (autograd keeps references, not copies). So, for
the duration of ``f``, the caller's numpy leaves are made read-only and any write into
them is refused, and each recognised engine failure is re-raised as ``MutationError`` or
``UnsupportedError`` chained to the original. Anything else ``f`` raises passes through
unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from adswitch.errors import MutationError, UnsupportedError

from .boxes import mutation_message

__all__ = ["guarded_call"]

_VJP_MISSING = re.compile(r"^VJP of (?P<name>\S+) wrt argnums? .* not defined")


@contextmanager
def guarded_call(leaves: Sequence[Any]) -> Iterator[None]:
    """Run the user's function with its numpy inputs read-only and autograd's errors translated."""
    frozen = [a for a in leaves if type(a) is np.ndarray and a.flags.writeable]
    for array in frozen:
        array.flags.writeable = False
    try:
        yield
    except (TypeError, ValueError, NotImplementedError) as exc:
        error = _translate(exc, bool(frozen))
        if error is None:
            raise
        raise error from exc
    finally:
        if frozen:
            _thaw(frozen)


def _thaw(arrays: list[np.ndarray]) -> None:
    # A view can only be made writeable again once its base is; bases first, then retry.
    pending = sorted(arrays, key=lambda a: a.base is not None)
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
            return MutationError(mutation_message("x[index] = value"))
        if "returned NotImplemented from __array_ufunc__" in text and "Box" in text:
            return MutationError(mutation_message("numpy_array += traced (an `out=` ufunc)"))
        if "not 'ArrayBox'" in text or "not 'GuardedBox'" in text:
            return UnsupportedError(
                "autograd (HIPS) cannot convert a traced array to a Python number "
                f"(`float(x)`, `int(x)`, `x.item()`): {text}. Fix: keep the value an array "
                "and use `ad.array_namespace(x)` functions on it."
            )
        return None
    if text == "setting an array element with a sequence.":
        return MutationError(
            mutation_message("numpy_buffer[index] = traced")
            + " (A buffer from `xp.zeros_like`/`np.zeros` is a plain numpy array that cannot "
            "hold a traced value: build the result with `xp.stack`/`xp.concat`/`xp.where`.)"
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
