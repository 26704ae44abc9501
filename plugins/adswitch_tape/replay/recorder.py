"""The recording of a prepared call's first run: what a replay needs, and why none may be.

A :class:`Recording` is attached to the call's trace while ``f`` runs (``begin`` ..
``end``). The primitives tell it each operation they record with its whole arguments
(``recording``), ``raw`` tells it each read of a traced value (``core.node``). It keeps,
per tape entry, where each argument comes from -- an earlier slot, an argument leaf
``f`` got as a plain numpy array (a ``Const`` array: the new call's array is used), or a
constant, copied when it is an array (``f`` may change it later) -- and where each
output leaf comes from. It *refuses* (:attr:`Recording.reason`, the first reason wins)
when replaying could differ from tracing ``f`` again:

* ``f`` -- or a namespace function it called -- read the value of a traced array: a
  ``bool``/``float``/``int`` of it, a comparison, ``np.asarray``, a mask or index
  computed in numpy (``sites`` tells those reads from shape and dtype reads, which are
  fine: shapes and dtypes are fixed for a prepared call);
* ``f`` called a differentiation inside (a nested call);
* an argument of a recorded operation, or an output, is something the recording cannot
  keep as a constant (an object other than an array, a number, a string, a dtype, a
  slice, a tuple of them; a view of an array ``f`` did not make);
* ``f`` wrote into an argument without leaving a recorded value in it;
* ``f`` changed numpy's error handling (``np.errstate``) around a recorded operation: a
  replay computes in the caller's, which may warn where ``f`` raised or raise where it
  ignored.

What ``f`` reads outside its arguments, and writes into the ``Const`` arrays, is
checked around the recording by ``prepared`` (``closure_guard``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any

import numpy as np

from adswitch.spec import user_line

from ..calls import Traced
from ..core import FREE, Trace, Tracer, raw, sync, watch
from .sites import metadata_only

__all__ = ["Recording", "Source", "note_nested"]

Source = tuple[str, Any]
"""Where a value comes from: ``("v", slot)`` an earlier tape slot, ``("L", i)`` the
argument leaf ``i``, ``("c", value)`` a constant, ``("copy", array)`` a fresh array ``f``
made (an output: a new copy on every call), ``("same", obj)`` an object handed back as
it is (an output ``f`` read from its closure or globals)."""

_ATOMS = (
    type(None), bool, int, float, complex, str, bytes, slice, type(Ellipsis), np.generic,
    np.dtype, type,
)  # fmt: skip
_SKIP = ("adswitch_tape", "numpy")


def _dtype(d: Any) -> Any:
    """The dtype of a differentiated output (float64 for a Python float)."""
    value = raw(d)
    return value.dtype if hasattr(value, "dtype") else np.dtype(np.float64)


class _Active(threading.local):
    """The recordings running in this thread, innermost last."""

    def __init__(self) -> None:
        self.stack: list[Recording] = []


_ACTIVE = _Active()


def note_nested() -> None:
    """A differentiation is starting inside ``f`` (depth > 0): the recording around it,
    if any, cannot be replayed."""
    stack = _ACTIVE.stack
    if stack:
        stack[-1].refuse("calls a differentiation (ad.gradient, ad.vjp...) inside f")


class Recording:
    """One run of ``f`` watched for a replay (see the module doc).

    Args:
        leaves: the call's leaves.
        active: which are traced.
    """

    __slots__ = (
        "_watching", "active", "diff_dtypes", "diffs", "entries", "errstate", "inputs",
        "leaves", "loss", "loss_dtype", "n", "ops", "outs", "reason", "results", "trace",
        "traced", "writes",
    )  # fmt: skip

    def __init__(self, leaves: Sequence[Any], active: Sequence[bool]) -> None:
        self.leaves = leaves
        self.active = active
        self.inputs = {
            id(leaf): i
            for i, (leaf, a) in enumerate(zip(leaves, active))
            if not a and type(leaf) is np.ndarray
        }
        self.ops: list[tuple[int, tuple[Source, ...], dict[str, Any] | None]] = []
        # per recorded slot: its value's (type, shape, dtype)
        self.results: dict[int, tuple[type, Any, Any]] = {}
        self.reason: str | None = None
        self.trace: Trace | None = None
        self.traced: Traced = {}
        self.outs: list[Source] = []
        self.diffs: list[Source] = []
        self.loss: Source | None = None
        self.writes: list[tuple[int, int]] = []
        self.loss_dtype: Any = None
        self.diff_dtypes: list[Any] = []
        self.n = 0
        self.entries: dict[int, tuple[Any, Any, Any, Any]] = {}
        self.errstate: Any = {}
        self._watching = False

    # -- while f runs ------------------------------------------------------------------
    def begin(self, trace: Trace, traced: Traced) -> None:
        """Start watching ``trace`` (right before ``f`` runs)."""
        self.trace, self.traced = trace, traced
        self.errstate = np.geterr()
        trace.recording = self
        watch(1)
        self._watching = True
        _ACTIVE.stack.append(self)

    def refuse(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    def read(self, frame: FrameType) -> None:
        """``raw`` of one of the trace's tracers, called from ``frame``."""
        if self.reason is None and not metadata_only(frame.f_code.co_filename, frame.f_lineno):
            line = user_line(skip=_SKIP)
            self.refuse(
                "reads the value of a traced array (a Python bool/float/int of it, a "
                f"comparison, np.asarray, a mask or index made from it){line}"
            )

    def op(
        self,
        vals: tuple[Any, ...],
        kw: dict[str, Any] | None,
        ans: Any,
        trusted: dict[str, Any] | None = None,
    ) -> None:
        """The operation just recorded at the tape's last slot, with its whole arguments
        and its result ``ans`` (of which the type, shape and dtype are kept).
        ``trusted``: keyword arguments of the replay's call kept as they are (a custom
        rule's callables, which its caller has vouched for), instead of ``kw`` frozen."""
        trace = self.trace
        assert trace is not None
        slot = len(trace.tape) - 1
        entry = trace.tape[slot]
        assert entry is not None
        parents = entry[4]
        if isinstance(parents, int):
            parents = (parents,) + (None,) * (len(vals) - 1)
        sources = tuple(
            ("v", j) if j is not None else self._argument(v) for v, j in zip(vals, parents)
        )
        frozen = trusted
        if trusted is None and kw is not None:
            frozen = {k: self._constant(v) for k, v in kw.items()}
        self.ops.append((slot, sources, frozen))
        if np.geterr() != self.errstate:  # (a replay runs in the caller's np.errstate)
            self.refuse("changes numpy's error handling inside f (np.errstate, np.seterr)")
        self.results[slot] = (type(ans), getattr(ans, "shape", None), getattr(ans, "dtype", None))

    def _argument(self, value: Any) -> Source:
        if type(value) is np.ndarray:
            i = self.inputs.get(id(value))
            if i is not None and self.leaves[i] is value:
                return ("L", i)
        return ("c", self._constant(value))

    def _constant(self, value: Any) -> Any:
        """``value`` as the replay keeps it: arrays copied (read-only), tuples and lists
        element by element; anything else the recording cannot vouch for refuses."""
        kind = type(value)
        if kind is np.ndarray:
            copy = np.array(value, copy=True)
            copy.flags.writeable = False
            return copy
        if kind in (tuple, list):
            return kind(self._constant(v) for v in value)
        if isinstance(value, _ATOMS):
            return value
        what = "a traced value of another call" if kind is Tracer else f"a {kind.__qualname__}"
        self.refuse(f"passes {what} to a recorded operation")
        return value

    # -- after f -----------------------------------------------------------------------
    def end(self, outs: Sequence[Any], loss: Any = None, diffs: Sequence[Any] = ()) -> None:
        """``f`` returned ``outs`` (with its ``loss``, or its differentiated ``diffs``):
        where each comes from, and which arguments it wrote. Stops watching."""
        self.outs = [self._output(o) for o in outs]  # (syncing views records on the tape)
        if loss is not None:
            if not outs or outs[0] is not loss:
                self.refuse("returns a loss that is not its first output leaf")
            self.loss = self.outs[0] if outs else None
        for d in diffs:
            for k, o in enumerate(outs):
                if o is d:
                    self.diffs.append(self.outs[k])
                    break
            else:
                self.refuse("differentiates a value that is not among its outputs")
        for i, (t, first, _) in self.traced.items():
            if t._value is first and t._base is None:
                continue
            if t._base is not None:
                sync(t)
            if t._value is first:
                continue
            if t._trace is self.trace and t._idx is not None:
                self.writes.append((i, t._idx))
            else:
                self.refuse(f"writes a value without history into its argument leaf {i}")
        tape = self.trace.tape if self.trace is not None else []
        self.n = len(tape)
        # what each entry keeps beside its values, before a sweep frees it: (prim, its
        # kept arguments when they are shapes or Nones, whether it has kw, parents)
        for slot, _, _ in self.ops:
            e = tape[slot]
            if e is not None:
                self.entries[slot] = (e[0], e[1] if e[0].keep_args != "values" else None,
                                      e[3] is not None, e[4])  # fmt: skip
        self.stop()
        if self.loss is not None and self.loss[0] == "v":
            self.loss_dtype = raw(loss).dtype
        self.diff_dtypes = [_dtype(d) for d in diffs]

    def _output(self, o: Any) -> Source:
        trace = self.trace
        if type(o) is Tracer:
            if o._base is not None:
                sync(o)
            if o._trace is trace and o._idx is not None:
                return ("v", o._idx)
            if (o._trace is trace or o._trace is FREE) and type(o._value) is np.ndarray:
                o = o._value  # a fresh buffer, or a value made from one
            else:
                self.refuse("returns a traced value of another call")
                return ("c", None)
        if type(o) is np.ndarray:
            i = self.inputs.get(id(o))
            if i is not None and self.leaves[i] is o:
                return ("L", i)
            if o.base is None:
                return ("copy", (o, np.array(o, copy=True)))  # ("same", o) if f's closure's
            self.refuse("returns a view of an array it did not make")
            return ("c", None)
        if isinstance(o, _ATOMS):
            return ("same", o)
        self.refuse(f"returns a {type(o).__qualname__} (only arrays and plain values replay)")
        return ("c", None)

    def stop(self) -> None:
        """Stop watching (idempotent: also when ``f`` raised)."""
        if not self._watching:
            return
        self._watching = False
        if self.trace is not None:
            self.trace.recording = None
        watch(-1)
        stack = _ACTIVE.stack
        if stack and stack[-1] is self:
            stack.pop()
        elif self in stack:
            stack.remove(self)
