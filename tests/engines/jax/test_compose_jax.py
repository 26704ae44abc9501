"""adswitch's jax engine called inside jax's own transforms (issue 23): ``jax.jit``,
``jax.vmap``, ``jax.grad`` / ``jacfwd`` / ``jacrev`` / ``hessian`` of adswitch's result,
``jax.lax.scan`` / ``fori_loop`` / ``cond`` bodies and ``jax.checkpoint``, around every
operator, plain and prepared. Oracles: the same computation written with jax's own
operators (``jax.grad``, ``jax.jacrev``...) under the same transform -- never adswitch
against itself. Also: inside a trace adswitch stages no ``jit`` program of its own (the
traced jaxpr has no nested ``jit``), and the first call of a process inside ``jax.jit``
(in a fresh interpreter)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax: Any = pytest.importorskip("jax")
jnp: Any = pytest.importorskip("jax.numpy")

import adswitch as ad  # noqa: E402
from adswitch.errors import PreparationError  # noqa: E402

X = jnp.array([0.5, -0.25, 0.75])
V = jnp.array([1.0, -2.0, 0.5])
W = jnp.array([1.0, 2.0, 3.0])
S = jnp.asarray(0.3)
TOL: dict[str, Any] = dict(rtol=2e-5, atol=2e-6)  # float32


def loss(w: Any, x: Any) -> Any:
    return jnp.sum(jnp.tanh(w * x) ** 2) + jnp.sum(w**3)


def loss1(w: Any) -> Any:
    return loss(w, X)


def vec(w: Any) -> Any:
    return jnp.sin(w) * jnp.sum(w)


def curve(s: Any, w: Any) -> Any:
    return jnp.sin(s * w)


Op = Callable[[Any], Any]

# operator -> (adswitch's, jax's own idiom), each w -> an array
PLAIN: dict[str, tuple[Op, Op]] = {
    "gradient": (
        lambda w: ad.gradient(loss, w, ad.Const(X), backend="jax")[0],
        jax.grad(loss1),
    ),
    "withgradient": (
        lambda w: ad.withgradient(loss, w, ad.Const(X), backend="jax")[1][0],
        jax.grad(loss1),
    ),
    "vjp": (
        lambda w: ad.vjp(vec, w, backend="jax")[1](V)[0],
        lambda w: jax.vjp(vec, w)[1](V)[0],
    ),
    "jvp": (
        lambda w: ad.jvp(vec, (w,), (V,), backend="jax")[1],
        lambda w: jax.jvp(vec, (w,), (V,))[1],
    ),
    "jacobian_reverse": (
        lambda w: ad.jacobian(vec, w, mode="reverse", backend="jax")[0],
        jax.jacrev(vec),
    ),
    "jacobian_forward": (
        lambda w: ad.jacobian(vec, w, mode="forward", backend="jax")[0],
        jax.jacfwd(vec),
    ),
    "hessian": (lambda w: ad.hessian(loss1, w, backend="jax")[0][0], jax.hessian(loss1)),
    "hvp": (
        lambda w: ad.hvp(loss1, (w,), (V,), backend="jax")[0],
        lambda w: jax.jvp(jax.grad(loss1), (w,), (V,))[1],
    ),
    "derivative": (
        lambda w: ad.derivative(lambda s: curve(s, w), S, backend="jax"),
        lambda w: jax.jacfwd(curve)(S, w),
    ),
}


def _prepared() -> dict[str, Op]:
    """Each operator prepared at top level on concrete arrays, called on w."""
    p = {
        "gradient": ad.prepare(ad.gradient, loss, W, ad.Const(X), backend="jax"),
        "withgradient": ad.prepare(ad.withgradient, loss, W, ad.Const(X), backend="jax"),
        "vjp": ad.prepare(ad.vjp, vec, W, backend="jax"),
        "jvp": ad.prepare(ad.jvp, vec, (W,), (V,), backend="jax"),
        "jacobian_reverse": ad.prepare(ad.jacobian, vec, W, mode="reverse", backend="jax"),
        "jacobian_forward": ad.prepare(ad.jacobian, vec, W, mode="forward", backend="jax"),
        "hessian": ad.prepare(ad.hessian, loss1, W, backend="jax"),
        "hvp": ad.prepare(ad.hvp, loss1, (W,), (V,), backend="jax"),
        "derivative": ad.prepare(ad.derivative, curve, S, ad.Const(W), backend="jax"),
    }
    return {
        "gradient": lambda w: p["gradient"](w, ad.Const(X))[0],
        "withgradient": lambda w: p["withgradient"](w, ad.Const(X))[1][0],
        "vjp": lambda w: p["vjp"](w)[1](V)[0],
        "jvp": lambda w: p["jvp"]((w,), (V,))[1],
        "jacobian_reverse": lambda w: p["jacobian_reverse"](w)[0],
        "jacobian_forward": lambda w: p["jacobian_forward"](w)[0],
        "hessian": lambda w: p["hessian"](w)[0][0],
        "hvp": lambda w: p["hvp"]((w,), (V,))[0],
        "derivative": lambda w: p["derivative"](S, ad.Const(w)),
    }


PREPARED = _prepared()


def _scan(f: Op) -> Op:
    # a few steps of w -> w + 0.01 * sum(f(w)) as a scan body
    def run(w: Any) -> Any:
        body = lambda c, _: (c + 0.01 * jnp.sum(f(c)), None)  # noqa: E731
        return jax.lax.scan(body, w, None, length=3)[0]

    return run


# transform -> how it wraps a w -> array function (the same for both sides)
TRANSFORMS: dict[str, Callable[[Op], Op]] = {
    "jit": jax.jit,
    "vmap": lambda f: lambda w: jax.vmap(f)(jnp.stack([w, 0.5 * w, -w])),
    "grad": lambda f: jax.grad(lambda w: jnp.sum(f(w) ** 2)),
    "jacfwd": lambda f: jax.jacfwd(f),
    "jacrev": lambda f: jax.jacrev(f),
    "hessian": lambda f: jax.hessian(lambda w: jnp.sum(f(w) ** 2)),
    "scan": _scan,
    "fori_loop": lambda f: (
        lambda w: jax.lax.fori_loop(0, 3, lambda i, c: c + 0.01 * jnp.sum(f(c)), w)
    ),
    "cond": lambda f: lambda w: jax.lax.cond(jnp.sum(w) > 0, f, lambda w: -f(w), w),
    "checkpoint": lambda f: jax.jit(jax.checkpoint(f)),
    "jit_of_vmap": lambda f: jax.jit(lambda w: jax.vmap(f)(jnp.stack([w, 2.0 * w]))),
}


@pytest.mark.parametrize("op", list(PLAIN))
@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_every_operator_under_every_transform(op: str, transform: str) -> None:
    ours, theirs = PLAIN[op]
    wrap = TRANSFORMS[transform]
    np.testing.assert_allclose(wrap(ours)(W), wrap(theirs)(W), **TOL)


@pytest.mark.parametrize("op", list(PREPARED))
@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_every_prepared_operator_under_every_transform(op: str, transform: str) -> None:
    # (before issue 23: PreparationError "prepared as jaxlib.ArrayImpl ..., is
    # jax.DynamicJaxprTracer")
    wrap = TRANSFORMS[transform]
    np.testing.assert_allclose(wrap(PREPARED[op])(W), wrap(PLAIN[op][1])(W), **TOL)


def _nested_jits(jaxpr: Any) -> int:
    """``jit`` equations anywhere in a jaxpr (sub-jaxprs of scan, cond... included)."""
    count = 0
    for eqn in jaxpr.eqns:
        count += eqn.primitive.name in ("pjit", "jit")
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", None)
                if inner is not None and hasattr(inner, "eqns"):
                    count += _nested_jits(inner)
                elif hasattr(sub, "eqns"):
                    count += _nested_jits(sub)
    return count


@pytest.mark.parametrize("table", ["plain", "prepared"])
@pytest.mark.parametrize("op", list(PLAIN))
def test_no_program_of_its_own_inside_a_trace(op: str, table: str) -> None:
    # Inside jax.jit the call is staged into the caller's program: adswitch's compiled
    # programs (a jax.jit each) would show as nested jit equations. Before issue 23 the
    # derivative (f closes over the traced w, no traced leaf) ran its own program.
    f = PLAIN[op][0] if table == "plain" else PREPARED[op]
    f(W)  # (compiled at top level first: the cache then holds a program it could reuse)
    assert _nested_jits(jax.make_jaxpr(f)(W).jaxpr) == 0
    assert _nested_jits(jax.make_jaxpr(TRANSFORMS["scan"](f))(W).jaxpr) == 0


@pytest.mark.parametrize("op", ["jacobian_reverse", "jacobian_forward", "hessian"])
def test_seed_basis_is_made_in_the_program(op: str) -> None:
    # A Jacobian's identity seeds are built inside the enclosing program (jnp.eye, as
    # jax.jacrev / jacfwd build theirs), not carried in as a constant array: before,
    # the traced jaxpr had an n x n constant (and the jitted step ran ~3-6% slower).
    closed = jax.make_jaxpr(PLAIN[op][0])(W)
    assert [np.shape(c) for c in closed.consts if np.ndim(c) > 1] == []


def test_prepared_call_refuses_tracers_of_another_shape() -> None:
    prep = ad.prepare(ad.gradient, loss1, W, backend="jax")
    with pytest.raises(PreparationError, match=r"shape \(3,\).*shape \(4,\)"):
        jax.jit(lambda w: prep(w))(jnp.ones(4))


def test_prepared_on_numpy_refuses_tracers() -> None:
    # the prepared call returns numpy for numpy: a tracer is another kind of call
    prep = ad.prepare(ad.gradient, loss1, np.asarray(W), backend="jax")
    with pytest.raises(PreparationError, match=r"numpy\.ndarray"):
        jax.jit(lambda w: prep(w))(W)


def test_prepared_call_inside_jit_follows_new_values() -> None:
    # traced once, then the values change: the compiled step is jax's, and right
    prep = ad.prepare(ad.gradient, loss, W, ad.Const(X), backend="jax")
    step = jax.jit(lambda w, x: w - 0.1 * prep(w, ad.Const(x))[0])
    for w, x in [(W, X), (2.0 * W, -X), (-W, 3.0 * X)]:
        want = w - 0.1 * jax.grad(loss)(w, x)
        np.testing.assert_allclose(step(w, x), want, **TOL)


def test_training_loop_in_scan_with_aux_and_trees() -> None:
    # a dict of parameters, a Const batch and has_aux, inside lax.scan under jit
    params = {"a": W, "b": jnp.asarray(0.5)}

    def model(p: dict[str, Any], x: Any) -> tuple[Any, Any]:
        r = jnp.tanh(p["a"] * x + p["b"])
        return jnp.sum(r**2), jnp.max(r)

    def step(p: dict[str, Any], _: Any, ours: bool) -> tuple[dict[str, Any], Any]:
        if ours:
            (val, aux), (g, _x) = ad.withgradient(model, p, ad.Const(X), backend="jax")
        else:
            (val, aux), g = jax.value_and_grad(model, has_aux=True)(p, X)
        return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), (val, aux)

    def loop(ours: bool) -> Any:
        run = jax.jit(lambda p: jax.lax.scan(lambda c, t: step(c, t, ours), p, None, length=4))
        return run(params)

    (ours_p, ours_t), (jax_p, jax_t) = loop(True), loop(False)
    for k in params:
        np.testing.assert_allclose(ours_p[k], jax_p[k], **TOL)
    np.testing.assert_allclose(ours_t[0], jax_t[0], **TOL)
    np.testing.assert_allclose(ours_t[1], jax_t[1], **TOL)


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=180,
        env=os.environ.copy(),
    )


def test_first_call_of_a_process_inside_jit() -> None:
    # A fresh interpreter: the engine module is loaded under jax.jit's trace (before
    # issue 23: a bare AssertionError from adswitch_jax/primitives/engine.py). Each operator is the
    # first of its kind in the process; then a prepared call inside the same kind of trace.
    result = _run_python(
        """
        import jax, jax.numpy as jnp, numpy as np
        import adswitch as ad
        w = jnp.array([1.0, 2.0, 3.0]); v = jnp.array([1.0, -2.0, 0.5])
        f = lambda w: jnp.sum(jnp.sin(w) ** 2)
        g = lambda w: jnp.sin(w) * jnp.sum(w)
        got = jax.jit(lambda w: ad.gradient(f, w, backend="jax")[0])(w)
        np.testing.assert_allclose(got, jax.grad(f)(w), rtol=1e-6)
        got = jax.jit(lambda w: ad.hessian(f, w, backend="jax")[0][0])(w)
        np.testing.assert_allclose(got, jax.hessian(f)(w), rtol=1e-5)
        got = jax.jit(lambda w: ad.jvp(g, (w,), (v,), backend="jax")[1])(w)
        np.testing.assert_allclose(got, jax.jvp(g, (w,), (v,))[1], rtol=1e-6)
        got = jax.jit(lambda w: ad.vjp(g, w, backend="jax")[1](v)[0])(w)
        np.testing.assert_allclose(got, jax.vjp(g, w)[1](v)[0], rtol=1e-6)
        got = jax.jit(lambda w: ad.jacobian(g, w, backend="jax")[0])(w)
        np.testing.assert_allclose(got, jax.jacrev(g)(w), rtol=1e-6)
        prep = ad.prepare(ad.gradient, f, w, backend="jax")
        got = jax.jit(jax.vmap(lambda w: prep(w)[0]))(jnp.stack([w, -w]))
        np.testing.assert_allclose(got, jax.vmap(jax.grad(f))(jnp.stack([w, -w])), rtol=1e-6)
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize("prepared", [False, True])
def test_per_sample_gradients_over_a_const_batch(prepared: bool) -> None:
    # vmap over the Const data, the parameters shared (in_axes None): the traced leaf
    # is the Const one
    xb = jnp.asarray(np.random.default_rng(0).standard_normal((5, 3)), dtype=W.dtype)
    if prepared:
        prep = ad.prepare(ad.gradient, loss, W, ad.Const(X), backend="jax")
        per_sample = lambda x: prep(W, ad.Const(x))[0]  # noqa: E731
    else:
        per_sample = lambda x: ad.gradient(loss, W, ad.Const(x), backend="jax")[0]  # noqa: E731
    want = jax.vmap(jax.grad(loss), in_axes=(None, 0))(W, xb)
    np.testing.assert_allclose(jax.jit(jax.vmap(per_sample))(xb), want, **TOL)
    np.testing.assert_allclose(jax.vmap(per_sample)(xb), want, **TOL)


@pytest.mark.parametrize("prepared", [False, True])
def test_equinox_filter_jit_and_filter_grad(prepared: bool) -> None:
    eqx = pytest.importorskip("equinox")
    model = eqx.nn.MLP(3, 1, 8, 2, key=jax.random.PRNGKey(0))
    x = jnp.asarray(np.random.default_rng(1).standard_normal((4, 3)), dtype=jnp.float32)
    t = jnp.zeros((4, 1), dtype=jnp.float32)

    def mse(m: Any, x: Any, t: Any) -> Any:
        return jnp.mean((jax.vmap(m)(x) - t) ** 2)

    prep = ad.prepare(ad.gradient, mse, model, ad.Const(x), ad.Const(t), backend="jax")

    def grads(m: Any) -> Any:
        if prepared:
            return prep(m, ad.Const(x), ad.Const(t))[0]
        return ad.gradient(mse, m, ad.Const(x), ad.Const(t), backend="jax")[0]

    def arrays(tree: Any) -> list[Any]:
        return list(jax.tree_util.tree_leaves(eqx.filter(tree, eqx.is_array)))

    want = arrays(eqx.filter_grad(mse)(model, x, t))
    got = arrays(eqx.filter_jit(grads)(model))
    assert len(got) == len(want) == 6
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, **TOL)
    # jax's filter_grad of a loss built on adswitch's gradient (a gradient penalty)
    penalty = lambda m: sum(jnp.sum(g**2) for g in arrays(grads(m)))  # noqa: E731
    penalty_jax = lambda m: sum(  # noqa: E731
        jnp.sum(g**2) for g in arrays(eqx.filter_grad(mse)(m, x, t))
    )
    got2 = arrays(eqx.filter_jit(eqx.filter_grad(penalty))(model))
    want2 = arrays(eqx.filter_grad(penalty_jax)(model))
    for a, b in zip(got2, want2):
        np.testing.assert_allclose(a, b, **TOL)
