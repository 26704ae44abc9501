"""What a prepared call keeps on the tape: its recordings, checked before each replay.

Per primitive (``value_and_grad``, ``vjp``...), a prepared call keeps in its
``CallInfo.prepared`` dict a :class:`State`: the recorded programs, one per value of its
non-array ``Const`` leaves (``Const(3)``, a string; up to :data:`MAX_PROGRAMS`), each
with what ``f`` read besides its arguments (``closure_guard``) and the values its ``Const``
arrays held. :func:`replayable` gives the program a call may replay -- or none, when
``f`` reads something that changed, the ``Const`` arrays hold other values, or the
non-array ``Const`` values are new: the call is then recorded again (:func:`record`).
Checks failing :data:`MAX_MISSES` times in a row, or a recording refused (``recorder``),
stop the recording for good: ``f`` is traced on every call, warned once
(``notices.TapeReplayWarning``).
"""

from __future__ import annotations

import random as _random
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple

import numpy as np

from adswitch.spec import CallInfo, LossFn, OutputFn

from .arena import Arenas
from .closure_guard import Snapshot, same_bits, snapshot
from .fused import GradientFn, compile_gradient
from .notices import warn_once
from .program import Program
from .recorder import Recording

__all__ = ["MAX_MISSES", "MAX_PROGRAMS", "State", "Stored", "record", "replayable"]

MAX_PROGRAMS = 8
MAX_MISSES = 3
_VALUE_LEAVES = (type(None), bool, int, float, complex, str, bytes, np.generic)


class Stored(NamedTuple):
    program: Program
    snapshot: Snapshot  # what f read besides its arguments
    arrays: list[tuple[int, np.ndarray]]  # the Const arrays' values when recorded
    structure: Hashable  # fn.output_structure
    gradient: GradientFn | None  # value_and_grad as one function (``fused``), once compiled
    arenas: Arenas  # the buffers it owns
    others: list[int]  # the leaves walked with f's reads (neither arrays nor plain values)
    unfused: bool = False  # compile_gradient found no fused form


class State:
    """What one prepared call keeps for one primitive (in ``CallInfo.prepared``)."""

    __slots__ = ("lock", "misses", "programs", "refused")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.programs: dict[Hashable, Stored] = {}
        self.refused: str | None = None
        self.misses = 0

    def lookup(self, key: Hashable, leaves: Sequence[Any], func: Any) -> Stored | str | None:
        """The recorded program for this call, if its checks hold (see the module doc);
        ``None`` if not, or the reason to stop recording when they keep failing."""
        stored = self.programs.get(key)
        if stored is not None:
            changed = _changed(stored, leaves, func)
            if changed is None:
                if self.misses:
                    self.misses = 0
                return stored
        else:
            changed = "its non-array Const values" if self.programs else None
        if changed is not None:
            with self.lock:
                self.programs.pop(key, None)
                self.misses += 1
                misses = self.misses
            if misses == MAX_MISSES:
                return (
                    f"reads data that changes between calls ({changed}); a recording is "
                    "replayed only while what f reads stays the same"
                )
        return None

    def compiled(self, key: Hashable, stored: Stored) -> Stored:
        """``stored`` with its fused gradient compiled (a race compiles it twice)."""
        gradient = compile_gradient(stored.program)
        stored = stored._replace(gradient=gradient, unfused=gradient is None)
        with self.lock:
            if self.programs.get(key) is not None:
                self.programs[key] = stored
        return stored

    def store(self, key: Hashable, stored: Stored) -> None:
        with self.lock:
            if len(self.programs) >= MAX_PROGRAMS:
                self.programs.pop(next(iter(self.programs)))
            self.programs[key] = stored


def _changed(stored: Stored, leaves: Sequence[Any], func: Any) -> str | None:
    """What differs from the recording (``None``: nothing)."""
    snap = stored.snapshot
    if not snap.holds(func, [leaves[i] for i in stored.others] if stored.others else ()):
        return "what f reads from its closure, its globals or the modules it names"
    for i, copy in stored.arrays:
        if not same_bits(leaves[i], copy):
            return "the values of its Const arrays"
    return None


def _state(info: CallInfo, primitive: str) -> State:
    prepared = info.prepared
    assert prepared is not None
    state = prepared.get(("tape", primitive))
    if state is None:
        state = prepared.setdefault(("tape", primitive), State())
    return state  # type: ignore[no-any-return]


def _key(leaves: Sequence[Any], active: Sequence[bool]) -> tuple[Any, ...]:
    """The non-array values of the inactive leaves (a program is recorded per key)."""
    if all(active):
        return ()
    key: list[Any] = []
    for i, (leaf, a) in enumerate(zip(leaves, active)):
        if not a and isinstance(leaf, _VALUE_LEAVES):
            key.append((i, type(leaf), _exactly(leaf)))
    return tuple(key)


def _exactly(value: Any) -> Any:
    """``value`` as a key that tells apart what ``==`` does not (``-0.0`` and ``0.0``:
    ``1 / x`` differs) and that is equal to itself (a NaN)."""
    if isinstance(value, np.generic):
        return value.tobytes()
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, complex):
        return (value.real.hex(), value.imag.hex())
    return value


def _other_leaves(leaves: Sequence[Any], active: Sequence[bool]) -> list[int]:
    """Inactive leaves that are neither arrays nor plain values: walked like ``f``'s reads."""
    return [
        i
        for i, (leaf, a) in enumerate(zip(leaves, active))
        if not a and type(leaf) is not np.ndarray and not isinstance(leaf, _VALUE_LEAVES)
    ]


def _const_arrays(leaves: Sequence[Any], active: Sequence[bool]) -> list[tuple[int, np.ndarray]]:
    return [
        (i, np.array(leaf, copy=True))
        for i, (leaf, a) in enumerate(zip(leaves, active))
        if not a and type(leaf) is np.ndarray
    ]


def _refuse(state: State, func: Any, entry: str, reason: str) -> None:
    with state.lock:
        if state.refused is None:
            state.refused = reason
    name = getattr(func, "__qualname__", None) or type(func).__qualname__
    if entry in ("hessian", "hvp") and reason.startswith("calls a differentiation"):
        because = f"ad.{entry} differentiates a gradient call, and nested calls are not replayed"
        fix = "Nothing to change: this is how the tape computes second derivatives."
    else:
        because = f"f {reason}"
        fix = (
            "To be replayed, f must compute the same numpy operations on every call: use xp "
            "functions on traced values without converting them to Python numbers or "
            "branching on them (xp.where instead of if), pass data that changes as arguments "
            "(ad.Const), and differentiate only outside f."
        )
    warn_once(
        (getattr(func, "__code__", None) or id(func), reason),
        f"tape: the prepared ad.{entry} of {name} traces f in Python on every call instead "
        f"of replaying the operations it recorded, because {because}. The results are "
        f"right, only slower. {fix}",
    )


def record(
    state: State,
    info: CallInfo,
    fn: LossFn | OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    key: Hashable,
    run: Callable[[Recording | None], Any],
    fuse: bool = False,
) -> Any:
    """Run the call the plain way, recorded (or not, once refused); keep its program."""
    func = info.func
    assert func is not None  # (always set by the front end)
    if state.refused is not None:
        return run(None)
    others = _other_leaves(leaves, active)
    watched = snapshot(func, [leaves[i] for i in others])
    if watched.reason is not None:
        _refuse(state, func, info.entry, watched.reason)
        return run(None)
    arrays = _const_arrays(leaves, active)
    recording = Recording(leaves, active)
    generators = _generator_states()
    result = run(recording)
    reason = recording.reason
    if reason is None and _generator_states() != generators:
        reason = "draws random numbers (numpy's or Python's global generator)"
    if reason is None and not watched.holds(func, [leaves[i] for i in others]):
        reason = "changes what it reads from its closure or globals"
    if reason is None and any(not same_bits(leaves[i], copy) for i, copy in arrays):
        reason = "writes into its Const arrays"
    if reason is not None:
        _refuse(state, func, info.entry, reason)
        return result
    captured = {id(a) for a, _ in watched.copies}
    program = Program(recording, captured)
    # Compiled now, unless the last program was just found stale: then at its first
    # replay (data that changes on every call would pay a compilation per call).
    gradient = compile_gradient(program) if fuse and not state.misses else None
    stored = Stored(
        program, watched, arrays, fn.output_structure, gradient, Arenas(), others,
        unfused=not fuse or (gradient is None and not state.misses),
    )  # fmt: skip
    state.store(key, stored)
    return result


def _generator_states() -> tuple[Any, ...]:
    """What numpy's and Python's global random generators would draw next (a draw in
    ``f``, even inside a library, changes it: a replay would repeat the first draw)."""
    state = np.random.get_state(legacy=False)
    mt = state["state"]
    assert isinstance(state, dict) and isinstance(mt, dict)
    return (mt["key"].tobytes(), mt["pos"], state["has_gauss"], _random.getstate())


def replayable(
    info: CallInfo, primitive: str, leaves: Sequence[Any], active: Sequence[bool]
) -> tuple[State, Hashable, Stored | None]:
    state = _state(info, primitive)
    key = _key(leaves, active)
    if state.refused is not None:
        return state, key, None
    stored = state.lookup(key, leaves, info.func)
    if isinstance(stored, str):
        _refuse(state, info.func, info.entry, stored)
        return state, key, None
    return state, key, stored
