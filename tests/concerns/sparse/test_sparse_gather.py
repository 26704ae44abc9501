"""Sparse results decompressed on the engine (issue 22: the ``sparse_gather`` hook of
``adswitch.spec.Backend``, jax's BCOO gathered on its device), and the given patterns
made canonical. Oracles: jax's own ``jax.jacfwd``/``jax.hessian`` on the same function
written with ``jax.numpy``, and the dense ``ad.jacobian`` on the tape (float64 numpy)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.sparse.examples import brusselator

sp = pytest.importorskip("scipy.sparse")
jax = pytest.importorskip("jax")
jnp = jax.numpy

N = 4  # (a 4 x 4 grid: 32 unknowns)


def bruss_jnp(u: Any) -> Any:
    """``brusselator(u, N)`` in ``jax.numpy`` directly (the oracle's function)."""
    alpha = 10.0 * (N - 1) ** 2 / 10.0
    xs = np.linspace(0.0, 1.0, N)
    forcing = np.where(((xs[:, None] - 0.3) ** 2 + (xs[None, :] - 0.6) ** 2) <= 0.01, 5.0, 0.0)

    def lap(z: Any) -> Any:
        return sum(jnp.roll(z, s, a) for s, a in ((1, 0), (-1, 0), (1, 1), (-1, 1))) - 4.0 * z

    grid = jnp.reshape(u, (N, N, 2))
    a, b = grid[:, :, 0], grid[:, :, 1]
    du = 1.0 + a * a * b - 4.4 * a + alpha * lap(a) + forcing
    dv = 3.4 * a - a * a * b + alpha * lap(b)
    return jnp.reshape(jnp.stack([du, dv], axis=-1), (-1,))


def rosen(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def points(k: int) -> list[np.ndarray]:
    rng = np.random.default_rng(k)
    return [rng.uniform(0.1, 1.0, 2 * N * N).astype(np.float32) for _ in range(3)]


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_prepared_jax_jacobian_equals_jacfwd_at_every_point(mode: str) -> None:
    u0 = jnp.asarray(points(0)[0])
    prep = ad.prepare(
        ad.jacobian, brusselator, u0, ad.Const(N), sparsity="detect", mode=mode, backend="jax"
    )
    for u in points(1):  # (new values on every call: nothing stale kept on the device)
        uj = jnp.asarray(u)
        got = prep(uj, ad.Const(N))
        assert type(got).__name__ == "BCOO" and got.indices_sorted and got.unique_indices
        want = np.asarray(jax.jacfwd(bruss_jnp)(uj))
        np.testing.assert_allclose(np.asarray(got.todense()), want, rtol=1e-5, atol=1e-4)
        assert got.data.dtype == uj.dtype


def test_two_prepared_patterns_interleaved() -> None:
    """The device-side indices of one pattern never serve another's call."""
    u = jnp.asarray(points(2)[0])
    x = jnp.asarray(np.linspace(-1.0, 1.0, 2 * N * N, dtype=np.float32))
    bru = ad.prepare(ad.jacobian, brusselator, u, ad.Const(N), sparsity="detect")
    sq = ad.prepare(ad.jacobian, lambda v: v[1:] * v[:-1], x, sparsity="detect")
    for _ in range(2):
        b, s = bru(u, ad.Const(N)), sq(x)
        np.testing.assert_allclose(
            np.asarray(b.todense()), np.asarray(jax.jacfwd(bruss_jnp)(u)), rtol=1e-5, atol=1e-4
        )
        want = np.asarray(jax.jacfwd(lambda v: v[1:] * v[:-1])(x))
        np.testing.assert_allclose(np.asarray(s.todense()), want, rtol=1e-6)


def test_unprepared_calls_with_a_given_pattern() -> None:
    u = jnp.asarray(points(3)[0])
    pattern = ad.sparsity(brusselator, np.asarray(u), ad.Const(N))
    for scale in (1.0, 0.5):
        got = ad.jacobian(brusselator, u * scale, ad.Const(N), sparsity=pattern)
        want = np.asarray(jax.jacfwd(bruss_jnp)(u * scale))
        np.testing.assert_allclose(np.asarray(got.todense()), want, rtol=1e-5, atol=1e-4)


def test_prepared_jax_hessian_equals_jax_hessian() -> None:
    x = jnp.asarray(np.linspace(-1.2, 1.3, 12))
    prep = ad.prepare(ad.hessian, rosen, x, sparsity="detect")
    for k in range(2):
        xk = x + 0.1 * k
        got = prep(xk)
        assert type(got).__name__ == "BCOO"
        want = np.asarray(jax.hessian(lambda v: jnp.sum(rosen(v)))(xk))
        np.testing.assert_allclose(np.asarray(got.todense()), want, rtol=1e-5, atol=1e-4)


def test_check_true_still_compares() -> None:
    u = jnp.asarray(points(4)[0])
    wrong = sp.eye_array(2 * N * N, format="csr")  # (a diagonal: misses the couplings)
    with pytest.raises(ad.errors.UsageError, match="misses"):
        ad.jacobian(brusselator, u, ad.Const(N), sparsity=wrong, check=True)


@pytest.mark.parametrize("backend", ["tape", "jax"])
def test_given_pattern_with_duplicates_and_stored_false(backend: str) -> None:
    """A stored ``False`` is no entry (the coloring ignores it) and a duplicate is one
    entry: the result equals the dense Jacobian, not a neighbour's value read twice."""
    x = np.array([1.0, 2.0, 3.0])
    rows = np.array([0, 0, 1, 2, 0])
    cols = np.array([0, 0, 1, 2, 1])
    vals = np.array([True, True, True, True, False])  # (0, 0) twice, (0, 1) stored False
    pattern = sp.coo_array((vals, (rows, cols)), shape=(3, 3)).tocsr()
    arg = jnp.asarray(x) if backend == "jax" else x
    got = ad.jacobian(lambda v: v * v, arg, sparsity=pattern, backend=backend)
    dense = got.todense() if backend == "jax" else got.toarray()
    want = ad.jacobian(lambda v: v * v, x, backend="tape")[0]
    np.testing.assert_allclose(np.asarray(dense), want, rtol=1e-6)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_prepared_torch_jacobian_equals_the_tape_and_owns_its_memory(mode: str) -> None:
    torch = pytest.importorskip("torch")
    u0 = points(5)[0].astype(np.float64)
    prep = ad.prepare(
        ad.jacobian, brusselator, torch.tensor(u0), ad.Const(N), sparsity="detect", mode=mode
    )
    first = prep(torch.tensor(u0), ad.Const(N))
    first.values().zero_()  # (a caller writing into one result...)
    first.crow_indices().zero_()
    for u in points(6):  # (...never changes the next, nor a later point's values)
        got = prep(torch.tensor(u.astype(np.float64)), ad.Const(N))
        assert got.layout == torch.sparse_csr and got.dtype == torch.float64
        want = ad.jacobian(brusselator, u.astype(np.float64), ad.Const(N), backend="tape")[0]
        np.testing.assert_allclose(got.to_dense().numpy(), want, rtol=1e-12, atol=1e-9)


def test_prepared_torch_hessian_equals_the_tape() -> None:
    torch = pytest.importorskip("torch")
    x = np.linspace(-1.2, 1.3, 12)
    prep = ad.prepare(ad.hessian, rosen, torch.tensor(x), sparsity="detect")
    for k in range(2):
        got = prep(torch.tensor(x + 0.1 * k))
        want = ad.hessian(rosen, x + 0.1 * k, backend="tape")[0][0]
        np.testing.assert_allclose(got.to_dense().numpy(), want, rtol=1e-12, atol=1e-9)
