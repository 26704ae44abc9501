"""jax's ``xp.linalg`` rules (``adswitch_jax.xp.linalg.namespace``) where jax's own derivatives are
silently wrong: ``eigh`` at repeated eigenvalues (NaN at an exactly repeated one),
``svd`` at repeated singular values (the polar factor), ``slogdet`` and ``qr`` at singular
points, ``vector_norm`` at 0 -- and ``det`` at singular matrices, which keeps jax's rule
(right there).

Each well-posed quantity against an independent oracle -- the cofactor matrix by minors,
``det``'s Hessian by its exact unit differences, finite differences of numpy for the
smooth functions (projectors, the polar factor, symmetric functions of the values),
closed forms -- in reverse and forward mode, batched stacks and ``jax.vmap`` included, all
compiled; everything else an ``UnsupportedError`` raised from inside the compiled program
that names the function, the point and the fix: second derivatives at repeated values,
derivatives that do not exist.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.engines.jax.test_jax_linalg import compiled
from tests.support.linalg_regular_cases import fd_gradient, sym, xp_of
from tests.support.spectral_degenerate_cases import (
    DIAGONAL,
    REGULAR,
    REPEATED,
    SINGULAR,
    W43,
    projector,
)

pytest.importorskip("jax")

import jax
import jax.numpy as jnp

import adswitch as ad
from adswitch.errors import UnsupportedError

B = "jax"
_rng = np.random.default_rng(22)  # this file's own draws (the shared points use 21)
__all__ = ["compiled"]  # the fixture: every call compiles


# (the checks torch's rules share: test_linalg_degenerate_shared.py)
# -- svd's complete factors ----------------------------------------------------------------
def test_full_matrices_of_a_non_square_matrix_are_refused_with_the_fix() -> None:
    tall = np.linalg.qr(_rng.standard_normal((4, 3)))[0] * np.array([3.0, 2.0, 1.0])

    def first_columns(x: Any) -> Any:
        u, _, vh = xp_of(x).linalg.svd(x)  # full_matrices=True, the Array API's default
        return xp_of(x).sum(u[:, :3] @ vh * xp_of(x).asarray(W43))

    with pytest.raises(UnsupportedError, match="full_matrices=False"):  # jax: NotImplemented
        ad.gradient(first_columns, tall.copy(), backend=B)
    (g,) = ad.gradient(first_columns_reduced, tall.copy(), backend=B)
    np.testing.assert_allclose(g, fd_gradient(first_columns_reduced, tall), atol=1e-8)


def first_columns_reduced(x: Any) -> Any:
    u, _, vh = xp_of(x).linalg.svd(x, full_matrices=False)
    return xp_of(x).sum(u @ vh * xp_of(x).asarray(W43))


# -- derivatives that do not exist ---------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "a"),
    [
        ("reduced", SINGULAR.T),
        ("reduced", np.vstack([SINGULAR.T, [1.0, 2.0, 0.0]])),
        ("r", SINGULAR.T),
    ],
    ids=["dependent", "dependent_tall", "r"],
)
def test_qr_of_dependent_columns_is_refused(mode: str, a: np.ndarray) -> None:
    def f(x: Any) -> Any:
        result = xp_of(x).linalg.qr(x, mode=mode)
        r = result if mode == "r" else result[1]
        return xp_of(x).sum(r**2)

    with pytest.raises(UnsupportedError, match=r"linalg\.qr.*full rank"):
        ad.gradient(f, a.copy(), backend=B)  # jax's own: numbers of size 1e15


# -- norms at 0, jax.vmap inside f -----------------------------------------------------
@pytest.mark.parametrize(
    "f",
    [
        lambda x: xp_of(x).linalg.vector_norm(x),
        lambda x: xp_of(x).linalg.vector_norm(x, ord=3),
        lambda x: xp_of(x).sum(xp_of(x).linalg.vector_norm(x, axis=0)),
        lambda x: xp_of(x).linalg.matrix_norm(x),
    ],
    ids=["two", "three", "axis", "fro"],
)
def test_norms_at_zero_have_the_subgradient_zero(f: Any) -> None:
    (g,) = ad.gradient(f, np.zeros((3, 3)), backend=B)
    np.testing.assert_array_equal(g, np.zeros((3, 3)))  # jax's own: NaN
    (g,) = ad.gradient(f, REGULAR.copy(), backend=B)
    np.testing.assert_allclose(g, fd_gradient(f, REGULAR), atol=1e-8)


def test_rules_under_jax_vmap_inside_f() -> None:
    """``jax.vmap`` of a rule over a stack (batched flags: the checks run per matrix)."""
    stack = np.stack([REPEATED, DIAGONAL, REGULAR])

    def squares(x: Any) -> Any:  # ||sym(x)||_F^2, through eigh's eigenvalues
        return jnp.sum(jax.vmap(lambda y: xp_of(y).linalg.eigh(sym(y))[0] ** 2)(x))

    (g,) = ad.gradient(squares, stack.copy(), backend=B)
    np.testing.assert_allclose(g, stack + np.swapaxes(stack, -1, -2), atol=1e-10)

    def batched(x: Any) -> Any:
        return jnp.sum(jax.vmap(projector)(x))

    def looped(x: Any) -> Any:
        return sum(projector(x[i]) for i in range(x.shape[0]))

    with pytest.raises(UnsupportedError, match=r"linalg\.eigh .*repeated eigenvalue"):
        ad.gradient(batched, stack.copy(), backend=B)
    with pytest.raises(UnsupportedError, match=r"second derivative.*repeated eigenvalue"):
        ad.hessian(squares, stack.copy(), backend=B)
    regular = np.stack([REGULAR, REGULAR + REGULAR.T])
    (g,) = ad.gradient(batched, regular.copy(), backend=B)
    np.testing.assert_allclose(g, fd_gradient(looped, regular), atol=1e-8)
    (hess,) = ad.hessian(batched, regular.copy(), backend=B)  # regular only: computed
    assert np.isfinite(np.asarray(hess[0])).all()
