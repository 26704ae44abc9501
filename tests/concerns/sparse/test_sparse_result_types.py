"""Sparse results in the caller's kind (issue 22): ``ad.jacobian(..., sparsity=...)`` and
``ad.hessian(..., sparsity=...)`` give per block a ``torch.sparse_csr_tensor`` for torch
inputs, a ``jax.experimental.sparse.BCOO`` for jax inputs and a ``scipy.sparse.csr_array``
for numpy inputs whatever the engine. Oracles: central finite differences in float64
numpy, scipy's closed-form Rosenbrock Hessian, and the dense ``ad.jacobian`` on another
engine (the tape, on float64 numpy copies)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch import trees

sp = pytest.importorskip("scipy.sparse")
optimize = pytest.importorskip("scipy.optimize")
torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = jax.numpy
jsparse = pytest.importorskip("jax.experimental.sparse")


def tridiag(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.concat([x[:1] ** 2, x[1:] * xp.sin(x[:-1]) + x[:-1] * x[1:] ** 2])


def two(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x)
    return {"u": xp.exp(x) * y, "s": xp.sum(x * x) + y[0]}


def rosen(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def fd_flat(f: Any, xs: list[np.ndarray], h: float = 1e-6) -> np.ndarray:
    """Central differences of ``f(*xs)``'s output leaves, flattened, in every element of
    ``xs`` (columns argument after argument, each in C order), in float64 numpy."""

    def flat_out(vals: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([np.ravel(v) for v in trees.flatten(f(*vals))[0]])

    cols = []
    for a, x in enumerate(xs):
        for j in range(x.size):
            plus, minus = [v.copy() for v in xs], [v.copy() for v in xs]
            plus[a].flat[j] += h
            minus[a].flat[j] -= h
            cols.append((flat_out(plus) - flat_out(minus)) / (2 * h))
    return np.stack(cols, axis=1)


X = np.random.default_rng(0).uniform(0.5, 1.5, 6)
Y = np.random.default_rng(1).uniform(0.5, 1.5, 6)


def dense_of(m: Any) -> np.ndarray:
    """A torch CSR or jax BCOO block as dense float64 numpy (through its own ``to_dense``)."""
    if isinstance(m, torch.Tensor):
        out: np.ndarray = m.to_dense().cpu().numpy().astype(np.float64)
        return out
    return np.asarray(m.todense(), dtype=np.float64)


def assert_torch_csr(m: Any, shape: tuple[int, int], dtype: Any) -> None:
    assert isinstance(m, torch.Tensor) and m.layout == torch.sparse_csr
    assert tuple(m.shape) == shape and m.dtype == dtype and m.device.type == "cpu"


def assert_bcoo(m: Any, shape: tuple[int, int], dtype: Any) -> None:
    assert isinstance(m, jsparse.BCOO)
    assert m.shape == shape and m.dtype == dtype and m.indices.shape[1] == 2


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_torch_input_gives_torch_csr(dtype: Any) -> None:
    x = torch.tensor(X, dtype=dtype)
    jac = ad.jacobian(tridiag, x, sparsity="detect", check=True)
    assert_torch_csr(jac, (6, 6), dtype)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    x_used = x.numpy().astype(np.float64)
    np.testing.assert_allclose(dense_of(jac), fd_flat(tridiag, [x_used]), rtol=tol, atol=1e-6)
    # (the pattern's stored entries: x[0]**2 couples nothing else, so 1 + 2 * 5 entries)
    assert jac.values().numel() == ad.sparsity(tridiag, X).nnz == 11


def test_jax_input_gives_bcoo() -> None:
    x = jnp.asarray(X)  # (float32 unless jax_enable_x64)
    jac = ad.jacobian(tridiag, x, sparsity="detect", check=True)
    assert_bcoo(jac, (6, 6), x.dtype)
    assert jac.nse == 11 and jac.indices_sorted and jac.unique_indices
    x_used = np.asarray(x, dtype=np.float64)
    rtol = 1e-12 if x.dtype == np.float64 else 1e-5
    np.testing.assert_allclose(dense_of(jac), fd_flat(tridiag, [x_used]), rtol=rtol, atol=1e-5)
    v = np.arange(6.0)  # (a BCOO product, as users use it)
    want = ad.jacobian(tridiag, x_used, backend="tape")[0] @ v
    np.testing.assert_allclose(np.asarray(jac @ jnp.asarray(v, x.dtype)), want, rtol=1e-5)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_several_arguments_and_a_tree_output(mode: str) -> None:
    want = fd_flat(two, [X, Y])  # rows: u then s (flatten order), columns: x then y
    for x, y in ((torch.tensor(X), torch.tensor(Y)), (jnp.asarray(X), jnp.asarray(Y))):
        jac = ad.jacobian(two, x, y, sparsity="detect", mode=mode, check=True)
        got = {}
        for key in ("u", "s"):
            rows = 1 if key == "s" else 6
            for block in jac[key]:
                if isinstance(x, torch.Tensor):
                    assert_torch_csr(block, (rows, 6), torch.float64)
                else:
                    assert_bcoo(block, (rows, 6), x.dtype)
            got[key] = np.hstack([dense_of(b) for b in jac[key]])
        tol = 1e-6 if isinstance(x, torch.Tensor) or x.dtype == np.float64 else 1e-4
        np.testing.assert_allclose(np.vstack([got["u"], got["s"]]), want, rtol=tol, atol=tol)


def test_blocks_follow_each_input_kind() -> None:
    """A torch argument's blocks are torch, a numpy argument's stay scipy (the caller's
    kind, block by block)."""
    jac = ad.jacobian(two, torch.tensor(X), Y, sparsity="detect", backend="torch")
    assert_torch_csr(jac["u"][0], (6, 6), torch.float64)
    assert isinstance(jac["u"][1], sp.csr_array) and jac["u"][1].dtype == np.float64
    want = fd_flat(two, [X, Y])[:6]  # (the u rows)
    got = np.hstack([dense_of(jac["u"][0]), jac["u"][1].toarray()])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("engine", ["torch", "jax"])
def test_numpy_inputs_stay_scipy_on_every_engine(engine: str) -> None:
    jac = ad.jacobian(tridiag, X, sparsity="detect", backend=engine)
    assert isinstance(jac, sp.csr_array)
    np.testing.assert_allclose(jac.toarray(), fd_flat(tridiag, [X]), rtol=1e-6, atol=1e-7)
    H = ad.hessian(rosen, X, sparsity="detect", backend=engine)
    assert isinstance(H, sp.csr_array)
    np.testing.assert_allclose(H.toarray(), optimize.rosen_hess(X), rtol=1e-12)


def test_prepared_calls_give_the_same_types() -> None:
    x2 = X[::-1].copy()
    prep = ad.prepare(ad.jacobian, tridiag, torch.tensor(X), sparsity="detect")
    jac = prep(torch.tensor(x2))
    assert_torch_csr(jac, (6, 6), torch.float64)
    np.testing.assert_allclose(dense_of(jac), fd_flat(tridiag, [x2]), rtol=1e-6, atol=1e-7)
    prep_j = ad.prepare(ad.jacobian, two, jnp.asarray(X), jnp.asarray(Y), sparsity="detect")
    jac_j = prep_j(jnp.asarray(x2), jnp.asarray(Y))
    assert_bcoo(jac_j["u"][1], (6, 6), jnp.asarray(X).dtype)
    got = np.vstack([np.hstack([dense_of(b) for b in jac_j[k]]) for k in ("u", "s")])
    np.testing.assert_allclose(got, fd_flat(two, [x2, Y]), rtol=1e-4, atol=1e-4)


def test_hessians_plain_prepared_and_checked() -> None:
    x = np.random.default_rng(2).uniform(-1.0, 1.0, 8)
    want = optimize.rosen_hess(x)
    H = ad.hessian(rosen, torch.tensor(x), sparsity="detect", check=True)
    assert_torch_csr(H, (8, 8), torch.float64)
    np.testing.assert_allclose(dense_of(H), want, rtol=1e-12)
    prep = ad.prepare(ad.hessian, rosen, torch.tensor(x), sparsity="detect")
    np.testing.assert_allclose(dense_of(prep(torch.tensor(-x))), optimize.rosen_hess(-x))
    xj = jnp.asarray(x)
    Hj = ad.hessian(rosen, xj, sparsity="detect", check=True)
    assert_bcoo(Hj, (8, 8), xj.dtype)
    x_used = np.asarray(xj, dtype=np.float64)
    np.testing.assert_allclose(dense_of(Hj), optimize.rosen_hess(x_used), rtol=1e-5, atol=1e-3)
    prep_j = ad.prepare(ad.hessian, rosen, xj, sparsity="detect")
    assert_bcoo(prep_j(xj), (8, 8), xj.dtype)
    np.testing.assert_allclose(dense_of(prep_j(xj)), dense_of(Hj), rtol=1e-6, atol=1e-6)


def test_check_still_catches_a_wrong_pattern() -> None:
    wrong = np.eye(6, dtype=bool)  # misses the sub-diagonal
    for x in (torch.tensor(X), jnp.asarray(X)):
        with pytest.raises(ad.UsageError, match="misses"):
            ad.jacobian(tridiag, x, sparsity=wrong, check=True)


def test_conformance_densifies_every_kind() -> None:
    from adswitch_conformance.checks_sparse import sparse_kind, to_dense

    want = fd_flat(tridiag, [X])
    for x, kind in ((X, "scipy"), (torch.tensor(X), "torch"), (jnp.asarray(X), "jax")):
        jac = ad.jacobian(tridiag, x, sparsity="detect")
        assert sparse_kind(jac) == kind
        tol = 1e-4 if kind == "jax" and jnp.asarray(X).dtype != np.float64 else 1e-6
        np.testing.assert_allclose(to_dense(jac), want, rtol=tol, atol=tol)
    assert sparse_kind(torch.ones(2)) is None and sparse_kind(jnp.ones(2)) is None
