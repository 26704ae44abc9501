"""The operator family's front end: layouts, derived primitives, and the errors it raises
before anything runs. Oracles are closed forms; engines are the tape (any engine gives
the same layouts) and finite-difference engines with one primitive each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from tests.support.fd_engine import FiniteDifferenceBackend
from tests.support.fd_primitives import ForwardOnly, ReverseOnly

W = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.25]])
X = np.array([0.3, -0.2])


def tanh_layer(x: Any, W: Any) -> Any:
    return ad.array_namespace(x).tanh(W @ x)


def tanh_jacobian(x: np.ndarray) -> np.ndarray:
    z = np.tanh(W @ x)
    return (1 - z**2)[:, None] * W


def cubic(x: Any) -> Any:
    return ad.array_namespace(x).sum(x**3)


@pytest.mark.parametrize("engine", [FiniteDifferenceBackend(), ForwardOnly(), ReverseOnly()])
@pytest.mark.parametrize("mode", ["reverse", "forward", "auto"])
def test_every_operator_from_one_primitive(engine: Any, mode: str) -> None:
    """Each engine implements one primitive; the front end derives the rest."""
    J = ad.jacobian(tanh_layer, X, ad.Const(W), backend=engine, mode=mode)[0]
    np.testing.assert_allclose(J, tanh_jacobian(X), rtol=1e-6, atol=1e-8)
    _, pullback = ad.vjp(tanh_layer, X, ad.Const(W), backend=engine)
    u = np.array([1.0, 0.0, 2.0])
    np.testing.assert_allclose(pullback(u)[0], tanh_jacobian(X).T @ u, rtol=1e-6, atol=1e-8)
    v = np.array([1.0, 0.5])
    _, t = ad.jvp(tanh_layer, (X, ad.Const(W)), (v, None), backend=engine)
    np.testing.assert_allclose(t, tanh_jacobian(X) @ v, rtol=1e-6, atol=1e-8)
    (g,) = ad.gradient(cubic, X, backend=engine)
    np.testing.assert_allclose(g, 3 * X**2, rtol=1e-6, atol=1e-8)
    d = ad.derivative(lambda s, a: a * s**2, 3.0, np.array([1.0, 2.0]), backend=engine)
    np.testing.assert_allclose(d, [6.0, 12.0], rtol=1e-6)


def test_an_engine_without_batching_gets_loops() -> None:
    engine = ForwardOnly()
    ad.jacobian(tanh_layer, X, ad.Const(W), backend=engine, mode="forward")
    assert engine.jvp_calls == X.size  # one jvp per input element, never a batched call


def test_second_order_needs_a_nesting_engine() -> None:
    with pytest.raises(ad.UnsupportedError, match="nested"):
        ad.hessian(cubic, X, backend=ForwardOnly())
    with pytest.raises(ad.UnsupportedError, match="nested"):
        ad.hvp(cubic, (X,), (X,), backend=ReverseOnly())


@dataclass
class Layer:
    W: Any
    b: Any
    n: int


def test_jacobian_layout_trees_in_and_out() -> None:
    layer = Layer(W=W, b=np.array([0.1, 0.2, 0.3]), n=3)

    def f(layer: Layer, x: Any) -> dict[str, Any]:
        z = layer.W @ x + layer.b
        return {"z": z, "s": ad.array_namespace(z).sum(z * z), "count": layer.n}

    jac = ad.jacobian(f, layer, X)
    assert set(jac) == {"z", "s", "count"} and jac["count"] is None
    dz_layer, dz_x = jac["z"]
    assert isinstance(dz_layer, Layer) and dz_layer.n is None
    assert dz_layer.W.shape == (3, 3, 2) and dz_layer.b.shape == (3, 3)
    np.testing.assert_allclose(dz_x, W)
    np.testing.assert_allclose(dz_layer.b, np.eye(3))
    expected_W = np.zeros((3, 3, 2))
    for i in range(3):
        expected_W[i, i] = X
    np.testing.assert_allclose(dz_layer.W, expected_W)
    z = W @ X + layer.b
    np.testing.assert_allclose(jac["s"][1], 2 * W.T @ z)


def test_jacobian_of_a_tied_array_is_at_its_first_place() -> None:
    w = np.array([1.0, 2.0])
    jac = ad.jacobian(lambda p: p["a"] * p["b"], {"a": w, "b": w})[0]
    np.testing.assert_allclose(jac["a"], np.diag(2 * w))
    assert jac["b"] is None


def test_hessian_layout_for_trees_and_const() -> None:
    def f(p: dict[str, Any], y: Any, c: Any) -> Any:
        xp = ad.array_namespace(y)
        return xp.sum(p["a"] ** 2 * y) + xp.sum(y**3) * c

    p = {"a": np.array([1.0, 2.0])}
    y = np.array([0.5, -1.0])
    H = ad.hessian(f, p, y, ad.Const(2.0))
    assert H[2] is None and H[0]["a"][2] is None
    np.testing.assert_allclose(H[0]["a"][0]["a"], np.diag(2 * y))
    np.testing.assert_allclose(H[0]["a"][1], np.diag(2 * p["a"]))
    np.testing.assert_allclose(H[1][0]["a"], np.diag(2 * p["a"]))
    np.testing.assert_allclose(H[1][1], np.diag(6 * y * 2.0))


def test_hvp_into_a_duplicated_shadow() -> None:
    dup = ad.Duplicated(np.array([1.0, 2.0]))
    result = ad.hvp(cubic, (dup,), (np.array([1.0, 1.0]),))
    assert result[0] is dup.dval
    np.testing.assert_allclose(dup.dval, [6.0, 12.0])


def test_vjp_with_aux_and_pullback_reuse() -> None:
    def f(x: Any) -> Any:
        return x * x, {"note": "aux"}

    y, pullback, aux = ad.vjp(f, np.array([1.0, 3.0]), has_aux=True)
    assert aux == {"note": "aux"}
    np.testing.assert_allclose(y, [1.0, 9.0])
    np.testing.assert_allclose(pullback(np.array([1.0, 0.0]))[0], [2.0, 0.0])
    np.testing.assert_allclose(pullback(np.array([0.0, 1.0]))[0], [0.0, 6.0])


def test_python_float_argument_gets_python_float_results() -> None:
    (g,) = ad.jacobian(lambda s: s * s, 3.0)
    assert g == 6.0 and isinstance(g, float)
    H = ad.hessian(lambda s: s**3, 2.0)
    assert H[0][0] == 12.0 and isinstance(H[0][0], float)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: ad.jacobian(tanh_layer, ad.Duplicated(X), ad.Const(W)),
            ad.ActivityError,
            r"args\[0\] is Duplicated.*Pass the argument plain",
        ),
        (
            lambda: ad.jvp(tanh_layer, (X, ad.Const(W)), (X, W)),
            ad.ActivityError,
            r"tangents\[1\] is given, but primal 1 is Const",
        ),
        (
            lambda: ad.jvp(tanh_layer, (X, ad.Const(W)), (np.ones(3), None)),
            ad.ActivityError,
            r"tangents\[0\] has shape \(3,\)",
        ),
        (
            lambda: ad.jvp(tanh_layer, (X, ad.Const(W)), (None, None)),
            ad.ActivityError,
            r"tangents\[0\] is None, but primal 0 is differentiated",
        ),
        (
            lambda: ad.jvp(tanh_layer, (X, ad.Const(W)), (X,)),
            ad.ActivityError,
            "one tree per primal",
        ),
        (
            lambda: ad.jvp(
                lambda p: p["a"] * p["b"],
                ({"a": X, "b": X},),
                ({"a": np.ones(2), "b": np.zeros(2)},),
            ),
            ad.ActivityError,
            r"tangents\[0\]\['b'\] differs from tangents\[0\]\['a'\]",
        ),
        (
            lambda: ad.vjp(tanh_layer, X, ad.Const(W))[1](np.ones(2)),
            ad.ActivityError,
            r"cotangent has shape \(2,\), but the output there has shape \(3,\)",
        ),
        (
            lambda: ad.jacobian(tanh_layer, X, ad.Const(W), mode="sideways"),
            ad.UsageError,
            "auto, reverse, forward",
        ),
        (
            lambda: ad.vjp(tanh_layer, X, ad.Const(W), has_aux=True),
            ad.OutputError,
            r"a pair \(y, aux\)",
        ),
        (lambda: ad.gradient(cubic, X, zero="no"), ad.UsageError, "True or False"),
        (lambda: ad.derivative(cubic, X), ad.ActivityError, "scalar x"),
        (lambda: ad.jacobian(lambda x: "text", X), ad.OutputError, "no floating-point leaf"),
    ],
)
def test_errors_say_where_and_the_fix(call: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_same_tangent_repeated_for_a_tie_is_fine() -> None:
    v = np.array([1.0, 0.5])
    _, t = ad.jvp(lambda p: p["a"] * p["b"], ({"a": X, "b": X},), ({"a": v, "b": v},))
    np.testing.assert_allclose(t, 2 * X * v)


def test_pullback_at_another_nesting_level_is_refused() -> None:
    _, pullback = ad.vjp(lambda x: x * x, np.array([1.0, 2.0]))

    def f(u: Any) -> Any:
        (g,) = pullback(u)
        return ad.array_namespace(g).sum(g)

    with pytest.raises(ad.UnsupportedError, match="nesting level"):
        ad.gradient(f, np.array([1.0, 1.0]))


def test_operators_nest_inside_gradient() -> None:
    """A Jacobian-norm penalty differentiated by gradient: d/dx ||J(x)||_F^2 in closed
    form for J = diag(2 x): sum(4 x^2) -> 8 x."""

    def penalty(x: Any) -> Any:
        (J,) = ad.jacobian(lambda y: y * y, x)
        return ad.array_namespace(J).sum(J * J)

    (g,) = ad.gradient(penalty, np.array([1.0, -2.0]))
    np.testing.assert_allclose(g, 8 * np.array([1.0, -2.0]))


@pytest.mark.parametrize("backend", ["tape", "torch", "jax", "autograd"])
def test_a_kept_pullback_keeps_no_argument_or_output_alive(backend: str) -> None:
    import gc
    import weakref

    x = np.ones(3)
    x_ref = weakref.ref(x)
    y, pullback = ad.vjp(lambda v: v**2, x, backend=backend)
    y_ref = weakref.ref(y)
    del x, y
    gc.collect()
    assert x_ref() is None and y_ref() is None
    np.testing.assert_allclose(pullback(np.ones(3))[0], [2.0, 2.0, 2.0])


def test_hessian_and_jacobian_layouts_are_jaxs() -> None:
    """The nesting of trees and per-argument tuples is exactly jax.hessian's and
    jax.jacrev's with argnums over every argument (oracle: jax itself)."""
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")

    def f(p: dict[str, Any], y: Any) -> Any:
        xp = ad.array_namespace(y)
        return xp.sum(p["a"] ** 2 * y) + xp.sum(p["c"] * y**3)

    def g(p: dict[str, Any], y: Any) -> Any:
        return {"u": p["a"] * y, "v": p["c"] * y}

    p = {"a": np.array([1.0, 2.0]), "c": np.array(3.0)}
    y = np.array([0.5, -1.0])
    pj = {k: jnp.asarray(v) for k, v in p.items()}
    with jax.enable_x64(True):
        H_jax = jax.hessian(f, argnums=(0, 1))(pj, jnp.asarray(y))
        J_jax = jax.jacrev(g, argnums=(0, 1))(pj, jnp.asarray(y))
    for ours, theirs in ((ad.hessian(f, p, y), H_jax), (ad.jacobian(g, p, y), J_jax)):
        assert jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(theirs)
        for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
            np.testing.assert_allclose(a, np.asarray(b), rtol=1e-12, atol=1e-12)
