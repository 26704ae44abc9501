"""The ``linalg`` extension at degenerate spectra: exactly repeated eigenvalues and
singular values, where the eigenvectors and singular vectors are not unique.

Every function here is smooth at its point (its derivative exists, finite differences of
numpy give it), but a rule that sets the vector terms between equal values to 0 gets it
wrong: ``tr(C expm(S))`` through ``eigh`` at ``diag(1, 1, 2)`` has an eigenvector term
of size 5 there. The vectors' cotangent does not determine the derivative (two smooth
functions give the same cotangents and different gradients), so an engine may refuse
with an ``UnsupportedError`` instead -- the promise: the right number or a clear error.
Symmetric functions of the values only (``sum(eigvalsh)``, the nuclear norm) have a first
derivative every engine must give. Symmetric matrices are made inside ``f``
(``(a + a^T) / 2``), as engines read different triangles; 3 x 3 matrices, so the cases
are cheap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad

from .case import Case, arr
from .cases_linalg import NESTED, REFUSED

F = "linalg"

_C = np.array([[1.0, 2.0, 0.3], [2.0, 1.0, 0.5], [0.3, 0.5, -1.0]])


def _sym(xp: Any, a: Any) -> Any:
    return (a + xp.linalg.matrix_transpose(a)) / 2.0


def _expm_trace(a: Any) -> Any:
    """``tr(C expm(sym a))`` through ``eigh``: ``V diag(exp w) V^T``, smooth everywhere."""
    xp = ad.array_namespace(a)
    w, v = xp.linalg.eigh(_sym(xp, a))
    expm = xp.linalg.matmul(v * xp.exp(w)[None, :], xp.linalg.matrix_transpose(v))
    return xp.sum(xp.asarray(_C) * expm)


def _eigh_reconstruction(a: Any) -> Any:
    """``sum(C * V diag(w) V^T)``: linear in ``a`` (``V diag(w) V^T = sym a``)."""
    xp = ad.array_namespace(a)
    w, v = xp.linalg.eigh(_sym(xp, a))
    back = xp.linalg.matmul(v * w[None, :], xp.linalg.matrix_transpose(v))
    return xp.sum(xp.asarray(arr(140, 3, 3)) * back)


def _eigvalsh_squares(a: Any) -> Any:
    """``sum(eigvalsh(sym a)^2) = ||sym a||_F^2``: a quadratic, its Hessian constant."""
    xp = ad.array_namespace(a)
    return xp.sum(xp.linalg.eigvalsh(_sym(xp, a)) ** 2)


def _eigvalsh_sum(a: Any) -> Any:
    """``sum(eigvalsh(a))``: the trace, gradient ``I`` whatever triangle is read."""
    xp = ad.array_namespace(a)
    return xp.sum(xp.linalg.eigvalsh(a))


def _svd_reconstruction(a: Any) -> Any:
    """``sum(C * U diag(s) Vh)``: linear in ``a`` (``U diag(s) Vh = a``)."""
    xp = ad.array_namespace(a)
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    return xp.sum(xp.asarray(arr(141, 3, 3)) * xp.linalg.matmul(u * s[None, :], vh))


def _nuclear(a: Any) -> Any:
    """The nuclear norm: smooth at a full-rank matrix, repeated singular values or not."""
    xp = ad.array_namespace(a)
    return xp.linalg.matrix_norm(a, ord="nuc")


def _repeated_diag() -> tuple[Any, ...]:
    return (np.diag([1.0, 1.0, 2.0]),)


def _repeated_rotated() -> tuple[Any, ...]:
    """Eigenvalues (singular values) 2, 2, 1 in a generic basis -- equal to rounding."""
    q = np.linalg.qr(arr(142, 3, 3))[0]
    return ((q * np.array([2.0, 2.0, 1.0])) @ q.T,)


def _e01() -> tuple[Any, ...]:
    e = np.zeros((3, 3))
    e[0, 1] = 1.0
    return (e,)


CASES = [
    Case(
        "linalg.degenerate_eigh_expm",
        F,
        "tr(C expm(S)) through eigh's eigenvectors at diag(1, 1, 2) (a repeated eigenvalue): "
        "smooth, finite differences' (the eigenvector term between the equal ones is not 0), "
        "or a refusal",
        _expm_trace,
        _repeated_diag,
        also_ok=REFUSED,
    ),
    Case(
        "linalg.degenerate_eigh_expm_jvp",
        F,
        "jvp of tr(C expm(S)) through eigh at diag(1, 1, 2) along E_01 (which splits the "
        "repeated eigenvalue; the function is still smooth): finite differences', or a refusal",
        _expm_trace,
        _repeated_diag,
        entry="jvp",
        seeds=_e01,
        also_ok=REFUSED,
    ),
    Case(
        "linalg.degenerate_eigh_reconstruction",
        F,
        "sum(C * V diag(w) V^T) at the identity (all eigenvalues equal): linear, finite "
        "differences' (sym C), or a refusal",
        _eigh_reconstruction,
        lambda: (np.eye(3),),
        also_ok=REFUSED,
    ),
    Case(
        "linalg.degenerate_eigvalsh_hessian",
        F,
        "hessian of sum(eigvalsh(S)^2) at a repeated eigenvalue (the quadratic ||S||_F^2: "
        "its Hessian exists): finite differences', or a refusal",
        _eigvalsh_squares,
        _repeated_rotated,
        entry="hessian",
        requires=NESTED,
        also_ok=REFUSED,
    ),
    Case(
        "linalg.degenerate_eigvalsh_trace",
        F,
        "sum(eigvalsh(A)) at the identity (all eigenvalues equal): the trace, gradient I -- "
        "a symmetric function of the eigenvalues, never refused",
        _eigvalsh_sum,
        lambda: (np.eye(3),),
    ),
    Case(
        "linalg.degenerate_svd_reconstruction",
        F,
        "sum(C * U diag(s) Vh) at a repeated singular value (2, 2, 1 in a generic basis): "
        "linear, finite differences' (C), or a refusal",
        _svd_reconstruction,
        _repeated_rotated,
        also_ok=REFUSED,
    ),
    Case(
        "linalg.degenerate_nuclear_norm",
        F,
        "the nuclear norm at a repeated singular value (2, 2, 1): smooth at full rank, "
        "gradient U Vh -- a symmetric function of the singular values, never refused",
        _nuclear,
        _repeated_rotated,
    ),
    Case(
        "linalg.degenerate_nuclear_norm_hessian",
        F,
        "hessian of the nuclear norm at a repeated singular value (2, 2, 1; smooth at full "
        "rank): finite differences', or a refusal",
        _nuclear,
        _repeated_rotated,
        entry="hessian",
        requires=NESTED,
        also_ok=REFUSED,
    ),
]
