"""Sparse Hessians of several arguments and trees (issue 22): ``ad.hessian(f, x, y, tree,
ad.Const(c), sparsity=...)`` in the dense ``ad.hessian``'s block layout, detection with
``ad.sparsity(..., of="hessian")`` on several arguments, ``ad.prepare`` and ``check=True``.

Oracles: central finite differences of a hand-written gradient (a partially separable
objective coupling two arrays, a dict's leaves and a ``Const``), laid out by hand in the
flattened order (x, y, the dict's leaves in its key order), and the entries' structural
nonzeros read off that closed form; the dense ``ad.hessian`` of the same call only as a
second, layout check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad

sp = pytest.importorskip("scipy.sparse")

ENGINES = ["tape", "torch", "jax", "autograd"]
N, K = 5, 3  # x and y: N elements; t["w"]: K (coupled to y[:K]); t["z"]: 2 (to x[0])


def engine(name: str) -> str:
    if name != "tape":
        pytest.importorskip(name)
    return name


def f(x: Any, y: Any, c: Any, t: Any) -> Any:
    """sum_i (x_i - y_i)^2 x_{i+1} + sum_k c_k w_k^2 y_k + x_0 sum(sin z)."""
    xp = ad.array_namespace(x)
    chain = xp.sum((x[:-1] - y[:-1]) ** 2 * x[1:])
    return chain + xp.sum(c * t["w"] ** 2 * y[:K]) + x[0] * xp.sum(xp.sin(t["z"]))


def grad(x: np.ndarray, y: np.ndarray, c: np.ndarray, w: np.ndarray, z: np.ndarray) -> Any:
    """f's gradient, by hand: (gx, gy, gw, gz)."""
    r = x[:-1] - y[:-1]
    gx, gy = np.zeros(N), np.zeros(N)
    gx[:-1] += 2 * r * x[1:]
    gx[1:] += r**2
    gx[0] += np.sum(np.sin(z))
    gy[:-1] -= 2 * r * x[1:]
    gy[:K] += c * w**2
    return gx, gy, 2 * c * w * y[:K], np.cos(z) * x[0]


def fd_hessian(v: np.ndarray, c: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of the gradient, flattened (x, y, t["w"], t["z"])."""

    def g(u: np.ndarray) -> np.ndarray:
        parts = np.split(u, np.cumsum([N, N, K]))
        return np.concatenate(grad(parts[0], parts[1], c, parts[2], parts[3]))

    cols = [(g(v + h * e) - g(v - h * e)) / (2 * h) for e in np.eye(v.size)]
    return np.stack(cols, axis=1)


def structure() -> np.ndarray:
    """The Hessian's nonzeros, read off f: (x_i, x_{i+1}), (x_i, y_i), (y_i, x_{i+1}),
    the diagonals of x[:-1] and y[:-1], (w_k, w_k), (w_k, y_k), (x_0, z_j), (z_j, z_j)."""
    n = 2 * N + K + 2
    s = np.zeros((n, n), dtype=bool)
    ix, iy, iw, iz = 0, N, 2 * N, 2 * N + K
    for i in range(N - 1):
        for a, b in [(ix + i, ix + i + 1), (ix + i, iy + i), (iy + i, ix + i + 1)]:
            s[a, b] = s[b, a] = True
        s[ix + i, ix + i] = s[iy + i, iy + i] = True
    for k in range(K):
        s[iw + k, iw + k] = True
        s[iw + k, iy + k] = s[iy + k, iw + k] = True
    for j in range(2):
        s[ix, iz + j] = s[iz + j, ix] = s[iz + j, iz + j] = True
    return s


RNG = np.random.default_rng(3)
X, Y = RNG.uniform(0.5, 1.5, N), RNG.uniform(-0.5, 0.5, N)
C, W, Z = RNG.uniform(1.0, 2.0, K), RNG.uniform(0.5, 1.5, K), RNG.uniform(0.2, 1.0, 2)
FLAT = np.concatenate([X, Y, W, Z])
SLICES = {"x": slice(0, N), "y": slice(N, 2 * N), "w": slice(2 * N, 2 * N + K)}
SLICES["z"] = slice(2 * N + K, 2 * N + K + 2)


def dense(m: Any) -> np.ndarray:
    """A scipy, torch CSR or jax BCOO block as dense numpy."""
    if hasattr(m, "toarray"):
        return np.asarray(m.toarray())
    if hasattr(m, "to_dense"):
        return np.asarray(m.to_dense().cpu().numpy())
    return np.asarray(m.todense())


def blocks(H: Any) -> dict[tuple[str, str], Any]:
    """The blocks of f's Hessian by name, from the dense layout H[a][b] (args x, y, c, t)."""
    rows = {"x": H[0], "y": H[1], "w": H[3]["w"] if H[3] else None, "z": H[3]["z"]}
    out = {}
    for a, row in rows.items():
        assert H[2] is None and row[2] is None  # the Const argument's row and column
        for b, entry in {"x": row[0], "y": row[1], "w": row[3]["w"], "z": row[3]["z"]}.items():
            out[(a, b)] = entry
    return out


def assert_matches_fd(H: Any, tol: float = 1e-6) -> None:
    ref = fd_hessian(FLAT, C)
    for (a, b), m in blocks(H).items():
        assert m.shape == (SLICES[a].stop - SLICES[a].start, SLICES[b].stop - SLICES[b].start)
        np.testing.assert_allclose(dense(m), ref[SLICES[a], SLICES[b]], rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ENGINES)
def test_several_arguments_a_dict_and_a_const_match_finite_differences(name: str) -> None:
    t = {"z": Z, "w": W}  # (blocks are placed by key, whatever the dict's order)
    H = ad.hessian(f, X, Y, ad.Const(C), t, backend=engine(name), sparsity="detect", check=True)
    assert_matches_fd(H)
    for m in blocks(H).values():
        assert isinstance(m, sp.csr_array)  # numpy inputs: scipy, whatever the engine
    # the same layout as the dense Hessian (its blocks of shape in_a.shape + in_b.shape)
    Hd = ad.hessian(f, X, Y, ad.Const(C), t, backend=engine(name))
    for key, m in blocks(Hd).items():
        np.testing.assert_allclose(dense(blocks(H)[key]), np.asarray(m), rtol=1e-10, atol=1e-12)


def test_detection_on_several_arguments_is_the_structure_in_the_flattened_order() -> None:
    got = ad.sparsity(f, X, Y, ad.Const(C), {"w": W, "z": Z}, of="hessian").toarray()
    np.testing.assert_array_equal(got, structure())
    assert np.all(np.abs(fd_hessian(FLAT, C))[~got] < 1e-8)  # fd: nothing outside


@pytest.mark.filterwarnings("ignore:tape. the prepared ad.hessian")  # (the tape's notice)
@pytest.mark.parametrize("name", ENGINES)
def test_a_given_pattern_and_prepare_reuse_the_coloring(name: str) -> None:
    t = {"w": W, "z": Z}
    H = ad.hessian(f, X, Y, ad.Const(C), t, backend=engine(name), sparsity=structure())
    assert_matches_fd(H)
    p = ad.prepare(ad.hessian, f, X, Y, ad.Const(C), t, backend=name, sparsity="detect")
    np.testing.assert_array_equal(p.sparsity.toarray(), structure())
    assert p.colors is not None and int(p.colors.max()) + 1 < FLAT.size
    assert_matches_fd(p(X, Y, ad.Const(C), t))
    X2 = X + 0.25  # a second call, new values: the prepared coloring, new numbers
    H2 = p(X2, Y, ad.Const(C), t)
    ref = fd_hessian(np.concatenate([X2, Y, W, Z]), C)
    np.testing.assert_allclose(dense(H2[0][0]), ref[SLICES["x"], SLICES["x"]], atol=1e-6)


def test_tuple_trees_tied_arrays_and_floats_keep_the_dense_layout() -> None:
    def g(pair: Any, s: Any) -> Any:
        xp = ad.array_namespace(pair[0])
        return xp.sum(pair[0] ** 2 * pair[1]) + s**3 * pair[1][0]

    a, b, s = np.array([1.0, 2.0]), np.array([3.0, 4.0]), 1.5
    H = ad.hessian(g, (a, b), s, sparsity="detect", check=True)
    # closed form: d2/da2 = diag(2b), d2/dadb = diag(2a), d2/ds2 = 6 s b0, d2/dsdb0 = 3 s^2
    np.testing.assert_allclose(H[0][0][0][0].toarray(), np.diag(2 * b))
    np.testing.assert_allclose(H[0][0][0][1].toarray(), np.diag(2 * a))
    # H[a][b]: the tree of a with each leaf replaced by the tuple of every argument's tree
    np.testing.assert_allclose(H[0][0][1].toarray(), [[0.0], [0.0]])  # (a, s)
    np.testing.assert_allclose(H[0][1][1].toarray(), [[3 * s**2], [0.0]])  # (b, s)
    assert H[1][0][1].shape == (1, 2)  # a float argument: 1-by-1 (1-by-n) sparse blocks
    np.testing.assert_allclose(H[1][0][1].toarray(), [[3 * s**2, 0.0]])
    np.testing.assert_allclose(H[1][1].toarray(), [[6 * s * b[0]]])
    cube = lambda u, v: ad.array_namespace(u).sum(u**2 * v)  # noqa: E731
    tied, tied_dense = ad.hessian(cube, a, a, sparsity="detect"), ad.hessian(cube, a, a)
    assert tied[1] is None and tied[0][1] is None  # a tied array: its first place only
    assert tied_dense[1] is None and tied_dense[0][1] is None  # (as the dense layout)
    np.testing.assert_allclose(tied[0][0].toarray(), np.diag(6 * a))  # d2 sum(a^3)


def test_check_names_the_missed_entries_of_the_flattened_matrix() -> None:
    wrong = structure() & ~np.eye(FLAT.size, dtype=bool)  # drops the diagonal
    with pytest.raises(ad.UsageError, match=r"misses \d+ nonzero\(s\).*flattened matrix"):
        ad.hessian(f, X, Y, ad.Const(C), {"w": W, "z": Z}, sparsity=wrong, check=True)


def test_a_pattern_of_the_wrong_size_says_the_size_of_all_arguments() -> None:
    n = FLAT.size
    with pytest.raises(ad.UsageError, match=rf"have {n} element\(s\).*shape \({n}, {n}\)"):
        ad.hessian(f, X, Y, ad.Const(C), {"w": W, "z": Z}, sparsity=np.eye(N, dtype=bool))
    with pytest.raises(ad.UsageError, match=r"square 2-D pattern of shape \(n, n\)"):
        ad.hessian(f, X, Y, ad.Const(C), {"w": W, "z": Z}, sparsity=np.ones((n, 2), bool))


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_engine_arrays_get_the_engines_sparse_blocks(name: str) -> None:
    mod = pytest.importorskip(name)
    to: Callable[[np.ndarray], Any] = mod.tensor if name == "torch" else mod.numpy.asarray
    t = {"w": to(W), "z": to(Z)}
    H = ad.hessian(f, to(X), to(Y), ad.Const(to(C)), t, sparsity="detect", check=True)
    # (torch keeps float64; jax computes in float32 unless jax_enable_x64)
    assert_matches_fd(H, 1e-6 if name == "torch" else 1e-4)
    m = H[0][3]["z"]
    if name == "torch":
        assert m.layout == mod.sparse_csr
    else:
        assert type(m).__name__ == "BCOO"


@pytest.mark.filterwarnings("ignore:tape. the prepared ad.hessian")  # (the tape's notice)
def test_a_prepared_call_on_a_dict_in_another_key_order_keeps_the_blocks_by_key() -> None:
    # (prepared on {"w", "z"}, called on {"z", "w"}: the flattened pattern is the prepared
    # order's, the blocks still land under their keys)
    t_prepared, t_other = {"w": W, "z": Z}, {"z": Z, "w": W}
    p = ad.prepare(ad.hessian, f, X, Y, ad.Const(C), t_prepared, sparsity="detect")
    assert_matches_fd(p(X, Y, ad.Const(C), t_other))
