"""The pieces the derived primitives (:mod:`adswitch.derive`) are made of: which primitives
an engine has, a loss seen as one output, seeds, copies of the leaves for a second run of
``f``, and results stacked, cut and cast into the shape and dtype they belong to.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from adswitch.bases import numpy_dtype, shape_of
from adswitch.leaves import is_array
from adswitch.namespace import array_namespace
from adswitch.spec import PRIMITIVES, Backend, CallInfo, LossFn, OutputFn, SeedFn, implements

__all__ = [
    "RawLoss",
    "NATIVES",
    "Replay",
    "ScalarOutputs",
    "batch_size",
    "const_seed",
    "diff_leaves",
    "in_dtype_of",
    "like",
    "natives",
    "spread",
    "stack_columns",
    "stack_rows",
    "unit_seed",
    "with_batched",
    "zeros_seed",
]

NATIVES: dict[type, frozenset[str]] = {}
"""Engine type -> the primitives it implements itself, as :func:`natives` found them (read
directly on the hot path of ``ad.gradient``, where a call of ``natives`` shows)."""


def with_batched(info: CallInfo, flag: bool) -> CallInfo:
    """``info._replace(batched=flag)`` without the named tuple's ``_replace`` (a dict round
    trip, a microsecond of a prepared Jacobian's call), and ``info`` itself when it is so."""
    if info.batched is flag:
        return info
    return _new_tuple(CallInfo, (*info[:_BATCHED], flag, *info[_BATCHED + 1 :]))


_new_tuple = tuple.__new__
_BATCHED = CallInfo._fields.index("batched")  # (by name: a new field shifts nothing)


def natives(engine: Backend) -> frozenset[str]:
    """The primitives ``engine`` implements itself (cached per engine type)."""
    found = NATIVES.get(type(engine))
    if found is None:
        found = NATIVES[type(engine)] = frozenset(
            name for name in PRIMITIVES if implements(engine, name)
        )
    return found


# -- the scalar loss as a one-output function ---------------------------------------------
class ScalarOutputs:
    """A ``LossFn`` seen as an ``OutputFn`` with the loss as its one differentiated output
    (the loss is always the first output leaf, see ``outputs.loss_of``)."""

    __slots__ = ("fn",)

    def __init__(self, fn: LossFn) -> None:
        self.fn = fn

    @property
    def output_structure(self) -> Hashable:
        return self.fn.output_structure

    def __call__(self, values: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        loss, out = self.fn(values)
        return [loss], out

    def reuse(self, structure: Hashable) -> None:
        self.fn.reuse(structure)


def unit_seed(diffs: Sequence[Any]) -> list[Any]:
    """The cotangent ``1`` of a scalar loss, in its dtype."""
    loss = diffs[0]
    if isinstance(loss, float) or not hasattr(loss, "dtype"):
        return [1.0]
    return [np.ones((), dtype=numpy_dtype(loss.dtype))]


def diff_leaves(fn: Any, out_leaves: Sequence[Any]) -> list[Any]:
    """The differentiated outputs among ``out_leaves`` (after ``fn`` ran or was reused)."""
    if isinstance(fn, ScalarOutputs):
        return [out_leaves[0]]
    return [out_leaves[k] for k in fn.outputs().diff_positions]


class Replay:
    """The leaves as they were before ``f`` first ran, for a derivation that runs ``f``
    again: each later run gets fresh copies, so a mutating ``f`` sees the values of the
    first run (as the caller passed them) and writes into the caller's arrays only once.
    Engines that refuse writes (no ``Capabilities.mutation``) need no copies."""

    __slots__ = ("leaves", "saved")

    def __init__(self, engine: Backend, leaves: Sequence[Any]) -> None:
        if engine.capabilities.mutation:
            self.saved: list[Any] | None = [_copy(leaf) for leaf in leaves]
        else:
            self.saved = None
            self.leaves = list(leaves)

    def values(self) -> list[Any]:
        if self.saved is None:
            return self.leaves
        return [_copy(leaf) for leaf in self.saved]


def _copy(leaf: Any) -> Any:
    if isinstance(leaf, np.ndarray):
        return np.array(leaf, copy=True)
    if is_array(leaf):
        return array_namespace(leaf).asarray(leaf, copy=True)
    return leaf


class RawLoss:
    """A loss function in ``LossFn`` form that forwards the output-structure handshake to
    the ``OutputFn`` it is built on."""

    __slots__ = ("base", "fn")

    def __init__(
        self, fn: Callable[[Sequence[Any]], tuple[Any, list[Any]]], base: OutputFn
    ) -> None:
        self.fn = fn
        self.base = base

    @property
    def output_structure(self) -> Hashable:
        return self.base.output_structure

    def __call__(self, values: Sequence[Any]) -> tuple[Any, list[Any]]:
        return self.fn(values)

    def reuse(self, structure: Hashable) -> None:
        self.base.reuse(structure)


def zeros_seed(diffs: Sequence[Any]) -> list[Any]:
    return [
        0.0 if isinstance(d, float) else np.zeros(shape_of(d), dtype=numpy_dtype(d.dtype))
        for d in diffs
    ]


def const_seed(cotangents: list[Any]) -> SeedFn:
    return lambda diffs: cotangents


def batch_size(arrays: Sequence[Any]) -> int:
    for a in arrays:
        if a is not None:
            return int(shape_of(a)[0])
    return 0


def spread(per_active: list[Any], active: Sequence[bool]) -> list[Any]:
    """Values for the active leaves spread over all leaves (``None`` elsewhere)."""
    it = iter(per_active)
    return [next(it) if a else None for a in active]


def stack_rows(engine: Backend, rows: list[list[Any | None]]) -> list[Any | None]:
    """Per leaf, the rows' results stacked along a new leading axis."""
    if not rows:
        return []
    return stack_columns(engine, rows)


def stack_columns(engine: Backend, runs: list[list[Any]]) -> list[Any]:
    out: list[Any] = []
    for parts in zip(*runs):
        if parts[0] is None:
            out.append(None)
        elif isinstance(parts[0], float):
            out.append(np.asarray(parts, dtype=np.float64))
        else:
            out.append(array_namespace(*parts).stack(list(parts)))
    return out


def like(engine: Backend, flat: Any, leaf: Any) -> Any:
    """A flat piece of a result, shaped like ``leaf`` and in its dtype (for a Python float,
    its one element: made a float at top level by the front end, kept traced when
    nested)."""
    if isinstance(leaf, float):
        return flat[0]
    xp = array_namespace(flat)
    return in_dtype_of(xp.reshape(flat, shape_of(leaf)), leaf)


def in_dtype_of(value: Any, like: Any) -> Any:
    """``value`` cast to ``like``'s dtype (a result of a derived primitive is in the dtype
    of what it belongs to: a gradient in its leaf's, a tangent in its output's)."""
    dtype = getattr(like, "dtype", None)
    if dtype is None or numpy_dtype(value.dtype) == numpy_dtype(dtype):
        return value
    xp = array_namespace(value)
    return xp.astype(value, getattr(xp, numpy_dtype(dtype).name, dtype))
