"""torch's ``xp.linalg`` rules (``adswitch_torch.linalg``) where torch's own derivatives
are silently wrong: ``det`` at singular matrices, ``eigh`` at repeated eigenvalues,
``svd`` at repeated and zero singular values, ``slogdet`` and ``qr`` at singular points.

Each well-posed quantity against an independent oracle -- the cofactor matrix by minors,
``det``'s Hessian by its exact unit differences (``det`` is affine in each entry), finite
differences of numpy for the smooth functions (projectors, the polar factor, symmetric
functions of the values), closed forms -- in reverse and forward mode, batched stacks
included; everything else an ``UnsupportedError`` that names the function, the point and
the fix: second derivatives at repeated values, functions of the eigenvectors that
depend on the basis of an eigenspace, derivatives that do not exist.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.linalg_regular_cases import fd_gradient, sym, xp_of
from tests.support.singular_det_cases import (
    cofactors,
    det,
    det_hessian,
)
from tests.support.spectral_degenerate_cases import (
    REGULAR,
    REPEATED,
    ROTATION,
    SINGULAR,
    TALL_RANK_TWO,
    W43,
    C,
    polar,
    projector,
    trace_of_eigvalsh,
)

pytest.importorskip("torch")

import torch
from adswitch_torch.xp.namespace import float64_namespace

import adswitch as ad
from adswitch.errors import UnsupportedError

B = "torch"
_rng = np.random.default_rng(22)  # this file's own draws (the shared points use 21)


def weighted_svd(x: Any, h: Any) -> Any:
    """``<W, U diag(h(s)) V^T>``."""
    xp = xp_of(x)
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    m, n = x.shape
    return xp.sum((u * h(s)[None, :]) @ vh * xp.asarray(W43[:m, :n]))


# (the checks jax's rules share: test_linalg_degenerate_shared.py)
# -- det at singular matrices --------------------------------------------------------------
def test_third_derivative_of_det_at_a_singular_matrix_is_refused() -> None:
    def hessian_entry(x: Any) -> Any:
        (h,) = ad.gradient(lambda y: ad.gradient(det, y)[0][0, 1], x)
        return h[2, 2]

    with pytest.raises(UnsupportedError, match=r"det.*third derivative.*Fix:"):
        ad.gradient(hessian_entry, SINGULAR.copy(), backend=B)
    (third,) = ad.gradient(hessian_entry, REGULAR.copy(), backend=B)  # det is cubic: exact
    np.testing.assert_allclose(third, fd_gradient(hessian_entry_numpy, REGULAR), atol=1e-7)


def hessian_entry_numpy(x: Any) -> Any:
    """``d^2 det / dx_01 dx_22`` in closed form (the Hessian's entry by unit differences)."""
    return det_hessian(np.asarray(x))[0, 1, 2, 2]


# -- eigh at a repeated eigenvalue ---------------------------------------------------------
@pytest.mark.parametrize(
    "f",
    [
        # tr(C exp(S)) through eigh: smooth, but its eigenvalue terms do not cancel
        lambda x: (lambda w, v: xp_of(x).sum((v * xp_of(x).exp(w)) @ v.T * xp_of(x).asarray(C)))(
            *xp_of(x).linalg.eigh(sym(x))
        ),
        # one eigenvector of the repeated eigenvalue: depends on the basis, no derivative
        lambda x: xp_of(x).sum(xp_of(x).linalg.eigh(sym(x)).eigenvectors[:, 0] ** 4),
    ],
    ids=["matrix_function", "one_eigenvector"],
)
def test_functions_the_dropped_terms_are_not_exact_for_are_refused(f: Any) -> None:
    with pytest.raises(UnsupportedError, match=r"linalg\.eigh.*repeated eigenvalue.*Fix:"):
        ad.gradient(f, REPEATED.copy(), backend=B)


# -- svd at repeated (and zero) values ----------------------------------------------------
@pytest.mark.parametrize(
    ("f", "a"),
    [
        # U exp(S) V^T at repeated singular values: its terms between them do not cancel
        (
            lambda x: (
                lambda u, s, vh: xp_of(x).sum((u * xp_of(x).exp(s)) @ vh * xp_of(x).asarray(C))
            )(*xp_of(x).linalg.svd(x, full_matrices=False)),
            ROTATION,
        ),
        # U S V^T of a tall matrix with a zero singular value: its u_3 is any unit vector
        # of a 2-dimensional null space, and the rule's term for it 0 / 0
        (lambda x: weighted_svd(x, lambda s: s), TALL_RANK_TWO),
    ],
    ids=["repeated", "zero"],
)
def test_singular_vectors_the_dropped_terms_are_not_exact_for_are_refused(f: Any, a: Any) -> None:
    with pytest.raises(UnsupportedError, match=r"linalg\.svd.*singular value.*Fix:"):
        ad.gradient(f, np.array(a), backend=B)


def test_full_matrices_extra_columns_are_refused_the_others_differentiated() -> None:
    tall = np.linalg.qr(_rng.standard_normal((4, 3)))[0] * np.array([3.0, 2.0, 1.0])

    def first_columns(x: Any) -> Any:
        u, _, vh = xp_of(x).linalg.svd(x)  # full_matrices=True, the Array API's default
        return xp_of(x).sum(u[:, :3] @ vh * xp_of(x).asarray(W43))

    (g,) = ad.gradient(first_columns, tall.copy(), backend=B)
    np.testing.assert_allclose(g, fd_gradient(first_columns, tall), atol=1e-8)

    def extra_column(x: Any) -> Any:
        return xp_of(x).sum(xp_of(x).linalg.svd(x)[0][:, 3] ** 3)

    with pytest.raises(UnsupportedError, match="full_matrices=False"):
        ad.gradient(extra_column, tall.copy(), backend=B)
    with pytest.raises(UnsupportedError, match="full_matrices=False"):
        ad.jvp(first_columns, (tall.copy(),), (np.ones((4, 3)),), backend=B)


# -- derivatives that do not exist ---------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "a", "match"),
    [
        ("reduced", SINGULAR.T, "full rank"),
        ("reduced", np.vstack([SINGULAR.T, [1.0, 2.0, 0.0]]), "full rank"),
        ("complete", np.ones((4, 3)) + np.eye(4, 3), "mode='reduced'"),
        ("r", REGULAR, "mode='reduced'"),
    ],
    ids=["dependent", "dependent_tall", "complete_tall", "r"],
)
def test_qr_without_a_derivative_is_refused(mode: str, a: np.ndarray, match: str) -> None:
    def f(x: Any) -> Any:
        result = xp_of(x).linalg.qr(x, mode=mode)
        return xp_of(x).sum(result[1] ** 2)

    with pytest.raises(UnsupportedError, match=rf"linalg\.qr.*{match}"):
        ad.gradient(f, a.copy(), backend=B)


# -- the cheap checks that hand regular points to torch ------------------------------------
@pytest.mark.parametrize("reading", ["floats", "numpy", "torch"])
def test_the_checks_decide_alike_however_they_read_the_values(
    reading: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One small matrix's values are read as Python floats, larger ones with numpy (CPU)
    or with torch's operations (other devices: forced here), to the same decisions."""
    from adswitch_torch.xp.linalg import support as _linalg_support

    if reading != "floats":
        monkeypatch.setattr(_linalg_support, "_FEW", 0)
    if reading == "torch":
        monkeypatch.setattr(_linalg_support, "_NUMPY_DTYPES", ())
    (g,) = ad.gradient(det, SINGULAR.copy(), backend=B)
    np.testing.assert_allclose(g, cofactors(SINGULAR), atol=1e-12)
    (g,) = ad.gradient(trace_of_eigvalsh, REPEATED.copy(), backend=B)
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)
    with pytest.raises(UnsupportedError, match="eigh"):
        ad.gradient(projector, REPEATED.copy(), backend=B)
    with pytest.raises(UnsupportedError, match="svd"):
        ad.gradient(polar, ROTATION.copy(), backend=B)
    with pytest.raises(UnsupportedError, match="slogdet"):
        ad.gradient(lambda x: xp_of(x).linalg.slogdet(x)[1], SINGULAR.copy(), backend=B)
    with pytest.raises(UnsupportedError, match="qr"):
        ad.gradient(lambda x: xp_of(x).sum(xp_of(x).linalg.qr(x)[1]), SINGULAR.T.copy(), backend=B)
    with pytest.raises(UnsupportedError, match="svd"):
        ad.gradient(lambda x: weighted_svd(x, lambda s: s), TALL_RANK_TWO.copy(), backend=B)
    la = float64_namespace().linalg
    for name, regular, degenerate in (
        ("det", REGULAR, SINGULAR),
        ("eigvalsh", REGULAR + REGULAR.T, REPEATED),
        ("svdvals", REGULAR, ROTATION),
        ("slogdet", REGULAR, SINGULAR),
        ("qr", REGULAR, SINGULAR.T),
    ):
        own = _grad_fn(getattr(torch.linalg, name)(torch.tensor(regular, requires_grad=True)))
        assert _grad_fn(getattr(la, name)(torch.tensor(regular, requires_grad=True))) == own
        assert _grad_fn(getattr(la, name)(torch.tensor(degenerate, requires_grad=True))) != own


def _grad_fn(result: Any) -> str:
    """The name of the backward node of ``result`` (its last part, for a tuple)."""
    out = result[-1] if isinstance(result, tuple) else result
    return str(out.grad_fn.name())
