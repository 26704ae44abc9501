"""Dense derivative matrices by Richardson-extrapolated central differences in float64:
the Jacobian of a function's differentiated outputs, the Hessian of its loss.

The inputs are the unique floating leaves of the active arguments, first occurrences only
(a tied array is one input, perturbed at every use), flattened in order into one vector;
the outputs are the floating leaves of the output tree, in the same order the suite's
walker lists them. Every evaluation runs on a fresh deep copy (see
:func:`~adswitch_conformance.reference.perturbed`), so a mutating ``f`` cannot spoil it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .reference import perturbed, richardson, to_float64
from .trees import is_float_leaf, leaves_with_paths, map_unique

__all__ = [
    "Slot",
    "Ref",
    "input_slots",
    "output_slots",
    "flat_values",
    "dense_jacobian",
    "dense_hessian",
]


@dataclass(frozen=True)
class Slot:
    """One leaf of the flat input or output vector.

    Attributes:
        path: where it sits (``args[0]['W']``, ``y[1]``): its first occurrence.
        k: its index among the tree's leaves (flatten order).
        shape: its shape (``()`` for a Python float).
        dtype: the dtype name the caller passed (``"float64"`` for a Python float).
        python_float: it is a Python float.
        offset: where its elements start in the flat vector.
    """

    path: str
    k: int
    shape: tuple[int, ...]
    dtype: str
    python_float: bool
    offset: int

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def span(self) -> slice:
        return slice(self.offset, self.offset + self.size)


class Ref:
    """One expected leaf of an operator's result: a float64 value (or a Python float),
    the reference's error estimate, and the dtype the result must have. Not a container
    for the suite's walker, so a tree of ``Ref`` leaves mirrors the result's tree."""

    __slots__ = ("dtype", "error", "python_float", "value")

    def __init__(self, value: Any, error: Any, dtype: str, python_float: bool = False) -> None:
        self.value = value
        self.error = error
        self.dtype = dtype
        self.python_float = python_float

    def __repr__(self) -> str:
        return f"Ref({self.value!r}, dtype={self.dtype})"


def _is_diff(leaf: Any) -> bool:
    return is_float_leaf(leaf) or isinstance(leaf, np.floating)


def _dtype(leaf: Any) -> str:
    return str(np.asarray(leaf).dtype.name) if not isinstance(leaf, float) else "float64"


def _slots(pairs: Sequence[tuple[int, str, Any]]) -> list[Slot]:
    slots, offset = [], 0
    for k, path, leaf in pairs:
        python_float = type(leaf) is float
        shape = () if python_float else tuple(np.shape(leaf))
        slot = Slot(path, k, shape, _dtype(leaf), python_float, offset)
        slots.append(slot)
        offset += slot.size
    return slots


def input_slots(vals: Sequence[Any], active: Sequence[bool]) -> list[Slot]:
    """The differentiated inputs: unique floating leaves of the active arguments.

    Example:
        >>> w = np.zeros(2)
        >>> [(s.path, s.offset) for s in input_slots([{"a": w, "b": w}, 1.0], [True, True])]
        [("args[0]['a']", 0), ('args[1]', 2)]
    """
    pairs, seen = [], set()
    for k, (path, leaf) in enumerate(leaves_with_paths(list(vals), "args")):
        arg = int(path[5 : path.index("]")])
        if not active[arg] or not is_float_leaf(leaf):
            continue
        if isinstance(leaf, np.ndarray):
            if id(leaf) in seen:
                continue
            seen.add(id(leaf))
        pairs.append((k, path, leaf))
    return _slots(pairs)


def output_slots(y: Any, prefix: str = "y") -> list[Slot]:
    """The differentiated outputs: the floating leaves of ``y`` (0-d numpy scalars too).

    Example:
        >>> [s.path for s in output_slots((np.ones(2), "aux", 1.5))]
        ['y[0]', 'y[2]']
    """
    pairs = [
        (k, path, leaf)
        for k, (path, leaf) in enumerate(leaves_with_paths(y, prefix))
        if _is_diff(leaf)
    ]
    return _slots(pairs)


def flat_values(tree: Any, slots: Sequence[Slot], prefix: str) -> Any:
    """The leaves of ``tree`` at ``slots``' paths, raveled into one float64 vector (a
    missing or ``None`` leaf is an error: seeds must cover every slot).

    Example:
        >>> flat_values((np.ones(2), 3.0), output_slots((np.ones(2), 1.0)), "y")
        array([1., 1., 3.])
    """
    found = dict(leaves_with_paths(tree, prefix))
    parts = []
    for slot in slots:
        value = found.get(slot.path)
        if value is None:
            raise ValueError(f"{slot.path}: no seed value for a differentiated leaf")
        parts.append(np.asarray(value, dtype=np.float64).reshape(-1))
    return np.concatenate(parts) if parts else np.zeros(0)


def _elements(slots: Sequence[Slot]) -> list[tuple[int, Any]]:
    """Per input element: ``(flat leaf index, element index or None)``."""
    out: list[tuple[int, Any]] = []
    for slot in slots:
        if slot.python_float:
            out.append((slot.k, None))
        else:
            out.extend((slot.k, np.unravel_index(j, slot.shape)) for j in range(slot.size))
    return out


def dense_jacobian(
    y_of: Callable[[list[Any]], Any],
    vals: Sequence[Any],
    active: Sequence[bool],
    step: float = 2e-3,
) -> tuple[Any, Any, list[Slot], list[Slot]]:
    """The Jacobian of ``y_of(args)``'s floating leaves with respect to the inputs.

    Args:
        y_of: maps the argument list (numpy, float64) to the differentiated output tree.
        vals: the argument values (activity wrappers removed).
        active: per argument, whether it is differentiated.
        step: the base step of the central differences.

    Returns:
        ``(J, errors, inputs, outputs)``: ``J[m, n]`` (output element by input element),
        its error estimate, and the slots of both vectors.

    Example:
        >>> J, _, _, _ = dense_jacobian(lambda a: a[0] ** 2, [np.array([1.0, 3.0])], [True])
        >>> np.round(J, 8).tolist()
        [[2.0, 0.0], [0.0, 6.0]]
    """
    work = map_unique(to_float64, list(vals))
    inputs = input_slots(work, active)
    outputs = output_slots(y_of(copy.deepcopy(work)))

    def at(k: int, index: Any, delta: float) -> Any:
        return flat_values(y_of(perturbed(work, [(k, index, delta)])), outputs, "y")

    m = sum(s.size for s in outputs)
    columns, errors = [], []
    for k, index in _elements(inputs):
        d = [(at(k, index, s) - at(k, index, -s)) / (2 * s) for s in (step, step / 2, step / 4)]
        column, error = richardson(d)
        columns.append(column)
        errors.append(error)
    if not columns:
        return np.zeros((m, 0)), np.zeros((m, 0)), inputs, outputs
    return np.stack(columns, axis=1), np.stack(errors, axis=1), inputs, outputs


def dense_hessian(
    loss: Callable[[list[Any]], float],
    vals: Sequence[Any],
    active: Sequence[bool],
    step: float = 5e-3,
) -> tuple[Any, Any, list[Slot]]:
    """The Hessian of the scalar ``loss(args)`` by mixed second differences
    ``[f(+i,+j) - f(+i,-j) - f(-i,+j) + f(-i,-j)] / 4h^2`` (on the diagonal, the same
    stencil is ``f(x+2h) - 2f(x) + f(x-2h)``), two Richardson steps. The base step is
    larger than for first derivatives: rounding grows as ``eps / h^2``.

    Returns:
        ``(H, errors, inputs)``.

    Example:
        >>> H, _, _ = dense_hessian(lambda a: float(np.sum(a[0] ** 3)), [np.ones(2)], [True])
        >>> np.round(H, 6).tolist()
        [[6.0, 0.0], [0.0, 6.0]]
    """
    work = map_unique(to_float64, list(vals))
    inputs = input_slots(work, active)
    elements = _elements(inputs)
    n = len(elements)
    hess, errs = np.zeros((n, n)), np.zeros((n, n))

    def second(i: int, j: int, h: float) -> float:
        (ki, ii), (kj, ij) = elements[i], elements[j]
        total = 0.0
        for si, sj, sign in ((1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)):
            total += sign * loss(perturbed(work, [(ki, ii, si * h), (kj, ij, sj * h)]))
        return total / (4 * h * h)

    for i in range(n):
        for j in range(i, n):
            value, error = richardson([second(i, j, s) for s in (step, step / 2, step / 4)])
            hess[i, j] = hess[j, i] = value
            errs[i, j] = errs[j, i] = error
    return hess, errs, inputs
