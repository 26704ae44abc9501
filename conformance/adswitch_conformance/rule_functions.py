"""The user rules the ``rules`` cases differentiate (``ad.custom_vjp``, ``ad.custom_jvp``,
``ad.stop_gradient``), written against ``ad.array_namespace`` only, with their closed
forms in numpy. Outside an adswitch call a rule is its plain function, so finite
differences of the same code are a valid reference wherever the rule IS the derivative;
where it is not on purpose (clipping, straight-through, a scaled tangent) the reference is
the rule's own result in closed form."""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad

__all__ = [
    "logsumexp",
    "softmax",
    "clip_grad",
    "straight_through",
    "solve",
    "fixed_point",
    "fixed_point_ref",
    "fixed_point_slope",
    "softplus",
    "half_tangent",
    "affine",
    "tanh_layer",
    "mul",
    "power",
    "bad_count",
    "bad_shape",
    "bad_fwd",
    "undefined",
    "bad_rule",
]


# A logsumexp (of a vector) stable at any scale (exp(1000) overflows; exp(x - max) does
# not), with the softmax as its vjp: bwd is itself made of differentiable ops, so
# hessians go through it.
def _lse(x: Any) -> Any:
    xp = ad.array_namespace(x)
    m = xp.max(x)
    return xp.log(xp.sum(xp.exp(x - m))) + m


def _lse_fwd(x: Any) -> tuple[Any, Any]:
    out = _lse(x)
    return out, (x, out)


def _lse_bwd(res: Any, ct: Any) -> tuple[Any]:
    x, out = res
    xp = ad.array_namespace(x, ct)
    return (xp.exp(x - out) * ct,)


logsumexp = ad.custom_vjp(_lse)
logsumexp.defvjp(_lse_fwd, _lse_bwd)


def softmax(x: Any) -> Any:
    """numpy: the closed-form gradient of :func:`logsumexp` (a vector)."""
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


# The identity whose rule clips the incoming cotangent to [-1, 1]: NOT its derivative.
clip_grad = ad.custom_vjp(lambda x: x)
clip_grad.defvjp(
    lambda x: (x, None), lambda _res, ct: (ad.array_namespace(ct).clip(ct, -1.0, 1.0),)
)


# A straight-through estimator: round forward, identity backward.
straight_through = ad.custom_vjp(lambda x: ad.array_namespace(x).round(x))
straight_through.defvjp(lambda x: (ad.array_namespace(x).round(x), None), lambda _r, ct: (ct,))


# Implicit differentiation of a linear solve: A x = b gives b_bar = A^-T x_bar and
# A_bar = -b_bar x^T (two solves, no differentiation through the factorization).
def _solve(A: Any, b: Any) -> Any:
    return ad.array_namespace(A, b).linalg.solve(A, b)


def _solve_fwd(A: Any, b: Any) -> tuple[Any, Any]:
    x = _solve(A, b)
    return x, (A, x)


def _solve_bwd(res: Any, ct: Any) -> tuple[Any, Any]:
    A, x = res
    xp = ad.array_namespace(A, x, ct)
    lam = xp.linalg.solve(xp.matrix_transpose(A), ct)
    return -xp.reshape(lam, (-1, 1)) * xp.reshape(x, (1, -1)), lam


solve = ad.custom_vjp(_solve)
solve.defvjp(_solve_fwd, _solve_bwd)


# x = cos(a x) solved by iteration (the iteration count a nondiff int argument); the
# derivative by the implicit function theorem: dx/da = -x sin(a x) / (1 + a sin(a x)).
def _iterate(a: Any, n: int) -> Any:
    xp = ad.array_namespace(a)
    x = xp.ones_like(a) * 0.7
    for _ in range(n):
        x = xp.cos(a * x)
    return x


def _fp_fwd(a: Any, n: int) -> tuple[Any, Any]:
    x = _iterate(a, n)
    return x, (a, x)


def _fp_bwd(_n: int, res: Any, ct: Any) -> tuple[Any]:
    a, x = res
    xp = ad.array_namespace(a, x, ct)
    s = xp.sin(a * x)
    return (-x * s / (1.0 + a * s) * ct,)  # n is nondiff: no cotangent for it


fixed_point = ad.custom_vjp(_iterate, nondiff_argnums=(1,))
fixed_point.defvjp(_fp_fwd, _fp_bwd)


def fixed_point_ref(a: Any) -> Any:
    """numpy: the fixed point of x = cos(a x), iterated to rounding."""
    x = np.full_like(a, 0.7)
    for _ in range(200):
        x = np.cos(a * x)
    return x


def fixed_point_slope(a: Any) -> Any:
    """numpy: dx/da at the fixed point (implicit function theorem)."""
    x = fixed_point_ref(a)
    s = np.sin(a * x)
    return -x * s / (1.0 + a * s)


# softplus, stable, with its derivative as a custom jvp rule (sigmoid times the tangent).
def _softplus(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(x, 0.0)


def _softplus_rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    xp = ad.array_namespace(x, t)
    return _softplus(x), t / (1.0 + xp.exp(-x))


softplus = ad.custom_jvp(_softplus)
softplus.defjvp(_softplus_rule)

# The identity whose jvp rule halves the tangent (not its derivative, on purpose).
half_tangent = ad.custom_jvp(lambda x: x)
half_tangent.defjvp(lambda p, t: (p[0], t[0] * 0.5))


# custom_jvp on trees: a dict of parameters (with a str and an int leaf) and an array,
# a tuple output; the str tag a nondiff argument.
def _affine(tag: str, p: dict[str, Any], x: Any) -> tuple[Any, Any]:
    xp = ad.array_namespace(p["w"], x)
    y = xp.sin(p["w"] * x + p["b"]) * float(p["n"])
    return y, xp.sum(x * x) * float(len(tag))


def _affine_rule(tag: str, primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    (p, x), (tp, tx) = primals, tangents
    xp = ad.array_namespace(p["w"], x)
    z = p["w"] * x + p["b"]
    dz = tp["w"] * x + p["w"] * tx + tp["b"]
    dy = xp.cos(z) * dz * float(p["n"])
    return _affine(tag, p, x), (dy, xp.sum(2.0 * x * tx) * float(len(tag)))


affine = ad.custom_jvp(_affine, nondiff_argnums=(0,))
affine.defjvp(_affine_rule)


# custom_vjp on trees: a dict argument (str and int leaves get None) and a Python float.
def _tanh_layer(p: dict[str, Any], s: float) -> tuple[Any, Any]:
    xp = ad.array_namespace(p["W"], p["b"])
    h = xp.tanh(p["W"] @ p["b"]) * s
    return h, {"sq": xp.sum(p["b"] ** 2) * s}


def _tanh_fwd(p: dict[str, Any], s: float) -> tuple[Any, Any]:
    return _tanh_layer(p, s), (p, s)


def _tanh_bwd(res: Any, ct: Any) -> tuple[Any, Any]:
    (p, s), (ct_h, ct_sq) = res, ct
    xp = ad.array_namespace(p["W"], p["b"], ct_h)
    h = xp.tanh(p["W"] @ p["b"])
    dz = ct_h * (1.0 - h * h) * s
    dW = xp.reshape(dz, (-1, 1)) * xp.reshape(p["b"], (1, -1))
    db = xp.matrix_transpose(p["W"]) @ dz + 2.0 * p["b"] * ct_sq["sq"] * s
    ds = xp.sum(ct_h * h) + xp.sum(p["b"] ** 2) * ct_sq["sq"]
    return {"W": dW, "b": db, "name": None, "n": None}, ds


tanh_layer = ad.custom_vjp(_tanh_layer)
tanh_layer.defvjp(_tanh_fwd, _tanh_bwd)

# a * b with its vjp (for ties inside one rule call), and x ** n with an int argument.
mul = ad.custom_vjp(lambda a, b: a * b)
mul.defvjp(lambda a, b: (a * b, (a, b)), lambda r, ct: (ct * r[1], ct * r[0]))


def _power_rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    (x, n), (t, _) = primals, tangents
    return x**n, t * float(n) * x ** (n - 1)


power = ad.custom_jvp(lambda x, n: x**n)
power.defjvp(_power_rule)


# Rules that break the contract: each must end in an AdswitchError naming the fix.
bad_count = ad.custom_vjp(lambda a, b: a * b)
bad_count.defvjp(lambda a, b: (a * b, (a, b)), lambda r, ct: (ct * r[1],))
bad_shape = ad.custom_vjp(lambda x: ad.array_namespace(x).sum(x))
bad_shape.defvjp(lambda x: (ad.array_namespace(x).sum(x), x), lambda x, ct: (x[:2] * ct,))
bad_fwd = ad.custom_vjp(lambda x: x * 2.0)
bad_fwd.defvjp(lambda x: ((x * 2.0, x), None), lambda _r, ct: (ct * 2.0,))
undefined = ad.custom_vjp(lambda x: x * 2.0)  # defvjp never called
bad_rule = ad.custom_jvp(lambda x: x * 2.0)
bad_rule.defjvp(lambda p, t: (p[0] * 2.0, (t[0] * 2.0, t[0])))
