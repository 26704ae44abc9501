"""Nested gradients (seed 000, rule 9): ``ad.gradient`` inside ``f``, differentiated by
the outer call. References replace each inner gradient by its closed form (``ref_fn``),
then take finite differences of that -- or give the whole answer in closed form."""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad

from .case import Case, arr

F = "nested"
NESTED = ("nested",)


def _relu(xp: Any, z: Any) -> Any:
    return xp.maximum(z, xp.zeros_like(z))


def _two_branch(ps: dict[str, Any], u: Any, t: Any, act: str) -> Any:
    """Seed 000's ``Parallel(+, Dense(2=>h, act), Dense(1=>h, act))`` on a tuple input."""
    xp = ad.array_namespace(u, t)
    a = ps["W1"] @ u + ps["b1"]
    b = ps["W2"] @ t + ps["b2"]
    if act == "relu":
        return _relu(xp, a) + _relu(xp, b)
    return xp.tanh(a) + xp.tanh(b)


def _input_grad_loss(act: str) -> Any:
    def loss(ps: dict[str, Any], data: tuple[tuple[Any, Any], Any]) -> Any:
        (u, t), targets = data
        xp = ad.array_namespace(u, targets)
        grad_u = ad.gradient(lambda u_: xp.sum(_two_branch(ps, u_, t, act)), u)[0]
        return xp.mean((grad_u - targets) ** 2)

    return loss


def _input_grad_ref(act: str) -> Any:
    def loss(ps: dict[str, Any], data: tuple[tuple[Any, Any], Any]) -> Any:
        (u, _t), targets = data
        z = ps["W1"] @ u + ps["b1"]
        slope = (z > 0).astype(float) if act == "relu" else 1 - np.tanh(z) ** 2
        grad_u = ps["W1"].T @ slope
        return np.mean((grad_u - targets) ** 2)

    return loss


def _seed_args() -> tuple[Any, ...]:
    ps = {"W1": arr(120, 6, 2), "b1": arr(121, 6, 1), "W2": arr(122, 6, 1), "b2": arr(123, 6, 1)}
    return ps, ((arr(124, 2, 5), arr(125, 1, 5)), arr(126, 2, 5))


def _hvp(x: Any, v: Any, a: Any) -> Any:
    xp = ad.array_namespace(x, v, a)
    g = ad.gradient(lambda y: xp.sum(xp.exp(a @ y)), x)[0]
    return xp.sum(g * v)


def _hvp_closed(x: Any, v: Any, a: Any) -> tuple[Any, ...]:
    e = np.exp(a @ x)
    return (a.T @ (e * (a @ v)), None, None)


def _hvp_ref(x: Any, v: Any, a: Any) -> Any:
    return np.sum((a.T @ np.exp(a @ x)) * v)


def _third_order(x: Any, w: Any) -> Any:
    xp = ad.array_namespace(x, w)

    def first(y: Any) -> Any:
        return ad.gradient(lambda z: xp.sum(xp.sin(z) * z), y)[0]

    second = ad.gradient(lambda y: xp.sum(first(y)), x)[0]
    return xp.sum(second * w)


def _third_closed(x: Any, w: Any) -> tuple[Any, ...]:
    # d/dx (2 cos x - x sin x) = -3 sin x - x cos x
    return ((-3 * np.sin(x) - x * np.cos(x)) * w, None)


def _third_ref(x: Any, w: Any) -> Any:
    return np.sum((2 * np.cos(x) - x * np.sin(x)) * w)


def _inner_withgradient(x: Any) -> Any:
    xp = ad.array_namespace(x)
    val, (g,) = ad.withgradient(lambda y: (xp.sum(y**3), "aux"), x)
    return val[0] + xp.sum(g**2)


def _inner_withgradient_ref(x: Any) -> Any:
    return np.sum(x**3) + np.sum((3 * x**2) ** 2)


def _inner_const(w: Any, x: Any) -> Any:
    xp = ad.array_namespace(w, x)
    g = ad.gradient(lambda y, c: xp.sum(xp.sin(y * c)), x, ad.Const(w))[0]
    return xp.sum(g**2)


def _inner_const_ref(w: Any, x: Any) -> Any:
    return np.sum((w * np.cos(x * w)) ** 2)


def _inner_tree(ps: dict[str, Any], x: Any) -> Any:
    xp = ad.array_namespace(x, ps["W"])
    grads = ad.gradient(lambda p: xp.sum(xp.tanh(x @ p["W"]) * p["s"]), ps)[0]
    return xp.sum(grads["W"] ** 2) + xp.sum(grads["s"] ** 2)


def _inner_tree_ref(ps: dict[str, Any], x: Any) -> Any:
    h = np.tanh(x @ ps["W"])
    g_w = x.T @ ((1 - h**2) * ps["s"])
    g_s = np.sum(h, axis=0)
    return np.sum(g_w**2) + np.sum(g_s**2)


def _penalty(w: Any, x: Any) -> Any:
    xp = ad.array_namespace(w, x)
    g = ad.gradient(lambda y: xp.sum(xp.tanh(y @ w)), x)[0]
    norms = xp.sqrt(xp.sum(g**2, axis=1))
    return xp.mean((norms - 1.0) ** 2)


def _penalty_ref(w: Any, x: Any) -> Any:
    g = (1 - np.tanh(x @ w) ** 2) @ w.T
    return np.mean((np.sqrt(np.sum(g**2, axis=1)) - 1.0) ** 2)


def _pow_sum(e: Any, b: Any) -> Any:
    xp = ad.array_namespace(e, b)
    return xp.sum(xp.pow(b, e))


def _pow_sum_ref(e: Any, b: Any) -> Any:
    return np.sum(b**e)


def _pow_closed(e: Any, b: Any) -> tuple[Any, ...]:
    return (b**e * np.log(b), e * b ** (e - 1))


def _pow_base_grad(e: Any, b: Any) -> Any:
    xp = ad.array_namespace(e, b)
    return xp.sum(ad.gradient(_pow_sum, e, b)[1])


def _pow_operator_sum(e: Any, b: Any) -> Any:
    xp = ad.array_namespace(e, b)
    return xp.sum(b**e)


def _pow_operator_base_grad(e: Any, b: Any) -> Any:
    xp = ad.array_namespace(e, b)
    return xp.sum(ad.gradient(_pow_operator_sum, e, b)[1])


def _pow_base_grad_ref(e: Any, b: Any) -> Any:
    return np.sum(e * b ** (e - 1))


def _pow_base_grad_closed(e: Any, b: Any) -> tuple[Any, ...]:
    # d/de [e b^(e-1)] = b^(e-1) (1 + e log b); d/db [e b^(e-1)] = e (e-1) b^(e-2)
    return (b ** (e - 1) * (1 + e * np.log(b)), e * (e - 1) * b ** (e - 2))


def _pow_args() -> tuple[Any, ...]:
    return np.array([0.0, 0.5, -1.0, 2.0]), np.array([0.625, 0.625, 1.5, 1.75])


def _pow_second_args() -> tuple[Any, ...]:
    return np.array([0.0, 0.0, 1.0, -0.5]), np.array([1.5, 0.5, 0.75, 2.0])


CASES = [
    Case(
        "nested.seed000_relu_tuple_input",
        F,
        "seed 000: MSE on the input gradient of a "
        "two-branch relu network with a tuple input, differentiated w.r.t. the weights",
        _input_grad_loss("relu"),
        _seed_args,
        ref_fn=_input_grad_ref("relu"),
        requires=NESTED,
    ),
    Case(
        "nested.seed000_tanh_tuple_input",
        F,
        "seed 000 with tanh: genuine second derivatives through the inner gradient",
        _input_grad_loss("tanh"),
        _seed_args,
        ref_fn=_input_grad_ref("tanh"),
        requires=NESTED,
    ),
    Case(
        "nested.hvp",
        F,
        "Hessian-vector product as the gradient of <grad f(x), v>, "
        "closed form A^T diag(exp(Ax)) A v",
        _hvp,
        lambda: (arr(127, 3), ad.Const(arr(128, 3)), ad.Const(arr(129, 4, 3))),
        ref_fn=_hvp_ref,
        closed_form=_hvp_closed,
        requires=NESTED,
    ),
    Case(
        "nested.third_order",
        F,
        "three nested gradients of sum(sin(x) x): closed-form third derivative",
        _third_order,
        lambda: (arr(130, 4), ad.Const(arr(131, 4))),
        ref_fn=_third_ref,
        closed_form=_third_closed,
        requires=NESTED,
    ),
    Case(
        "nested.inner_withgradient",
        F,
        "withgradient inside f with an aux string: the "
        "inner value and gradient both differentiable",
        _inner_withgradient,
        lambda: (arr(132, 3),),
        ref_fn=_inner_withgradient_ref,
        requires=NESTED,
    ),
    Case(
        "nested.inner_const_is_outer_active",
        F,
        "an argument Const for the inner call but "
        "differentiated by the outer one: its dependence must not be cut",
        _inner_const,
        lambda: (arr(133, 3), arr(134, 3)),
        ref_fn=_inner_const_ref,
        requires=NESTED,
    ),
    Case(
        "nested.inner_tree",
        F,
        "the inner gradient of a dict of parameters, used by the outer loss",
        _inner_tree,
        lambda: ({"W": arr(135, 3, 2), "s": arr(136, 2)}, ad.Const(arr(137, 4, 3))),
        ref_fn=_inner_tree_ref,
        requires=NESTED,
    ),
    Case(
        "nested.gradient_penalty",
        F,
        "a WGAN-GP style penalty (norm of the input gradient minus 1) w.r.t. the weights",
        _penalty,
        lambda: (arr(138, 3, 2), ad.Const(arr(139, 4, 3))),
        ref_fn=_penalty_ref,
        requires=NESTED,
    ),
    Case(
        "nested.duplicated_outer",
        F,
        "a Duplicated outer argument with an inner gradient: "
        "shadow written once, with the second-order total",
        _penalty,
        lambda: (ad.Duplicated(arr(140, 3, 2)), ad.Const(arr(141, 4, 3))),
        ref_fn=_penalty_ref,
        requires=NESTED,
    ),
    Case(
        "nested.pow_exponent_zero",
        F,
        "d/de of the inner gradient d/db sum(pow(b, e)) at e == 0: masked or where-guarded "
        "pow rules give 0 or b instead of b**-1",
        _pow_base_grad,
        _pow_args,
        ref_fn=_pow_base_grad_ref,
        closed_form=_pow_base_grad_closed,
        requires=NESTED,
        second_args=_pow_second_args,
    ),
    Case(
        "nested.pow_operator_exponent_zero",
        F,
        "pow_exponent_zero written with the operator: d/de of the inner gradient "
        "d/db sum(b ** e) at e == 0 (the engines' own ** rules give 0 or b, not b**-1)",
        _pow_operator_base_grad,
        _pow_args,
        ref_fn=_pow_base_grad_ref,
        closed_form=_pow_base_grad_closed,
        requires=NESTED,
        second_args=_pow_second_args,
    ),
    Case(
        "nested.pow_exponent_zero_first_order",
        F,
        "first-order companion of pow_exponent_zero: both gradients of sum(pow(b, e)) with "
        "e == 0 among the exponents",
        _pow_sum,
        _pow_args,
        ref_fn=_pow_sum_ref,
        closed_form=_pow_closed,
        second_args=_pow_second_args,
    ),
]
