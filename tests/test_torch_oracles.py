"""Independent oracles for the torch engine's tests: central finite differences in
float64 numpy, never touching torch. Imported by the other ``test_torch_*`` files."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")

STEP = 1e-6
FD_TOL: dict[str, Any] = dict(rtol=1e-6, atol=1e-7)


def fd_grad(f: Callable[[np.ndarray], float], x: np.ndarray, step: float = STEP) -> np.ndarray:
    """Central differences of the numpy function ``f`` at ``x`` (a float64 array)."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += step
        minus[i] -= step
        grad[i] = (float(f(plus)) - float(f(minus))) / (2 * step)
    return grad


def test_fd_grad_matches_a_closed_form() -> None:
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(
        fd_grad(lambda v: np.sum(np.sin(v) * v), x), np.cos(x) * x + np.sin(x), **FD_TOL
    )
