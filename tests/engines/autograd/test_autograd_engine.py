"""The autograd engine through adswitch: leaves, outputs, nesting, against independent oracles
(closed forms and central finite differences -- never autograd against itself)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd

pytest.importorskip("autograd")

import adswitch as ad
from adswitch.spec import CallInfo

B = "autograd"


def backend() -> Any:
    from adswitch_autograd.plugin import AutogradBackend

    return AutogradBackend()


def test_direct_call_returns_total_gradient_per_leaf_and_concrete_outputs() -> None:
    import autograd.numpy as anp

    x, w = np.array([0.5, -1.0, 2.0]), 3.0

    def fn(leaves: list[Any]) -> tuple[Any, list[Any]]:
        a, b, label = leaves
        y = anp.sin(a) * b
        loss = anp.sum(y * a)
        return loss, [loss, y, label]

    outs, grads = backend().value_and_grad(fn, [x, w, "tag"], [True, True, False], CallInfo())
    np.testing.assert_allclose(outs[0], np.sum(np.sin(x) * w * x))
    assert type(outs[1]) is np.ndarray and outs[2] == "tag"
    np.testing.assert_allclose(grads[0], w * (np.cos(x) * x + np.sin(x)))
    assert type(grads[1]) is float and grads[1] == pytest.approx(np.sum(np.sin(x) * x))
    assert grads[2] is None


def test_unused_leaves_get_zeros_of_their_kind() -> None:
    x, unused, scalar = np.ones(2), np.ones((2, 2), dtype=np.float32), 1.5
    (gx, gu, gs) = ad.gradient(lambda a, b, c: ad.array_namespace(a).sum(a), x, unused, scalar,
                               backend=B)  # fmt: skip
    np.testing.assert_array_equal(gx, [1.0, 1.0])
    assert gu.dtype == np.float32 and gu.shape == (2, 2) and not gu.any()
    assert gs == 0.0 and type(gs) is float


def test_constant_loss_gives_zero_gradients() -> None:
    (g,) = ad.gradient(lambda a: 2.0, np.ones(3), backend=B)
    np.testing.assert_array_equal(g, np.zeros(3))


def test_float_leaves_give_python_floats() -> None:
    def f(a: float, b: float) -> Any:
        return a**2 * b + np.float64(1.0) * b

    ga, gb = ad.gradient(f, 3.0, 2.0, backend=B)
    assert type(ga) is float and type(gb) is float
    assert (ga, gb) == pytest.approx((12.0, 10.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_and_kind_preserved(dtype: Any) -> None:
    x = np.linspace(0.1, 1.0, 6, dtype=dtype).reshape(2, 3)

    def f(a: Any) -> Any:
        xp = ad.array_namespace(a)
        return xp.sum(xp.exp(a) * 0.5)  # a Python float constant must not promote

    (g,) = ad.gradient(f, x, backend=B)
    assert type(g) is np.ndarray and g.dtype == dtype and g.shape == (2, 3)
    np.testing.assert_allclose(g, 0.5 * np.exp(x), rtol=1e-6)


def test_gradients_are_fresh_writable_arrays() -> None:
    x = np.ones(4)
    (g,) = ad.gradient(lambda a: ad.array_namespace(a).sum(a), x, backend=B)
    assert g.flags.writeable and g.flags.owndata and not np.shares_memory(g, x)
    g += 1.0  # a broadcast view from autograd's sum rule would refuse this


def test_tied_array_gets_total_gradient_at_first_position() -> None:
    w = np.array([1.0, 2.0])
    model = {"enc": w, "dec": w, "bias": np.array([0.5, 0.5])}

    def f(m: dict[str, Any]) -> Any:
        xp = ad.array_namespace(m["enc"])
        return xp.sum(m["enc"] * m["dec"] + m["bias"] * m["dec"])

    (g,) = ad.gradient(f, model, backend=B)
    # the total sits at the first position in flatten order, None at the other
    first, later = ("dec", "enc") if g["enc"] is None else ("enc", "dec")
    assert g[later] is None
    np.testing.assert_allclose(g[first], 2 * w + model["bias"])
    np.testing.assert_allclose(g["bias"], w)


def test_duplicated_shadow_accumulates() -> None:
    x = np.array([1.0, 2.0])
    dup = ad.Duplicated(x, np.ones(2))
    g = ad.gradient(lambda a: ad.array_namespace(a).sum(a**2), dup, backend=B, zero=False)
    assert g[0] is dup.dval
    np.testing.assert_allclose(dup.dval, 1.0 + 2 * x)


def test_aux_outputs_are_concrete_numpy() -> None:
    class Out(NamedTuple):
        loss: Any
        hidden: Any
        note: str

    def f(a: Any) -> Out:
        xp = ad.array_namespace(a)
        h = xp.tanh(a)
        return Out(xp.sum(h), h, "ok")

    val, (g,) = ad.withgradient(f, np.array([0.1, 0.2]), backend=B)
    assert type(val.hidden) is np.ndarray and val.note == "ok"
    np.testing.assert_allclose(val.hidden, np.tanh([0.1, 0.2]))
    np.testing.assert_allclose(g, 1 - np.tanh([0.1, 0.2]) ** 2)


def test_user_exception_passes_unchanged_and_shadow_is_kept() -> None:
    class Boom(Exception):
        pass

    dup = ad.Duplicated(np.ones(2), np.full(2, 7.0))

    def f(a: Any) -> Any:
        raise Boom("mine")

    with pytest.raises(Boom, match="mine"):
        ad.gradient(f, dup, backend=B)
    np.testing.assert_array_equal(dup.dval, [7.0, 7.0])


# ---- nesting: second order, Hessian-vector products, deeper ------------------------------


def test_second_order_closed_form() -> None:
    x = np.array([0.3, -0.7, 1.1])

    def outer(a: Any) -> Any:
        xp = ad.array_namespace(a)
        (g,) = ad.gradient(lambda y: xp.sum(xp.sin(y) * y), a)  # g = cos(y) y + sin(y)
        return xp.sum(g**2)

    (got,) = ad.gradient(outer, x, backend=B)
    g = np.cos(x) * x + np.sin(x)
    dg = 2 * np.cos(x) - np.sin(x) * x
    np.testing.assert_allclose(got, 2 * g * dg, rtol=1e-10)


def test_hessian_vector_product_closed_form() -> None:
    rng = np.random.default_rng(3)
    A = rng.standard_normal((4, 4))
    A = A + A.T
    x, v = rng.standard_normal(4), rng.standard_normal(4)

    def gv(a: Any) -> Any:
        xp = ad.array_namespace(a)
        # f = 1/2 x^T A x + sum(x^4)/4 ; H = A + diag(3 x^2)
        (g,) = ad.gradient(lambda y: 0.5 * y @ A @ y + xp.sum(y**4) / 4, a)
        return xp.sum(g * v)

    (hv,) = ad.gradient(gv, x, backend=B)
    np.testing.assert_allclose(hv, A @ v + 3 * x**2 * v, rtol=1e-10)


def test_third_order_of_a_float() -> None:
    def d(f: Any) -> Any:
        return lambda t: ad.gradient(f, t)[0]

    (got,) = ad.gradient(d(d(lambda t: t**5)), 1.5, backend=B)  # d^3 t^5 = 60 t^2
    assert got == pytest.approx(60 * 1.5**2)


def test_inner_gradient_with_const_outer_value() -> None:
    w = np.array([0.2, 0.4])

    def outer(a: Any) -> Any:
        xp = ad.array_namespace(a)
        # inner: d/dy sum(y * y * c) with c = a held Const => 2 y c
        (gy, gc) = ad.gradient(lambda y, c: xp.sum(y * y * c), a, ad.Const(a * 1.0))
        assert gc is None
        return xp.sum(gy)  # = sum(2 a a) => d/da = 4 a

    (got,) = ad.gradient(outer, w, backend=B)
    np.testing.assert_allclose(got, 4 * w)


def test_seed_000_loss_on_input_gradient_of_two_branch_network() -> None:
    """Seed 000: a loss on d/du of a two-branch network with a tuple input, against FD."""
    rng = np.random.default_rng(0)
    params = {
        "Wu": rng.standard_normal((2, 5)) * 0.5,
        "Wt": rng.standard_normal((1, 5)) * 0.5,
        "b": rng.standard_normal(5) * 0.1,
    }
    u, t = rng.standard_normal((7, 2)), rng.standard_normal((7, 1))
    targets = rng.standard_normal((7, 2))

    def net(p: dict[str, Any], inputs: tuple[Any, Any], xp: Any) -> Any:
        uu, tt = inputs
        # relu is not smooth; softplus keeps finite differences meaningful
        h = xp.logaddexp(0.0, uu @ p["Wu"] + p["b"]) + xp.logaddexp(0.0, tt @ p["Wt"])
        return h

    def loss(p: dict[str, Any], xp: Any, grad_u: Any) -> Any:
        g = grad_u(p)
        return xp.mean((g - targets) ** 2)

    def grad_u_ad(p: dict[str, Any]) -> Any:
        xp = ad.array_namespace(p["Wu"])
        return ad.gradient(lambda uu: xp.sum(net(p, (uu, t), xp)), u)[0]

    (got,) = ad.gradient(lambda p: loss(p, ad.array_namespace(p["Wu"]), grad_u_ad), params,
                         backend=B)  # fmt: skip

    def grad_u_closed(p: dict[str, Any]) -> np.ndarray:
        z = u @ p["Wu"] + p["b"]
        sigmoid: np.ndarray = 1 / (1 + np.exp(-z))
        out: np.ndarray = sigmoid @ p["Wu"].T
        return out

    for key, value in params.items():

        def scalar(v: np.ndarray, key: str = key) -> float:
            return float(loss({**params, key: v}, np, grad_u_closed))

        np.testing.assert_allclose(got[key], central_fd(scalar, value), rtol=1e-5, atol=1e-8)


def test_nested_call_mutation_is_refused_at_the_inner_level() -> None:
    from adswitch.errors import MutationError

    def outer(a: Any) -> Any:
        def inner(y: Any) -> Any:
            y[0] = 1.0
            return ad.array_namespace(y).sum(y)

        return ad.gradient(inner, a)[0].sum()

    with pytest.raises(MutationError, match="autograd"):
        ad.gradient(outer, np.ones(2), backend=B)


def test_concurrent_nested_gradients_in_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    def second_derivative(k: float) -> float:
        def outer(t: float) -> Any:
            return ad.gradient(lambda s: s**3 * k, t)[0]

        return float(ad.gradient(outer, 2.0, backend=B)[0])  # d2/dt2 k t^3 = 6 k t

    ks = [float(k) for k in range(1, 41)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(second_derivative, ks))
    assert got == pytest.approx([12.0 * k for k in ks])


# ---- the seeds' models on this engine ---------------------------------------------------


def test_seed_001_destructure_of_tied_model_is_differentiable() -> None:
    from dataclasses import dataclass

    @dataclass
    class Dense:
        W: Any
        b: Any

        def __call__(self, x: Any) -> Any:
            return x @ self.W + self.b

    @dataclass
    class Model:
        a: Dense
        b: Dense

        def __call__(self, x: Any) -> Any:
            return self.a(x) + self.b(x)

    d = Dense(np.array([[0.7]]), np.array([0.2]))
    model = Model(d, d)  # shared parameters: 2 unique, not 4
    x = np.array([[0.3], [1.5]])
    flat, rebuild = ad.destructure(model)
    assert flat.shape == (2,)

    def loss(v: Any) -> Any:
        return ad.array_namespace(v).sum(rebuild(v)(x))

    (g,) = ad.gradient(loss, flat, backend=B)
    # sum(2 (x W + b)) -> dW = 2 sum(x), db = 2 * rows
    np.testing.assert_allclose(np.sort(g), np.sort([2 * x.sum(), 2.0 * len(x)]))
    np.testing.assert_allclose(g, central_fd(lambda v: float(np.sum(rebuild(v)(x))), flat))


def test_seed_002_duplicated_callable_layernorm() -> None:
    from dataclasses import dataclass

    @dataclass
    class LayerNorm:
        scale: Any
        shift: Any

        def __call__(self, x: Any) -> Any:
            xp = ad.array_namespace(x, self.scale)
            mu = xp.mean(x, axis=-1, keepdims=True)
            sd = xp.std(x, axis=-1, keepdims=True)
            return (x - mu) / (sd + 1e-5) * self.scale + self.shift

    @dataclass
    class SumOf:
        layer: LayerNorm

        def __call__(self, x: Any) -> Any:
            return ad.array_namespace(x, self.layer.scale).sum(self.layer(x) ** 3)

    rng = np.random.default_rng(4)
    model = SumOf(LayerNorm(rng.uniform(0.5, 1.5, 3), rng.uniform(-0.5, 0.5, 3)))
    x = rng.standard_normal((2, 3))
    dup = ad.Duplicated(model)
    g = ad.gradient(lambda m, x: m(x), dup, ad.Const(x), backend=B)
    assert g[0] is dup.dval and g[1] is None
    for name in ("scale", "shift"):
        value = getattr(model.layer, name)

        def scalar(v: np.ndarray, name: str = name) -> float:
            layer = LayerNorm(**{**vars(model.layer), name: v})
            return float(SumOf(layer)(x))

        np.testing.assert_allclose(
            getattr(dup.dval.layer, name), central_fd(scalar, value), rtol=1e-5
        )
