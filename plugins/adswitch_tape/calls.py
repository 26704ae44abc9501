"""What every differentiation call on the tape does around ``f``: trace, hand back, restore.

The pieces each primitive of the engine (``engine``: ``value_and_grad``; ``operators``:
``vjp``, ``vjp_apply``, ``jvp``) is made of:
    1. :func:`trace_leaves` -- a fresh :class:`~adswitch_tape.core.trace.Trace`; each
       active leaf becomes a tracer (a Python float as a 0-d float64 array); numpy
       arrays the backward pass will read (the differentiated arrays, constants saved by
       operations, index arrays) are locked read-only until the call ends, so a write by
       ``f`` into them raises ``MutationError`` (numpy's read-only error, translated by
       :func:`translate`) instead of corrupting the result (an array numpy could not
       make writeable again -- a view of a torch tensor, scipy's C-wrapped arrays -- is
       read through a private copy instead, and a write into it refused when ``f``
       returns: ``Trace.guard``); writes through tracers are
       recorded copy-on-write and differentiated. Known gap: a numpy view of such an
       array taken *before* the call keeps its own writeable flag (numpy does not
       propagate it), so a write through it is not caught;
    2. :func:`roots` -- the tape slots of the differentiated outputs;
    3. :func:`unwrap` -- outputs without this call's tracers (plain numpy at top level,
       fresh buffers included; values of the enclosing call stay its tracers);
    4. :func:`conform` -- results in each leaf's dtype, each its own writeable array (a
       Python float for a Python float leaf), zeros where nothing reached a leaf;
    5. always, also when ``f`` raised: the locks are released (``Trace.close``) and
       :func:`write_back` gives an argument array that ``f`` wrote into through its
       tracer the final value, as a plain call of ``f`` would have left it.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any, Protocol

import numpy as np

from adswitch.errors import MutationError

from . import namespace as _namespace  # noqa: F401  -- makes tracers whole (see namespace)
from .array.mutation import setitem
from .array.tracer import Tracer, raw
from .core import FREE, Trace, role_text, sync
from .rules import primitives as P

__all__ = [
    "Traced", "TracedRun", "conform", "roots", "trace_leaves", "translate", "unwrap", "write_back",
]  # fmt: skip

Traced = dict[int, tuple[Tracer, Any, int]]
"""Per active leaf index: ``(its tracer, the value it started with, its tape slot)``."""


def trace_leaves(leaves: Sequence[Any], active: Sequence[bool]) -> tuple[Trace, list[Any], Traced]:
    """A fresh trace, the values to call ``fn`` with (tracers at the active leaves) and
    the traced leaves (see :data:`Traced`)."""
    trace = Trace()
    values = list(leaves)
    traced: Traced = {}
    tape = trace.tape
    if len(active) != len(values):
        raise ValueError("tape: one activity flag per leaf")
    for i, act in enumerate(active):
        if not act:
            continue
        leaf = values[i]
        if type(leaf) is np.ndarray:
            # the role is formatted only if an error needs it (``role_text``)
            value: Any = trace.guard(leaf, (i, leaf.shape))  # (or a private copy)
        elif isinstance(leaf, float):
            value = np.asarray(leaf, dtype=np.float64)
        else:
            value = leaf
        slot = len(tape)
        tape.append(None)  # a leaf: a tape slot with no entry
        values[i] = t = Tracer(value, trace, slot)
        traced[i] = (t, value, slot)
    return trace, values, traced


def roots(diffs: Sequence[Any], trace: Trace) -> list[int | None]:
    """Per differentiated output, its tape slot on ``trace`` (``None``: it does not depend
    on this call's leaves -- a constant, or a value of an enclosing call)."""
    found: list[int | None] = []
    for d in diffs:
        slot = None
        if type(d) is Tracer:
            if d._base is not None:
                sync(d)
            if d._trace is trace:
                slot = d._idx
            else:
                unwrap(d, trace)  # a leaked tracer of a finished call raises here
        found.append(slot)
    return found


def unwrap(x: Any, trace: Trace) -> Any:
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


def conform(g: Any, leaf: Any, value: Any, seen: set[int], batch: tuple[int, ...] = ()) -> Any:
    """A result in the leaf's type and dtype, never shared with another leaf's (nor with
    an id in ``seen`` beforehand); ``batch``: its leading batch axes (a batched Python
    float leaf gets a 1-d float64 array)."""
    if g is None:
        if isinstance(leaf, float) and not batch:
            return type(leaf)(0.0)
        return np.zeros(batch + np.shape(raw(value)), dtype=raw(value).dtype)
    if type(g) is Tracer:  # nested call: stays differentiable by the enclosing one
        if g.dtype != raw(value).dtype:
            g = P.astype(g, dtype=raw(value).dtype)
        if id(g) in seen:
            g = P.positive(g)
        seen.add(id(g))
        return g
    if isinstance(leaf, float) and not batch:
        return type(leaf)(g)
    dtype = raw(value).dtype
    g = np.asarray(g)
    shape = batch + np.shape(raw(value))
    if g.shape != shape:
        g = np.broadcast_to(g, shape)
    if g.dtype != dtype or id(g) in seen or not (g.flags.owndata and g.flags.writeable):
        g = np.array(g, dtype=dtype, copy=True)
    seen.add(id(g))
    return g


def write_back(leaves: Sequence[Any], traced: Traced) -> None:
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


def translate(exc: ValueError, trace: Trace) -> MutationError | None:
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


class _Stops(Protocol):
    def stop(self) -> None: ...


class TracedRun:
    """Steps 1 and 5 around one run of ``f``, for every primitive of the engine::

        with TracedRun(leaves, active, recording) as run:
            ...  # fn(run.values), then what the primitive computes from the trace

    On entry the active leaves are traced (``run.trace``, ``run.values``,
    ``run.traced``: :func:`trace_leaves`). On the way out, always -- also when ``f``
    raised -- the ``recording`` (if any) stops watching, the locks are released and the
    arguments ``f`` wrote into get their final values (:func:`write_back`); a numpy
    ``ValueError`` that hides a ``MutationError`` is re-raised as it (:func:`translate`).
    A class, not a generator-based context manager: this runs on every call.
    """

    __slots__ = ("leaves", "recording", "trace", "traced", "values")

    def __init__(
        self, leaves: Sequence[Any], active: Sequence[bool], recording: _Stops | None = None
    ) -> None:
        self.trace, self.values, self.traced = trace_leaves(leaves, active)
        self.leaves = leaves
        self.recording = recording

    def __enter__(self) -> TracedRun:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if isinstance(exc, ValueError):
                error = translate(exc, self.trace)
                if error is not None:
                    raise error from exc
        finally:
            if self.recording is not None:
                self.recording.stop()
            self.trace.close()
            write_back(self.leaves, self.traced)
