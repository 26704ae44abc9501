"""adswitch's torch engine called inside torch's own functional transforms (issue 23):
``torch.func.grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``vmap``, ``jacrev``,
``jacfwd``, ``hessian`` around every operator, with ``functional_call`` modules, ``Const``,
trees and aux outputs. Oracles: the same computation written with ``torch.func`` directly
(the engine's own idiom), closed forms, and central finite differences for per-sample
gradients -- never adswitch against itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch: Any = pytest.importorskip("torch")

from adswitch_torch import TorchBackend  # noqa: E402

import adswitch as ad  # noqa: E402
from adswitch.errors import MutationError, UnsupportedError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*torch.jit.script.*:DeprecationWarning")
F = torch.func
TOL: dict[str, Any] = dict(rtol=1e-10, atol=1e-12)
X = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64)
XB = torch.tensor(np.random.default_rng(3).standard_normal((4, 3)))
V = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)


def loss(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * x)


def t_loss(x: Any) -> Any:
    return (torch.sin(x) * x).sum()


def vec(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sin(x) * x[0]


def t_vec(x: Any) -> Any:
    return torch.sin(x) * x[0]


def close(a: Any, b: Any) -> None:
    torch.testing.assert_close(a, b, **TOL)


def test_grad_of_gradient() -> None:
    got = F.grad(lambda x: (ad.gradient(loss, x, backend="torch")[0] ** 2).sum())(X)
    close(got, F.grad(lambda x: (F.grad(t_loss)(x) ** 2).sum())(X))
    # closed form: g = sin x + x cos x, d(g^2)/dx = 2 g (2 cos x - x sin x)
    g = torch.sin(X) + X * torch.cos(X)
    close(got, 2 * g * (2 * torch.cos(X) - X * torch.sin(X)))


def test_grad_and_value_of_withgradient() -> None:
    def f(x: Any) -> Any:
        val, (g,) = ad.withgradient(loss, x, backend="torch")
        return (g * x).sum(), val

    def oracle(x: Any) -> Any:
        g, val = F.grad_and_value(t_loss)(x)
        return (g * x).sum(), val

    (g1, v1), (g2, v2) = (
        F.grad_and_value(f, has_aux=True)(X),
        F.grad_and_value(oracle, has_aux=True)(X),
    )
    close(g1, g2)
    close(v1, v2)


def test_per_sample_gradients_of_a_module_with_functional_call() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)
    ).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs = torch.randn(6, 4, dtype=torch.float64)
    ys = torch.randn(6, 1, dtype=torch.float64)

    def sample_loss(p: Any, x: Any, y: Any) -> Any:
        return ((F.functional_call(model, p, (x[None],)) - y[None]) ** 2).mean()

    def per_sample(x: Any, y: Any) -> Any:
        return ad.gradient(sample_loss, params, ad.Const(x), ad.Const(y), backend="torch")[0]

    got = F.vmap(per_sample)(xs, ys)
    want = F.vmap(F.grad(sample_loss), in_dims=(None, 0, 0))(params, xs, ys)
    assert set(got) == set(want)
    for k in want:
        close(got[k], want[k])
    # the module itself as the tree, and finite differences for one sample's bias
    by_module = F.vmap(
        lambda x, y: dict(
            ad.gradient(
                lambda m, x, y: ((m(x[None]) - y[None]) ** 2).mean(),
                model,
                ad.Const(x),
                ad.Const(y),
                backend="torch",
            )[0]
        )
    )(xs, ys)
    for k in want:
        close(by_module[k], want[k])
    b, h = params["2.bias"], 1e-6
    up = sample_loss({**params, "2.bias": b + h}, xs[2], ys[2])
    down = sample_loss({**params, "2.bias": b - h}, xs[2], ys[2])
    torch.testing.assert_close(
        got["2.bias"][2], ((up - down) / (2 * h)).reshape(1), rtol=1e-6, atol=1e-8
    )


@pytest.mark.parametrize("outer", ["jacrev", "jacfwd", "hessian"])
def test_jacobian_transforms_of_gradient(outer: str) -> None:
    transform = getattr(F, outer)
    if outer == "hessian":  # third derivatives: hessian of a loss on the gradient
        got = transform(lambda x: (ad.gradient(loss, x, backend="torch")[0] ** 2).sum())(X)
        want = transform(lambda x: (F.grad(t_loss)(x) ** 2).sum())(X)
    else:
        got = transform(lambda x: ad.gradient(loss, x, backend="torch")[0])(X)
        want = F.hessian(t_loss)(X)
    close(got, want)


def test_vjp_and_pullback_under_vjp_and_vmap() -> None:
    def pulled(x: Any) -> Any:
        y, pullback = ad.vjp(vec, x, backend="torch")
        return pullback(V)[0] * y.sum()

    def oracle(x: Any) -> Any:
        y, pullback = F.vjp(t_vec, x)
        return pullback(V)[0] * y.sum()

    close(F.vjp(pulled, X)[1](V)[0], F.vjp(oracle, X)[1](V)[0])
    close(F.vmap(pulled)(XB), F.vmap(oracle)(XB))


def test_jvp_under_jvp_and_vmap() -> None:
    def pushed(x: Any) -> Any:
        return ad.jvp(vec, (x,), (V,), backend="torch")[1]

    def oracle(x: Any) -> Any:
        return F.jvp(t_vec, (x,), (V,))[1]

    close(F.jvp(pushed, (X,), (V,))[1], F.jvp(oracle, (X,), (V,))[1])
    close(F.vmap(pushed)(XB), F.vmap(oracle)(XB))
    close(F.jacrev(pushed)(X), F.jacrev(oracle)(X))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_jacobian_both_modes_under_vmap_and_grad(mode: str) -> None:
    def jac(x: Any) -> Any:
        return ad.jacobian(vec, x, backend="torch", mode=mode)[0]

    close(F.vmap(jac)(XB), F.vmap(F.jacrev(t_vec))(XB))
    close(
        F.grad(lambda x: (jac(x) ** 2).sum())(X),
        F.grad(lambda x: (F.jacfwd(t_vec)(x) ** 2).sum())(X),
    )


def test_hessian_and_hvp_under_vmap_and_grad() -> None:
    close(
        F.vmap(lambda x: ad.hessian(loss, x, backend="torch")[0][0])(XB),
        F.vmap(F.hessian(t_loss))(XB),
    )
    close(
        F.grad(lambda x: ad.hessian(loss, x, backend="torch")[0][0].sum())(X),
        F.grad(lambda x: F.hessian(t_loss)(x).sum())(X),
    )
    close(
        F.vmap(lambda x: ad.hvp(loss, (x,), (V,), backend="torch")[0])(XB),
        F.vmap(lambda x: F.jvp(F.grad(t_loss), (x,), (V,))[1])(XB),
    )


def test_derivative_under_vmap_and_grad() -> None:
    t0 = torch.tensor(0.7, dtype=torch.float64)

    def curve(t: Any, x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sin(t * x)

    def deriv(x: Any) -> Any:
        return ad.derivative(curve, t0, x, backend="torch")

    def oracle(x: Any) -> Any:
        return F.jacfwd(lambda t: torch.sin(t * x))(t0)

    close(F.vmap(deriv)(XB), F.vmap(oracle)(XB))
    close(F.grad(lambda x: deriv(x).sum())(X), F.grad(lambda x: oracle(x).sum())(X))


def test_const_trees_and_aux_are_kept() -> None:
    c_np = np.array([1.0, 2.0, 3.0])

    def f(p: Any, c: Any, scale: Any) -> Any:
        xp = ad.array_namespace(p["a"])
        value = xp.sum(p["a"] * c * xp.asarray(scale)) + xp.sum(p["b"] ** 3)
        return value, {"twice": 2 * value, "tag": "kept"}

    def per_row(c: Any) -> Any:
        (val, aux), (g, gc, gs) = ad.withgradient(
            f, {"a": X, "b": V}, ad.Const(c), ad.Const(c_np), backend="torch"
        )
        assert gc is None and gs is None and aux["tag"] == "kept"
        return val, aux["twice"], g["a"], g["b"]

    val, twice, ga, gb = F.vmap(per_row)(XB)

    def t_f(a: Any, b: Any, c: Any) -> Any:
        return (a * c * torch.from_numpy(c_np)).sum() + (b**3).sum()

    close(val, F.vmap(lambda c: t_f(X, V, c))(XB))
    close(twice, 2 * val)
    close(ga, F.vmap(F.grad(t_f, argnums=0), in_dims=(None, None, 0))(X, V, XB))
    close(gb, F.vmap(F.grad(t_f, argnums=1), in_dims=(None, None, 0))(X, V, XB))

    def with_aux(x: Any) -> Any:
        jac, aux = ad.jacobian(lambda x: (vec(x), x.sum()), x, backend="torch", has_aux=True)
        return jac[0], aux

    jac, aux = F.vmap(with_aux)(XB)
    close(jac, F.vmap(F.jacrev(t_vec))(XB))
    close(aux, XB.sum(1))


def test_prepared_call_under_vmap_and_grad() -> None:
    prepared = ad.prepare(ad.gradient, loss, X, backend="torch")
    close(F.vmap(lambda x: prepared(x)[0])(XB), F.vmap(F.grad(t_loss))(XB))
    close(F.grad(lambda x: prepared(x)[0].sum())(X), F.grad(lambda x: F.grad(t_loss)(x).sum())(X))


def test_adswitch_outside_torch_func_inside() -> None:
    def f(xb: Any) -> Any:
        return F.vmap(lambda r: ad.gradient(loss, r, backend="torch")[0])(xb).sum()

    got = ad.gradient(f, XB, backend="torch")[0]
    close(got, F.grad(lambda xb: F.vmap(F.grad(t_loss))(xb).sum())(XB))
    nested = F.vmap(
        lambda x: ad.gradient(lambda x: ad.gradient(loss, x)[0].sum(), x, backend="torch")[0]
    )
    close(nested(XB), F.vmap(F.grad(lambda x: F.grad(t_loss)(x).sum()))(XB))


def test_write_into_argument_is_a_mutation_error() -> None:
    def writes(x: Any) -> Any:
        x[0] = 1.0
        return (x**2).sum()

    with pytest.raises(MutationError, match="in-place write"):
        F.grad(lambda x: ad.gradient(writes, x, backend="torch")[0].sum())(X)


def test_float_conversion_is_refused() -> None:
    with pytest.raises(UnsupportedError, match="float"):
        F.grad(lambda x: ad.gradient(lambda x: float(x[0]) * x.sum(), x, backend="torch")[0].sum())(
            X
        )


def test_copy_saved_engine_names_the_transform() -> None:
    with pytest.raises(UnsupportedError, match=r"torch\.func\.vmap.*Fix"):
        F.vmap(lambda x: ad.gradient(loss, x, backend=TorchBackend(copy_saved=True))[0])(XB)


def test_custom_vjp_inside_a_transform_is_right_or_refused() -> None:
    @ad.custom_vjp
    def halved(x: Any) -> Any:
        return x * 1.0

    halved.defvjp(lambda x: (x * 1.0, None), lambda res, g: (g * 0.5,))

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(halved(x) ** 2)

    try:
        got = F.vmap(lambda x: ad.gradient(f, x, backend="torch")[0])(XB)
    except UnsupportedError as exc:  # torch cannot run the rule's Function there
        assert "torch.func" in str(exc) and "Fix" in str(exc)
    else:
        close(got, XB)  # the rule halves 2x


def test_write_into_a_const_is_a_mutation_error() -> None:
    def writes_const(x: Any, c: Any) -> Any:
        c[0] = 1.0
        return (c * x).sum()

    with pytest.raises(MutationError, match=r"Const.*torch\.func\.vmap.*Fix"):
        F.vmap(lambda c: ad.gradient(writes_const, X, ad.Const(c), backend="torch")[0])(XB)


@pytest.mark.parametrize("outer", ["jacfwd", "jacrev"])
def test_exact_power_at_a_zero_exponent_under_forward_and_reverse(outer: str) -> None:
    # d/de of d/db sum(b**e) = b**(e-1) (1 + e log b): 1/b at e = 0. torch's own pow
    # masks its base derivative at e == 0, so torch.func.jacfwd of torch.func.grad gives 0;
    # adswitch's exact power must hold under the caller's transform too.
    b = torch.tensor([0.5, 2.0, 3.0], dtype=torch.float64)

    def slope(e: Any) -> Any:
        return ad.gradient(lambda b_: (b_**e).sum(), b, backend="torch")[0]

    close(getattr(F, outer)(slope)(torch.tensor(0.0, dtype=torch.float64)), 1 / b)


def test_float_conversion_under_a_jvp_is_refused() -> None:
    # under torch.func.jvp a value carries functorch's tangent without requiring grad
    with pytest.raises(UnsupportedError, match="float"):
        F.jacfwd(lambda x: ad.gradient(lambda z: float(x[0]) * z.sum(), x, backend="torch")[0])(X)
    with pytest.raises(UnsupportedError, match="float"):
        F.grad(lambda x: ad.jvp(lambda z: float(z[0]) * z, (x,), (V,), backend="torch")[1].sum())(X)


def test_numpy_and_float_leaves_come_back_in_their_kinds() -> None:
    c = np.array([1.0, 2.0, 3.0])

    def f(x: Any, c: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x * xp.asarray(c) ** 2)

    def row(x: Any) -> Any:
        gx, gc = ad.gradient(f, x, c, backend="torch")
        return gx, torch.as_tensor(gc) * x  # gc: d/dc = 2 c x, batched with x

    gx, gc = F.vmap(row)(XB)
    close(gx, torch.from_numpy(c**2).expand(4, 3))
    close(gc, 2 * torch.from_numpy(c) * XB**2)
    # a leaf the transform does not touch: its gradient is the caller's kind
    kinds = []

    def plain(x: Any) -> Any:
        (g,) = ad.gradient(lambda a: a**3, 2.0, backend="torch")
        (h,) = ad.gradient(lambda z: (z**2).sum(), c, backend="torch")
        kinds.append((type(g), type(h)))
        return x * g + x * torch.from_numpy(h)

    close(F.vmap(plain)(XB), XB * 12.0 + XB * torch.from_numpy(2 * c))
    assert kinds == [(float, np.ndarray)]


def test_empty_batches_and_zero_sized_arguments() -> None:
    def fwd(x: Any) -> Any:
        return ad.jacobian(lambda z: z.sum() * x, x[:0], backend="torch", mode="forward")[0]

    assert F.vmap(fwd)(XB).shape == (4, 3, 0)
    rev = F.vmap(lambda x: ad.jacobian(lambda z: z[:0], x, backend="torch", mode="reverse")[0])
    assert rev(XB).shape == (4, 0, 3)


def test_kink_rules_hold_under_the_callers_transforms() -> None:
    # sqrt at 0: the slope is +inf, and a zero tangent contributes exactly 0 (torch's own
    # rule gives 0 * inf = nan off the diagonal); clip at its bounds: 1/2.
    x = torch.tensor([0.0, 1.0, 4.0], dtype=torch.float64)
    inf = float("inf")

    def sqrt(z: Any) -> Any:
        return ad.array_namespace(z).sqrt(z)

    def jac(z: Any) -> Any:
        return ad.jacobian(sqrt, z, backend="torch", mode="forward")[0]

    close(F.vmap(jac)(x[None])[0], torch.diag(torch.tensor([inf, 0.5, 0.25], dtype=torch.float64)))
    ones = torch.ones(3, dtype=torch.float64)
    second = F.jacfwd(lambda z: ad.jvp(sqrt, (z,), (ones,), backend="torch")[1])(x)
    close(second, torch.diag(torch.tensor([-inf, -0.25, -1 / 32], dtype=torch.float64)))

    def clipped(z: Any) -> Any:
        return ad.jacobian(
            lambda u: ad.array_namespace(u).clip(u, -1.0, 1.0), z, backend="torch", mode="forward"
        )[0]

    bounds = torch.tensor([[-1.0, 1.0, 0.5]], dtype=torch.float64)
    close(
        F.vmap(clipped)(bounds)[0], torch.diag(torch.tensor([0.5, 0.5, 1.0], dtype=torch.float64))
    )


def test_python_float_leaf_under_vmap_keeps_the_batched_gradient() -> None:
    # The front end gives a Python-float leaf's gradient back as a float -- except inside
    # the engine's own transform, where it has no number yet (it was torch's raw
    # ".item() on a batched tensor" error).
    def f(x: Any, s: Any) -> Any:
        return ad.array_namespace(x).sum(x * x) * s

    xs = torch.randn(3, 2, dtype=torch.float64)
    got = torch.func.vmap(lambda x: ad.gradient(f, x, 2.0, backend="torch")[1])(xs)
    want = torch.func.vmap(torch.func.grad(lambda s, x: (x * x).sum() * s), in_dims=(None, 0))(
        torch.tensor(2.0, dtype=torch.float64), xs
    )
    torch.testing.assert_close(got, want)
