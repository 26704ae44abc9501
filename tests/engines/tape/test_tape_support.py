"""Oracles for the tape engine's tests: central finite differences of plain numpy calls.

The functions under test are written against ``ad.array_namespace``, so called with
numpy arrays they run on plain numpy: finite differences of that plain call are an
oracle independent of the tape. Arguments are copied before every evaluation, so
functions that mutate their inputs are differentiated correctly too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad


def _fresh(args: tuple[Any, ...]) -> list[Any]:
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]


def fd_gradient(f: Callable[..., Any], args: tuple[Any, ...], i: int, eps: float = 1e-6) -> Any:
    """Central-difference gradient of the scalar ``f(*args)`` with respect to ``args[i]``."""

    def at(delta: Any) -> float:
        moved = _fresh(args)
        moved[i] = moved[i] + delta
        return float(f(*moved))

    x = args[i]
    if isinstance(x, float):
        return (at(eps) - at(-eps)) / (2 * eps)
    grad = np.zeros(np.shape(x))
    for index in np.ndindex(grad.shape):
        step = np.zeros(np.shape(x))
        step[index] = eps
        grad[index] = (at(step) - at(-step)) / (2 * eps)
    return grad


def check_gradient(
    f: Callable[..., Any], *args: Any, rtol: float = 1e-5, atol: float = 1e-6
) -> tuple[Any, ...]:
    """Assert the tape's gradient of ``f`` matches finite differences for every argument."""
    grads = ad.gradient(f, *_fresh(args), backend="tape")
    for i, g in enumerate(grads):
        expected = fd_gradient(f, args, i)
        np.testing.assert_allclose(g, expected, rtol=rtol, atol=atol, err_msg=f"argument {i}")
    return grads


def test_fd_gradient_matches_a_closed_form() -> None:
    x = np.array([0.3, -1.2, 2.0])
    got = fd_gradient(lambda v: np.sum(np.sin(v) * v), (x,), 0)
    np.testing.assert_allclose(got, np.cos(x) * x + np.sin(x), rtol=1e-7)


def test_fd_gradient_sees_mutation_only_on_copies() -> None:
    x = np.array([1.0, 2.0])

    def f(v: Any) -> Any:
        v[0] = 5.0
        return np.sum(v * v)

    np.testing.assert_allclose(fd_gradient(f, (x,), 0), [0.0, 4.0], atol=1e-6)
    np.testing.assert_array_equal(x, [1.0, 2.0])


def test_check_gradient_rejects_a_wrong_gradient() -> None:
    # ``f`` reads a global that changes between calls: finite differences and the tape
    # disagree, and the helper must say so.
    state = {"k": 1.0}

    def f(v: Any) -> Any:
        state["k"] += 1.0
        xp = ad.array_namespace(v)
        return xp.sum(v) * state["k"]

    with pytest.raises(AssertionError):
        check_gradient(f, np.array([1.0, 2.0]))
