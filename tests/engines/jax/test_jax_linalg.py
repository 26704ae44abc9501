"""jax's ``xp.linalg`` rules (``adswitch_jax.xp.linalg.namespace``) at regular points: every
function they cover, first order (reverse and forward), second order and batched stacks, against
finite differences of the same function run by numpy; compiled (no eager fallback), and
with jax's own numbers where the point is regular.

The degenerate points are in ``test_jax_linalg_degenerate``; the oracle (central
differences with Richardson extrapolation, and mixed second differences) is here.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("jax")

import jax
import jax.numpy as jnp
from adswitch_jax.notices import JaxFallbackWarning

import adswitch as ad
from tests.support.linalg_regular_cases import (
    NAMES,
    STACKS,
    check_batched_jacobians,
    check_gradient_and_jvp,
    check_hessian,
    det,
    eigvalsh,
    fd_gradient,
    regular,
    spread,
    svdvals,
)

B = "jax"


@pytest.fixture(autouse=True)
def compiled() -> Iterator[None]:
    """Every call here compiles: a fallback to eager mode (a Python branch on a traced
    value in a rule) would fail the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", JaxFallbackWarning)
        yield


@pytest.mark.parametrize("name", NAMES)
def test_gradient_and_jvp_match_finite_differences(name: str) -> None:
    check_gradient_and_jvp(name, B)


@pytest.mark.parametrize("name", NAMES)
def test_hessian_matches_second_differences(name: str) -> None:
    check_hessian(name, B)


@pytest.mark.parametrize("name", STACKS)
def test_batched_jacobians_of_stacks(name: str) -> None:
    """A Jacobian's rows are one batched backward pass (vmap); forward mode, columns."""
    check_batched_jacobians(name, B)


def test_regular_points_give_jax_s_own_numbers() -> None:
    """The rules compute what jax's do where the point is regular, to roundoff."""
    la = ad.array_namespace(jnp.ones(1)).linalg
    with jax.enable_x64(True):
        a = jnp.asarray(regular(3, 15))
        for name in ("eigh", "eigvalsh", "svd", "svdvals", "slogdet", "qr", "vector_norm"):

            def ours(y: Any, name: str = name) -> Any:
                return _scalar(getattr(la, name)(y))

            def theirs(y: Any, name: str = name) -> Any:
                return _scalar(getattr(jnp.linalg, name)(y))

            for derivative in (jax.grad, jax.hessian):
                expected = jax.jit(derivative(theirs))(a)
                np.testing.assert_allclose(jax.jit(derivative(ours))(a), expected, atol=1e-11)
    assert la.det is jnp.linalg.det and la.eigh is not jnp.linalg.eigh


def _scalar(out: Any) -> Any:
    """A sign-invariant scalar of a factorization's outputs."""
    parts = out if isinstance(out, tuple) else (out,)
    total = 0.0
    for p in parts:
        total = total + jnp.sum(jnp.cos(p) ** 2 * jnp.arange(1.0, p.size + 1.0).reshape(p.shape))
    return total


def test_jax_arrays_in_and_jax_arrays_out() -> None:
    x = jnp.asarray(spread(3, 3, 18))
    (g,) = ad.gradient(svdvals, x, backend=B)
    assert isinstance(g, jax.Array)
    np.testing.assert_allclose(np.asarray(g), fd_gradient(svdvals, np.asarray(x)), atol=1e-5)


def test_float32_gradients() -> None:
    x = spread(3, 3, 16).astype(np.float32)
    for f in (det, svdvals, eigvalsh):
        (g,) = ad.gradient(f, x.copy(), backend=B)
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, fd_gradient(f, x.astype(np.float64)), rtol=2e-3, atol=2e-3)
