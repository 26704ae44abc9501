"""The benchmark workloads of issues 3 and 4, written once against the Array API.

Each workload is ``(loss, make_args)``: ``loss(*args)`` takes the arguments in the
order ``make_args(rng)`` returns them, differentiable ones first. The engine-specific
scripts convert the numpy arguments to their engine's arrays and time the same
function through adswitch and through the engine called directly.
"""

from __future__ import annotations

from collections.abc import Callable
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
