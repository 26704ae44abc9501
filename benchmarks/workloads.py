"""The benchmark workloads of issues 3 and 4 (and the operator workloads of issue 10,
at the end), written once against the Array API.

Each workload is ``(loss, make_args)``: ``loss(*args)`` takes the arguments in the
order ``make_args(rng)`` returns them, differentiable ones first. The engine-specific
scripts convert the numpy arguments to their engine's arrays and time the same
function through adswitch and through the engine called directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import adswitch as ad

Args = tuple[Any, ...]


def tiny(x: Any) -> Any:
    """``sum(sin(x) * x)`` on 10 elements."""
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * x)


def chain(x: Any) -> Any:
    """50 rounds of ``sin, *1.01, +0.1, tanh`` on 100 elements, summed."""
    xp = ad.array_namespace(x)
    for _ in range(50):
        x = xp.tanh(xp.sin(x) * 1.01 + 0.1)
    return xp.sum(x)


def mlp_forward(params: dict[str, Any], x: Any) -> Any:
    """A 64 -> 256 -> 256 -> 1 tanh network."""
    xp = ad.array_namespace(params["W1"])
    h = xp.tanh(x @ params["W1"] + params["b1"])
    h = xp.tanh(h @ params["W2"] + params["b2"])
    return h @ params["W3"] + params["b3"]


def mlp_loss(params: dict[str, Any], x: Any, t: Any) -> Any:
    """Mean-squared loss of :func:`mlp_forward` against targets ``t``."""
    xp = ad.array_namespace(params["W1"])
    return xp.mean((mlp_forward(params, x) - t) ** 2)


def nested_loss(params: dict[str, Any], x: Any, t: Any) -> Any:
    """``mean((d/dx sum(mlp(x)) - t)^2)``: a loss on the input gradient (seed 000)."""
    xp = ad.array_namespace(params["W1"])
    (dx,) = ad.gradient(lambda x_: xp.sum(mlp_forward(params, x_)), x)
    return xp.mean((dx - t) ** 2)


def make_mlp_params(rng: np.random.Generator, dtype: Any = np.float64) -> dict[str, Any]:
    sizes = [(64, 256), (256, 256), (256, 1)]
    params: dict[str, Any] = {}
    for i, (n_in, n_out) in enumerate(sizes, start=1):
        params[f"W{i}"] = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(dtype)
        params[f"b{i}"] = np.zeros(n_out, dtype=dtype)
    return params


def make_tiny(rng: np.random.Generator) -> Args:
    return (rng.standard_normal(10),)


def make_chain(rng: np.random.Generator) -> Args:
    return (rng.standard_normal(100),)


def make_mlp(rng: np.random.Generator) -> Args:
    return (make_mlp_params(rng), rng.standard_normal((128, 64)), rng.standard_normal((128, 1)))


def make_nested(rng: np.random.Generator) -> Args:
    return (make_mlp_params(rng), rng.standard_normal((128, 64)), rng.standard_normal((128, 64)))


WORKLOADS: dict[str, tuple[Callable[..., Any], Callable[[np.random.Generator], Args]]] = {
    "tiny": (tiny, make_tiny),
    "chain": (chain, make_chain),
    "mlp": (mlp_loss, make_mlp),
    "nested": (nested_loss, make_nested),
}


# --- The operator workloads of issue 10 -------------------------------------------------
#
# Each is written once against a namespace ``xp``: ``build(None)`` is the Array-API form
# adswitch differentiates (the namespace found from the arguments on every call, as a
# user writes it); ``build(torch)`` / ``build(jax.numpy)`` / ``build(autograd.numpy)`` is
# the same computation in that engine's own idiom, for the engine's own calls.


def _xp(xp: Any, x: Any) -> Any:
    return ad.array_namespace(x) if xp is None else xp


def tanh_layer(xp: Any = None) -> Callable[..., Any]:
    """``y = tanh(W x + b)``, differentiated with respect to ``x``."""

    def f(x: Any, W: Any, b: Any) -> Any:
        return _xp(xp, x).tanh(W @ x + b)

    return f


def tanh_map(xp: Any = None) -> Callable[..., Any]:
    """``y = tanh(W x)``, differentiated with respect to ``x``."""

    def f(x: Any, W: Any) -> Any:
        return _xp(xp, x).tanh(W @ x)

    return f


def softplus_quadratic(xp: Any = None) -> Callable[..., Any]:
    """``f = sum(log1p(exp(A x))) + 0.5 |x|^2``, a scalar of ``x``."""

    def f(x: Any, A: Any) -> Any:
        ns = _xp(xp, x)
        return ns.sum(ns.log1p(ns.exp(A @ x))) + 0.5 * ns.sum(x * x)

    return f


def mlp_forward_in(xp: Any = None) -> Callable[..., Any]:
    """:func:`mlp_forward` (``None``) or the same network in the namespace ``xp``."""
    if xp is None:
        return mlp_forward

    def f(params: dict[str, Any], x: Any) -> Any:
        h = xp.tanh(x @ params["W1"] + params["b1"])
        h = xp.tanh(h @ params["W2"] + params["b2"])
        return h @ params["W3"] + params["b3"]

    return f


def mlp_loss_in(xp: Any = None) -> Callable[..., Any]:
    """:func:`mlp_loss` (``None``) or the same loss in the namespace ``xp``."""
    if xp is None:
        return mlp_loss
    forward = mlp_forward_in(xp)

    def f(params: dict[str, Any], x: Any, t: Any) -> Any:
        return xp.mean((forward(params, x) - t) ** 2)

    return f


# Oracles independent of every engine: closed forms in numpy, and for the Hessian-vector
# product a difference of the hand-written gradient.


def tanh_layer_jacobian(args: Args, v: Any = None) -> Any:
    """``diag(1 - y^2) W`` for ``y = tanh(W x + b)``."""
    x, W, b = args
    y = np.tanh(W @ x + b)
    return (1.0 - y**2)[:, None] * W


def tanh_map_jacobian(args: Args, v: Any = None) -> Any:
    x, W = args
    return tanh_layer_jacobian((x, W, 0.0))


def softplus_quadratic_hessian(args: Args, v: Any = None) -> Any:
    """``A^T diag(s (1 - s)) A + I`` with ``s = sigmoid(A x)``."""
    x, A = args
    s = 1.0 / (1.0 + np.exp(-(A @ x)))
    return A.T @ ((s * (1.0 - s))[:, None] * A) + np.eye(x.shape[0])


def mlp_gradient(params: dict[str, Any], x: Any, t: Any) -> dict[str, Any]:
    """The gradient of :func:`mlp_loss` by hand-written backpropagation."""
    h1 = np.tanh(x @ params["W1"] + params["b1"])
    h2 = np.tanh(h1 @ params["W2"] + params["b2"])
    dy = 2.0 * (h2 @ params["W3"] + params["b3"] - t) / t.size
    dz2 = (dy @ params["W3"].T) * (1.0 - h2**2)
    dz1 = (dz2 @ params["W2"].T) * (1.0 - h1**2)
    return {
        "W1": x.T @ dz1,
        "b1": dz1.sum(0),
        "W2": h1.T @ dz2,
        "b2": dz2.sum(0),
        "W3": h2.T @ dy,
        "b3": dy.sum(0),
    }


def mlp_hvp_difference(args: Args, v: dict[str, Any], eps: float = 1e-4) -> dict[str, Any]:
    """``H v`` of :func:`mlp_loss` from central differences of :func:`mlp_gradient` at
    steps ``eps`` and ``eps / 2``, extrapolated (Richardson): error about ``eps^4 |v|^4``,
    1e-11 on this workload."""

    def central(h: float) -> dict[str, Any]:
        up = mlp_gradient({k: p + h * v[k] for k, p in params.items()}, x, t)
        down = mlp_gradient({k: p - h * v[k] for k, p in params.items()}, x, t)
        return {k: (up[k] - down[k]) / (2 * h) for k in params}

    params, x, t = args
    coarse, fine = central(eps), central(eps / 2)
    return {k: (4 * fine[k] - coarse[k]) / 3 for k in params}


def mlp_output_tangent(args: Args, v: dict[str, Any]) -> Any:
    """The tangent of :func:`mlp_forward`'s output along ``v``, pushed forward by hand."""
    params, x = args
    h1 = np.tanh(x @ params["W1"] + params["b1"])
    h2 = np.tanh(h1 @ params["W2"] + params["b2"])
    dh1 = (1.0 - h1**2) * (x @ v["W1"] + v["b1"])
    dh2 = (1.0 - h2**2) * (dh1 @ params["W2"] + h1 @ v["W2"] + v["b2"])
    return dh2 @ params["W3"] + h2 @ v["W3"] + v["b3"]


def make_tanh_layer(n_in: int, n_out: int) -> Callable[[np.random.Generator], Args]:
    def make(rng: np.random.Generator) -> Args:
        W = rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)
        return rng.standard_normal(n_in), W, 0.1 * rng.standard_normal(n_out)

    return make


def make_tanh_map(n_in: int, n_out: int) -> Callable[[np.random.Generator], Args]:
    def make(rng: np.random.Generator) -> Args:
        return rng.standard_normal(n_in), rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)

    return make


def make_softplus_quadratic(rng: np.random.Generator) -> Args:
    return rng.standard_normal(50), rng.standard_normal((100, 50)) / np.sqrt(50)


def make_mlp_inputs(rng: np.random.Generator) -> Args:
    """The mlp's parameters and inputs, without targets (for its forward pass)."""
    return make_mlp_params(rng), rng.standard_normal((128, 64))


def make_mlp_tangent(rng: np.random.Generator) -> dict[str, Any]:
    """A random direction in the mlp's parameter space (every leaf, biases included)."""
    return {k: rng.standard_normal(v.shape) for k, v in make_mlp_params(rng).items()}


@dataclass(frozen=True)
class OperatorWorkload:
    """One operator benchmark: ``build(xp)(*make_args(rng))`` is the function at its point,
    differentiated with respect to its first argument (the others are constants).

    Attributes:
        operator: ``"jacobian"``, ``"hessian"``, ``"hvp"`` or ``"jvp"``.
        build: the function in a namespace (``None``: the Array-API form).
        make_args: the arguments, numpy float64.
        oracle: ``oracle(args, v)``, the expected result from the numpy arguments (and
            tangent), computed without any AD engine.
        oracle_tol: ``(rtol, atol)`` the oracle is good to (a closed form: float64
            round-off; a difference: its truncation error).
        make_tangent: the direction ``v`` of ``hvp``/``jvp``, shaped like the first argument.
    """

    operator: str
    build: Callable[[Any], Callable[..., Any]]
    make_args: Callable[[np.random.Generator], Args]
    oracle: Callable[[Args, Any], Any]
    oracle_tol: tuple[float, float] = (1e-9, 1e-12)
    make_tangent: Callable[[np.random.Generator], Any] | None = None


OPERATOR_WORKLOADS: dict[str, OperatorWorkload] = {
    "jac_square": OperatorWorkload(
        "jacobian", tanh_layer, make_tanh_layer(64, 64), tanh_layer_jacobian
    ),
    "jac_tall": OperatorWorkload("jacobian", tanh_map, make_tanh_map(8, 256), tanh_map_jacobian),
    "jac_wide": OperatorWorkload("jacobian", tanh_map, make_tanh_map(256, 8), tanh_map_jacobian),
    "hess": OperatorWorkload(
        "hessian", softplus_quadratic, make_softplus_quadratic, softplus_quadratic_hessian
    ),
    "hvp_mlp": OperatorWorkload(
        "hvp", mlp_loss_in, make_mlp, mlp_hvp_difference, (1e-7, 1e-9), make_mlp_tangent
    ),
    "jvp_mlp": OperatorWorkload(
        "jvp", mlp_forward_in, make_mlp_inputs, mlp_output_tangent, make_tangent=make_mlp_tangent
    ),
}
