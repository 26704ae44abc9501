"""One differentiation call on the tape: trace, sweep, hand back, restore.

``value_and_grad`` (the engine contract's one primitive, see ``adswitch.spec``):
    1. a fresh :class:`~adswitch_tape.core.trace.Trace`; each active leaf becomes a tracer
       (a Python float as a 0-d float64 array); numpy arrays the backward pass will
       read (the differentiated arrays, constants saved by operations, index arrays) are
       locked read-only until it ends, so a write by ``f`` into them raises
       ``MutationError`` (numpy's read-only error, translated) instead of corrupting the
       gradient; writes through tracers are recorded copy-on-write and differentiated.
       Known gap: a numpy view of such an array taken *before* the call keeps its own
       writeable flag (numpy does not propagate it), so a write through it is not caught;
    2. ``fn(values)``, then one backward sweep from the loss;
    3. outputs unwrapped from this level (plain numpy at top level, fresh buffers
       included; values of the enclosing call stay its tracers); gradients in each
       leaf's dtype, each its own writeable array (a Python float for a Python float
       leaf), zeros for unused leaves;
    4. always, also when ``f`` raised: the locks are released and an argument array
       that ``f`` wrote into through its tracer receives the final value, as a plain
       call of ``f`` would have left it.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

import numpy as np

from adswitch.errors import MutationError
from adswitch.spec import CallInfo, LossFn

from . import namespace as _namespace  # noqa: F401  -- makes tracers whole (see namespace)
from .core import FREE, Trace, backward, role_text, sync
from .mutation import setitem
from .rules import primitives as P
from .tracer import Tracer, raw

__all__ = ["value_and_grad"]


def value_and_grad(
    fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], list[Any | None]]:
    """Differentiate ``fn``'s loss with respect to the active leaves (see module doc)."""
    trace = Trace()
    values = list(leaves)
    traced: dict[int, tuple[Tracer, Any, int]] = {}  # leaf -> (tracer, first value, slot)
    tape = trace.tape
    if len(active) != len(values):
        raise ValueError("value_and_grad: one activity flag per leaf")
    for i, act in enumerate(active):
        if not act:
            continue
        leaf = values[i]
        if type(leaf) is np.ndarray:
            # the role is formatted only if an error needs it (``role_text``)
            trace.guard(leaf, (i, leaf.shape))
            value: Any = leaf
        elif isinstance(leaf, float):
            value = np.asarray(leaf, dtype=np.float64)
        else:
            value = leaf
        slot = len(tape)
        tape.append(None)  # a leaf: a tape slot with no entry
        values[i] = t = Tracer(value, trace, slot)
        traced[i] = (t, value, slot)
    try:
        loss, outs = fn(values)
        grads = _sweep(trace, loss)
        out_leaves = list(outs)
        for k, o in enumerate(out_leaves):
            if type(o) is Tracer:
                out_leaves[k] = _unwrap(o, trace)
    except ValueError as exc:
        error = _translate(exc, trace)
        if error is None:
            raise
        raise error from exc
    finally:
        trace.close()
        _write_back(leaves, traced)
    seen: set[int] = set()
    result: list[Any | None] = [None] * len(leaves)
    for i, (_, value, slot) in traced.items():
        g = grads[slot] if grads else None
        if (
            type(g) is np.ndarray
            and type(value) is np.ndarray
            and value is leaves[i]  # (not a Python float's 0-d stand-in)
            and g.shape == value.shape
            and g.dtype == value.dtype
            and g.base is None
            and id(g) not in seen
            and g.flags.writeable
        ):  # the common case, a fresh gradient array: handed back as it is
            seen.add(id(g))
            result[i] = g
        else:
            result[i] = _conform(g, leaves[i], value, seen)
    return out_leaves, result


def _sweep(trace: Trace, loss: Any) -> list[Any] | None:
    if type(loss) is not Tracer:
        return None
    if loss._base is not None:
        sync(loss)
    if loss._trace is not trace or loss._idx is None:
        _unwrap(loss, trace)  # a leaked tracer of a finished call raises here
        return None
    value = loss._value
    dtype = (value if type(value) is not Tracer else raw(value)).dtype
    seed = _SEEDS.get(dtype)
    return backward(trace, loss._idx, _seed(dtype) if seed is None else seed)


_SEEDS: dict[Any, np.ndarray] = {}


def _seed(dtype: Any) -> np.ndarray:
    """``1`` of the loss's dtype; cached read-only (``_conform`` copies it if it reaches a
    gradient unchanged): np.ones costs a microsecond, a fair share of a tiny call."""
    seed = _SEEDS.get(dtype)
    if seed is None:
        seed = np.ones((), dtype=dtype)
        seed.flags.writeable = False
        _SEEDS[dtype] = seed
    return seed


def _unwrap(x: Any, trace: Trace) -> Any:
    """An output leaf without this call's tracers."""
    if type(x) is not Tracer:
        return x
    if x._base is not None:
        sync(x)
    if x._trace is trace:
        return x._value
    if x._trace is FREE:  # a fresh buffer no traced value was written into
        return raw(x)
    if not x._trace.live:
        raise MutationError(
            "tape: f returned a traced value of a gradient call that has already returned "
            "(kept in a global, a closure or an outer object). Fix: return values from the "
            "function that computes them and pass them in as arguments."
        )
    return x  # a value of an enclosing call: stays its tracer


def _conform(g: Any, leaf: Any, value: Any, seen: set[int]) -> Any:
    """A gradient in the leaf's type and dtype, never shared with another leaf's."""
    if g is None:
        return type(leaf)(0.0) if isinstance(leaf, float) else np.zeros_like(raw(value))
    if type(g) is Tracer:  # nested call: stays differentiable by the enclosing one
        if g.dtype != raw(value).dtype:
            g = P.astype(g, dtype=raw(value).dtype)
        if id(g) in seen:
            g = P.positive(g)
        seen.add(id(g))
        return g
    if isinstance(leaf, float):
        return type(leaf)(g)
    dtype = raw(value).dtype
    g = np.asarray(g)
    if g.shape != np.shape(raw(value)):
        g = np.broadcast_to(g, np.shape(raw(value)))
    if g.dtype != dtype or id(g) in seen or not (g.flags.owndata and g.flags.writeable):
        g = np.array(g, dtype=dtype, copy=True)
    seen.add(id(g))
    return g


def _write_back(leaves: Sequence[Any], traced: dict[int, tuple[Tracer, Any, int]]) -> None:
    """Give each argument array that ``f`` wrote into through its tracer the final value."""
    for i, (t, first, _) in traced.items():
        if t._value is first and t._base is None:  # not written to: the common case
            continue
        if t._base is not None:
            sync(t)
        if t._value is first:
            continue
        leaf, final = leaves[i], t._value
        if type(leaf) is Tracer:
            setitem(leaf, Ellipsis, final)  # ``leaf[...] = final``, recorded by its call
        elif type(leaf) is np.ndarray:
            if type(final) is Tracer:
                raise MutationError(
                    "tape: f wrote a value traced by an enclosing gradient call into a plain "
                    "numpy argument of an inner call. Fix: pass a traced array (or a copy "
                    "made with xp.zeros_like) as the inner argument."
                )
            np.copyto(leaf, final, casting="unsafe")


def _translate(exc: ValueError, trace: Trace) -> MutationError | None:
    """The ``MutationError`` behind numpy's ``ValueError``, if any: numpy hides the one
    ``Tracer.__float__`` raised for ``numpy_array[i] = traced`` behind "setting an array
    element with a sequence", and reports a write into an array this call locked as
    "assignment destination is read-only"."""
    for behind in (exc.__cause__, exc.__context__):
        if isinstance(behind, MutationError):
            return behind
    if "read-only" not in str(exc):
        return None
    tb: TracebackType | None = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:  # the frame whose statement numpy refused
        tb = tb.tb_next
    for name, obj in tb.tb_frame.f_locals.items():
        role = _locked_role(obj, trace)
        if role:
            return MutationError(
                f"tape: f wrote in place into the numpy array `{name}` (shape "
                f"{obj.shape}), which the backward pass still needs: it is {role}. "
                f"The write would make the gradient wrong. Fix: write into a copy "
                f"(`{name} = {name}.copy()` before writing), or build the new value "
                "without mutation (xp.where, xp.concat), or differentiate the array "
                "itself (pass it as an argument: writes through traced arrays are "
                "differentiated)."
            )
    return None


def _locked_role(obj: Any, trace: Trace) -> str:
    """What ``obj`` (or the array it views) is to the backward pass, if this call locked it."""
    while isinstance(obj, np.ndarray):
        entry = trace.locked.get(id(obj))
        if entry is not None and entry[0] is obj and entry[1]:
            return role_text(entry[1])
        obj = obj.base
    return ""
