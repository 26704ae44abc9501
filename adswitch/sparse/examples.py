"""Sparse test functions shared by the tests and the benchmark: the 2-D Brusselator
(SciML's sparse-Jacobian benchmark, periodic 5-point Laplacian), written with ``xp``."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["brusselator"]


def brusselator(u: Any, n: int) -> Any:
    """The right-hand side of the 2-D Brusselator on an ``n x n`` periodic grid; ``u`` holds
    ``(n, n, 2)`` values flattened; returns the same layout."""
    from adswitch.namespace import array_namespace

    xp = array_namespace(u)
    alpha = 10.0 * (n - 1) ** 2 / 10.0  # (alpha / dx^2, dx = 1/(n-1), alpha = 10)
    grid = xp.reshape(u, (n, n, 2))
    a, b = grid[:, :, 0], grid[:, :, 1]

    def lap(z: Any) -> Any:
        return (
            xp.roll(z, 1, axis=0)
            + xp.roll(z, -1, axis=0)
            + xp.roll(z, 1, axis=1)
            + xp.roll(z, -1, axis=1)
            - 4.0 * z
        )

    xs = np.linspace(0.0, 1.0, n)
    forcing = xp.asarray(
        np.where(((xs[:, None] - 0.3) ** 2 + (xs[None, :] - 0.6) ** 2) <= 0.01, 5.0, 0.0)
    )
    du = 1.0 + a * a * b - 4.4 * a + alpha * lap(a) + forcing
    dv = 3.4 * a - a * a * b + alpha * lap(b)
    return xp.reshape(xp.stack([du, dv], axis=-1), (-1,))
