"""The functions and points of the eigenvector and singular-vector refusals, shared by the
torch and jax engines' tests (``test_torch_linalg_degenerate``,
``test_jax_linalg_degenerate``): smooth functions written through ``eigh``/``svd`` whose
gradient at a repeated eigenvalue the vectors' cotangent does not determine, and their
closed-form gradients (the oracle, where the point is regular).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad

__all__ = [
    "C_SYM", "E01", "REPEATED_POINTS", "exp_trace", "exp_trace_gradient", "reconstruction",
    "reconstruction_svd", "trace_of_eigvalsh",
]  # fmt: skip

C_SYM = np.array([[1.0, 2.0, 0.3], [2.0, 1.0, 0.5], [0.3, 0.5, -1.0]])
E01 = np.zeros((3, 3))
E01[0, 1] = 1.0
# (function, point): each point has a repeated eigenvalue of the function's matrix
REPEATED_POINTS = {
    "exp_at_1_1_2": ("exp_trace", np.diag([1.0, 1.0, 2.0])),
    "reconstruction_at_identity": ("reconstruction", np.eye(3)),
    "reconstruction_at_0_0_1": ("reconstruction", np.diag([0.0, 0.0, 1.0])),
}


def exp_trace(s: Any) -> Any:
    """``tr(C expm(sym S))`` through ``eigh``: smooth everywhere."""
    xp = ad.array_namespace(s)
    a = (s + xp.matrix_transpose(s)) / 2
    w, v = xp.linalg.eigh(a)
    return xp.sum(xp.asarray(C_SYM) * ((v * xp.exp(w)[None, :]) @ xp.matrix_transpose(v)))


def exp_trace_gradient(s: np.ndarray) -> np.ndarray:
    """The closed form: the Daleckii-Krein formula, ``V (L o V^T C V) V^T`` with ``L`` the
    divided differences of ``exp`` (distinct eigenvalues), symmetrized as ``sym S``."""
    w, v = np.linalg.eigh((s + s.T) / 2)
    gaps = w[None, :] - w[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        divided = np.where(
            gaps == 0, np.exp(w)[:, None], (np.exp(w)[None, :] - np.exp(w)[:, None]) / gaps
        )
    g = v @ (divided * (v.T @ C_SYM @ v)) @ v.T
    return (g + g.T) / 2


def reconstruction(s: Any) -> Any:
    """``sum(C * V diag(w) V^T)`` = ``sum(C * S)`` for a symmetric ``S``: gradient ``C``."""
    xp = ad.array_namespace(s)
    w, v = xp.linalg.eigh(s)
    return xp.sum(xp.asarray(C_SYM) * ((v * w[None, :]) @ xp.matrix_transpose(v)))


def reconstruction_svd(x: Any) -> Any:
    """``sum(C * U diag(s) Vh)`` = ``sum(C * x)``: gradient ``C``."""
    xp = ad.array_namespace(x)
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    return xp.sum(xp.asarray(C_SYM) * ((u * s[None, :]) @ vh))


def trace_of_eigvalsh(s: Any) -> Any:
    """``sum(eigvalsh(S))`` = ``tr S``: gradient ``I``."""
    xp = ad.array_namespace(s)
    return xp.sum(xp.linalg.eigvalsh(s))
