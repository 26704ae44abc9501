"""``has_aux`` with sparse derivatives (issue 22): ``ad.jacobian(..., has_aux=True,
sparsity=...)`` returns ``(sparse jacobian, aux)`` with aux as ``f`` made it, as the dense
operator does; ``ad.sparsity(..., has_aux=True)`` detects ``y``'s pattern; a sparse
``ad.hessian`` ignores the aux outputs after the loss, as the dense one does.

Oracles: central finite differences of ``y`` in float64 numpy, closed forms, and aux
compared with ``f``'s own output computed in numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad

sp = pytest.importorskip("scipy.sparse")

ENGINES = ["tape", "torch", "jax", "autograd"]
# (jax's notice that a str/int aux costs one eager call of f: the behaviour under test)
pytestmark = pytest.mark.filterwarnings("ignore:jax engine. f .* returns non-array outputs")
X = np.random.default_rng(5).uniform(0.5, 1.5, 6)
Y = np.random.default_rng(6).uniform(0.5, 1.5, 6)


def engine(name: str) -> str:
    if name != "tape":
        pytest.importorskip(name)
    return name


def chain(x: Any) -> Any:
    """y_i = x_i x_{i+1} (bidiagonal), aux: an array of x, an int, a string."""
    return x[:-1] * x[1:], {"twice": 2.0 * x, "n": 7, "tag": "chain"}


def chain_jac(x: np.ndarray) -> np.ndarray:
    out = np.zeros((x.size - 1, x.size))
    rows = np.arange(x.size - 1)
    out[rows, rows], out[rows, rows + 1] = x[1:], x[:-1]  # d(x_i x_{i+1})/dx_i, /dx_{i+1}
    return out


def fd(fun: Any, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    cols = [(fun(x + h * e) - fun(x - h * e)) / (2 * h) for e in np.eye(x.size)]
    return np.stack(cols, axis=1)


def to_numpy(v: Any) -> np.ndarray:
    if hasattr(v, "detach"):
        v = v.detach().cpu().numpy()
    out: np.ndarray = np.asarray(v)
    return out


def assert_aux(aux: Any, x: np.ndarray) -> None:
    assert aux["n"] == 7 and aux["tag"] == "chain"
    np.testing.assert_allclose(to_numpy(aux["twice"]), 2.0 * x)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("name", ENGINES)
def test_jacobian_with_aux_returns_the_sparse_matrix_and_aux(name: str, mode: str) -> None:
    jac, aux = ad.jacobian(
        chain, X, has_aux=True, sparsity="detect", mode=mode, backend=engine(name), check=True
    )
    assert isinstance(jac, sp.csr_array)
    np.testing.assert_allclose(jac.toarray(), fd(lambda v: chain(v)[0], X), rtol=1e-7)
    np.testing.assert_allclose(jac.toarray(), chain_jac(X), rtol=1e-12)
    assert_aux(aux, X)
    _, dense_aux = ad.jacobian(chain, X, has_aux=True, backend=name)
    assert dense_aux.keys() == aux.keys()  # (the same aux, as the dense operator returns it)


@pytest.mark.parametrize("name", ENGINES)
def test_several_arguments_tree_output_and_aux(name: str) -> None:
    def g(x: Any, y: Any) -> Any:
        xp = ad.array_namespace(x)
        return {"u": xp.exp(x) * y, "s": xp.sum(x * x)}, ("aux", y[0])

    (jac, aux) = ad.jacobian(g, X, Y, has_aux=True, sparsity="detect", backend=engine(name))
    np.testing.assert_allclose(jac["u"][0].toarray(), np.diag(np.exp(X) * Y), rtol=1e-12)
    np.testing.assert_allclose(jac["u"][1].toarray(), np.diag(np.exp(X)), rtol=1e-12)
    np.testing.assert_allclose(jac["s"][0].toarray(), [2 * X], rtol=1e-12)
    assert jac["s"][1].nnz == 0 and jac["s"][1].shape == (1, 6)
    assert aux[0] == "aux" and float(to_numpy(aux[1])) == Y[0]


@pytest.mark.parametrize("name", ENGINES)
def test_prepared_sparse_jacobian_with_aux(name: str) -> None:
    p = ad.prepare(ad.jacobian, chain, X, has_aux=True, sparsity="detect", backend=engine(name))
    np.testing.assert_array_equal(p.sparsity.toarray(), chain_jac(X) != 0)
    for x in (X, X + 1.0):  # new values: the same coloring, the new numbers and aux
        jac, aux = p(x)
        np.testing.assert_allclose(jac.toarray(), chain_jac(x), rtol=1e-12)
        assert_aux(aux, x)


def test_sparsity_has_aux_detects_y_and_names_it_when_missing() -> None:
    np.testing.assert_array_equal(ad.sparsity(chain, X, has_aux=True).toarray(), chain_jac(X) != 0)
    with pytest.raises(ad.UsageError, match="has_aux=True"):  # aux leaves: names the fix
        ad.sparsity(chain, X)
    with pytest.raises(ad.UsageError, match="has_aux=True"):
        ad.jacobian(chain, X, sparsity="detect")
    with pytest.raises(ad.OutputError, match=r"pair \(y, aux\); got an array of shape \(6,\)"):
        ad.sparsity(lambda x: x * 2, X, has_aux=True)
    with pytest.raises(ad.OutputError, match=r"pair \(y, aux\); got a tuple of length 3"):
        ad.jacobian(lambda x: (x, 1, 2), X, has_aux=True, sparsity="detect")
    with pytest.raises(ad.OutputError, match=r"pair \(y, aux\)"):  # a given pattern: f's run
        ad.jacobian(lambda x: x * 2, X, has_aux=True, sparsity=np.eye(6, dtype=bool))
    with pytest.raises(ad.UsageError, match=r"has_aux='yes'; ad\.sparsity's has_aux is True"):
        ad.sparsity(chain, X, has_aux="yes")  # type: ignore[arg-type]


def rosen_aux(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2), {"r": x[0] - 1.0}


@pytest.mark.parametrize("name", ENGINES)
def test_a_sparse_hessian_ignores_aux_as_the_dense_one(name: str) -> None:
    optimize = pytest.importorskip("scipy.optimize")
    H = ad.hessian(rosen_aux, X, backend=engine(name), sparsity="detect", check=True)
    np.testing.assert_allclose(H.toarray(), optimize.rosen_hess(X), rtol=1e-10)
    as_dict = lambda x: {"loss": rosen_aux(x)[0], "note": "aux"}  # noqa: E731
    H2 = ad.hessian(as_dict, X, backend=name, sparsity="detect")
    np.testing.assert_allclose(H2.toarray(), optimize.rosen_hess(X), rtol=1e-10)
    pattern = ad.sparsity(rosen_aux, X, of="hessian")  # (the loss first, as ad.hessian)
    np.testing.assert_array_equal(pattern.toarray(), optimize.rosen_hess(X) != 0)


def test_hessian_has_no_has_aux_keyword_dense_or_sparse() -> None:
    # (ad.hessian returns no aux: the keyword is refused alike with and without sparsity=)
    with pytest.raises(ad.UsageError, match=r"ad\.hessian takes no keyword has_aux"):
        ad.prepare(ad.hessian, rosen_aux, X, has_aux=True, sparsity="detect")
    with pytest.raises(TypeError, match="has_aux"):
        ad.hessian(rosen_aux, X, has_aux=True, sparsity="detect")  # type: ignore[call-arg]


def test_the_conformance_check_fails_a_wrong_aux() -> None:
    # The harness must say WRONG for a sparse case whose aux differs from f's own: the
    # reference (f's plain output) is taken from ref_fn, the engine runs another aux.
    import dataclasses

    from adswitch_conformance.cases import catalogue
    from adswitch_conformance.runner import WRONG, run_case

    case = next(c for c in catalogue() if c.id == "sparse.aux")
    y_of = case.fn
    assert run_case(case, "tape").outcome != WRONG
    wrong = dataclasses.replace(  # (its own id: the runner keeps references per case)
        case, id="sparse.aux_wrong", ref_fn=lambda x: (y_of(x)[0], {**y_of(x)[1], "n": 4})
    )
    assert run_case(wrong, "tape").outcome == WRONG
