"""``ad.custom_vjp`` / ``ad.custom_jvp`` / ``ad.stop_gradient`` on jax (the engine hooks in
``adswitch_jax.integrations.custom``: ``jax.custom_vjp`` / ``jax.custom_jvp`` over the flat leaves).

Oracles: closed forms (softmax for logsumexp, the rule's own formula where the rule
differs from the function's derivative on purpose) and central finite differences of a
closed-form gradient; never an engine against itself.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import UnsupportedError

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

X = np.array([0.3, -1.2, 2.0, 0.5])
V = np.array([1.0, -0.5, 0.25, 2.0])
J = "jax"


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return np.asarray(e / e.sum())


def lse_np(x: np.ndarray) -> float:
    return float(x.max() + np.log(np.exp(x - x.max()).sum()))


def fd_jacobian(g: Any, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of the closed-form vector function ``g``: ``J[i, j] = dg_i/dx_j``."""
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        cols.append((g(x + e) - g(x - e)) / (2 * h))
    return np.stack(cols, axis=1)


def _sum(x: Any) -> Any:
    return ad.array_namespace(x).sum(x)


def _lse_value(x: Any) -> Any:
    xp = ad.array_namespace(x)
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m)))


def _lse_bwd(res: Any, g: Any) -> tuple[Any]:
    x, out = res
    return (g * ad.array_namespace(x).exp(x - out),)  # differentiable ops: nests


lse = ad.custom_vjp(_lse_value)
lse.defvjp(lambda x: (_lse_value(x), (x, _lse_value(x))), _lse_bwd)

clipped = ad.custom_vjp(lambda x: x)  # gradient clipped to [-1, 1]: the rule, not d(x)/dx
clipped.defvjp(lambda x: (x, None), lambda _, g: (ad.array_namespace(g).clip(g, -1.0, 1.0),))


def _sin(x: Any) -> Any:
    return ad.array_namespace(x).sin(x)


def _sin_rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    xp = ad.array_namespace(x)
    return xp.sin(x), 2.0 * xp.cos(x) * t  # twice the true derivative, on purpose


sin2 = ad.custom_jvp(_sin)
sin2.defjvp(_sin_rule)

squared_tangent = ad.custom_jvp(_sin)  # not linear in the tangent: no reverse mode
squared_tangent.defjvp(lambda p, t: (_sin(p[0]), t[0] * t[0]))
sin_of_tangent = ad.custom_jvp(_sin)  # neither (jax: no transpose rule for sin)
sin_of_tangent.defjvp(lambda p, t: (_sin(p[0]), _sin(t[0])))


@pytest.mark.parametrize("shift", [0.0, 1000.0])
@pytest.mark.parametrize("kind", ["numpy", "jax"])
def test_logsumexp_gradient_is_softmax(shift: float, kind: str) -> None:
    x = X + shift  # at 1000 the naive exp overflows: the rule's gradient stays finite
    with jax.enable_x64(True):  # (a float64 jax array)
        (g,) = ad.gradient(lse, jnp.asarray(x) if kind == "jax" else x, backend=J)
    assert isinstance(g, jax.Array) == (kind == "jax")
    np.testing.assert_allclose(np.asarray(g), softmax(x), rtol=1e-12)


def test_clipped_gradient_and_straight_through() -> None:
    (g,) = ad.gradient(lambda x: _sum(3.0 * clipped(x)), X, backend=J)
    np.testing.assert_allclose(g, np.ones_like(X))  # clip(3) = 1, not 3
    st = ad.custom_vjp(lambda x: ad.array_namespace(x).round(x))
    st.defvjp(lambda x: (ad.array_namespace(x).round(x), None), lambda _, g: (g,))
    value, (g,) = ad.withgradient(lambda x: _sum(st(x) * x), X, backend=J)
    assert float(value) == pytest.approx(float(np.sum(np.round(X) * X)))
    np.testing.assert_allclose(g, X + np.round(X))  # d/dx [st(x) x] = x + round(x)


def test_second_order_through_custom_vjp() -> None:
    hess = fd_jacobian(softmax, X)
    (h,) = ad.hessian(lse, X, backend=J)
    np.testing.assert_allclose(h[0] if isinstance(h, tuple) else h, hess, atol=1e-8)
    (hv,) = ad.hvp(lse, (X,), (V,), backend=J)
    np.testing.assert_allclose(hv, hess @ V, atol=1e-8)

    def inner_dot(x: Any) -> Any:  # d/dx <grad(lse^2)(x), v> = J(2 lse softmax)^T v
        (g,) = ad.gradient(lambda y: lse(y) ** 2, x)
        return _sum(g * ad.array_namespace(x).asarray(V))

    (got,) = ad.gradient(inner_dot, X, backend=J)
    closed = fd_jacobian(lambda x: 2 * lse_np(x) * softmax(x), X)
    np.testing.assert_allclose(got, closed.T @ V, atol=1e-7)


def test_batched_reverse_jacobian_through_custom_vjp() -> None:
    # A vector rule: the reverse Jacobian is one vmap of bwd over the identity basis.
    scale = ad.custom_vjp(lambda x: x * 2.0)
    scale.defvjp(lambda x: (x * 2.0, x), lambda x, g: (3.0 * g * x,))  # rule: diag(3x)
    (jac,) = ad.jacobian(scale, X, backend=J, mode="reverse")
    np.testing.assert_allclose(jac, np.diag(3.0 * X))
    prepared = ad.prepare(ad.jacobian, scale, X, backend=J, mode="reverse")
    np.testing.assert_allclose(prepared(V)[0], np.diag(3.0 * V))


@pytest.mark.parametrize("call", ["jvp", "jacobian_forward", "derivative"])
def test_custom_vjp_in_forward_mode_refuses(call: str) -> None:
    with pytest.raises(UnsupportedError, match="custom_vjp has no forward-mode rule") as info:
        if call == "jvp":
            ad.jvp(lse, (X,), (V,), backend=J)
        elif call == "jacobian_forward":
            ad.jacobian(clipped, X, backend=J, mode="forward")
        else:
            ad.derivative(lambda t: lse(t * ad.array_namespace(t).asarray(X)), 1.0, backend=J)
    assert "custom_jvp" in str(info.value)
    assert isinstance(info.value.__cause__, TypeError)  # jax's own error, chained


def test_custom_jvp_forward_and_reverse() -> None:
    out, t = ad.jvp(sin2, (X,), (V,), backend=J)
    np.testing.assert_allclose(out, np.sin(X))
    np.testing.assert_allclose(t, 2 * np.cos(X) * V)
    for mode in ("forward", "reverse"):
        (jac,) = ad.jacobian(sin2, X, backend=J, mode=mode)
        np.testing.assert_allclose(jac, np.diag(2 * np.cos(X)), atol=1e-15)
    (g,) = ad.gradient(lambda x: _sum(sin2(x) * ad.array_namespace(x).asarray(V)), X, backend=J)
    np.testing.assert_allclose(g, 2 * np.cos(X) * V)
    (h,) = ad.hessian(lambda x: _sum(sin2(x)), X, backend=J)  # d/dx 2 cos(x) = -2 sin(x)
    np.testing.assert_allclose(h[0] if isinstance(h, tuple) else h, np.diag(-2 * np.sin(X)))


def test_custom_jvp_not_linear_refuses_reverse_mode() -> None:
    _, t = ad.jvp(squared_tangent, (X,), (V,), backend=J)  # forward mode: the rule as given
    np.testing.assert_allclose(t, V * V)
    for rule in (squared_tangent, sin_of_tangent):
        with pytest.raises(UnsupportedError, match=r"define ad\.custom_vjp") as info:
            ad.gradient(lambda x: _sum(rule(x)), X, backend=J)  # noqa: B023
        assert "linear in the tangents" in str(info.value)


def test_stop_gradient_every_mode() -> None:
    (g,) = ad.gradient(lambda x: _sum(x * ad.stop_gradient(x)), X, backend=J)
    np.testing.assert_allclose(g, X)  # not 2x
    _, t = ad.jvp(lambda x: x * ad.stop_gradient(x), (X,), (V,), backend=J)
    np.testing.assert_allclose(t, X * V)
    (h,) = ad.hessian(lambda x: _sum(x * x * ad.stop_gradient(x)), X, backend=J)
    np.testing.assert_allclose(h[0] if isinstance(h, tuple) else h, np.diag(2 * X))


def test_prepared_at_a_second_point() -> None:
    grad = ad.prepare(ad.gradient, lse, X, backend=J)
    jvp = ad.prepare(ad.jvp, sin2, (X,), (V,), backend=J)
    y = X[::-1] * 2.0
    np.testing.assert_allclose(grad(X)[0], softmax(X), rtol=1e-12)
    np.testing.assert_allclose(grad(y)[0], softmax(y), rtol=1e-12)
    np.testing.assert_allclose(jvp((y,), (V,))[1], 2 * np.cos(y) * V)


def test_inside_jax_jit_and_vmap() -> None:
    with jax.enable_x64(True):
        step = jax.jit(lambda x: ad.gradient(lse, x, backend=J)[0])
        np.testing.assert_allclose(step(jnp.asarray(X)), softmax(X), rtol=1e-12)
        rows = jnp.stack([jnp.asarray(X), jnp.asarray(V)])
        per_row = jax.vmap(lambda x: ad.gradient(lse, x, backend=J)[0])(rows)
    np.testing.assert_allclose(per_row, np.stack([softmax(X), softmax(V)]), rtol=1e-12)


def test_eager_fallback() -> None:
    # Python control flow on a traced constant: the engine falls back to eager jax.
    def f(x: Any, c: Any) -> Any:
        xp = ad.array_namespace(x)
        return lse(x) * (2.0 if float(xp.sum(c)) > 0 else -1.0)

    with pytest.warns(Warning):
        g = ad.gradient(f, X, ad.Const(np.ones(2)), backend=J)[0]
    np.testing.assert_allclose(g, 2.0 * softmax(X), rtol=1e-12)


def test_several_leaves_constants_and_integers() -> None:
    # f(a, b, k) = a * b * k with a rule giving (ct * b * k, 10 * ct * a * k); the integer
    # array n takes no cotangent (jax's float0), and bwd's None is a zero.
    def prod(a: Any, b: Any, k: int, n: Any) -> Any:
        return a * b * k + 0.0 * ad.array_namespace(a).sum(n)

    rule = ad.custom_vjp(prod, nondiff_argnums=(2,))
    rule.defvjp(
        lambda a, b, k, n: (prod(a, b, k, n), {"a": a, "b": b, "tag": "kept", "k": float(k)}),
        lambda k, r, g: (g * r["b"] * r["k"], 10 * g * r["a"] * k, None),
    )
    ints = jnp.arange(4)
    ga, gb = ad.gradient(lambda a, b: _sum(rule(a, b, 2, ints)), X, V, backend=J)
    np.testing.assert_allclose(ga, 2 * V)
    np.testing.assert_allclose(gb, 20 * X)
    (gb_only,) = ad.gradient(lambda b: _sum(rule(X, b, 2, ints)), V, backend=J)  # a constant
    np.testing.assert_allclose(gb_only, 20 * X)
    (none_a,) = ad.gradient(
        lambda a: _sum(rule(a, V, 2, ints)), X, backend=J
    )  # b constant: a's cotangent still the rule's
    np.testing.assert_allclose(none_a, 2 * V)


def test_float32_cotangent_cast_and_tree_outputs() -> None:
    # bwd returns float64 numpy/Python numbers for float32 leaves: cast to the leaf's
    # dtype; a rule with a dict output, one entry an integer array (zero cotangent).
    pair = ad.custom_vjp(lambda x: {"y": x * 3.0, "n": ad.array_namespace(x).argmax(x)})
    pair.defvjp(
        lambda x: (pair.fun(x), None),
        lambda _, ct: (np.full(4, 0.5),),  # float64 numpy for a float32 leaf (ct["y"] = 1)
    )
    x32 = jnp.asarray(X, dtype=jnp.float32)
    (g,) = ad.gradient(lambda x: _sum(pair(x)["y"]), x32, backend=J)
    assert g.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(g), np.full(4, 0.5))


def test_first_call_of_a_process_inside_jit() -> None:
    # The engine module loaded under a trace used to fail on a bare AssertionError.
    code = (
        "import jax, jax.numpy as jnp, adswitch as ad\n"
        "f = lambda x: ad.array_namespace(x).sum(x ** 2)\n"
        "print(jax.jit(lambda x: ad.gradient(f, x, backend='jax')[0])(jnp.ones(3)).tolist())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[2.0, 2.0, 2.0]"


def test_custom_jvp_with_integer_input_and_output() -> None:
    # n (an integer jax array) gets no tangent (the rule sees zeros); the integer output
    # (argmax) gets jax's float0 tangent; the float output's tangent is the rule's.
    def f(x: Any, n: Any) -> Any:
        xp = ad.array_namespace(x)
        return {"y": xp.sin(x) * n, "k": xp.argmax(x)}

    def rule(p: tuple[Any, ...], t: tuple[Any, ...]) -> tuple[Any, Any]:
        (x, n), (tx, tn) = p, t
        assert tn is not None and tuple(tn.shape) == (4,)  # zeros, not None
        return f(x, n), {"y": 3.0 * tx * n, "k": None}

    cj = ad.custom_jvp(f)
    cj.defjvp(rule)
    n = jnp.arange(1, 5)
    _, t = ad.jvp(lambda x: cj(x, n)["y"], (X,), (V,), backend=J)
    np.testing.assert_allclose(t, 3.0 * V * np.arange(1, 5))
    (g,) = ad.gradient(lambda x: _sum(cj(x, n)["y"]), X, backend=J)  # the rule transposed
    np.testing.assert_allclose(g, 3.0 * np.arange(1, 5))


def test_redefined_rule_is_not_stale() -> None:
    # The compiled program is reused only while the rule's fwd/bwd are the same objects.
    rule = ad.custom_vjp(lambda x: x)
    rule.defvjp(lambda x: (x, None), lambda _, g: (g * 2.0,))

    def f(x: Any) -> Any:
        return _sum(rule(x))

    prepared = ad.prepare(ad.gradient, f, X, backend=J)
    np.testing.assert_allclose(ad.gradient(f, X, backend=J)[0], np.full(4, 2.0))
    np.testing.assert_allclose(prepared(X)[0], np.full(4, 2.0))
    rule.defvjp(lambda x: (x, None), lambda _, g: (g * 5.0,))
    np.testing.assert_allclose(ad.gradient(f, X, backend=J)[0], np.full(4, 5.0))
    np.testing.assert_allclose(prepared(X)[0], np.full(4, 5.0))
