"""The functions the ``operators`` cases differentiate (first part and matrices), with
their argument factories: vector functions of arrays and trees, a callable dataclass,
tied arguments, aux outputs, a write inside ``f``, scalar losses for second derivatives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import adswitch as ad

from .case import arr, pos

__all__ = [
    "Dense",
    "vec_fn",
    "vec_args",
    "tree_fn",
    "tree_args",
    "tree_cotangent",
    "tree_tangents",
    "apply_layer",
    "make_dense",
    "tied_fn",
    "tied_args",
    "with_aux",
    "log_then_write",
    "mutation_args",
    "scalar_path",
    "scaled_vec",
    "dict_tie",
    "dict_tie_args",
    "loss2",
    "loss2_args",
    "tree_loss",
    "tree_loss_args",
    "dense_loss",
    "tied_loss",
    "loss_with_aux",
    "dict_tie_loss",
    "dict_tie_loss_args",
    "logsumexp",
    "logsumexp_hessian",
    "log_then_write_loss",
]


def vec_fn(x: Any, W: Any, b: Any) -> Any:
    """A vector function of two arguments around a constant matrix."""
    xp = ad.array_namespace(x, W, b)
    return xp.tanh(W @ x + b) * xp.exp(x[:3]) + xp.sum(x**2)


def vec_args(dtype: Any = np.float64) -> tuple[Any, ...]:
    return arr(300, 4, dtype=dtype), ad.Const(arr(301, 3, 4, dtype=dtype)), arr(302, 3, dtype=dtype)


def tree_fn(p: dict[str, Any], inputs: tuple[Any, Any]) -> Any:
    """Dict and tuple arguments, a tuple output holding a dict, a 0-d array and a string."""
    xp = ad.array_namespace(p["W"])
    u, v = inputs
    h = xp.tanh(p["W"] @ u + p["b"])
    return (h * v[:2], {"s": xp.sum(h * p["b"]) * v[2], "tag": p["name"]})


def tree_args() -> tuple[Any, ...]:
    p = {"W": arr(303, 2, 3), "b": arr(304, 2), "name": "enc", "n": 3}
    return p, (arr(305, 3), arr(306, 3))


def tree_cotangent(seed: int) -> Any:
    return (arr(seed, 2), {"s": np.asarray(arr(seed + 1, 1)[0]), "tag": None})


def tree_tangents() -> tuple[Any, ...]:
    p = {"W": arr(307, 2, 3), "b": arr(308, 2), "name": None, "n": None}
    return p, (arr(309, 3), arr(310, 3))


@dataclass
class Dense:
    """A callable dataclass layer with a non-differentiable field."""

    W: Any
    b: Any
    activation: str = "tanh"

    def __call__(self, x: Any) -> Any:
        xp = ad.array_namespace(x, self.W)
        z = x @ self.W + self.b
        return xp.tanh(z) if self.activation == "tanh" else z


def apply_layer(model: Dense, x: Any) -> Any:
    return model(x)


def make_dense() -> Dense:
    return Dense(arr(311, 3, 2), arr(312, 2))


def tied_fn(a: Any, b: Any, c: Any) -> Any:
    xp = ad.array_namespace(a, b, c)
    return xp.sin(a) * c + b**2


def tied_args() -> tuple[Any, ...]:
    w = arr(313, 3)
    return w, w, ad.Const(arr(314, 3))


def with_aux(x: Any, W: Any, b: Any) -> Any:
    y = vec_fn(x, W, b)
    return y, {"pred": y * 2.0, "n": 3, "note": "aux"}


def log_then_write(x: Any, s: Any) -> Any:
    """Seed 003's pattern with a vector output: the read before the write sees the old x."""
    xp = ad.array_namespace(x, s)
    y = xp.log(x)
    x[0] = s**2
    return y * x


def mutation_args() -> tuple[Any, ...]:
    return pos(315, 3), np.array(0.8)


def scalar_path(t: Any, a: Any, c: Any) -> Any:
    """A trajectory in the scalar t with constant array parameters: a tree output."""
    xp = ad.array_namespace(t, a, c)
    return {"pos": a * t**2 + xp.sin(c * t), "energy": xp.sum(a * xp.exp(c * t)), "unit": "m"}


def scaled_vec(x: Any, W: Any, b: Any, s: Any) -> Any:
    return vec_fn(x, W, b) * s


def dict_tie(p: dict[str, Any], c: Any) -> Any:
    xp = ad.array_namespace(p["enc"], c)
    return xp.tanh(p["enc"] @ c) + p["dec"].T @ p["b"]


def dict_tie_args() -> tuple[Any, ...]:
    w = arr(400, 3, 3)
    return {"enc": w, "b": arr(401, 3), "dec": w}, ad.Const(arr(402, 3))


def loss2(x: Any, y: Any, A: Any) -> Any:
    """A scalar loss of two arguments coupled through a Const matrix (cross blocks)."""
    xp = ad.array_namespace(x, y, A)
    return xp.sum(xp.exp(A @ x) * y) + xp.sum(xp.sin(x) * y**2)


def loss2_args(dtype: Any = np.float64) -> tuple[Any, ...]:
    return arr(403, 3, dtype=dtype), arr(404, 3, dtype=dtype), ad.Const(arr(405, 3, 3, dtype=dtype))


def tree_loss(p: dict[str, Any], x: Any) -> Any:
    xp = ad.array_namespace(p["W"], x)
    return xp.sum(xp.tanh(x @ p["W"]) * p["b"]) + p["scale"] * xp.sum(p["b"] ** 2)


def tree_loss_args() -> tuple[Any, ...]:
    p = {"W": arr(406, 2, 2), "b": arr(407, 2), "scale": 0.75, "name": "head"}
    return p, ad.Const(arr(408, 3, 2))


def dense_loss(model: Any, x: Any) -> Any:
    out = model(x)
    return ad.array_namespace(out).sum(out**2)


def tied_loss(a: Any, b: Any, c: Any) -> Any:
    xp = ad.array_namespace(a, b, c)
    return xp.sum(xp.sin(a) * b * c) + xp.sum(b**3)


def loss_with_aux(x: Any, y: Any, A: Any) -> Any:
    return loss2(x, y, A), {"pred": A @ x, "n": 2}


def dict_tie_loss(p: dict[str, Any]) -> Any:
    xp = ad.array_namespace(p["enc"])
    return xp.sum(xp.tanh(p["enc"]) * p["b"]) + xp.sum(p["dec"] ** 3)


def dict_tie_loss_args() -> tuple[Any, ...]:
    w = arr(411, 2, 2)
    return ({"enc": w, "b": arr(412, 2), "dec": w},)


def logsumexp(x: Any, a: Any) -> Any:
    xp = ad.array_namespace(x, a)
    z = a * x
    m = xp.max(z)
    return m + xp.log(xp.sum(xp.exp(z - m)))


def logsumexp_hessian(x: Any, a: Any) -> tuple[Any, ...]:
    # H = diag(a) (diag(p) - p p^T) diag(a), p = softmax(a x)
    p = np.exp(a * x - np.max(a * x))
    p /= p.sum()
    return ((a[:, None] * (np.diag(p) - np.outer(p, p)) * a[None, :], None), None)


def log_then_write_loss(x: Any, s: Any) -> Any:
    return ad.array_namespace(x).sum(log_then_write(x, s) ** 2)
