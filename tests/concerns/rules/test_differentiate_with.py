"""``ad.differentiate_with(fn, backend=name)`` (``adswitch.differentiate_with``): a piece of
``f`` differentiated by another engine, on every pair of tape / torch / jax / autograd.

Oracles: closed forms. ``inner(x, w) = sin(x) * w + x**2`` (written against ``xp``, so it
runs on any engine); ``loss = sum(inner(x, w)**2)`` has ``dloss/dx = 2 y (cos(x) w +
2x)`` and ``dloss/dw = 2 y sin(x)``; ``jvp`` along ``(u, v)`` is ``(cos(x) w + 2x) u +
sin(x) v``.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import NoForwardRuleError, UnsupportedError, UsageError

for _module in ("torch", "jax", "autograd"):
    pytest.importorskip(_module)

ENGINES = ["tape", "torch", "jax", "autograd"]
PAIRS = list(itertools.product(ENGINES, ENGINES))
X = np.array([0.3, -1.2, 2.0])
W = np.array([1.5, 0.5, -0.25])
U = np.array([1.0, -0.5, 0.25])
V = np.array([0.2, 0.1, -1.0])


def _np(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().numpy()
    return np.asarray(value)


def inner(x: Any, w: Any) -> Any:
    xp = ad.array_namespace(x, w)
    return xp.sin(x) * xp.asarray(w) + x * x


def y_np(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.sin(x) * w + x * x
    return out


def loss_with(piece: Any) -> Any:
    def loss(x: Any, w: Any) -> Any:
        y = piece(x, w)
        return ad.array_namespace(y).sum(y * y)

    return loss


@pytest.mark.parametrize(("outer", "other"), PAIRS)
def test_gradient_every_pair(outer: str, other: str) -> None:
    piece = ad.differentiate_with(inner, backend=other, out_shape=np.empty(3))
    gx, gw = ad.gradient(loss_with(piece), X, W, backend=outer)
    y = y_np(X, W)
    np.testing.assert_allclose(_np(gx), 2 * y * (np.cos(X) * W + 2 * X), rtol=1e-12)
    np.testing.assert_allclose(_np(gw), 2 * y * np.sin(X), rtol=1e-12)


@pytest.mark.parametrize(("outer", "other"), PAIRS)
def test_jvp_every_pair(outer: str, other: str) -> None:
    piece = ad.differentiate_with(inner, backend=other, mode="forward", out_shape=np.empty(3))
    y, t = ad.jvp(piece, (X, W), (U, V), backend=outer)
    np.testing.assert_allclose(_np(y), y_np(X, W), rtol=1e-12)
    want = (np.cos(X) * W + 2 * X) * U + np.sin(X) * V
    np.testing.assert_allclose(_np(t), want, rtol=1e-12)


@pytest.mark.parametrize("other", ENGINES)
def test_outside_any_call_runs_on_the_engine_and_returns_numpy(other: str) -> None:
    seen: list[str] = []

    def spy(x: Any, w: Any) -> Any:
        seen.append(type(x).__module__.split(".")[0])
        return inner(x, w)

    out = ad.differentiate_with(spy, backend=other)(X, W)
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, y_np(X, W), rtol=1e-12)
    engine_module = {"tape": "adswitch_tape", "autograd": "adswitch_autograd"}.get(other, other)
    assert seen and all(m.startswith(engine_module) for m in seen), seen  # fn ran there


def test_a_jax_simulator_inside_a_torch_loss() -> None:
    import jax.numpy as jnp
    import torch

    def simulate(x: Any) -> Any:  # jax's own operations
        return jnp.cumsum(jnp.tanh(x)) * 2.0

    sim = ad.differentiate_with(simulate, backend="jax")
    x = torch.tensor([0.5, -0.3, 1.1], dtype=torch.float64)
    (g,) = ad.gradient(lambda x: (sim(x) ** 2).sum(), x, backend="torch")
    xs = x.numpy()
    c = np.cumsum(np.tanh(xs)) * 2.0
    want = (1 - np.tanh(xs) ** 2) * 2.0 * np.cumsum((2 * c)[::-1])[::-1]
    np.testing.assert_allclose(_np(g), want, rtol=1e-12)
    assert isinstance(g, torch.Tensor)


@pytest.mark.parametrize(("outer", "other"), [("torch", "jax"), ("autograd", "tape")])
def test_second_order_is_refused(outer: str, other: str) -> None:
    piece = ad.differentiate_with(inner, backend=other)
    with pytest.raises(UnsupportedError):
        ad.hessian(lambda x: loss_with(piece)(x, W), X, backend=outer)


@pytest.mark.parametrize("outer", ["tape", "torch", "jax", "autograd"])
def test_same_engine_is_native_at_every_order(outer: str) -> None:
    piece = ad.differentiate_with(inner, backend=outer)
    h = ad.hessian(lambda x: ad.array_namespace(x).sum(piece(x, W)), X, backend=outer)
    np.testing.assert_allclose(_np(h).reshape(3, 3), np.diag(-np.sin(X) * W + 2), rtol=1e-12)


@pytest.mark.parametrize("outer", ["tape", "torch", "jax", "autograd"])
def test_wrong_mode_names_mode(outer: str) -> None:
    other = "tape" if outer != "tape" else "torch"
    backward = ad.differentiate_with(inner, backend=other, out_shape=np.empty(3))
    with pytest.raises(NoForwardRuleError if outer != "jax" else UnsupportedError):
        ad.jvp(backward, (X, W), (U, V), backend=outer)
    forward = ad.differentiate_with(inner, backend=other, mode="forward", out_shape=np.empty(3))
    with pytest.raises(UnsupportedError, match="mode='reverse'"):
        ad.gradient(loss_with(forward), X, W, backend=outer)


def test_forward_mode_error_names_mode_forward() -> None:
    backward = ad.differentiate_with(inner, backend="jax")
    with pytest.raises(NoForwardRuleError, match="mode='forward'"):
        ad.jvp(backward, (X, W), (U, V), backend="torch")


def test_trees_and_integer_arguments() -> None:
    def scaled(p: dict[str, Any], k: Any) -> Any:
        return {"y": p["a"] * p["b"] * k}

    piece = ad.differentiate_with(scaled, backend="jax")
    p = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, -1.0])}
    k = np.array(3)

    def loss(p: dict[str, Any]) -> Any:
        return ad.array_namespace(p["a"]).sum(piece(p, k)["y"])

    (g,) = ad.gradient(loss, p, backend="torch")
    np.testing.assert_allclose(_np(g["a"]), p["b"] * 3)
    np.testing.assert_allclose(_np(g["b"]), p["a"] * 3)


def test_bad_arguments() -> None:
    with pytest.raises(UsageError, match="mode="):
        ad.differentiate_with(inner, backend="jax", mode="sideways")
    with pytest.raises(UsageError, match="backend='jax'"):
        ad.differentiate_with(inner, backend=None)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="callable"):
        ad.differentiate_with(3, backend="jax")  # type: ignore[arg-type]


def test_jax_outer_without_out_shape_names_it() -> None:
    piece = ad.differentiate_with(inner, backend="torch")
    with pytest.raises(UsageError, match="out_shape="):
        ad.gradient(loss_with(piece), X, W, backend="jax")
