"""jax pytrees as arguments: classes registered with ``jax.tree_util``, equinox modules and
flax ``nnx`` modules are differentiated like jax differentiates them, static data kept.

Oracles: ``jax.grad``, ``eqx.filter_grad``, ``nnx.grad`` (and an ``nnx.Optimizer`` step
driven by ``nnx.grad``'s gradient).

The walker learns jax's pytree nodes from :meth:`JaxBackend.tree_node`, which the front
end asks (``Backend.tree_node``) for every type it does not know.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
eqx = pytest.importorskip("equinox")
nnx = pytest.importorskip("flax.nnx")
optax = pytest.importorskip("optax")

from adswitch_jax.plugin import JaxBackend  # noqa: E402
from adswitch_jax.primitives import engine as _engine  # noqa: E402

import adswitch as ad  # noqa: E402
from adswitch.errors import ActivityError, MutationError, UnsupportedError  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore::adswitch_jax.notices.JaxFallbackWarning",
    "ignore::DeprecationWarning",  # flax's own notices about its API
)


def assert_trees_close(got: Any, want: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        if isinstance(b, jax.Array) and jnp.issubdtype(b.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        if isinstance(b, (jax.Array, np.ndarray)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)
        else:  # functions and the like, passed through
            assert a is b


# -- classes registered with jax.tree_util ------------------------------------------------


class Scaled:
    """A pytree with a differentiable child and static aux data (a label, an exponent)."""

    def __init__(self, w: Any, label: str, power: int) -> None:
        self.w, self.label, self.power = w, label, power


jax.tree_util.register_pytree_node(
    Scaled,
    lambda s: ((s.w,), (s.label, s.power)),
    lambda aux, children: Scaled(children[0], *aux),
)


def scaled_loss(s: Scaled, x: Any) -> Any:
    xp = ad.array_namespace(s.w, x)
    return xp.sum(xp.sin(s.w) ** s.power * x)


@pytest.mark.parametrize("kind", ["jax", "numpy"])
def test_registered_pytree_is_differentiated_with_aux_kept(kind: str) -> None:
    w, x = np.linspace(-1.0, 1.0, 4), np.linspace(0.5, 2.0, 4)
    if kind == "jax":
        w, x = jnp.asarray(w), jnp.asarray(x)
    s = Scaled(w, "layer", 3)
    gs, gx = ad.gradient(scaled_loss, s, x, backend="jax")
    want_s, want_x = jax.grad(scaled_loss, argnums=(0, 1))(
        Scaled(jnp.asarray(w), "layer", 3), jnp.asarray(x)
    )
    assert type(gs) is Scaled and (gs.label, gs.power) == ("layer", 3)
    assert type(gs.w) is type(w)
    np.testing.assert_allclose(np.asarray(gs.w), want_s.w, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gx), want_x, rtol=1e-6)


def test_registered_pytree_alone_is_not_an_activity_error() -> None:
    s = Scaled(jnp.array([0.3, -0.2]), "only", 2)
    (g,) = ad.gradient(lambda s: scaled_loss(s, 1.0), s, backend="jax")
    np.testing.assert_allclose(g.w, jax.grad(lambda s: scaled_loss(s, 1.0))(s).w, rtol=1e-6)


@jax.tree_util.register_dataclass
@dataclass
class Affine:
    """A jax-registered dataclass: ``scale`` is a child, ``name`` static metadata."""

    scale: Any
    name: str = field(default="affine", metadata={"static": True})


def test_registered_dataclass_keeps_its_static_field_out_of_the_children() -> None:
    a = Affine(jnp.array([1.0, 2.0]), "mine")
    (g,) = ad.gradient(lambda a: jnp.sum(a.scale**2), a, backend="jax")
    assert type(g) is Affine and g.name == "mine"  # the walker's dataclass rule gives None
    np.testing.assert_allclose(g.scale, [2.0, 4.0])


def test_key_paths_follow_jax_keys() -> None:
    with pytest.raises(UnsupportedError, match=r"args\[0\]\.scale"):
        ad.gradient(lambda a: jnp.sum(jnp.abs(a.scale)), Affine(jnp.ones(2, complex), "c"))
    with pytest.raises(UnsupportedError, match=r"args\[0\]\[0\]"):  # no keys registered
        ad.gradient(lambda s: jnp.sum(jnp.abs(s.w)), Scaled(jnp.ones(2, complex), "c", 1))


class UnregisteredScaled(Scaled):
    """A subclass jax has no registration for: to jax it is a leaf."""


def test_unregistered_subclass_of_a_registered_class_is_a_clear_error() -> None:
    s = UnregisteredScaled(jnp.ones(2), "sub", 1)
    with pytest.raises(ActivityError, match="register_pytree_node"):
        ad.gradient(scaled_loss, s, jnp.ones(2), backend="jax")


def test_repeat_calls_with_new_objects_reuse_one_program() -> None:
    _engine.reset()
    for scale in (1.0, 2.0, 3.0):
        ad.gradient(scaled_loss, Scaled(scale * jnp.ones(3), "a", 2), jnp.ones(3), backend="jax")
    assert len(_engine.CACHE) == 1
    (entry,) = [entry for _, entry in _engine.CACHE.items()]
    assert entry.trace.count == 1
    ad.gradient(scaled_loss, Scaled(jnp.ones(3), "a", 3), jnp.ones(3), backend="jax")
    assert len(_engine.CACHE) == 2  # other aux data: another program


# -- equinox ---------------------------------------------------------------------------


def mlp_loss(model: Any, x: Any) -> Any:
    return jnp.sum(jnp.tanh(model(x)) ** 2)


def test_equinox_gradient_is_the_module_filter_grad_gives() -> None:
    model = eqx.nn.MLP(3, 2, 5, 2, key=jax.random.PRNGKey(0))  # activation fields, static ints
    x = jnp.array([0.3, -1.2, 0.8])
    grads, _ = ad.gradient(mlp_loss, model, x, backend="jax")
    want = eqx.filter_grad(mlp_loss)(model, x)
    assert type(grads) is type(model)
    assert grads.layers[0].in_features == 3 and grads.depth == 2  # static fields kept
    assert_trees_close(grads, want)

    def step(g: Any) -> Any:
        return eqx.apply_updates(model, jax.tree_util.tree_map(lambda leaf: -0.1 * leaf, g))

    assert_trees_close(step(grads), step(want))


class Counted(eqx.Module):
    """An equinox module with an integer array and a static field next to its weight."""

    weight: Any
    steps: Any
    tag: str = eqx.field(static=True)

    def __call__(self, x: Any) -> Any:
        return jnp.sum(self.weight * x) * self.steps


def test_equinox_integer_and_static_fields() -> None:
    m = Counted(jnp.array([1.0, -2.0]), jnp.array(3), "counted")
    x = jnp.array([0.5, 4.0])
    (g,) = ad.gradient(lambda m: m(x), m, backend="jax")
    want = eqx.filter_grad(lambda m: m(x))(m)
    assert g.steps is None and want.steps is None and g.tag == "counted"
    np.testing.assert_allclose(g.weight, want.weight)
    assert eqx.apply_updates(m, g).tag == "counted"


def test_equinox_module_as_duplicated_with_numpy_shadow() -> None:
    m = Counted(np.array([1.0, -2.0]), np.array(3), "np")
    x = np.array([0.5, 4.0])
    shadow = ad.Duplicated(m)
    (g,) = ad.gradient(lambda m: m(x), shadow, backend="jax")
    assert g is shadow.dval and type(g) is Counted and g.tag == "np"
    np.testing.assert_allclose(g.weight, 3 * x)


# -- flax nnx --------------------------------------------------------------------------


def linear_loss(model: Any, x: Any) -> Any:
    return jnp.sum(model(x) ** 2)


def params_of(model_or_state: Any) -> Any:
    return nnx.as_pure(nnx.state(model_or_state, nnx.Param))


def test_nnx_module_gradient_matches_nnx_grad() -> None:
    model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    x = jnp.array([[0.2, -0.4, 1.0], [1.5, 0.1, -0.3]])
    grads, _ = ad.gradient(linear_loss, model, x, backend="jax")
    assert type(grads) is nnx.Linear and grads.in_features == 3
    assert_trees_close(params_of(grads), params_of(nnx.grad(linear_loss)(model, x)))


class Block(nnx.Module):
    """Parameters next to non-differentiable state: an Rngs (uint32 count, key array)."""

    def __init__(self, rngs: Any) -> None:
        self.dense = nnx.Linear(3, 4, rngs=rngs)
        self.out = nnx.Linear(4, 1, rngs=rngs)
        self.rngs = rngs
        self.name = "block"

    def __call__(self, x: Any) -> Any:
        return self.out(nnx.relu(self.dense(x)))


def test_nnx_optimizer_step_with_adswitch_gradient() -> None:
    x = jnp.array([[0.2, -0.4, 1.0], [1.5, 0.1, -0.3]])
    ours, theirs = Block(nnx.Rngs(1)), Block(nnx.Rngs(1))
    opt_ours = nnx.Optimizer(ours, optax.adam(1e-2), wrt=nnx.Param)
    opt_theirs = nnx.Optimizer(theirs, optax.adam(1e-2), wrt=nnx.Param)
    for _ in range(3):
        grads, _ = ad.gradient(linear_loss, ours, x, backend="jax")
        assert grads.rngs.default.count.get_value() is None  # integer state: no gradient
        opt_ours.update(ours, grads)
        opt_theirs.update(theirs, nnx.grad(linear_loss)(theirs, x))
    assert_trees_close(params_of(ours), params_of(theirs))


class Normed(nnx.Module):
    """Writes into its Variables when called: BatchNorm statistics, dropout's Rngs counter."""

    def __init__(self, rngs: Any, dropout: float = 0.0) -> None:
        self.dense = nnx.Linear(3, 2, rngs=rngs)
        self.norm = nnx.BatchNorm(2, rngs=rngs)
        self.drop = nnx.Dropout(dropout, rngs=rngs)

    def __call__(self, x: Any) -> Any:
        return self.drop(self.norm(self.dense(x)))


X3 = jnp.array([[0.2, -0.4, 1.0], [1.5, 0.1, -0.3], [0.0, 1.0, 2.0]])


@pytest.mark.parametrize("entry", ["gradient", "withgradient"])
@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_nnx_writes_into_variables_are_refused_not_lost(entry: str, dropout: float) -> None:
    model = Normed(nnx.Rngs(0), dropout)
    before = jax.tree_util.tree_leaves(nnx.state(model))
    with pytest.raises(MutationError, match=r"nnx\.update\(model, state\)"):
        getattr(ad, entry)(linear_loss, model, X3, backend="jax")
    after = jax.tree_util.tree_leaves(nnx.state(model))
    assert all(a is b for a, b in zip(after, before))  # the caller's module as it was


def test_nnx_state_returned_and_put_back_matches_nnx_grad() -> None:
    ours, theirs = Normed(nnx.Rngs(0), 0.5), Normed(nnx.Rngs(0), 0.5)

    def with_state(m: Any, x: Any) -> Any:
        return linear_loss(m, x), nnx.state(m, nnx.Not(nnx.Param))

    for _ in range(2):  # the dropout mask must change between steps, as under nnx.grad
        (_, state), (grads, _) = ad.withgradient(with_state, ours, X3, backend="jax")
        nnx.update(ours, state)
        want = nnx.grad(linear_loss)(theirs, X3)  # updates theirs' statistics in place
        assert_trees_close(params_of(grads), params_of(want), rtol=1e-4, atol=1e-5)
        assert_trees_close(nnx.state(ours), nnx.state(theirs), rtol=1e-5, atol=1e-6)


class GraphOnly(nnx.Module, pytree=False):
    def __init__(self, rngs: Any) -> None:
        self.dense = nnx.Linear(3, 2, rngs=rngs)

    def __call__(self, x: Any) -> Any:
        return self.dense(x)


def test_nnx_graph_module_error_names_split_and_merge_which_work() -> None:
    model = GraphOnly(nnx.Rngs(0))
    x = jnp.array([0.5, -1.0, 2.0])
    with pytest.raises(ActivityError, match=r"nnx\.split\(model\)") as caught:
        ad.gradient(linear_loss, model, x, backend="jax")
    assert "pytree=False" in str(caught.value)
    graphdef, state = nnx.split(model)
    (g, _) = ad.gradient(lambda s, x: linear_loss(nnx.merge(graphdef, s), x), state, x)
    assert_trees_close(params_of(g), params_of(nnx.grad(linear_loss)(model, x)))


# -- the engine's answer itself ------------------------------------------------------------


def test_tree_node_declines_what_jax_does_not_register() -> None:
    backend = JaxBackend()
    assert backend.tree_node(float) is None
    assert backend.tree_node(np.ndarray) is None
    assert backend.tree_node(type(jnp.zeros(()))) is None

    class Plain:
        pass

    assert backend.tree_node(Plain) is None
    assert backend.tree_node(Scaled) is not None and backend.tree_node(eqx.nn.Linear) is not None


def test_tree_node_needs_no_jax_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "jax")
    assert JaxBackend().tree_node(Scaled) is None


def test_unflatten_keeps_none_children() -> None:
    flatten, unflatten = JaxBackend().tree_node(Scaled)  # type: ignore[misc]
    children, aux = flatten(Scaled(None, "none", 1))
    assert children == [None]
    rebuilt = unflatten(aux, [None])
    assert type(rebuilt) is Scaled and rebuilt.w is None and rebuilt.label == "none"


def test_walker_asks_jax_unprompted() -> None:
    class Fresh:
        def __init__(self, w: Any) -> None:
            self.w = w

    jax.tree_util.register_pytree_node(Fresh, lambda f: ((f.w,), None), lambda _, c: Fresh(*c))
    g, _ = ad.gradient(lambda f, x: jnp.sum(f.w * x), Fresh(jnp.ones(2)), jnp.arange(2.0))
    assert type(g) is Fresh
    np.testing.assert_allclose(g.w, [0.0, 1.0])
