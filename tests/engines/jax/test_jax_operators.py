"""Every operator on the jax engine's native primitives (vjp, vjp_apply, jvp, batched):
arrays, trees, ties, Const, Python floats, float32/float64, jax arrays, nested calls,
eager fallbacks and refused mutation.

Oracles: closed forms and central finite differences in numpy (``fd_oracle``); for jax
pytrees, ``jax.jacrev``/``jax.hessian``/``jax.jvp`` called directly on the same function.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from adswitch_jax.notices import JaxFallbackWarning, reset_warnings  # noqa: E402
from adswitch_jax.primitives import engine as _engine  # noqa: E402

import adswitch as ad  # noqa: E402
from adswitch.errors import MutationError  # noqa: E402

MODES = ("reverse", "forward", "auto")
RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _fresh_state() -> None:
    reset_warnings()
    _engine.reset()


def layer(x: Any, W: Any, b: Any) -> Any:
    return ad.array_namespace(x).tanh(W @ x + b)


def layer_jacobian(x: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    y = np.tanh(W @ x + b)
    return (1.0 - y**2)[:, None] * W


def softplus(x: Any, A: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.log1p(xp.exp(A @ x))) + 0.5 * xp.sum(x * x)


def softplus_hessian(x: np.ndarray, A: np.ndarray) -> np.ndarray:
    s = 1.0 / (1.0 + np.exp(-(A @ x)))
    return A.T @ ((s * (1.0 - s))[:, None] * A) + np.eye(x.shape[0])


def layer_args(n_in: int, n_out: int, dtype: Any = np.float64) -> tuple[np.ndarray, ...]:
    x = RNG.standard_normal(n_in)
    W = RNG.standard_normal((n_out, n_in)) / np.sqrt(n_in)
    b = 0.1 * RNG.standard_normal(n_out)
    return tuple(a.astype(dtype) for a in (x, W, b))


# -- jacobian -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(6, 6), (3, 9), (9, 3)])
def test_jacobian_every_mode_against_closed_form(mode: str, shape: tuple[int, int]) -> None:
    x, W, b = layer_args(*shape)
    for _ in range(2):  # the second call runs the cached program (auto: the chosen mode)
        (J, JW, Jb) = ad.jacobian(layer, x, ad.Const(W), ad.Const(b), backend="jax", mode=mode)
        assert JW is None and Jb is None
        assert type(J) is np.ndarray and J.dtype == np.float64 and J.flags.writeable
        np.testing.assert_allclose(J, layer_jacobian(x, W, b), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_float32_stays_float32(mode: str) -> None:
    x, W, b = layer_args(4, 5, np.float32)
    (J, _, _) = ad.jacobian(layer, x, ad.Const(W), ad.Const(b), backend="jax", mode=mode)
    assert J.dtype == np.float32
    want = layer_jacobian(*(a.astype(np.float64) for a in (x, W, b)))
    np.testing.assert_allclose(J, want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_jax_arrays_is_a_jax_array_on_their_device(mode: str) -> None:
    x, W, b = (jnp.asarray(a) for a in layer_args(3, 4, np.float32))
    (J, _, _) = ad.jacobian(layer, x, ad.Const(W), ad.Const(b), mode=mode)
    assert isinstance(J, jax.Array) and J.devices() == x.devices()
    want = layer_jacobian(*(np.asarray(a, dtype=np.float64) for a in (x, W, b)))
    np.testing.assert_allclose(np.asarray(J), want, rtol=2e-5, atol=2e-6)


def tree_function(p: dict[str, Any], s: float) -> Any:
    xp = ad.array_namespace(p["w"])
    return {"a": xp.sin(p["w"]) * s, "b": (xp.sum(p["v"] ** 2) * p["w"][0], s**2)}


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_trees_with_a_python_float_is_jacrevs(mode: str) -> None:
    p = {"w": RNG.standard_normal(3), "v": RNG.standard_normal((2, 2))}
    s = 0.7
    jac = ad.jacobian(tree_function, p, s, backend="jax", mode=mode)
    with jax.enable_x64(True):
        want = jax.jacrev(tree_function, argnums=(0, 1))(
            {k: jnp.asarray(v) for k, v in p.items()}, s
        )
    got_leaves, want_leaves = jax.tree.leaves(jac), jax.tree.leaves(want)
    assert jax.tree.structure(jac) == jax.tree.structure(want)
    for got, expected in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-12, atol=1e-14)
    # and one block against finite differences, without any engine
    fd = central_fd(lambda w: np.sin(w) @ np.ones(3) * s, p["w"])
    np.testing.assert_allclose(jac["a"][0]["w"].sum(axis=0), fd, rtol=1e-7)
    assert isinstance(jac["b"][1][1], float)  # d(s^2)/ds for a Python float s


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_tied_array_total_at_first_place(mode: str) -> None:
    w = RNG.standard_normal(3)

    def f(p: dict[str, Any]) -> Any:
        return p["a"] * p["b"]  # w * w: 2 w on the diagonal

    (jac,) = ad.jacobian(f, {"a": w, "b": w}, backend="jax", mode=mode)
    np.testing.assert_allclose(jac["a"], np.diag(2 * w), rtol=1e-12)
    assert jac["b"] is None


# -- hessian and hvp ------------------------------------------------------------------------


def test_hessian_against_closed_form() -> None:
    x, A = RNG.standard_normal(7), RNG.standard_normal((9, 7)) / 3
    for _ in range(2):
        ((H, HA), none) = ad.hessian(softplus, x, ad.Const(A), backend="jax")
        assert HA is None and none is None
        np.testing.assert_allclose(H, softplus_hessian(x, A), rtol=1e-12, atol=1e-13)


def test_hessian_of_a_tree_with_a_tie_and_a_python_float() -> None:
    def f(a: float, p: dict[str, Any]) -> Any:
        xp = ad.array_namespace(p["w"])
        return xp.sum(p["w"] * a) + a**2 * xp.sum(p["v"] ** 2)

    w = np.array([1.0, 2.0])
    a = 1.5
    (haa, hap), rows = ad.hessian(f, a, {"w": w, "v": w}, backend="jax")
    (hwa, hwp) = rows["w"]  # H[1]: the tree of args[1], each leaf holding its row
    # f = a sum(w) + a^2 sum(w^2), w tied: one parameter
    assert isinstance(haa, float) and haa == pytest.approx(2 * np.sum(w**2))
    np.testing.assert_allclose(hap["w"], 1 + 4 * a * w)
    np.testing.assert_allclose(hwa, 1 + 4 * a * w)
    np.testing.assert_allclose(hwp["w"], 2 * a**2 * np.eye(2))
    assert hap["v"] is None and rows["v"] is None and hwp["v"] is None


def test_hessian_float32() -> None:
    x = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    ((H,),) = ad.hessian(lambda x: ad.array_namespace(x).sum(x**3), x, backend="jax")
    assert H.dtype == np.float32
    np.testing.assert_allclose(H, np.diag(6 * x), rtol=1e-6)


def test_hvp_against_closed_form_and_into_a_duplicated_shadow() -> None:
    x, A = RNG.standard_normal(5), RNG.standard_normal((6, 5)) / 2
    v = RNG.standard_normal(5)
    want = softplus_hessian(x, A) @ v
    for _ in range(2):
        (hv, none) = ad.hvp(softplus, (x, ad.Const(A)), (v, None), backend="jax")
        assert none is None
        np.testing.assert_allclose(hv, want, rtol=1e-12)
    shadow = np.full(5, 99.0)
    (entry, _) = ad.hvp(softplus, (ad.Duplicated(x, shadow), ad.Const(A)), (v, None), backend="jax")
    assert entry is shadow
    np.testing.assert_allclose(shadow, want, rtol=1e-12)


def test_hvp_on_jax_arrays_float32() -> None:
    x = jnp.asarray([0.3, -0.4, 1.2], dtype=jnp.float32)
    v = jnp.asarray([1.0, 2.0, -1.0], dtype=jnp.float32)
    (hv,) = ad.hvp(lambda x: jnp.sum(jnp.sin(x) * x), (x,), (v,))
    assert isinstance(hv, jax.Array) and hv.dtype == jnp.float32
    xs, vs = np.asarray(x, np.float64), np.asarray(v, np.float64)
    np.testing.assert_allclose(np.asarray(hv), (2 * np.cos(xs) - xs * np.sin(xs)) * vs, rtol=1e-5)


# -- vjp ------------------------------------------------------------------------------------


def test_vjp_pullback_is_reusable_and_owns_its_values() -> None:
    x, W, b = layer_args(4, 3)
    y, pullback = ad.vjp(layer, x, ad.Const(W), ad.Const(b), backend="jax")
    np.testing.assert_allclose(y, np.tanh(W @ x + b), rtol=1e-14)
    J = layer_jacobian(x, W, b)
    x_before = x.copy()
    x[:] = 100.0  # the caller's array changes: the pullback keeps its own values
    for _ in range(3):
        u = RNG.standard_normal(3)
        gx, gW, gb = pullback(u)
        assert gW is None and gb is None
        np.testing.assert_allclose(gx, J.T @ u, rtol=1e-12)
    _, pullback2 = ad.vjp(layer, x_before, ad.Const(W), ad.Const(b), backend="jax")
    np.testing.assert_allclose(pullback2(np.ones(3))[0], J.T @ np.ones(3), rtol=1e-12)


def test_vjp_of_trees_python_floats_and_aux() -> None:
    def f(p: dict[str, Any], s: float) -> Any:
        xp = ad.array_namespace(p["w"])
        return (p["w"] * s, s**3), {"label": "aux", "n": xp.sum(p["w"])}

    p = {"w": np.array([1.0, -2.0])}
    with pytest.warns(JaxFallbackWarning, match="non-array outputs"):
        ad.vjp(f, p, 2.0, backend="jax", has_aux=True)
    for _ in range(2):
        y, pullback, aux = ad.vjp(f, p, 2.0, backend="jax", has_aux=True)
        assert aux["label"] == "aux" and float(aux["n"]) == -1.0
        np.testing.assert_allclose(y[0], [2.0, -4.0])
        gp, gs = pullback((np.array([1.0, 10.0]), 1.0))
        np.testing.assert_allclose(gp["w"], [2.0, 20.0])
        assert isinstance(gs, float) and gs == pytest.approx(1.0 - 20.0 + 12.0)


def test_vjp_of_jax_arrays() -> None:
    x = jnp.asarray([0.5, 1.5])
    y, pullback = ad.vjp(lambda x: jnp.exp(x), x)
    (g,) = pullback(jnp.asarray([1.0, 2.0]))
    assert isinstance(y, jax.Array) and isinstance(g, jax.Array)
    np.testing.assert_allclose(np.asarray(g), np.exp(np.asarray(x)) * [1.0, 2.0], rtol=1e-6)


def test_vjp_duplicated_shadow_gets_the_pullback() -> None:
    x = np.array([1.0, 2.0])
    shadow = np.zeros(2)
    _, pullback = ad.vjp(lambda x: x**2, ad.Duplicated(x, shadow), backend="jax")
    assert pullback(np.array([1.0, 1.0]))[0] is shadow
    np.testing.assert_allclose(shadow, [2.0, 4.0])


# -- jvp and derivative ------------------------------------------------------------------


def test_jvp_against_closed_form_and_repeated() -> None:
    x, W, b = layer_args(5, 4)
    J = layer_jacobian(x, W, b)
    for _ in range(3):
        v = RNG.standard_normal(5)
        y, t = ad.jvp(layer, (x, ad.Const(W), ad.Const(b)), (v, None, None), backend="jax")
        np.testing.assert_allclose(y, np.tanh(W @ x + b), rtol=1e-14)
        np.testing.assert_allclose(t, J @ v, rtol=1e-12)


def test_jvp_of_a_tree_with_a_python_float() -> None:
    p = {"w": np.array([0.3, 0.6])}
    _, t = ad.jvp(
        lambda p, s: ad.array_namespace(p["w"]).sin(p["w"]) * s**2,
        (p, 1.5),
        ({"w": np.array([1.0, 0.0])}, 1.0),
        backend="jax",
    )
    w = p["w"]
    np.testing.assert_allclose(t, np.cos(w) * [1.0, 0.0] * 1.5**2 + np.sin(w) * 2 * 1.5)


def test_jvp_float32_and_derivative() -> None:
    x = np.array([1.0, 2.0], dtype=np.float32)
    _, t = ad.jvp(lambda x: x**3, (x,), (np.ones(2, np.float32),), backend="jax")
    assert t.dtype == np.float32
    np.testing.assert_allclose(t, 3 * x**2, rtol=1e-6)
    d = ad.derivative(lambda s, a: a * s**3, 2.0, np.array([1.0, -1.0]), backend="jax")
    np.testing.assert_allclose(d, [12.0, -12.0])


def test_derivative_and_jacobian_of_a_constant_python_float_output() -> None:
    # The programs of these calls return no outputs (only their shapes are needed, so
    # the non-array output costs no eager call): a Python float among them still gets a
    # Python float derivative, as on the tape.
    W = np.arange(6.0).reshape(2, 3)

    def f(t: Any, W: Any) -> dict[str, Any]:
        return {"y": W @ (t * np.ones(3)), "c": 1.0}

    d = ad.derivative(f, 2.0, W, backend="jax")
    np.testing.assert_allclose(d["y"], W.sum(axis=1))
    assert type(d["c"]) is float and d["c"] == 0.0
    (dc,) = ad.jacobian(lambda x: {"c": 1.0, "y": W @ x}, np.ones(3), backend="jax")["c"]
    assert dc.shape == (3,) and not dc.any()


# -- equinox ----------------------------------------------------------------------------


def test_equinox_module_operators_match_jax() -> None:
    eqx = pytest.importorskip("equinox")
    model = eqx.nn.MLP(3, 2, 4, 1, key=jax.random.PRNGKey(0))
    params, static = eqx.partition(model, eqx.is_inexact_array)
    x = jnp.asarray([0.2, -0.5, 1.0])

    def out(p: Any) -> Any:
        return eqx.combine(p, static)(x)

    (jac, _) = ad.jacobian(lambda m, x: m(x), model, ad.Const(x))
    assert type(jac) is type(model)
    want = jax.jacrev(out)(params)
    assert len(jax.tree.leaves(jac)) == len(jax.tree.leaves(want)) > 0
    for got, expected in zip(jax.tree.leaves(jac), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-5, atol=1e-6)
    tangent = jax.tree.map(jnp.ones_like, params)  # None at the static leaves
    (hv, _) = ad.hvp(lambda m, x: jnp.sum(m(x) ** 2), (model, ad.Const(x)), (tangent, None))
    want_hv = jax.jvp(jax.grad(lambda p: jnp.sum(out(p) ** 2)), (params,), (tangent,))[1]
    assert type(hv) is type(model)
    for got, expected in zip(jax.tree.leaves(hv), jax.tree.leaves(want_hv)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-4, atol=1e-5)
    _, t = ad.jvp(lambda m, x: m(x), (model, ad.Const(x)), (tangent, None))
    np.testing.assert_allclose(
        np.asarray(t), np.asarray(jax.jvp(out, (params,), (tangent,))[1]), rtol=1e-5
    )


# -- nested: an operator inside a gradient ---------------------------------------------------


def test_jacobian_inside_a_gradient() -> None:
    def outer(x: Any) -> Any:
        xp = ad.array_namespace(x)
        (J,) = ad.jacobian(lambda y: xp.sin(y) * y[0], x)
        return xp.sum(J**2)

    def outer_numpy(x: np.ndarray) -> float:
        J = np.diag(np.cos(x) * x[0])
        J[:, 0] += np.sin(x)
        return float(np.sum(J**2))

    x = np.array([0.3, 0.7, -0.2])
    for _ in range(2):
        (g,) = ad.gradient(outer, x, backend="jax")
        np.testing.assert_allclose(g, central_fd(outer_numpy, x), rtol=1e-7)


def test_vjp_jvp_hvp_hessian_inside_a_gradient() -> None:
    x = np.array([0.4, -1.1])

    def through_vjp(x: Any) -> Any:
        xp = ad.array_namespace(x)
        y, pullback = ad.vjp(lambda y: xp.sin(y), x)
        return xp.sum(pullback(xp.ones_like(y))[0] * x)  # sum(x cos x)

    def through_jvp(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(ad.jvp(lambda y: xp.sin(y), (x,), (x,))[1])  # sum(x cos x)

    def through_hvp(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(ad.hvp(lambda y: xp.sum(y**4), (x,), (x,))[0])  # sum(12 x^3)

    def through_hessian(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(ad.hessian(lambda y: xp.sum(y**4), x)[0][0])  # sum(12 x^2)

    np.testing.assert_allclose(
        ad.gradient(through_vjp, x, backend="jax")[0], np.cos(x) - x * np.sin(x)
    )
    np.testing.assert_allclose(
        ad.gradient(through_jvp, x, backend="jax")[0], np.cos(x) - x * np.sin(x)
    )
    np.testing.assert_allclose(ad.gradient(through_hvp, x, backend="jax")[0], 36 * x**2)
    np.testing.assert_allclose(ad.gradient(through_hessian, x, backend="jax")[0], 24 * x)


def test_operators_inside_the_users_own_jax_transformations() -> None:
    def inner_jacobian_trace(x: Any) -> Any:
        (J,) = ad.jacobian(lambda y: y**3, x, backend="jax")
        return jnp.trace(J)  # 3 sum(x^2)

    x = jnp.asarray([1.0, 2.0])
    np.testing.assert_allclose(np.asarray(jax.grad(inner_jacobian_trace)(x)), 6 * np.asarray(x))
    np.testing.assert_allclose(np.asarray(jax.jit(inner_jacobian_trace)(x)), 15.0)


# -- fallbacks and refusals -----------------------------------------------------------------


def branchy(x: Any) -> Any:
    xp = ad.array_namespace(x)
    if xp.sum(x) > 0:  # a Python branch on a value: jit cannot trace it
        return x**2
    return -x


@pytest.mark.filterwarnings("error::adswitch_jax.notices.JaxFallbackWarning")
@pytest.mark.parametrize(
    "operator",
    ["jacobian_reverse", "jacobian_forward", "vjp", "jvp", "hessian", "hvp"],
)
def test_untraceable_function_runs_eagerly_warned_once(operator: str) -> None:
    x = np.array([1.0, 2.0])
    calls = {
        "jacobian_reverse": lambda: ad.jacobian(branchy, x, backend="jax", mode="reverse")[0],
        "jacobian_forward": lambda: ad.jacobian(branchy, x, backend="jax", mode="forward")[0],
        "vjp": lambda: np.diag(ad.vjp(branchy, x, backend="jax")[1](np.ones(2))[0]),
        "jvp": lambda: np.diag(ad.jvp(branchy, (x,), (np.ones(2),), backend="jax")[1]),
        "hessian": lambda: ad.hessian(lambda x: branchy(x).sum(), x, backend="jax")[0][0] * x,
        "hvp": lambda: np.diag(
            ad.hvp(lambda x: branchy(x).sum(), (x,), (np.ones(2),), backend="jax")[0] * x
        ),
    }
    with pytest.warns(JaxFallbackWarning, match="cannot be compiled"):
        first = calls[operator]()
    np.testing.assert_allclose(first, np.diag(2 * x))
    second = calls[operator]()  # no second warning (the filter would make it an error)
    np.testing.assert_allclose(second, np.diag(2 * x))


def writes_in_place(x: Any) -> Any:
    x[0] = 1.0
    return x * 2


@pytest.mark.parametrize("operator", ["jacobian", "jvp", "vjp", "hessian", "hvp"])
def test_in_place_writes_are_a_mutation_error(operator: str) -> None:
    x = np.ones(2)
    calls = {
        "jacobian": lambda: ad.jacobian(writes_in_place, x, backend="jax"),
        "jvp": lambda: ad.jvp(writes_in_place, (x,), (x,), backend="jax"),
        "vjp": lambda: ad.vjp(writes_in_place, x, backend="jax"),
        "hessian": lambda: ad.hessian(lambda x: writes_in_place(x).sum(), x, backend="jax"),
        "hvp": lambda: ad.hvp(lambda x: writes_in_place(x).sum(), (x,), (x,), backend="jax"),
    }
    with pytest.raises(MutationError, match=r"x\.at\[idx\]\.set"):
        calls[operator]()
    np.testing.assert_array_equal(x, [1.0, 1.0])  # untouched


def test_in_place_operator_on_a_numpy_argument_is_a_mutation_error() -> None:
    def f(x: Any) -> Any:
        x *= 2
        return x

    with pytest.raises(MutationError, match="in-place operator"):
        ad.jacobian(f, np.ones(2), backend="jax")
