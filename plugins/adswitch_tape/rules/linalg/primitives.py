"""The primitives of the ``linalg`` factorizations and solvers, with their numpy code.

Each works on stacks of matrices (``(..., m, n)``) as numpy does. A factorization with
several outputs is one primitive whose value packs them into one array (one LAPACK call,
one tape entry; ``xp/decompositions.py`` takes the parts out with ``getitem``, whose
rule puts the parts' cotangents back together):

* ``eigh``: ``(..., n + 1, n)``, the eigenvalues as the first row, the eigenvectors below;
* ``qr`` (``m >= n``, reduced): ``(..., m + n, n)``, ``Q`` above ``R``;
* ``svd`` (reduced): ``(..., m + 1 + n, k)``, ``U`` (``m x k``), the singular values
  (one row), ``V = Vh^T`` (``n x k``) -- ``rows=m`` says where ``U`` ends;
* ``slogdet``: ``(..., 2)``, the sign and ``log|det|``.

The eigenvectors and the singular vectors are taken out of a packed value by primitives
of their own (``eigenvectors``, ``singular_vectors(side='U'|'V')``), never by
``getitem``: their rules run exactly when a function uses the vectors, and refuse at a
repeated eigenvalue (singular value), where the vectors' cotangent does not determine a
derivative. ``name`` (a parameter of ``eigh``, ``eigenvectors``, ``svd``) is the
``xp.linalg`` function the error messages name (``eigvalsh``, ``svdvals``,
``matrix_norm`` share the factorizations).

``cholesky`` and ``eigh`` read the lower triangle only, as numpy's do (the gradient is
the derivative of exactly that function). ``cofactor`` is ``det(x) * inv(x)^T`` -- the
gradient of ``det`` -- computed from the SVD so that it is right at singular matrices
too. The rules are in ``solvers`` and ``factorizations``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch.spec import well_conditioned

from ...recording import binary, unary

__all__ = [
    "cholesky", "cofactor", "det", "eigenvectors", "eigh", "inv", "pinv", "qr",
    "singular_vectors", "slogdet", "solve", "svd",
]  # fmt: skip


def _products_of_others(s: Any) -> Any:
    """``out[..., i] = prod(s[..., j] for j != i)``, without dividing (zeros allowed)."""
    ones = np.ones((*s.shape[:-1], 1), dtype=s.dtype)
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return before * after


def _cofactor(x: Any) -> Any:
    """The cofactor matrix ``det(x) * inv(x)^T`` at any rank: with ``x = U S Vh``, it is
    ``det(U) det(Vh) U diag(prod of the other singular values) Vh``. Well-conditioned
    matrices take ``det(x) * inv(x)^T`` itself (LU: several times more accurate)."""
    x = np.asarray(x)
    if x.shape[-1] == 0:
        return np.zeros_like(x)
    u, s, vh = np.linalg.svd(x)
    regular = well_conditioned(s)
    if regular.all():
        return np.linalg.det(x)[..., None, None] * np.swapaxes(np.linalg.inv(x), -1, -2)
    sign = np.linalg.det(u) * np.linalg.det(vh)
    weighted = u * _products_of_others(s)[..., None, :]
    out = sign[..., None, None] * np.matmul(weighted, vh)
    if regular.any():  # (a stack: the regular matrices by LU)
        lu = x[regular]
        out[regular] = np.linalg.det(lu)[..., None, None] * np.swapaxes(np.linalg.inv(lu), -1, -2)
    return np.asarray(out, dtype=x.dtype)


def _slogdet(x: Any) -> Any:
    sign, logabs = np.linalg.slogdet(x)
    return np.stack([sign, logabs], axis=-1)


def _eigh(x: Any, name: str = "eigh") -> Any:
    w, v = np.linalg.eigh(x)
    return np.concatenate([w[..., None, :], v], axis=-2)


def _eigenvectors(packed: Any, name: str = "eigh") -> Any:
    return np.array(packed[..., 1:, :])


def _qr(x: Any) -> Any:
    m, n = np.shape(x)[-2:]
    if m < n:  # (the namespace composes wide matrices from a square one)
        raise ValueError(f"the qr primitive takes matrices with m >= n, not {m} x {n}")
    q, r = np.linalg.qr(x)
    return np.concatenate([q, r], axis=-2)


def _svd(x: Any, rows: int, name: str = "svd") -> Any:
    if np.shape(x)[-2] != rows:
        raise ValueError(f"svd: rows={rows} but the matrices have {np.shape(x)[-2]} rows")
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return np.concatenate([u, s[..., None, :], np.swapaxes(vh, -1, -2)], axis=-2)


def _singular_vectors(packed: Any, rows: int, side: str) -> Any:
    if side == "U":
        return np.array(packed[..., :rows, :])
    return np.array(packed[..., rows + 1 :, :])


def _pinv(x: Any, rtol: Any = None) -> Any:
    """numpy's pseudo-inverse; ``rtol=None`` is numpy's own default cut (``1e-15``), as
    the namespace gives on constants."""
    if rtol is None:
        return np.linalg.pinv(x)
    return np.linalg.pinv(x, rtol=rtol)


# keep flags: what the rules in solvers/factorizations read
inv = unary("inv", np.linalg.inv, keep_x=False)
solve = binary("solve", np.linalg.solve)  # b is a stack of matrices (..., n, k)
det = unary("det", np.linalg.det, keep_ans=False)
cofactor = unary("cofactor", _cofactor)
slogdet = unary("slogdet", _slogdet, keep_ans=False)
pinv = unary("pinv", _pinv, params=True)
cholesky = unary("cholesky", np.linalg.cholesky, keep_x=False)
eigh = unary("eigh", _eigh, params=True, keep_x=False)
eigenvectors = unary("eigenvectors", _eigenvectors, params=True, keep_ans=False)
qr = unary("qr", _qr, keep_x=False)
svd = unary("svd", _svd, params=True, keep_x=False)
singular_vectors = unary("singular_vectors", _singular_vectors, params=True, keep_ans=False)
