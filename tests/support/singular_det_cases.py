"""``det`` and ``slogdet`` at singular matrices, shared by the torch and jax engines' tests
(``test_torch_linalg_degenerate``, ``test_jax_linalg_degenerate``): the oracles (the
cofactor matrix by minors, ``det``'s Hessian by exact unit differences), the functions,
the singular points, and the checks whose assertions are the same on both engines
(``check_*(..., backend)``: each test file calls them from its own tests).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import UnsupportedError
from tests.support.linalg_regular_cases import xp_of
from tests.support.spectral_degenerate_cases import REGULAR, SINGULAR, C

__all__ = [
    "SINGULAR_POINTS",
    "check_det_at_singular_matrices_first_and_second_order",
    "check_det_of_a_stack_mixing_singular_and_regular_matrices",
    "check_slogdet_at_a_singular_matrix_is_refused",
    "cofactors",
    "det",
    "det_hessian",
]

# (name, matrix) of rank 2, 1 and 0
SINGULAR_POINTS = {
    "rank2": SINGULAR,
    "rank1": np.diag([2.0, 0.0, 0.0]),
    "zero": np.zeros((3, 3)),
}


def cofactors(a: np.ndarray) -> np.ndarray:
    n = a.shape[0]
    out = np.zeros_like(a)
    for i, j in np.ndindex(n, n):
        minor = np.delete(np.delete(a, i, 0), j, 1)
        out[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


def det_hessian(a: np.ndarray) -> np.ndarray:
    """``det``'s Hessian, exactly: ``det(a + s E_ij + t E_kl)`` is ``c0 + c1 s + c2 t + c3
    s t``, so unit differences give ``c3`` without truncation error."""
    n = a.shape[0]
    hess = np.zeros((n, n, n, n))
    for i, j, k, l in np.ndindex(n, n, n, n):
        if (i, j) == (k, l):
            continue
        total = 0.0
        for s, t in ((1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)):
            moved = a.copy()
            moved[i, j] += s
            moved[k, l] += t
            total += s * t * np.linalg.det(moved)
        hess[i, j, k, l] = total / 4.0
    return hess


def det(x: Any) -> Any:
    return xp_of(x).linalg.det(x)


def det_stack(x: Any) -> Any:
    return xp_of(x).sum(xp_of(x).linalg.det(x) * xp_of(x).asarray([1.0, -2.0, 0.5]))


def check_det_at_singular_matrices_first_and_second_order(point: str, backend: str) -> None:
    # (the engines' own first derivative of det is 0 at rank 2 on torch: adswitch's is not)
    a = SINGULAR_POINTS[point]
    (g,) = ad.gradient(det, a.copy(), backend=backend)
    np.testing.assert_allclose(g, cofactors(a), atol=1e-12)
    _, tangent = ad.jvp(det, (a.copy(),), (C,), backend=backend)
    assert float(tangent) == pytest.approx(float(np.sum(cofactors(a) * C)), abs=1e-12)
    (hess,) = ad.hessian(det, a.copy(), backend=backend)
    np.testing.assert_allclose(np.asarray(hess[0]), det_hessian(a), atol=1e-12)


def check_det_of_a_stack_mixing_singular_and_regular_matrices(backend: str) -> None:
    stack = np.stack([SINGULAR, REGULAR, np.diag([2.0, 0.0, 0.0])])
    weights = np.array([1.0, -2.0, 0.5])
    (g,) = ad.gradient(det_stack, stack.copy(), backend=backend)
    expected = np.stack([w * cofactors(a) for w, a in zip(weights, stack)])
    np.testing.assert_allclose(g, expected, atol=1e-12)
    (hess,) = ad.hessian(det_stack, stack.copy(), backend=backend)
    got = np.asarray(hess[0])
    for i, (w, a) in enumerate(zip(weights, stack)):
        np.testing.assert_allclose(got[i, :, :, i], w * det_hessian(a), atol=1e-11)


def check_slogdet_at_a_singular_matrix_is_refused(backend: str) -> None:
    def logabs(x: Any) -> Any:
        return xp_of(x).linalg.slogdet(x)[1]

    for call in (
        lambda: ad.gradient(logabs, SINGULAR.copy(), backend=backend),
        lambda: ad.jvp(logabs, (SINGULAR.copy(),), (C,), backend=backend),
    ):
        with pytest.raises(UnsupportedError, match=r"slogdet.*singular.*Fix:.*xp\.linalg\.det"):
            call()
