"""The tape's forward sweep writes into tangents it donates to a rule (``core.DONATED``)
and frees the entries no wanted tangent needs: second derivatives and ``ad.jvp`` stay
right -- against ``scipy.optimize.rosen_hess``, ``jax`` and central differences -- and
never write into the caller's tangents, however the tangents are shared (an argument
read twice, a tangent that is also a result, views of a seed, float32)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import scipy.optimize

import adswitch as ad

jax = pytest.importorskip("jax")
jnp = jax.numpy
# (the jax oracles run in 64-bit mode inside ``jax.enable_x64`` only: a process-wide
# switch would change every later test's jax dtypes)

N = 5000  # large enough that the sweep donates (IN_PLACE_FROM elements and more)


def _xp(x: Any) -> Any:
    return ad.array_namespace(x)


def rosen(x: Any) -> Any:
    xp = _xp(x)
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def mixed(x: Any) -> Any:
    """multiply, add, subtract and negative with both tangents large, an argument read
    twice (``a * a``) and a tangent read again after its first reader."""
    xp = _xp(x)
    a = x[1:] * x[:-1]
    b = -(a * a) + (x[1:] - x[:-1]) * 3.0
    c = b - -a
    return xp.sum(c * a + xp.sin(x[:-1]) * c)


def mixed_jnp(x: Any) -> Any:
    a = x[1:] * x[:-1]
    b = -(a * a) + (x[1:] - x[:-1]) * 3.0
    c = b - -a
    return jnp.sum(c * a + jnp.sin(x[:-1]) * c)


def _quiet() -> Any:
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("ignore")  # (the prepared hessian's TapeReplayWarning)
    return ctx


@pytest.mark.parametrize("n", [7, N])
def test_prepared_sparse_rosen_hessian_matches_scipy(n: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n)
    ctx = _quiet()
    try:
        h = ad.prepare(ad.hessian, rosen, x, backend="tape", sparsity="detect")
        for _ in range(3):  # prepared calls after the first: same results
            x = rng.standard_normal(n)
            kept = x.copy()
            got = h(x).toarray()
            np.testing.assert_allclose(got, scipy.optimize.rosen_hess(x), rtol=1e-12, atol=1e-9)
            assert np.array_equal(x, kept)
    finally:
        ctx.__exit__(None, None, None)


def test_dense_hessian_and_hvp_match_jax() -> None:
    n = 300  # (dense: 300 x 300; the batched tangents have 90,000 elements)
    x = np.random.default_rng(1).standard_normal(n)
    with jax.enable_x64(True):
        want = np.asarray(jax.hessian(mixed_jnp)(jnp.asarray(x)))
    got = np.asarray(ad.hessian(mixed, x, backend="tape")[0][0])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    ctx = _quiet()
    try:
        sparse = ad.prepare(ad.hessian, mixed, x, backend="tape", sparsity="detect")
        np.testing.assert_allclose(sparse(x).toarray(), want, rtol=1e-10, atol=1e-10)
    finally:
        ctx.__exit__(None, None, None)


def test_hvp_leaves_the_callers_tangent_alone() -> None:
    rng = np.random.default_rng(2)
    x, v = rng.standard_normal(N), rng.standard_normal(N)
    kept = v.copy()
    (got,) = ad.hvp(mixed, (x,), (v,), backend="tape")
    assert np.array_equal(v, kept)
    with jax.enable_x64(True):
        want = jax.jvp(jax.grad(mixed_jnp), (jnp.asarray(x),), (jnp.asarray(v),))[1]
        want = np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jvp_shared_tangents_against_central_differences(dtype: Any) -> None:
    """Outputs whose tangents are the seed itself, a view of it, and values read twice:
    each comes out right and the seed is unchanged."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(N).astype(dtype)
    t = rng.standard_normal(N).astype(dtype)
    kept = t.copy()

    def f(x: Any) -> Any:
        a = x * 2.0
        b = -a
        return (x, x[1:], b * b - a, b + a * 3.0, -(b - x))

    _, tangent = ad.jvp(f, (x,), (t,), backend="tape")
    assert np.array_equal(t, kept)
    eps = 1e-3 if dtype == np.float32 else 1e-6
    x64, t64 = x.astype(np.float64), t.astype(np.float64)
    plus, minus = f(x64 + eps * t64), f(x64 - eps * t64)
    tol = 1e-3 if dtype == np.float32 else 1e-7
    for got, p, m in zip(tangent, plus, minus):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, (p - m) / (2 * eps), rtol=tol, atol=tol)
    assert tangent[0] is not t  # (a seed that reaches an output unchanged is copied)


def test_batched_jvp_of_a_gradient_repeated_is_stable() -> None:
    """The same prepared sparse Hessian twice on the same point: identical results (a
    donated buffer never leaks into a later call)."""
    x = np.random.default_rng(4).standard_normal(N)
    ctx = _quiet()
    try:
        h = ad.prepare(ad.hessian, mixed, x, backend="tape", sparsity="detect")
        first = h(x).toarray()
        second = h(x).toarray()
    finally:
        ctx.__exit__(None, None, None)
    assert np.array_equal(first, second)
    fd = np.zeros((4, N))
    g = ad.prepare(ad.gradient, mixed, x, backend="tape")
    for k, j in enumerate((0, 1, N // 2, N - 1)):
        e = np.zeros(N)
        e[j] = 1e-5
        fd[k] = (np.asarray(g(x + e)[0]) - np.asarray(g(x - e)[0])) / 2e-5
    np.testing.assert_allclose(first[[0, 1, N // 2, N - 1]], fd, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: x * 3.0,
        lambda x: -x,
        lambda x: x - 1.5,
        lambda x: 2.0 - x,
        lambda x: x * x,
        lambda x: (x + x) * 0.5,
    ],
)
def test_a_seed_read_once_is_never_written(f: Any) -> None:
    """The caller's tangent is the only reader's argument here: it is not the sweep's to
    give away (the rule computes into fresh memory), and the result is right."""
    rng = np.random.default_rng(5)
    x, t = rng.standard_normal(N), rng.standard_normal(N)
    kept = t.copy()
    _, tangent = ad.jvp(f, (x,), (t,), backend="tape")
    assert np.array_equal(t, kept)
    eps = 1e-6
    np.testing.assert_allclose(
        tangent, (f(x + eps * t) - f(x - eps * t)) / (2 * eps), rtol=1e-7, atol=1e-7
    )


def test_hvp_seed_read_once_is_never_written() -> None:
    rng = np.random.default_rng(6)
    x, v = rng.standard_normal(N), rng.standard_normal(N)
    kept = v.copy()

    def f(x: Any) -> Any:
        return _xp(x).sum((x * 2.0) ** 3 - x * x)

    (got,) = ad.hvp(f, (x,), (v,), backend="tape")
    assert np.array_equal(v, kept)
    np.testing.assert_allclose(got, (48.0 * x - 2.0) * kept, rtol=1e-12, atol=1e-9)
