"""A sparse ``ad.jacobian`` inside ``jax.jit`` (issue 22): the colored pushforwards run
on the tracers and jax's ``sparse_gather`` decompresses them in the same trace, so the
whole sparse Jacobian -- seeds and indices constants -- is one jitted program returning a
BCOO. Oracles: ``jax.jacfwd`` of the same function, densified."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.sparse.examples import brusselator

pytest.importorskip("scipy")
jax = pytest.importorskip("jax")
jnp = jax.numpy
sparse = pytest.importorskip("jax.experimental.sparse")


@pytest.fixture(autouse=True)
def _x64() -> Any:
    with jax.enable_x64(True):
        yield


def _f(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sin(x[1:]) * x[:-1] + x[1:] ** 2


def _x() -> Any:
    return jnp.asarray(np.linspace(-0.7, 1.3, 6))


def _dense(m: Any) -> np.ndarray:
    assert isinstance(m, sparse.BCOO), type(m)
    return np.asarray(m.todense())


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse"])
@pytest.mark.parametrize("given", [False, True])
def test_jitted_sparse_jacobian_matches_jacfwd(mode: str, given: bool) -> None:
    x = _x()
    pattern = ad.sparsity(_f, np.asarray(x)) if given else "detect"
    jitted = jax.jit(lambda x: ad.jacobian(_f, x, sparsity=pattern, mode=mode, backend="jax"))
    np.testing.assert_allclose(_dense(jitted(x)), np.asarray(jax.jacfwd(_f)(x)), rtol=1e-13)
    y = x * 1.5 - 0.2  # (a second point: the same program, new values)
    np.testing.assert_allclose(_dense(jitted(y)), np.asarray(jax.jacfwd(_f)(y)), rtol=1e-13)


def test_prepared_called_inside_jit() -> None:
    x = _x()
    prepared = ad.prepare(ad.jacobian, _f, x, sparsity="detect", backend="jax")
    got = jax.jit(lambda x: prepared(x))(x * 0.5)
    np.testing.assert_allclose(_dense(got), np.asarray(jax.jacfwd(_f)(x * 0.5)), rtol=1e-13)


def test_has_aux_inside_jit() -> None:
    def f(x: Any) -> Any:
        return _f(x), ad.array_namespace(x).sum(x)

    x = _x()
    jac, aux = jax.jit(lambda x: ad.jacobian(f, x, sparsity="detect", has_aux=True))(x)
    np.testing.assert_allclose(_dense(jac), np.asarray(jax.jacfwd(_f)(x)), rtol=1e-13)
    np.testing.assert_allclose(float(aux), float(np.sum(np.asarray(x))))


def test_under_vmap_and_grad() -> None:
    x = _x()
    xs = jnp.stack([x, 2.0 * x])
    batch = jax.vmap(lambda x: ad.jacobian(_f, x, sparsity="detect", backend="jax"))(xs)
    want = jax.vmap(jax.jacfwd(_f))(xs)
    np.testing.assert_allclose(np.asarray(batch.todense()), np.asarray(want), rtol=1e-13)
    # (the BCOO's data is traced, so jax differentiates through the sparse Jacobian)
    got = jax.grad(lambda x: ad.jacobian(_f, x, sparsity="detect").todense().sum())(x)
    want_grad = jax.grad(lambda x: jax.jacfwd(_f)(x).sum())(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want_grad), rtol=1e-12)


def test_output_independent_of_the_input() -> None:
    x = _x()
    got = jax.jit(lambda x: ad.jacobian(lambda x: x * 0.0 + 1.0, x, sparsity="detect"))(x)
    np.testing.assert_array_equal(np.asarray(got.todense()), np.zeros((6, 6)))


def test_brusselator_inside_jit() -> None:
    n = 8
    u = jnp.asarray(np.random.default_rng(1).uniform(0.0, 1.0, 2 * n * n))
    pattern = ad.sparsity(brusselator, np.asarray(u), ad.Const(n))

    def jac(u: Any) -> Any:
        return ad.jacobian(brusselator, u, ad.Const(n), sparsity=pattern, backend="jax")

    got = jax.jit(jac)(u)
    want = jax.jacfwd(lambda u: brusselator(u, n))(u)
    np.testing.assert_allclose(_dense(got), np.asarray(want), rtol=1e-12, atol=1e-12)
    assert got.nse == pattern.nnz
    # the seeds, places and coordinates are constants of the program: its only input is u
    closed = jax.make_jaxpr(jac)(u)
    assert [v.aval.shape for v in closed.jaxpr.invars] == [(2 * n * n,)]
