"""What ``f`` reads besides its arguments is never run stale (the promise): a global list
whose item is replaced, and a global array whose zeros flip sign (``1/x`` tells ``-0.0``
from ``0.0``), between two calls, plain and prepared, on the engines that cache or
replay programs. Oracle: the closed form at the new values. Both were stale on jax."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad

WEIGHTS = [np.ones(2)]
ZEROS = np.zeros(2)
X = np.arange(2.0)


def _from_list(x: Any) -> Any:
    return ad.array_namespace(x).sum(x * WEIGHTS[0])


def _reciprocal(x: Any) -> Any:
    return ad.array_namespace(x).sum(x * (1.0 / ZEROS))


def _op(prepared: bool, f: Any, engine: str) -> Any:
    if prepared:
        call = ad.prepare(ad.gradient, f, X, backend=engine)
        return lambda: call(X)[0]
    return lambda: ad.gradient(f, X, backend=engine)[0]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (1/0: the point of the case)
@pytest.mark.parametrize("prepared", [False, True])
@pytest.mark.parametrize("engine", ["tape", "jax"])
def test_a_changed_capture_is_never_run_stale(engine: str, prepared: bool) -> None:
    if engine != "tape":
        pytest.importorskip(engine)
    WEIGHTS[0], ZEROS[:] = np.ones(2), 0.0
    from_list, reciprocal = _op(prepared, _from_list, engine), _op(prepared, _reciprocal, engine)
    for _ in range(2):  # (compiled or recorded, then reused)
        np.testing.assert_array_equal(from_list(), [1.0, 1.0])
        np.testing.assert_array_equal(reciprocal(), [np.inf, np.inf])
    WEIGHTS[0] = np.full(2, 5.0)
    ZEROS[:] = -0.0
    np.testing.assert_array_equal(from_list(), [5.0, 5.0])
    np.testing.assert_array_equal(reciprocal(), [-np.inf, -np.inf])


class _Slotted:
    __slots__ = ("w",)

    def __init__(self, w: Any) -> None:
        self.w = w


MODEL = _Slotted(np.ones(2))


def _from_slots(x: Any) -> Any:
    return ad.array_namespace(x).sum(x * MODEL.w)


@pytest.mark.parametrize("prepared", [False, True])
@pytest.mark.parametrize("engine", ["tape", "jax"])
def test_a_slots_attribute_is_never_run_stale(engine: str, prepared: bool) -> None:
    if engine != "tape":
        pytest.importorskip(engine)
    MODEL.w = np.ones(2)
    grad = _op(prepared, _from_slots, engine)
    for _ in range(2):
        np.testing.assert_array_equal(grad(), [1.0, 1.0])
    MODEL.w = np.full(2, 3.0)
    np.testing.assert_array_equal(grad(), [3.0, 3.0])
