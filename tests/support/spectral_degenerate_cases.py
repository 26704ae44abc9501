"""The functions and points of the eigenvector and singular-vector refusals, shared by the
torch and jax engines' tests (``test_torch_linalg_degenerate``,
``test_jax_linalg_degenerate``): smooth functions written through ``eigh``/``svd`` whose
gradient at a repeated eigenvalue the vectors' cotangent does not determine, and their
closed-form gradients (the oracle, where the point is regular); the points both files
use (seed 21) and the checks whose assertions are the same on both engines
(``check_*(..., backend)``: each test file calls them from its own tests).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import UnsupportedError
from tests.support.linalg_regular_cases import fd_gradient, sym, xp_of

__all__ = [
    "C",
    "C_SYM",
    "DIAGONAL",
    "E01",
    "REGULAR",
    "REPEATED",
    "REPEATED_POINTS",
    "ROTATION",
    "SINGULAR",
    "TALL_RANK_TWO",
    "W43",
    "check_eigenvector_functions_of_a_stack_and_their_batched_jacobian",
    "check_functions_of_repeated_and_zero_singular_values_alone",
    "check_functions_of_singular_values_at_repeated_and_zero_ones",
    "check_functions_of_the_eigenvalues_at_a_repeated_one",
    "check_functions_of_the_eigenvectors_at_a_repeated_eigenvalue_are_refused",
    "check_functions_of_the_eigenvectors_at_regular_points_are_computed",
    "check_functions_of_the_singular_vectors_at_a_repeated_singular_value_are_refused",
    "check_second_derivatives_at_a_repeated_eigenvalue_are_refused",
    "check_second_derivatives_at_repeated_singular_values_are_refused",
    "check_symmetric_functions_of_repeated_eigenvalues",
    "exp_trace",
    "exp_trace_gradient",
    "polar",
    "projector",
    "reconstruction",
    "reconstruction_svd",
    "trace_of_eigvalsh",
]

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


# -- the points and functions both engines' degenerate tests use ------------------------
_rng = np.random.default_rng(21)
C = _rng.standard_normal((3, 3))
ROTATION = np.linalg.qr(_rng.standard_normal((3, 3)))[0]
REPEATED = (ROTATION * np.array([1.0, 1.0, 3.0])) @ ROTATION.T  # eigenvalues 1, 1, 3
DIAGONAL = np.diag([1.0, 1.0, 3.0])
SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])  # rank 2
REGULAR = np.eye(3) * 1.5 + _rng.uniform(-0.4, 0.4, (3, 3))
W43 = _rng.standard_normal((4, 3))
TALL_RANK_TWO = np.linalg.qr(_rng.standard_normal((4, 3)))[0] * np.array([2.0, 1.0, 0.0])


def projector(x: Any) -> Any:
    """``<C, P>`` for ``P`` onto the two lowest eigenvectors, plus ``sum(w^2)``."""
    xp = xp_of(x)
    w, v = xp.linalg.eigh(sym(x))
    low = v[..., :, :2]
    p = low @ xp.linalg.matrix_transpose(low)
    return xp.sum(p * xp.asarray(C)) + xp.sum(w**2)


def polar(x: Any) -> Any:
    xp = xp_of(x)
    u, _, vh = xp.linalg.svd(x, full_matrices=False)
    return xp.sum((u @ vh) * xp.asarray(C))


# -- eigh at a repeated eigenvalue: functions of the eigenvectors are refused -------------
_VECTOR_FUNCTIONS = {"exp_trace": exp_trace, "reconstruction": reconstruction}


def check_functions_of_the_eigenvectors_at_a_repeated_eigenvalue_are_refused(
    case: str, backend: str
) -> None:
    """Smooth functions through ``eigh``: the eigenvectors' cotangent does not determine
    their gradient there (on main: ``exp_trace`` off by 5.44 from finite differences)."""
    name, a = REPEATED_POINTS[case]
    f = _VECTOR_FUNCTIONS[name]
    with pytest.raises(
        UnsupportedError, match=r"linalg\.eigh .*repeated eigenvalue.*eigenvectors.*Fix:"
    ):
        ad.gradient(f, a.copy(), backend=backend)
    with pytest.raises(UnsupportedError, match=r"forward.mode.*repeated eigenvalue.*Fix:"):
        ad.jvp(f, (a.copy(),), (E01,), backend=backend)
    with pytest.raises(UnsupportedError, match=r"linalg\.eig.*repeated eigenvalue.*Fix:"):
        ad.hessian(f, a.copy(), backend=backend)


def check_functions_of_the_eigenvectors_at_regular_points_are_computed(backend: str) -> None:
    a = np.diag([1.0, 1.3, 2.0]) + 0.1 * (C + C.T)
    (g,) = ad.gradient(exp_trace, a.copy(), backend=backend)
    np.testing.assert_allclose(g, exp_trace_gradient(a), atol=1e-10)
    _, tangent = ad.jvp(exp_trace, (a.copy(),), (E01,), backend=backend)
    assert float(tangent) == pytest.approx(float(exp_trace_gradient(a)[0, 1]), abs=1e-10)
    (hess,) = ad.hessian(exp_trace, a.copy(), backend=backend)
    for i, j in np.ndindex(3, 3):
        fd = fd_gradient(lambda y, i=i, j=j: exp_trace_gradient(np.asarray(y))[i, j], a)
        np.testing.assert_allclose(np.asarray(hess[0])[i, j], fd, atol=1e-7)
    (g,) = ad.gradient(projector, REGULAR + REGULAR.T, backend=backend)
    np.testing.assert_allclose(g, fd_gradient(projector, REGULAR + REGULAR.T), atol=1e-8)


def check_functions_of_the_eigenvalues_at_a_repeated_one(backend: str) -> None:
    """Symmetric in the repeated eigenvalues: computed in reverse mode (``tr`` at the
    identity, through ``eigvalsh`` or ``eigh`` whose eigenvectors are unused), and in
    forward mode along a direction that does not split them; otherwise refused."""
    for f in (trace_of_eigvalsh, lambda x: xp_of(x).sum(xp_of(x).linalg.eigh(x)[0])):
        (g,) = ad.gradient(f, np.eye(3), backend=backend)
        np.testing.assert_allclose(g, np.eye(3), atol=1e-12)
    _, tangent = ad.jvp(
        trace_of_eigvalsh, (np.eye(3),), (np.diag([2.0, 2.0, 2.0]),), backend=backend
    )
    assert float(tangent) == pytest.approx(6.0, abs=1e-12)
    with pytest.raises(UnsupportedError, match=r"eigvalsh.*splits it.*Fix:"):
        ad.jvp(trace_of_eigvalsh, (np.eye(3),), (E01,), backend=backend)
    with pytest.raises(UnsupportedError, match=r"eigvalsh.*splits it.*Fix: use reverse mode"):
        ad.jacobian(trace_of_eigvalsh, np.eye(3), backend=backend, mode="forward")
    with pytest.raises(UnsupportedError, match=r"eigvalsh.*different cotangents.*Fix:.*sum"):
        ad.gradient(lambda x: xp_of(x).linalg.eigvalsh(x)[-1], np.eye(3), backend=backend)


# -- svd at a repeated singular value: functions of the singular vectors are refused -------
def check_eigenvector_functions_of_a_stack_and_their_batched_jacobian(
    backend: str, refusal: str
) -> None:
    """Regular matrices: computed, both modes; one with a repeated eigenvalue: refused,
    with a message matching ``refusal`` (the engines word their forward-mode one apart)."""
    stack = np.stack([REPEATED + np.diag([0.0, 0.5, 0.0]), REGULAR + REGULAR.T, DIAGONAL])

    def rows(x: Any) -> Any:
        xp = xp_of(x)
        return xp.stack([projector(x[i]) for i in range(x.shape[0])])

    regular = stack[:2]
    expected = np.stack([fd_gradient(lambda y, i=i: rows(y)[i], regular) for i in range(2)])
    for mode in ("reverse", "forward"):
        (jac,) = ad.jacobian(rows, regular.copy(), backend=backend, mode=mode)
        np.testing.assert_allclose(np.asarray(jac), expected, atol=1e-8)
        with pytest.raises(UnsupportedError, match=refusal):
            ad.jacobian(rows, stack.copy(), backend=backend, mode=mode)


def _squares(x: Any) -> Any:  # ||sym(x)||_F^2
    return xp_of(x).sum(xp_of(x).linalg.eigvalsh(sym(x)) ** 2)


def check_symmetric_functions_of_repeated_eigenvalues(backend: str) -> None:
    (g,) = ad.gradient(_squares, REPEATED.copy(), backend=backend)
    np.testing.assert_allclose(g, REPEATED + REPEATED.T, atol=1e-12)

    def largest(x: Any) -> Any:  # a kink: the engine's max splits the slope evenly
        return xp_of(x).max(xp_of(x).linalg.eigvalsh(x))

    (g,) = ad.gradient(largest, np.diag([3.0, 3.0, 1.0]), backend=backend)
    np.testing.assert_allclose(g, np.diag([0.5, 0.5, 0.0]), atol=1e-12)


def check_second_derivatives_at_a_repeated_eigenvalue_are_refused(f: str, backend: str) -> None:
    """``f``: ``"projector"`` (refused at first order already) or ``"eigvalsh"``."""
    function = projector if f == "projector" else _squares
    refused = r"second derivative" if f == "eigvalsh" else r"eigenvectors"  # (first order)
    with pytest.raises(UnsupportedError, match=rf"{refused}.*Fix:"):
        ad.hessian(function, REPEATED.copy(), backend=backend)
    shifted = REPEATED + np.diag([0.0, 0.3, 0.0])  # distinct again
    (hess,) = ad.hessian(function, shifted, backend=backend)
    assert np.isfinite(np.asarray(hess[0])).all()


def check_functions_of_repeated_and_zero_singular_values_alone(backend: str) -> None:
    """Symmetric in the repeated ones: computed in reverse mode (the spectral norms spread
    their slope over the tied ones: basis-independent); a zero one has slope 0 (a kink, as
    ``abs`` at 0); different cotangents for equal ones, and forward mode in a direction
    that splits them, are refused."""

    def norm(order: Any) -> Any:
        return lambda x: xp_of(x).linalg.matrix_norm(x, ord=order)

    for order, expected in ((2, ROTATION / 3.0), (-2, ROTATION / 3.0), ("nuc", ROTATION)):
        (g,) = ad.gradient(norm(order), ROTATION.copy(), backend=backend)
        np.testing.assert_allclose(g, expected, atol=1e-12)
    rank_one = np.diag([2.0, 0.0, 0.0])
    for order, expected in (
        (2, np.diag([1.0, 0, 0])),
        (-2, np.zeros((3, 3))),
        ("nuc", np.diag([1.0, 0, 0])),
    ):
        (g,) = ad.gradient(norm(order), rank_one.copy(), backend=backend)
        np.testing.assert_allclose(g, expected, atol=1e-12)
    with pytest.raises(UnsupportedError, match=r"svdvals.*different cotangents.*Fix:"):
        ad.gradient(lambda x: xp_of(x).linalg.svdvals(x)[0], ROTATION.copy(), backend=backend)
    for a in (ROTATION, rank_one):
        with pytest.raises(UnsupportedError, match=r"svdvals.*forward-mode.*Fix:"):
            ad.jvp(norm("nuc"), (a.copy(),), (E01,), backend=backend)
    _, tangent = ad.jvp(norm(2), (ROTATION.copy(),), (ROTATION.copy(),), backend=backend)
    assert float(tangent) == pytest.approx(1.0, abs=1e-12)  # along x: the norm scales


def check_functions_of_the_singular_vectors_at_a_repeated_singular_value_are_refused(
    backend: str,
) -> None:
    for f, a in ((reconstruction_svd, np.eye(3)), (polar, ROTATION)):
        with pytest.raises(UnsupportedError, match=r"linalg\.svd .*singular value.*Fix:"):
            ad.gradient(f, a.copy(), backend=backend)
        with pytest.raises(UnsupportedError, match=r"linalg\.svd .*forward mode.*Fix:"):
            ad.jvp(f, (a.copy(),), (E01,), backend=backend)
    (g,) = ad.gradient(reconstruction_svd, REGULAR.copy(), backend=backend)
    np.testing.assert_allclose(g, C_SYM, atol=1e-10)
    (g,) = ad.gradient(polar, REGULAR.copy(), backend=backend)
    np.testing.assert_allclose(g, fd_gradient(polar, REGULAR), atol=1e-8)


# -- svd at repeated and zero singular values ----------------------------------------------
def check_functions_of_singular_values_at_repeated_and_zero_ones(backend: str) -> None:
    def squares(x: Any) -> Any:  # ||x||_F^2
        return xp_of(x).sum(xp_of(x).linalg.svdvals(x) ** 2)

    for a in (ROTATION, np.diag([2.0, 0.0, 0.0]), TALL_RANK_TWO):
        (g,) = ad.gradient(squares, a.copy(), backend=backend)
        np.testing.assert_allclose(g, 2.0 * a, atol=1e-12)

    def nuclear(x: Any) -> Any:  # smooth where x is regular: its gradient is U V^T
        return xp_of(x).linalg.matrix_norm(x, ord="nuc")

    (g,) = ad.gradient(nuclear, ROTATION.copy(), backend=backend)
    np.testing.assert_allclose(g, ROTATION, atol=1e-12)


def check_second_derivatives_at_repeated_singular_values_are_refused(backend: str) -> None:
    def nuclear(x: Any) -> Any:
        return xp_of(x).linalg.matrix_norm(x, ord="nuc")

    with pytest.raises(UnsupportedError, match=r"second derivative.*singular value.*Fix:"):
        ad.hessian(nuclear, ROTATION.copy(), backend=backend)
    with pytest.raises(UnsupportedError, match=r"svd .*singular value.*Fix:"):  # first order
        ad.hessian(polar, ROTATION.copy(), backend=backend)
