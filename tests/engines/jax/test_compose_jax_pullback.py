"""``ad.vjp``'s pullback crossing jax's transforms (issue 23): returned from ``jax.jit``
and ``jax.vmap`` (its leaves are the residuals, as for ``jax.vjp``'s), called outside,
inside another ``jit`` and inside ``vmap``; a pullback made outside passed into ``jit``.
Oracle: ``jax.vjp`` of the same function under the same transform."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax: Any = pytest.importorskip("jax")
jnp: Any = pytest.importorskip("jax.numpy")

import adswitch as ad  # noqa: E402
from adswitch.errors import UnsupportedError  # noqa: E402

X = jnp.array([0.5, -0.25, 0.75])
V = jnp.array([1.0, -2.0, 0.5])
V2 = jnp.array([0.3, 0.4, -0.5])
XS = jnp.stack([X, X * 0.5 + 0.1])
VS = jnp.stack([V, V2])
TOL: dict[str, Any] = dict(rtol=2e-5, atol=2e-6)  # float32


def vec(w: Any) -> Any:
    return jnp.sin(w) * jnp.sum(w)


def pair(w: Any, b: Any) -> Any:
    return {"y": jnp.tanh(w * b), "s": jnp.sum(w**2) * b}


def oracle(v: Any, x: Any = X) -> Any:
    return jax.vjp(vec, x)[1](v)[0]


def test_pullback_returned_from_jit_is_called_outside() -> None:
    out, pullback = jax.jit(lambda x: ad.vjp(vec, x, backend="jax"))(X)
    np.testing.assert_allclose(out, vec(X), **TOL)
    # callable many times, with different cotangents
    np.testing.assert_allclose(pullback(V)[0], oracle(V), **TOL)
    np.testing.assert_allclose(pullback(V2)[0], oracle(V2), **TOL)


def test_pullback_leaves_are_the_residual_arrays() -> None:
    _, pullback = jax.jit(lambda x: ad.vjp(vec, x, backend="jax"))(X)
    leaves = jax.tree_util.tree_leaves(pullback)
    assert leaves and all(isinstance(leaf, jax.Array) for leaf in leaves)
    own = jax.tree_util.tree_leaves(jax.vjp(vec, X)[1])
    assert sorted(leaf.shape for leaf in leaves) == sorted(leaf.shape for leaf in own)


def test_pullback_from_jit_called_inside_another_jit() -> None:
    _, pullback = jax.jit(lambda x: ad.vjp(vec, x, backend="jax"))(X)
    apply = jax.jit(lambda p, v: p(v)[0])
    np.testing.assert_allclose(apply(pullback, V), oracle(V), **TOL)
    np.testing.assert_allclose(apply(pullback, V2), oracle(V2), **TOL)


@pytest.mark.parametrize("kind", ["jax", "numpy"])
def test_pullback_made_outside_passed_into_jit(kind: str) -> None:
    x = X if kind == "jax" else np.asarray(X)
    _, pullback = ad.vjp(vec, x, backend="jax")
    apply = jax.jit(lambda p, v: p(v)[0])
    np.testing.assert_allclose(apply(pullback, V), oracle(V), **TOL)
    np.testing.assert_allclose(apply(pullback, V2), oracle(V2), **TOL)


def test_trees_const_and_aux_through_jit() -> None:
    b = jnp.asarray(0.7)

    def step(w: Any) -> Any:
        return ad.vjp(lambda w, b: (pair(w, b), w[0]), w, ad.Const(b), has_aux=True, backend="jax")

    out, pullback, aux = jax.jit(step)(X)
    ct = {"y": V, "s": jnp.asarray(2.0)}
    grads = pullback(ct)
    want = jax.vjp(lambda w: pair(w, b), X)[1](ct)[0]
    assert grads[1] is None  # Const
    np.testing.assert_allclose(grads[0], want, **TOL)
    np.testing.assert_allclose(out["y"], pair(X, b)["y"], **TOL)
    np.testing.assert_allclose(aux, X[0], **TOL)


def test_pullback_returned_from_vmap_called_inside_vmap() -> None:
    _, pullback = jax.vmap(lambda x: ad.vjp(vec, x, backend="jax"))(XS)
    _, own = jax.vmap(lambda x: jax.vjp(vec, x))(XS)
    got = jax.vmap(lambda p, v: p(v)[0])(pullback, VS)
    want = jax.vmap(lambda p, v: p(v)[0])(own, VS)
    np.testing.assert_allclose(got, want, **TOL)
    np.testing.assert_allclose(got[1], oracle(V2, XS[1]), **TOL)


def test_pullback_from_vmap_called_outside_vmap_is_refused() -> None:
    _, pullback = jax.vmap(lambda x: ad.vjp(vec, x, backend="jax"))(XS)
    with pytest.raises(UnsupportedError, match=r"jax\.vmap"):
        pullback(V)


def test_jit_of_vjp_then_grad_of_the_pullback_result() -> None:
    # jax differentiates through the pullback's result (a vector-Hessian product)
    def through(x: Any) -> Any:
        return jnp.sum(ad.vjp(vec, x, backend="jax")[1](V)[0] ** 2)

    def own(x: Any) -> Any:
        return jnp.sum(jax.vjp(vec, x)[1](V)[0] ** 2)

    np.testing.assert_allclose(jax.jit(jax.grad(through))(X), jax.grad(own)(X), **TOL)
