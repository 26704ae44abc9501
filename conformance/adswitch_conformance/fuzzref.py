"""The fuzzer's oracle: float64 central differences of a program, on plain numpy.

Never through adswitch or any engine: the program's source is compiled with an ``ad``
whose ``array_namespace`` is numpy itself. Each evaluation runs on fresh copies of the
arguments (tied arrays stay tied, so a tied argument's difference quotient is the total
derivative). Steps h/2, h and 2h give two Richardson extrapolations; their difference
estimates the error, and a large one (a kink within reach) marks the reference
unreliable, so that the program is skipped rather than judged on a bad number.

A nested program's inner ``ad.gradient`` is replaced by its definition: the weighted sum
of the inner gradients is the derivative of ``h`` along the weights, itself a
Richardson-extrapolated central difference.

Example:
    >>> import numpy as np
    >>> from adswitch_conformance.fuzzprogram import Arg, Program
    >>> p = Program(args=(Arg("x0", np.array([0.5])),), consts=(np.array([2.0]),),
    ...             lines=("v1 = xp.sin(x0)",), loss="xp.sum(v1 * xp.asarray(c0))")
    >>> ref = reference(p)
    >>> round(float(ref.grads[0][0]), 10) == round(2 * float(np.cos(0.5)), 10)
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from adswitch_conformance.fuzzgen import KINK_MARGIN
from adswitch_conformance.fuzzprogram import Program

__all__ = ["FD_TOLERANCE", "Reference", "kind", "numpy_args", "reference"]

STEP = 2e-4
"""Base step; Richardson extrapolation makes the truncation error O(STEP**4)."""
NESTED_STEP = 1e-3
"""Step of both differences of a nested program (a difference of differences)."""

FD_TOLERANCE = {"float64": (1e-6, 1e-7), "float32": (1e-3, 1e-4), "nested": (1e-5, 1e-6)}
"""``(rtol, atol per unit of magnitude)`` against this reference, by kind of program:
float64 differences are good to ~1e-10; a float32 engine rounds at ~1e-7 per operation;
a nested reference is a difference of differences."""

_NUMPY_AD = SimpleNamespace(array_namespace=lambda *arrays: np)


@dataclass
class Reference:
    """What the engines are judged against.

    Attributes:
        loss: ``f``'s value.
        grads: per argument, the gradient (``None`` for ``Const`` and repeated ties).
        scale: the magnitude tolerances are relative to.
        reliable: whether to judge at all (``False``: too near a kink).
        why: the reason when not reliable.
    """

    loss: float
    grads: list[Any]
    scale: float
    reliable: bool
    why: str = ""


def kind(program: Program) -> str:
    """``"nested"``, ``"float32"`` or ``"float64"``: selects tolerances."""
    return "nested" if program.nested else program.dtype


def numpy_args(program: Program, dtype: str = "float64") -> list[Any]:
    """Fresh copies of the arguments in ``dtype`` (rounded to the program's dtype first,
    so that the reference sees exactly the engine's inputs); ties are one copy."""
    out: list[Any] = []
    for arg in program.args:
        if arg.activity == "tie":
            out.append(out[arg.tie_to or 0])
        elif arg.is_array:
            out.append(np.asarray(arg.value, dtype=program.dtype).astype(dtype))
        else:
            out.append(float(arg.value))
    return out


def _copy(args: list[Any]) -> list[Any]:
    memo: dict[int, Any] = {}
    return [memo.setdefault(id(a), np.array(a)) if isinstance(a, np.ndarray) else a for a in args]


def _loss_function(program: Program) -> Callable[[list[Any]], float]:
    if not program.nested:
        f = program.compile(_NUMPY_AD, "float64")
        return lambda args: float(f(*args))
    h = program.compile(_NUMPY_AD, "float64", inner=True)
    consts = program.arrays("float64")
    directions = [
        None if weight is None else consts[weight] if arg.is_array else float(weight)
        for arg, weight in zip(program.args, program.outer, strict=True)
    ]

    def along(args: list[Any], t: float) -> float:
        moved = _copy(args)
        for i, direction in enumerate(directions):
            if direction is not None:
                moved[i] += t * direction  # arrays in place: a tied argument moves everywhere
        return float(h(*moved))

    def loss(args: list[Any]) -> float:
        t = NESTED_STEP
        d = {s: (along(args, s * t) - along(args, -s * t)) / (2 * s * t) for s in (0.5, 1.0)}
        value = (4 * d[0.5] - d[1.0]) / 3
        return value + (0.5 * float(h(*_copy(args))) if program.with_value else 0.0)

    return loss


def reference(program: Program) -> Reference:
    """Gradients of ``program`` by Richardson-extrapolated central differences.

    Args:
        program: the program.

    Returns:
        The :class:`Reference`.
    """
    loss_of = _loss_function(program)
    loss = loss_of(numpy_args(program))
    margin = program.margin()
    if margin < KINK_MARGIN:
        return Reference(loss, [], 1.0, False, f"inputs within {margin:.1e} of a kink")
    step = NESTED_STEP if program.nested else STEP

    def at(i: int, index: tuple[int, ...], delta: float) -> float:
        moved = numpy_args(program)
        if isinstance(moved[i], float):
            moved[i] += delta
        else:
            moved[i][index] += delta  # ties share the copy: every use moves together
        return loss_of(moved)

    grads: list[Any] = []
    worst = 0.0
    for i, arg in enumerate(program.args):
        if arg.activity in ("const", "tie"):
            grads.append(None)
            continue
        shape = np.shape(arg.value)
        grad = np.zeros(shape)
        for index in np.ndindex(*shape):
            d = {
                s: (at(i, index, s * step) - at(i, index, -s * step)) / (2 * s * step)
                for s in (0.5, 1, 2)
            }
            fine, coarse = (4 * d[0.5] - d[1]) / 3, (4 * d[1] - d[2]) / 3
            grad[index] = fine
            worst = max(worst, abs(fine - coarse))
        grads.append(grad if arg.is_array else float(grad))
    sizes = [float(np.max(np.abs(g))) for g in grads if g is not None and np.size(g)]
    scale = 1.0 + abs(loss) + max(sizes, default=0.0)
    if worst > 1e-2 * FD_TOLERANCE[kind(program)][1] * scale:
        return Reference(loss, grads, scale, False, f"finite differences unsteady ({worst:.1e})")
    return Reference(loss, grads, scale, True)
