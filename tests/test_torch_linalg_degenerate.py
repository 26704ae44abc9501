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
from linalg_regular_cases import fd_gradient, sym, xp_of
from spectral_degenerate_cases import (
    DIAGONAL,
    REGULAR,
    REPEATED,
    REPEATED_POINTS,
    ROTATION,
    SINGULAR,
    TALL_RANK_TWO,
    W43,
    C,
    check_functions_of_repeated_and_zero_singular_values_alone,
    check_functions_of_singular_values_at_repeated_and_zero_ones,
    check_functions_of_the_eigenvalues_at_a_repeated_one,
    check_functions_of_the_eigenvectors_at_a_repeated_eigenvalue_are_refused,
    check_functions_of_the_eigenvectors_at_regular_points_are_computed,
    check_functions_of_the_singular_vectors_at_a_repeated_singular_value_are_refused,
    check_second_derivatives_at_repeated_singular_values_are_refused,
    polar,
    projector,
    trace_of_eigvalsh,
)

pytest.importorskip("torch")

import torch
from adswitch_torch.namespace import float64_namespace

import adswitch as ad
from adswitch.errors import UnsupportedError

B = "torch"
_rng = np.random.default_rng(22)  # this file's own draws (the shared points use 21)


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


def weighted_svd(x: Any, h: Any) -> Any:
    """``<W, U diag(h(s)) V^T>``."""
    xp = xp_of(x)
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    m, n = x.shape
    return xp.sum((u * h(s)[None, :]) @ vh * xp.asarray(W43[:m, :n]))


# -- det at singular matrices --------------------------------------------------------------
@pytest.mark.parametrize(
    "a", [SINGULAR, np.diag([2.0, 0.0, 0.0]), np.zeros((3, 3))], ids=["rank2", "rank1", "zero"]
)
def test_det_at_singular_matrices_first_and_second_order(a: np.ndarray) -> None:
    (g,) = ad.gradient(det, a.copy(), backend=B)
    np.testing.assert_allclose(g, cofactors(a), atol=1e-12)  # torch's own: 0 at rank 2
    _, tangent = ad.jvp(det, (a.copy(),), (C,), backend=B)
    assert float(tangent) == pytest.approx(float(np.sum(cofactors(a) * C)), abs=1e-12)
    (hess,) = ad.hessian(det, a.copy(), backend=B)
    np.testing.assert_allclose(np.asarray(hess[0]), det_hessian(a), atol=1e-12)


def test_det_of_a_stack_mixing_singular_and_regular_matrices() -> None:
    stack = np.stack([SINGULAR, REGULAR, np.diag([2.0, 0.0, 0.0])])
    weights = np.array([1.0, -2.0, 0.5])
    (g,) = ad.gradient(det_stack, stack.copy(), backend=B)
    expected = np.stack([w * cofactors(a) for w, a in zip(weights, stack)])
    np.testing.assert_allclose(g, expected, atol=1e-12)
    (hess,) = ad.hessian(det_stack, stack.copy(), backend=B)
    got = np.asarray(hess[0])
    for i, (w, a) in enumerate(zip(weights, stack)):
        np.testing.assert_allclose(got[i, :, :, i], w * det_hessian(a), atol=1e-11)


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
def test_eigenvector_functions_of_a_stack_and_their_batched_jacobian() -> None:
    """Regular matrices: computed, both modes; one with a repeated eigenvalue: refused."""
    stack = np.stack([REPEATED + np.diag([0.0, 0.5, 0.0]), REGULAR + REGULAR.T, DIAGONAL])

    def rows(x: Any) -> Any:
        xp = xp_of(x)
        return xp.stack([projector(x[i]) for i in range(x.shape[0])])

    regular = stack[:2]
    expected = np.stack([fd_gradient(lambda y, i=i: rows(y)[i], regular) for i in range(2)])
    for mode in ("reverse", "forward"):
        (jac,) = ad.jacobian(rows, regular.copy(), backend=B, mode=mode)
        np.testing.assert_allclose(np.asarray(jac), expected, atol=1e-8)
        with pytest.raises(UnsupportedError, match=r"linalg\.eigh .*repeated eigenvalue.*Fix:"):
            ad.jacobian(rows, stack.copy(), backend=B, mode=mode)


def test_symmetric_functions_of_repeated_eigenvalues() -> None:
    def squares(x: Any) -> Any:  # ||sym(x)||_F^2
        return xp_of(x).sum(xp_of(x).linalg.eigvalsh(sym(x)) ** 2)

    (g,) = ad.gradient(squares, REPEATED.copy(), backend=B)
    np.testing.assert_allclose(g, REPEATED + REPEATED.T, atol=1e-12)

    def largest(x: Any) -> Any:  # a kink: torch's max splits the slope evenly
        return xp_of(x).max(xp_of(x).linalg.eigvalsh(x))

    (g,) = ad.gradient(largest, np.diag([3.0, 3.0, 1.0]), backend=B)
    np.testing.assert_allclose(g, np.diag([0.5, 0.5, 0.0]), atol=1e-12)


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


@pytest.mark.parametrize("f", ["projector", "eigvalsh"])
def test_second_derivatives_at_a_repeated_eigenvalue_are_refused(f: str) -> None:
    def squares(x: Any) -> Any:
        return xp_of(x).sum(xp_of(x).linalg.eigvalsh(sym(x)) ** 2)

    function = projector if f == "projector" else squares
    refused = r"second derivative" if f == "eigvalsh" else r"eigenvectors"  # (first order)
    with pytest.raises(UnsupportedError, match=rf"{refused}.*Fix:"):
        ad.hessian(function, REPEATED.copy(), backend=B)
    shifted = REPEATED + np.diag([0.0, 0.3, 0.0])  # distinct again: torch's own rule
    (hess,) = ad.hessian(function, shifted, backend=B)
    assert np.isfinite(np.asarray(hess[0])).all()


# -- eigh and svd at repeated (and zero) values: the checks both engines share -------------
@pytest.mark.parametrize("case", sorted(REPEATED_POINTS))
def test_functions_of_the_eigenvectors_at_a_repeated_eigenvalue_are_refused(case: str) -> None:
    check_functions_of_the_eigenvectors_at_a_repeated_eigenvalue_are_refused(case, B)


def test_functions_of_the_eigenvectors_at_regular_points_are_computed() -> None:
    check_functions_of_the_eigenvectors_at_regular_points_are_computed(B)


def test_functions_of_the_eigenvalues_at_a_repeated_one() -> None:
    check_functions_of_the_eigenvalues_at_a_repeated_one(B)


def test_functions_of_repeated_and_zero_singular_values_alone() -> None:
    check_functions_of_repeated_and_zero_singular_values_alone(B)


def test_functions_of_the_singular_vectors_at_a_repeated_singular_value_are_refused() -> None:
    check_functions_of_the_singular_vectors_at_a_repeated_singular_value_are_refused(B)


def test_functions_of_singular_values_at_repeated_and_zero_ones() -> None:
    check_functions_of_singular_values_at_repeated_and_zero_ones(B)


def test_second_derivatives_at_repeated_singular_values_are_refused() -> None:
    check_second_derivatives_at_repeated_singular_values_are_refused(B)


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
def test_slogdet_at_a_singular_matrix_is_refused() -> None:
    def logabs(x: Any) -> Any:
        return xp_of(x).linalg.slogdet(x)[1]

    for call in (
        lambda: ad.gradient(logabs, SINGULAR.copy(), backend=B),
        lambda: ad.jvp(logabs, (SINGULAR.copy(),), (C,), backend=B),
    ):
        with pytest.raises(UnsupportedError, match=r"slogdet.*singular.*Fix:.*xp\.linalg\.det"):
            call()


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
    from adswitch_torch import _linalg_support

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
