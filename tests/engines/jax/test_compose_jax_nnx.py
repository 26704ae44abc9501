"""adswitch inside ``flax.nnx.jit`` (issue 23): the gradient of an ``nnx.Module`` argument,
computed inside the jitted function, is what ``nnx.grad`` gives (oracle), as a module of
gradients like the argument, plain and with a training step applied inside."""

from __future__ import annotations

from typing import Any

import pytest

import adswitch as ad

jax = pytest.importorskip("jax")
nnx = pytest.importorskip("flax.nnx")
jnp = jax.numpy


class _Model(nnx.Module):  # type: ignore[name-defined,misc]
    def __init__(self, rngs: Any) -> None:
        self.lin = nnx.Linear(3, 2, rngs=rngs)

    def __call__(self, x: Any) -> Any:
        return jnp.tanh(self.lin(x))


def _loss(model: Any, x: Any) -> Any:
    return jnp.sum(model(x) ** 2)


X = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)


def _close(a: Any, b: Any) -> bool:
    return all(jax.tree.leaves(jax.tree.map(lambda u, v: bool(jnp.allclose(u, v)), a, b)))


def test_gradient_of_a_module_inside_nnx_jit() -> None:
    model = _Model(nnx.Rngs(0))

    @nnx.jit  # type: ignore[untyped-decorator]
    def grads(model: Any, x: Any) -> Any:
        return ad.gradient(_loss, model, ad.Const(x), backend="jax")[0]

    got = grads(model, X)
    assert isinstance(got, _Model)
    assert _close(nnx.state(got), nnx.grad(_loss)(model, X))


def test_training_step_inside_nnx_jit() -> None:
    ours, theirs = _Model(nnx.Rngs(1)), _Model(nnx.Rngs(1))

    @nnx.jit  # type: ignore[untyped-decorator]
    def step(model: Any, x: Any) -> Any:
        g = ad.gradient(_loss, model, ad.Const(x), backend="jax")[0]
        nnx.update(model, jax.tree.map(lambda p, d: p - 0.1 * d, nnx.state(model), nnx.state(g)))
        return _loss(model, x)

    @nnx.jit  # type: ignore[untyped-decorator]
    def reference(model: Any, x: Any) -> Any:
        g = nnx.grad(_loss)(model, x)
        nnx.update(model, jax.tree.map(lambda p, d: p - 0.1 * d, nnx.state(model), g))
        return _loss(model, x)

    for _ in range(3):
        assert jnp.allclose(step(ours, X), reference(theirs, X))
    assert _close(nnx.state(ours), nnx.state(theirs))
