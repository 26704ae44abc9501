"""The tests' independent oracle: central finite differences in float64 numpy.

Shared by the engine test files (``test_torch_*``, ``test_autograd_*``); the function under
test is evaluated on plain numpy copies, never through an engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

STEP = 1e-6


def central_fd(f: Callable[[np.ndarray], Any], x: np.ndarray, step: float = STEP) -> np.ndarray:
    """Central differences of the scalar numpy function ``f`` at ``x``, element by element."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += step
        minus[i] -= step
        grad[i] = (float(f(plus)) - float(f(minus))) / (2 * step)
    return grad
