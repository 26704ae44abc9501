"""Sparse Hessians (issue 22): star coloring, compressed H·v products, decompression.

Oracles: scipy.optimize.rosen_hess, closed-form Hessians, central finite differences of
f, brute-force enumeration of the paths a star coloring must not two-color, and the
dense ad.hessian of another engine's run (the tape's)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.sparse.coloring import color_columns, n_colors
from adswitch.sparse.hessian import setup_hessian
from adswitch.sparse.star import decompress_star, star_coloring, symmetric_pattern

sp = pytest.importorskip("scipy.sparse")
optimize = pytest.importorskip("scipy.optimize")

ENGINES = ["tape", "torch", "jax", "autograd"]


def engine(name: str) -> str:
    if name != "tape":
        pytest.importorskip(name)
    return name


def rosen(x: Any) -> Any:  # chained Rosenbrock: partially separable, tridiagonal Hessian
    xp = ad.array_namespace(x)
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def chain(x: Any) -> Any:  # H = diag(exp(x)) + ones on the first off-diagonals
    xp = ad.array_namespace(x)
    return xp.sum(xp.exp(x)) + xp.sum(x[1:] * x[:-1])


def chain_hess(x: np.ndarray) -> np.ndarray:
    n = x.size
    return np.diag(np.exp(x)) + np.eye(n, k=1) + np.eye(n, k=-1)


def arrow(x: Any) -> Any:  # a dense last row and column: the arrowhead
    xp = ad.array_namespace(x)
    return xp.sum(x[:-1] ** 2 * x[-1]) + xp.sum(xp.cos(x))


def arrow_hess(x: np.ndarray) -> np.ndarray:
    h = np.diag(-np.cos(x))
    h[np.arange(x.size - 1), np.arange(x.size - 1)] += 2 * x[-1]
    h[-1, :-1] = h[:-1, -1] = 2 * x[:-1]
    return h


def blocks(x: Any) -> Any:  # three-by-three diagonal blocks
    xp = ad.array_namespace(x)
    b = xp.reshape(x, (-1, 3))
    return xp.sum(xp.sum(b, axis=1) ** 2) + xp.sum(x**4)


def blocks_hess(x: np.ndarray) -> np.ndarray:
    return 2.0 * np.kron(np.eye(x.size // 3), np.ones((3, 3))) + np.diag(12 * x**2)


def band2(x: Any) -> Any:  # pentadiagonal, no closed form written out: finite differences
    xp = ad.array_namespace(x)
    return xp.sum(xp.log1p(x[2:] ** 2 * x[:-2] ** 2)) + xp.sum(xp.sin(x[1:] * x[:-1]))


def fd_hessian(f: Callable[[np.ndarray], Any], x: np.ndarray, h: float = 1e-4) -> np.ndarray:
    n = x.size
    out = np.zeros((n, n))
    for i, j in itertools.product(range(n), repeat=2):
        ei, ej = np.eye(n)[i] * h, np.eye(n)[j] * h
        out[i, j] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)) / (
            4 * h * h
        )
    return out


def bicolored_paths(pattern: Any, colors: np.ndarray) -> list[tuple[int, ...]]:
    """Brute force: adjacent vertices sharing a color, and paths on four vertices that
    use two colors (both must be absent from a star coloring)."""
    p = np.asarray(pattern.toarray() if hasattr(pattern, "toarray") else pattern, dtype=bool)
    np.fill_diagonal(p, False)
    n = len(p)
    bad: list[tuple[int, ...]] = [
        (int(i), int(j)) for i, j in zip(*np.nonzero(p)) if colors[i] == colors[j]
    ]
    for a, b, c, d in itertools.permutations(range(n), 4):
        if p[a, b] and p[b, c] and p[c, d] and len({colors[v] for v in (a, b, c, d)}) == 2:
            bad.append((a, b, c, d))
    return bad


def test_star_coloring_on_random_graphs_is_a_star_coloring_and_decompresses() -> None:
    rng = np.random.default_rng(0)
    for trial in range(25):
        n = 9
        upper = np.triu(rng.random((n, n)) < 0.25, 1)
        pattern = symmetric_pattern(upper | np.eye(n, dtype=bool))
        colors = star_coloring(pattern)
        assert bicolored_paths(pattern, colors) == [], trial
        h = np.where(pattern.toarray(), rng.standard_normal((n, n)), 0.0)
        h = h + h.T  # a symmetric matrix with that pattern: the oracle
        seeds = np.eye(n_colors(colors))[colors]
        np.testing.assert_array_equal(decompress_star(pattern, colors, (h @ seeds).T).toarray(), h)


@pytest.mark.parametrize(
    ("f", "n", "star", "column"),
    [
        (chain, 12, 3, 3),  # a path: star chromatic number 3
        (rosen, 12, 3, 3),
        (arrow, 12, 2, 12),  # arrowhead: star 2, column n
        (blocks, 12, 3, 3),  # cliques of 3
    ],
)
def test_color_counts_against_known_optima(
    f: Callable[[Any], Any], n: int, star: int, column: int
) -> None:
    x = np.random.default_rng(1).uniform(0.5, 1.5, n)
    pattern = symmetric_pattern(ad.sparsity(f, x, of="hessian"))
    assert n_colors(star_coloring(pattern)) == star
    assert n_colors(color_columns(pattern)) == column
    s = setup_hessian(f, (x,), "detect")
    assert n_colors(s.colors) == min(star, column)


@pytest.mark.parametrize("backend", ENGINES)
def test_zero_diagonal_falls_back_to_column_coloring(backend: str) -> None:
    backend = engine(backend)

    def f(x: Any) -> Any:  # H: ones beside the diagonal, zeros on it
        return ad.array_namespace(x).sum(x[1:] * x[:-1])

    x = np.linspace(0.1, 1.0, 8)
    s = setup_hessian(f, (x,), "detect")
    # (a star coloring keeps neighbours apart: 3; a column one need not here: 2, optimal)
    assert (s.mode, n_colors(s.colors), n_colors(star_coloring(s.pattern))) == ("column", 2, 3)
    H = ad.hessian(f, x, sparsity="detect", check=True, backend=backend)
    np.testing.assert_array_equal(H.toarray(), np.eye(8, k=1) + np.eye(8, k=-1))


@pytest.mark.parametrize("backend", ENGINES)
def test_chained_rosenbrock_against_scipy_and_dense(backend: str) -> None:
    backend = engine(backend)
    x = np.random.default_rng(2).uniform(-1.5, 1.5, 30)
    H = ad.hessian(rosen, x, sparsity="detect", backend=backend)
    assert isinstance(H, sp.csr_array) and H.shape == (30, 30) and H.nnz == 30 + 2 * 29
    np.testing.assert_allclose(H.toarray(), optimize.rosen_hess(x), rtol=1e-12, atol=1e-9)
    assert (H != H.T).nnz == 0
    dense = ad.hessian(rosen, x, backend="tape")[0][0]
    np.testing.assert_allclose(H.toarray(), dense, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("backend", ENGINES)
@pytest.mark.parametrize(
    ("f", "closed"), [(chain, chain_hess), (arrow, arrow_hess), (blocks, blocks_hess)]
)
def test_closed_forms(
    f: Callable[[Any], Any], closed: Callable[[np.ndarray], np.ndarray], backend: str
) -> None:
    backend = engine(backend)
    x = np.random.default_rng(3).uniform(0.5, 1.5, 9)
    H = ad.hessian(f, x, sparsity="detect", check=True, backend=backend)
    np.testing.assert_allclose(H.toarray(), closed(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", ENGINES)
def test_pentadiagonal_against_finite_differences(backend: str) -> None:
    backend = engine(backend)
    x = np.random.default_rng(4).uniform(0.5, 1.5, 8)
    H = ad.hessian(band2, x, sparsity="detect", backend=backend)
    assert H.nnz == 8 + 2 * 7 + 2 * 6
    np.testing.assert_allclose(H.toarray(), fd_hessian(band2, x), rtol=1e-5, atol=1e-6)


def test_empty_rows() -> None:
    def f(x: Any) -> Any:  # x[2] enters linearly, x[3] not at all: their rows are empty
        xp = ad.array_namespace(x)
        return xp.sum(x[:2] ** 3) + 3.0 * x[2]

    x = np.array([1.0, 2.0, 3.0, 4.0])
    H = ad.hessian(f, x, sparsity="detect", check=True)
    assert H.shape == (4, 4) and np.diff(H.indptr).tolist() == [1, 1, 0, 0]
    np.testing.assert_allclose(H.toarray(), np.diag([6.0, 12.0, 0.0, 0.0]))


def test_user_pattern_half_given_is_symmetrized() -> None:
    x = np.random.default_rng(5).uniform(0.5, 1.5, 7)
    upper = np.triu(np.ones((7, 7), dtype=bool)) & ~np.triu(np.ones((7, 7), dtype=bool), 2)
    H = ad.hessian(chain, x, sparsity=upper)
    np.testing.assert_allclose(H.toarray(), chain_hess(x), rtol=1e-12)
    H2 = ad.hessian(chain, x, sparsity=sp.csr_array(upper | upper.T), check=True)
    np.testing.assert_allclose(H2.toarray(), chain_hess(x), rtol=1e-12)


def test_wrong_pattern_caught_by_check() -> None:
    x = np.random.default_rng(6).uniform(0.5, 1.5, 6)
    with pytest.raises(ad.UsageError, match=r"misses 10 nonzero\(s\).*\(0, 1\)"):
        ad.hessian(rosen, x, sparsity=sp.eye_array(6, format="csr"), check=True)
    # without check: the result has the given pattern, and its numbers are those of a
    # pattern the function does not have (the missing entries fold into the diagonal)
    H = ad.hessian(rosen, x, sparsity=np.eye(6, dtype=bool))
    assert H.nnz == 6
    np.testing.assert_allclose(H.diagonal(), optimize.rosen_hess(x).sum(axis=1), rtol=1e-12)


# (the tape's notice that a prepared Hessian, a nested call, is traced on every call)
@pytest.mark.filterwarnings("ignore::adswitch_tape.replay.notices.TapeReplayWarning")
@pytest.mark.parametrize("backend", ENGINES)
def test_prepared_detects_once_and_takes_a_saved_pattern(backend: str) -> None:
    backend = engine(backend)
    rng = np.random.default_rng(7)
    x = rng.uniform(-1.0, 1.0, 40)
    prep = ad.prepare(ad.hessian, rosen, x, sparsity="detect", backend=backend)
    assert prep.sparsity.shape == (40, 40) and prep.sparsity.nnz == 40 + 2 * 39
    assert prep.colors.shape == (40,) and n_colors(prep.colors) == 3
    for _ in range(2):
        x2 = rng.uniform(-1.0, 1.0, 40)
        np.testing.assert_allclose(prep(x2).toarray(), optimize.rosen_hess(x2), rtol=1e-12)
    again = ad.prepare(ad.hessian, rosen, x, sparsity=prep.sparsity, backend=backend)
    np.testing.assert_array_equal(again.colors, prep.colors)
    np.testing.assert_allclose(
        ad.hessian(rosen, x, sparsity=prep.sparsity, backend=backend).toarray(),
        optimize.rosen_hess(x),
        rtol=1e-12,
    )


def test_torch_and_jax_inputs_give_their_sparse_types() -> None:
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(8).uniform(-1.0, 1.0, 10)
    H = ad.hessian(rosen, torch.tensor(x), sparsity="detect")
    assert H.layout == torch.sparse_csr
    np.testing.assert_allclose(H.to_dense().numpy(), optimize.rosen_hess(x), rtol=1e-12)
    jnp = pytest.importorskip("jax.numpy")
    xj = jnp.asarray(x)  # (float32 unless jax_enable_x64)
    Hj = ad.hessian(rosen, xj, sparsity="detect", check=True)
    x_used = np.asarray(xj, dtype=np.float64)
    rtol = 1e-12 if xj.dtype == np.float64 else 1e-5
    assert type(Hj).__name__ == "BCOO"
    np.testing.assert_allclose(
        np.asarray(Hj.todense()), optimize.rosen_hess(x_used), rtol=rtol, atol=1e-3
    )


def test_const_arguments() -> None:
    def f(x: Any, a: Any) -> Any:
        xp = ad.array_namespace(x)
        return 0.5 * xp.sum((a * x) ** 2) + xp.sum(x[1:] * x[:-1])

    x, a = np.linspace(0.1, 1.0, 5), np.arange(1.0, 6.0)
    H = ad.hessian(f, x, ad.Const(a), sparsity="detect", check=True)
    np.testing.assert_allclose(H.toarray(), np.diag(a**2) + np.eye(5, k=1) + np.eye(5, k=-1))


def test_refusals_say_what_is_supported() -> None:
    # (several arguments and trees: tests/concerns/sparse/test_sparse_hessian_trees.py)
    x = np.ones(4)
    with pytest.raises(ad.UsageError, match="'detect' or a pattern"):
        ad.hessian(rosen, x, sparsity="auto")
    with pytest.raises(ad.UsageError, match="square"):
        ad.hessian(rosen, x, sparsity=np.ones((4, 3), dtype=bool))
    with pytest.raises(ad.UsageError, match=r"shape \(4, 4\)"):
        ad.hessian(rosen, x, sparsity=np.eye(5, dtype=bool))
    with pytest.raises(ad.UsageError, match="check"):
        ad.hessian(rosen, x, sparsity="detect", check="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["tape", "torch"])
def test_refused_inside_a_differentiated_function(backend: str) -> None:
    backend = engine(backend)

    def outer(x: Any) -> Any:
        H = ad.hessian(rosen, x, sparsity="detect")
        return ad.array_namespace(x).sum(x) * float(H.sum())

    with pytest.raises(ad.UsageError, match="no engine differentiates or traces"):
        ad.gradient(outer, np.ones(4), backend=backend)


def test_inside_jax_jit_plain_and_prepared() -> None:
    # one bare array: the products gathered in the trace by jax's sparse_gather (a BCOO)
    jax = pytest.importorskip("jax")
    with jax.enable_x64(True):
        x = jax.numpy.linspace(0.1, 1.0, 5)
        want = np.asarray(jax.hessian(rosen)(x))
        got = jax.jit(lambda v: ad.hessian(rosen, v, sparsity="detect"))(x)
        np.testing.assert_allclose(np.asarray(got.todense()), want, rtol=1e-12)
        prep = ad.prepare(ad.hessian, rosen, x, sparsity="detect")
        got = jax.jit(lambda v: prep(v))(x * 0.5)
        want = np.asarray(jax.hessian(rosen)(x * 0.5))
        np.testing.assert_allclose(np.asarray(got.todense()), want, rtol=1e-12)


def test_refused_under_jax_jit_where_built_on_the_host() -> None:
    jax = pytest.importorskip("jax")
    x = jax.numpy.linspace(0.1, 1.0, 5)
    with pytest.raises(ad.UsageError, match=r"check=False inside"):
        jax.jit(lambda v: ad.hessian(rosen, v, sparsity="detect", check=True).todense())(x)

    def two(a: Any, b: Any) -> Any:
        return rosen(a) * ad.array_namespace(b).sum(b)

    with pytest.raises(ad.UsageError, match=r"jax\.jit"):
        jax.jit(lambda v: ad.hessian(two, v, v * 2.0, sparsity="detect")[0][0].todense())(x)
    prep = ad.prepare(ad.hessian, two, x, x * 2.0, sparsity="detect")
    with pytest.raises(ad.UsageError, match=r"jax\.jit"):
        jax.jit(lambda v: prep(v, v * 2.0)[0][0].todense())(x)


@ad.custom_vjp
def lse(x: Any) -> Any:
    xp = ad.array_namespace(x)
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m)))


def _lse_fwd(x: Any) -> Any:
    y = lse(x)
    return y, (x, y)


def _lse_bwd(res: Any, ct: Any) -> Any:
    x, y = res
    return (ct * ad.array_namespace(x).exp(x - y),)


lse.defvjp(_lse_fwd, _lse_bwd)


@pytest.mark.parametrize("backend", ENGINES)
def test_custom_vjp_goes_reverse_over_reverse(backend: str) -> None:
    backend = engine(backend)

    def f(x: Any) -> Any:  # two logsumexp blocks (a rule without a pushforward) + a chain
        xp = ad.array_namespace(x)
        return lse(x[:3]) + lse(x[3:]) + xp.sum(x[1:] * x[:-1])

    x = np.linspace(0.1, 1.0, 6)
    want = np.eye(6, k=1) + np.eye(6, k=-1)
    for block in (slice(0, 3), slice(3, 6)):  # logsumexp's Hessian: diag(p) - p p^T
        p = np.exp(x[block]) / np.exp(x[block]).sum()
        want[block, block] += np.diag(p) - np.outer(p, p)
    H = ad.hessian(f, x, sparsity="detect", backend=backend)
    np.testing.assert_allclose(H.toarray(), want, rtol=1e-12, atol=1e-15)
