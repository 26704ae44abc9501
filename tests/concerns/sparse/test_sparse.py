"""Sparse Jacobians (issue 22, first slice): detection, coloring, compressed evaluation.
Oracles: the dense Jacobian's nonzeros, central finite differences, closed forms."""

from __future__ import annotations

import numpy as np
import pytest

import adswitch as ad
from adswitch.sparse.coloring import (
    color_columns,
    color_rows,
    n_colors,
    structurally_symmetric,
)
from adswitch.sparse.examples import brusselator

sp = pytest.importorskip("scipy.sparse")


def fd_jacobian(f, x, h=1e-6):
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e.flat[j] = h
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))).reshape(-1) / (2 * h))
    return np.stack(cols, axis=1)


def tridiag(x):
    xp = ad.array_namespace(x)
    left = xp.concat([xp.zeros(1), x[:-1]])
    right = xp.concat([x[1:], xp.zeros(1)])
    return xp.sin(x) * 2.0 - left * x + right**2


def arrow_col(x):  # diagonal + a dense last column
    xp = ad.array_namespace(x)
    return xp.exp(x) + xp.sum(x[-1:] ** 3) * x[-1]


def arrow_row(x):  # diagonal + a dense last row
    xp = ad.array_namespace(x)
    return xp.concat([x[:-1] ** 2, xp.reshape(xp.sum(xp.sin(x)), (1,))])


def test_patterns_match_dense_nonzeros_and_colors_are_optimal():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, 9)
    for f, cols, rows in ((tridiag, 3, 3), (arrow_col, 2, 9), (arrow_row, 9, 2)):
        pattern = ad.sparsity(f, x)
        dense = fd_jacobian(f, x)
        assert np.array_equal(pattern.toarray(), np.abs(dense) > 1e-8), f.__name__
        assert n_colors(color_columns(pattern)) == cols
        assert n_colors(color_rows(pattern)) == rows


def test_a_symmetric_patterns_rows_take_its_columns_colors():
    # (auto mode colors one side only when the pattern equals its transpose: the two
    # colorings are then the same greedy on the same conflicts)
    n = 6
    pattern = ad.sparsity(brusselator, np.ones(2 * n * n), ad.Const(n))
    assert structurally_symmetric(pattern)
    assert np.array_equal(color_rows(pattern), color_columns(pattern))
    x = np.random.default_rng(0).uniform(0.5, 1.5, 9)
    assert structurally_symmetric(ad.sparsity(tridiag, x))
    assert not structurally_symmetric(ad.sparsity(arrow_col, x))
    assert not structurally_symmetric(sp.csr_array(np.ones((2, 3), dtype=bool)))
    # (duplicates and unsorted columns in a user's pattern: the structure counts)
    messy = sp.csr_array(
        (np.ones(4, dtype=bool), np.array([1, 0, 0, 1]), np.array([0, 2, 4])), shape=(2, 2)
    )
    assert structurally_symmetric(messy)
    prep = ad.prepare(ad.jacobian, arrow_col, x, sparsity="detect")
    assert n_colors(prep.colors) == 2  # (the columns: the rows need 9)


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
@pytest.mark.parametrize("f", [tridiag, arrow_col, arrow_row])
def test_sparse_jacobian_against_finite_differences(f, mode):
    x = np.random.default_rng(1).uniform(0.5, 1.5, 7)
    jac = ad.jacobian(f, x, sparsity="detect", mode=mode)
    assert isinstance(jac, sp.csr_array)
    np.testing.assert_allclose(jac.toarray(), fd_jacobian(f, x), rtol=1e-6, atol=1e-7)


def test_brusselator_pattern_colors_and_values():
    n = 32
    pattern = ad.sparsity(brusselator, np.ones(2 * n * n), ad.Const(n))
    assert pattern.shape == (2048, 2048) and pattern.nnz == 12288
    assert n_colors(color_columns(pattern)) <= 8  # (asdex: 8)
    n = 4
    u = np.random.default_rng(2).uniform(0, 1, 2 * n * n)
    prep = ad.prepare(ad.jacobian, brusselator, u, ad.Const(n), sparsity="detect")
    dense = fd_jacobian(lambda v: brusselator(v, n), u)
    np.testing.assert_allclose(prep(u, ad.Const(n)).toarray(), dense, rtol=1e-6, atol=1e-5)
    assert np.array_equal(prep.sparsity.toarray(), np.abs(dense) > 1e-6)
    assert prep.colors.shape == (32,)


def test_value_dependent_branch_refused_globally_works_locally():
    def f(x):
        xp = ad.array_namespace(x)
        return x * x if x[0] > 0 else xp.roll(x, 1)

    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ad.AdswitchError, match="local=True"):
        ad.sparsity(f, x)
    assert np.array_equal(ad.sparsity(f, x, local=True).toarray(), np.eye(3, dtype=bool))


def test_user_pattern_and_check_catches_a_wrong_one():
    x = np.random.default_rng(3).uniform(0.5, 1.5, 6)
    good = ad.sparsity(tridiag, x)
    np.testing.assert_allclose(
        ad.jacobian(tridiag, x, sparsity=good).toarray(),
        fd_jacobian(tridiag, x),
        rtol=1e-6,
        atol=1e-7,
    )
    wrong = sp.eye_array(6, format="csr")
    with pytest.raises(ad.AdswitchError, match="misses"):
        ad.jacobian(tridiag, x, sparsity=wrong, check=True)


def test_empty_row_and_dense_row():
    def f(x):
        xp = ad.array_namespace(x)
        return xp.stack([xp.sum(x * x), 0.0 * xp.sign(x[0]), x[1] * 3.0])

    x = np.array([1.0, 2.0, 3.0])
    pattern = ad.sparsity(f, x).toarray()
    assert pattern.tolist() == [[True] * 3, [False] * 3, [False, True, False]]
    jac = ad.jacobian(f, x, sparsity="detect", check=True).toarray()
    np.testing.assert_allclose(jac, fd_jacobian(f, x), atol=1e-6)


def test_hessian_pattern_chained_rosenbrock():
    def rosen(x):
        xp = ad.array_namespace(x)
        return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    pattern = ad.sparsity(rosen, np.ones(8), of="hessian").toarray()
    band = np.abs(np.subtract.outer(np.arange(8), np.arange(8))) <= 1  # closed form
    assert np.array_equal(pattern, band)


def test_torch_inputs_give_a_torch_sparse_tensor():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(4).uniform(0.5, 1.5, 5)
    jac = ad.jacobian(tridiag, torch.tensor(x), sparsity="detect")
    assert jac.layout == torch.sparse_csr
    dense = jac.to_dense().numpy()
    np.testing.assert_allclose(dense, fd_jacobian(tridiag, x), rtol=1e-6, atol=1e-7)


def test_scipy_least_squares_and_solve_ivp_accept_the_result():
    from scipy.integrate import solve_ivp
    from scipy.optimize import least_squares

    n = 4
    u0 = np.random.default_rng(5).uniform(0, 1, 2 * n * n)
    prep = ad.prepare(ad.jacobian, brusselator, u0, ad.Const(n), sparsity="detect")
    sol = solve_ivp(
        lambda t, u: brusselator(u, n),
        (0.0, 0.01),
        u0,
        method="BDF",
        jac=lambda t, u: prep(u, ad.Const(n)),
    )
    assert sol.success and sol.njev >= 1
    target = np.linspace(1.0, 2.0, 7)
    res = least_squares(
        lambda v: tridiag(v) - target,
        np.ones(7),
        jac=lambda v: ad.jacobian(tridiag, v, sparsity="detect"),
    )
    assert res.success and np.max(np.abs(tridiag(res.x) - target)) < 1e-8


@pytest.mark.parametrize("engine, side", [("tape", "forward"), ("torch", "reverse")])
def test_auto_takes_the_cheaper_side_on_a_tie(engine, side):
    # tridiagonal: 3 column and 3 row colors; torch's forward mode is a double backward
    if engine != "tape":
        pytest.importorskip(engine)
    x = np.random.default_rng(6).uniform(0.5, 1.5, 6)
    jac = ad.prepare(ad.jacobian, tridiag, x, sparsity="detect", backend=engine)
    assert jac._kwargs["sparsity"].mode == side
    np.testing.assert_allclose(jac(x).toarray(), fd_jacobian(tridiag, x), rtol=1e-6, atol=1e-7)
