"""Compressed Jacobians with several differentiated arguments and tree outputs (issue 22):
the flattened pattern (detected or given), the dense layout with csr_array blocks, and
the errors. Oracles: central finite differences of the flattened function, and the dense
``ad.jacobian`` (the blocks must match it block for block)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch import trees

sp = pytest.importorskip("scipy.sparse")

MODES = ["forward", "reverse", "auto"]


def fd_flat(f: Any, xs: list[np.ndarray], h: float = 1e-6) -> np.ndarray:
    """Central differences of ``f(*xs)``'s floating leaves, flattened, in every element
    of ``xs`` (columns in argument order, each in C order)."""

    def flat_out(vals: list[np.ndarray]) -> np.ndarray:
        leaves, _ = trees.flatten(f(*vals))
        keep = [np.ravel(v) for v in leaves if np.issubdtype(np.asarray(v).dtype, np.floating)]
        return np.concatenate(keep)

    cols = []
    for a, x in enumerate(xs):
        for j in range(x.size):
            plus, minus = [v.copy() for v in xs], [v.copy() for v in xs]
            plus[a].flat[j] += h
            minus[a].flat[j] -= h
            cols.append((flat_out(plus) - flat_out(minus)) / (2 * h))
    return np.stack(cols, axis=1)


def as_dense(tree: Any) -> list[Any]:
    """The leaves of a Jacobian tree, csr blocks as dense arrays (None kept)."""
    leaves, _ = trees.flatten(tree)
    return [leaf.toarray() if isinstance(leaf, sp.csr_array) else leaf for leaf in leaves]


def two(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x, y)
    return xp.sin(x) * y + xp.concat([y[1:], xp.zeros(1)]) ** 2


def tree_out(p: dict[str, Any], y: Any) -> dict[str, Any]:
    xp = ad.array_namespace(y)
    return {"u": xp.exp(p["a"]) * y[0], "v": (p["a"][:2] * y[1:], xp.sum(p["b"] ** 2)), "k": 1}


X, Y = np.linspace(0.3, 1.2, 4), np.linspace(0.5, 1.5, 4)
A, B = np.linspace(0.2, 0.8, 3), np.array([[0.5, 1.0], [1.5, 2.0]])
P: dict[str, Any] = {"a": A, "b": B, "n": 3}
Y3 = np.array([0.7, 1.1, 1.3])


@pytest.mark.parametrize("mode", MODES)
def test_two_arguments_match_dense_blocks_and_differences(mode: str) -> None:
    jac = ad.jacobian(two, X, Y, sparsity="detect", mode=mode)
    dense = ad.jacobian(two, X, Y)
    assert isinstance(jac, tuple) and len(jac) == 2
    assert all(isinstance(b, sp.csr_array) and b.shape == (4, 4) for b in jac)
    for got, want in zip(jac, dense):
        np.testing.assert_allclose(got.toarray(), want, rtol=1e-12, atol=1e-14)
    full = sp.hstack(list(jac)).toarray()
    np.testing.assert_allclose(full, fd_flat(two, [X, Y]), rtol=1e-6, atol=1e-8)
    assert jac[0].nnz == 4  # (diagonal: the stored entries are the pattern's)


@pytest.mark.parametrize("mode", MODES)
def test_tree_input_and_output_in_the_dense_layout(mode: str) -> None:
    jac = ad.jacobian(tree_out, P, Y3, sparsity="detect", mode=mode, check=True)
    dense = ad.jacobian(tree_out, P, Y3)
    assert jac["k"] is None and jac["v"][1][0]["n"] is None
    assert jac["v"][1][0]["b"].shape == (1, 4) and jac["u"][1].shape == (3, 3)
    for got, want in zip(as_dense(jac), trees.flatten(dense)[0], strict=True):
        if want is None:
            assert got is None
        else:
            np.testing.assert_allclose(got.reshape(np.shape(want)), want, rtol=1e-12)
    pattern = ad.sparsity(tree_out, P, Y3)
    assert pattern.shape == (3 + 2 + 1, 3 + 4 + 3)  # rows u, v0, v1; columns a, b, y
    fd = fd_flat(lambda a, b, y: tree_out({"a": a, "b": b, "n": 3}, y), [A, B, Y3])
    np.testing.assert_array_equal(pattern.toarray(), np.abs(fd) > 1e-8)


def test_sparsity_order_for_several_arguments_is_documented_one() -> None:
    # columns: x then y; rows: the output's elements
    pattern = ad.sparsity(lambda a, b: a * b[0], np.ones(2), np.ones(3)).toarray()
    assert pattern.astype(int).tolist() == [[1, 0, 1, 0, 0], [0, 1, 1, 0, 0]]


def test_user_pattern_is_the_whole_flattened_matrix() -> None:
    pattern = np.abs(fd_flat(two, [X, Y])) > 1e-8
    jac = ad.jacobian(two, X, Y, sparsity=pattern)
    np.testing.assert_allclose(sp.hstack(list(jac)).toarray(), fd_flat(two, [X, Y]), atol=1e-7)


def test_const_and_float_arguments_and_ties() -> None:
    def f(x: Any, w: Any, s: Any) -> Any:
        return ad.array_namespace(x).sin(x) * w * s

    w = np.array([1.0, 2.0, 3.0])
    jac = ad.jacobian(f, X[:3], ad.Const(w), 0.7, sparsity="detect")
    assert jac[1] is None and jac[2].shape == (3, 1)
    np.testing.assert_allclose(jac[2].toarray()[:, 0], np.sin(X[:3]) * w, rtol=1e-12)
    tied = ad.jacobian(lambda a, b: a * b, X, X, sparsity="detect")
    dense = ad.jacobian(lambda a, b: a * b, X, X)
    assert tied[1] is None and dense[1] is None  # (a tied array: at its first place)
    np.testing.assert_allclose(tied[0].toarray(), dense[0], rtol=1e-12)


def test_one_argument_still_gives_a_bare_csr_array() -> None:
    jac = ad.jacobian(lambda x: x * x, X, sparsity="detect")
    assert isinstance(jac, sp.csr_array)
    np.testing.assert_allclose(jac.toarray(), np.diag(2 * X))


def test_torch_arguments() -> None:
    torch = pytest.importorskip("torch")
    jac = ad.jacobian(two, torch.tensor(X), torch.tensor(Y), sparsity="detect")
    dense = np.hstack([block.to_dense().numpy() for block in jac])  # (torch's sparse CSR)
    np.testing.assert_allclose(dense, fd_flat(two, [X, Y]), atol=1e-7)


def test_wrong_pattern_shapes_name_the_expected_shape() -> None:
    with pytest.raises(ad.UsageError, match=r"\(out.size, 8\)"):
        ad.jacobian(two, X, Y, sparsity=np.ones((4, 4), dtype=bool))
    for mode in ("forward", "reverse"):
        with pytest.raises(ad.UsageError, match=r"shape \(4, 8\)"):
            ad.jacobian(two, X, Y, sparsity=np.ones((5, 8), dtype=bool), mode=mode)


def test_check_catches_a_wrong_pattern_of_several_arguments() -> None:
    wrong = np.hstack([np.eye(4), np.eye(4)]).astype(bool)  # misses y's shifted square
    with pytest.raises(ad.UsageError, match="misses 3 nonzero"):
        ad.jacobian(two, X, Y, sparsity=wrong, check=True)


def test_a_value_branch_is_refused_with_its_fix() -> None:  # (has_aux: test_sparse_aux.py)
    def branchy(x: Any, y: Any) -> Any:
        return x * y if x[0] > 0 else y

    with pytest.raises(ad.UsageError, match="local=True"):
        ad.sparsity(branchy, X, Y)
    local = ad.sparsity(branchy, X, Y, local=True)
    np.testing.assert_array_equal(local.toarray(), np.abs(fd_flat(branchy, [X, Y])) > 1e-8)


def test_the_conformance_check_fails_a_dropped_entry() -> None:
    # The sparse family's harness must be able to say WRONG: a pattern missing nonzeros,
    # without check=True, drops them, and the finite-difference reference sees it.
    from adswitch_conformance.cases import catalogue
    from adswitch_conformance.checks_sparse import Sparse
    from adswitch_conformance.runner import WRONG, run_case

    case = next(c for c in catalogue() if c.id == "sparse.wrong_pattern")
    unchecked = dataclasses.replace(
        case, raises=None, sparse=Sparse(sparsity=case.sparse.sparsity, check=False)
    )
    assert run_case(unchecked, "tape").outcome == WRONG


def test_the_conformance_brusselator_is_the_example_one() -> None:
    from adswitch_conformance.cases_sparse import _brusselator

    from adswitch.sparse.examples import brusselator

    u = np.random.default_rng(7).uniform(0, 1, 2 * 5 * 5)
    np.testing.assert_allclose(_brusselator(u, 5), brusselator(u, 5), rtol=1e-15)
