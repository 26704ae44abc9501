"""The namespace's argument and result conventions: an array's number of axes, an
``axis`` argument as a tuple of non-negative axes, the number of elements reduced over
them, the kind of a result (a tape array when an argument was one), and the functions
the tape computes on constants only."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from ..array.conversions import carries_gradient, constant
from ..array.tracer import Tracer, raw

__all__ = ["axes_of", "constants_only", "count", "like_inputs", "ndim_of", "unwrapped"]


def ndim_of(x: Any) -> int:
    return len(np.shape(raw(x)))


def axes_of(axis: Any, ndim: int) -> tuple[int, ...] | None:
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        return tuple(int(a) % builtins.max(ndim, 1) for a in axis)
    return (int(axis) % builtins.max(ndim, 1),)


def count(x: Any, axes: tuple[int, ...] | None) -> int:
    shape = np.shape(raw(x))
    return math.prod(shape) if axes is None else math.prod(shape[a] for a in axes)


def unwrapped(*args: Any) -> tuple[bool, list[Any]]:
    """Whether any argument is a tape array, and the arguments' concrete values."""
    return builtins.any(type(a) is Tracer for a in args), [raw(a) for a in args]


def like_inputs(out: Any, tape: bool) -> Any:
    """A zero-derivative result as the inputs' kind: tape arrays without history when an
    input was a tape array (``tape``), numpy's otherwise; tuples (``nonzero``) and named
    tuples (``unique_all``) element by element."""
    if not tape:
        return out
    if isinstance(out, tuple):
        parts = [like_inputs(o, tape) for o in out]
        return type(out)(*parts) if hasattr(out, "_fields") else tuple(parts)
    if isinstance(out, list):
        return [like_inputs(o, tape) for o in out]
    if type(out) is Tracer:
        return out
    return constant(out if isinstance(out, np.ndarray) else np.asarray(out))


def constants_only(name: str, fn: Any, *arrays: Any, **kw: Any) -> Any:
    """``fn(*arrays, **kw)`` -- a numpy function the tape has no gradient rule for -- on
    arrays that carry no gradient (constants, fresh buffers); a traced one is refused."""
    for k, a in enumerate(arrays):
        if carries_gradient(a):
            raise UnsupportedError(
                f"tape: xp.{name} of a traced array (argument {k}) is not differentiable on "
                "the tape yet: it has no gradient rule. Fix: compute it on constants "
                "(ad.Const, or values that do not depend on the differentiated inputs), or "
                "choose backend='torch' or 'jax'."
            )
    tape, values = unwrapped(*arrays)
    return like_inputs(fn(*values, **kw), tape)
