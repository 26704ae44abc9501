"""Example calls of the tape's ``linalg`` primitives (``rules/matrix_primitives.py``), for
the rule checks of ``test_tape_rules`` (keep flags against central differences) and
``test_tape_operators_rules`` (batched rules against a loop, nested, second order).

Each is ``(primitive, args, kw)`` at a point away from degeneracy: well-conditioned
matrices, distinct eigenvalues and singular values, positive-definite matrices for
``cholesky`` (whose numpy code, like ``eigh``'s, reads the lower triangle: differences
in the upper one are 0, and so is the rule's gradient there). Stacks of matrices, and
stacks that broadcast against each other (``solve``), are among them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from adswitch_tape.rules.linalg import primitives as M

__all__ = ["linalg_examples"]

Example = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def _regular(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Matrices well away from singular: the identity plus small entries."""
    n = shape[-1]
    return np.eye(n) * 1.5 + rng.uniform(-0.4, 0.4, shape)


def _spd(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Symmetric positive-definite matrices with distinct eigenvalues."""
    b = rng.uniform(-1.0, 1.0, shape)
    n = shape[-1]
    return b @ np.swapaxes(b, -1, -2) + np.diag(np.arange(1.0, n + 1.0))


def _spread(rng: np.random.Generator, m: int, n: int, *stack: int) -> np.ndarray:
    """Matrices with singular values near 3, 2, 1, ... (distinct, nonzero)."""
    k = min(m, n)
    u = np.linalg.qr(rng.standard_normal((*stack, m, k)))[0]
    v = np.linalg.qr(rng.standard_normal((*stack, n, k)))[0]
    s = np.arange(k, 0.0, -1.0) + 0.5
    return (u * s) @ np.swapaxes(v, -1, -2)


def linalg_examples() -> Iterator[Example]:
    rng = np.random.default_rng(13)
    yield M.inv, (_regular(rng, 3, 3),), {}
    yield M.inv, (_regular(rng, 2, 3, 3),), {}
    yield M.solve, (_regular(rng, 3, 3), rng.uniform(-1, 1, (3, 2))), {}
    yield M.solve, (_regular(rng, 2, 3, 3), rng.uniform(-1, 1, (3, 1))), {}
    yield M.solve, (_regular(rng, 3, 3), rng.uniform(-1, 1, (2, 3, 2))), {}
    yield M.det, (_regular(rng, 3, 3),), {}
    yield M.det, (_regular(rng, 2, 2, 2),), {}
    yield M.cofactor, (_regular(rng, 3, 3),), {}
    yield M.slogdet, (-_regular(rng, 3, 3),), {}  # a negative determinant
    yield M.slogdet, (_regular(rng, 2, 2, 2),), {}
    yield M.pinv, (_spread(rng, 4, 3),), {}
    yield M.pinv, (_spread(rng, 2, 3),), {"rtol": 1e-10}
    yield M.cholesky, (_spd(rng, 3, 3),), {}
    yield M.cholesky, (_spd(rng, 2, 2, 2),), {}
    yield M.eigh, (_spd(rng, 3, 3),), {}
    yield M.eigh, (_spd(rng, 2, 2, 2) - 2.0 * np.eye(2),), {}  # negative eigenvalues too
    yield M.eigh, (_spd(rng, 3, 3),), {"name": "eigvalsh"}
    # the eigenvectors / singular vectors taken out of a packed factorization (distinct
    # values in its eigenvalue / singular-value row)
    yield M.eigenvectors, (M.eigh(_spd(rng, 2, 3, 3)),), {}
    yield M.singular_vectors, (M.svd(_spread(rng, 4, 3), rows=4),), {"rows": 4, "side": "U"}
    yield M.singular_vectors, (M.svd(_spread(rng, 2, 4), rows=2),), {"rows": 2, "side": "V"}
    yield M.qr, (_spread(rng, 4, 3),), {}
    yield M.qr, (_regular(rng, 2, 3, 3),), {}
    yield M.svd, (_spread(rng, 4, 3),), {"rows": 4}
    yield M.svd, (_spread(rng, 2, 4),), {"rows": 2}
    yield M.svd, (_spread(rng, 3, 3, 2),), {"rows": 3}
