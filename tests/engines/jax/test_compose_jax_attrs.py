"""A tracer reached through an object's attribute (``model.w = w`` set inside
``jax.jit``, the call's own leaves concrete) inside jax's transforms (issue 23): the
call is staged inline in the enclosing trace -- jax's own answer, no stale compiled
constant, no nested program of adswitch's own -- and a tracer left on the object after
the transformation is a clear ``UnsupportedError``. Oracle: ``jax.grad`` /
``jax.hessian`` of a fresh object holding the same ``w``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax: Any = pytest.importorskip("jax")
jnp: Any = pytest.importorskip("jax.numpy")

import adswitch as ad  # noqa: E402
from adswitch.errors import UnsupportedError  # noqa: E402

X = jnp.array([0.5, -0.25, 0.75])
WS = jnp.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
TOL: dict[str, Any] = dict(rtol=2e-5, atol=2e-6)  # float32


class Model:
    def __init__(self, w: Any) -> None:
        self.w = w

    def loss(self, x: Any) -> Any:
        return jnp.sum(jnp.tanh(self.w * x) ** 2) + jnp.sum(self.w * x**3)


class Outer:
    def __init__(self, model: Model) -> None:
        self.model = model

    def loss(self, x: Any) -> Any:
        return 2.0 * self.model.loss(x)


def own_grad(w: Any) -> Any:
    return jax.grad(Model(w).loss)(X)


def _nested_jits(jaxpr: Any) -> int:
    return sum(eqn.primitive.name in ("pjit", "jit") for eqn in jaxpr.eqns)


@pytest.mark.parametrize("kind", ["jax", "numpy"])
def test_attribute_tracer_in_jit_gives_jax_answer_each_time(kind: str) -> None:
    model = Model(jnp.ones(3))
    x = X if kind == "jax" else np.asarray(X)

    def step(w: Any) -> Any:
        model.w = w
        return ad.gradient(model.loss, x, backend="jax")[0]

    jitted = jax.jit(step)
    for w in WS:  # a second w: no constant of the first trace baked in
        np.testing.assert_allclose(jitted(w), own_grad(w), **TOL)
    model.w = WS[0]
    np.testing.assert_allclose(ad.gradient(model.loss, X, backend="jax")[0], own_grad(WS[0]))


def test_attribute_of_attribute_in_nested_jit() -> None:
    outer = Outer(Model(jnp.ones(3)))

    def step(w: Any) -> Any:
        outer.model.w = w
        return ad.gradient(outer.loss, X, backend="jax")[0]

    jitted = jax.jit(lambda w: jax.jit(step)(w) * 3.0)
    for w in WS:
        np.testing.assert_allclose(jitted(w), 6.0 * own_grad(w), **TOL)


def test_attribute_tracer_under_vmap_and_grad() -> None:
    model = Model(jnp.ones(3))

    def step(w: Any) -> Any:
        model.w = w
        return ad.gradient(model.loss, X, backend="jax")[0]

    want = jax.vmap(own_grad)(WS)
    np.testing.assert_allclose(jax.jit(jax.vmap(step))(WS), want, **TOL)
    got = jax.jit(jax.grad(lambda w: jnp.sum(step(w) ** 2)))(WS[1])
    np.testing.assert_allclose(got, jax.grad(lambda w: jnp.sum(own_grad(w) ** 2))(WS[1]), **TOL)


def test_attribute_tracer_hessian_and_prepared() -> None:
    model = Model(WS[0])
    prepared = ad.prepare(ad.gradient, model.loss, X, backend="jax")
    prepared(X)  # (its program compiled at top level, on the concrete w)

    def hess(w: Any) -> Any:
        model.w = w
        return ad.hessian(model.loss, X, backend="jax")[0][0]

    def grad(w: Any) -> Any:
        model.w = w
        return prepared(X)[0]

    np.testing.assert_allclose(
        jax.jit(hess)(WS[1]), jax.hessian(Model(WS[1]).loss)(X), rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(jax.jit(grad)(WS[1]), own_grad(WS[1]), **TOL)
    # staged inline: no program of adswitch's own nested in the caller's
    assert _nested_jits(jax.make_jaxpr(grad)(WS[1]).jaxpr) == 0
    assert _nested_jits(jax.make_jaxpr(hess)(WS[1]).jaxpr) == 0


def test_tracer_left_on_the_object_is_a_clear_error() -> None:
    model = Model(jnp.ones(3))

    def step(w: Any) -> Any:
        model.w = w  # and never set back: a tracer stays on the object
        return ad.gradient(model.loss, X, backend="jax")[0]

    jax.jit(step)(WS[0])
    with pytest.raises(UnsupportedError, match="set the attribute back"):
        ad.gradient(model.loss, X, backend="jax")
