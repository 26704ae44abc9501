"""``ad.checkpoint`` (issue 20): the same numbers as the plain function (closed forms),
``f`` really run again in the backward pass, nested derivatives through the
recomputation, prepared calls at a second point, and ``f`` itself outside any call."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import adswitch as ad

REVERSE = ["tape", "torch", "jax", "autograd"]
COUNTING = ["tape", "torch", "autograd"]  # jax traces f once into a program: no count

rng = np.random.default_rng(20)
X = rng.uniform(-1.0, 1.0, (2, 3))
WS = [rng.uniform(-1.0, 1.0, (3, 3)) * 0.8 for _ in range(3)]


class Counted:
    """A tanh layer counting its runs."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, h: Any, w: Any) -> Any:
        self.calls += 1
        return ad.array_namespace(h).tanh(h @ w)


def _chain_grads(x: np.ndarray, ws: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Closed form: the gradient of sum(h_n ** 2), h_k = tanh(h_{k-1} @ w_k), by hand."""
    hs = [x]
    for w in ws:
        hs.append(np.tanh(hs[-1] @ w))
    g = 2.0 * hs[-1]
    gws: list[np.ndarray] = []
    for k in range(len(ws) - 1, -1, -1):
        pre = g * (1.0 - hs[k + 1] ** 2)
        gws.insert(0, hs[k].T @ pre)
        g = pre @ ws[k].T
    return g, gws


def _loss(layer: Any) -> Any:
    def loss(x: Any, ws: list[Any]) -> Any:
        h = x
        for w in ws:
            h = layer(h, w)
        return ad.array_namespace(x).sum(h**2)

    return loss


def test_outside_a_call_it_is_f() -> None:
    layer = Counted()
    ck = ad.checkpoint(layer)
    np.testing.assert_array_equal(ck(X, WS[0]), np.tanh(X @ WS[0]))
    assert layer.calls == 1


def test_decorator_keeps_the_name_and_refuses_a_non_callable() -> None:
    @ad.checkpoint
    def block(h: Any) -> Any:
        """doc"""
        return h * 2.0

    assert block.__name__ == "block" and block.__doc__ == "doc"
    with pytest.raises(ad.UsageError, match="callable"):
        ad.checkpoint(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", REVERSE)
def test_chain_gradient_matches_the_closed_form(backend: str) -> None:
    gx, gws = ad.gradient(_loss(ad.checkpoint(Counted())), X, WS, backend=backend)
    want_x, want_ws = _chain_grads(X, WS)
    np.testing.assert_allclose(np.asarray(gx), want_x, rtol=1e-12, atol=1e-14)
    for got, want in zip(gws, want_ws):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", COUNTING)
def test_f_runs_again_in_the_backward_pass(backend: str) -> None:
    plain, checked = Counted(), Counted()
    ad.gradient(_loss(plain), X, WS, backend=backend)
    ad.gradient(_loss(ad.checkpoint(checked)), X, WS, backend=backend)
    assert plain.calls == len(WS)  # once per layer
    assert checked.calls == 2 * len(WS)  # forward, then recomputed once in the backward


def test_tape_records_one_entry_for_the_whole_layer() -> None:
    """What the tape keeps of a checkpointed layer is one entry (holding its inputs);
    the plain layer leaves one per operation."""
    grown: list[int] = []

    def loss(layer: Any) -> Any:
        def f(x: Any) -> Any:
            before = len(x._trace.tape)
            h = layer(x)
            grown.append(len(x._trace.tape) - before)
            return ad.array_namespace(x).sum(h**2)

        return f

    def block(h: Any) -> Any:
        xp = ad.array_namespace(h)
        return xp.tanh(xp.sin(h @ WS[0]) * 2.0 + 1.0)

    g_plain = ad.gradient(loss(block), X, backend="tape")[0]
    g_checked = ad.gradient(loss(ad.checkpoint(block)), X, backend="tape")[0]
    assert grown == [5, 1]
    np.testing.assert_allclose(g_checked, g_plain, rtol=1e-13)


@pytest.mark.parametrize("backend", REVERSE)
def test_hessian_through_the_recomputation(backend: str) -> None:
    """sum(tanh(x) ** 2): Hessian diag(2 (1 - t^2)(1 - 3 t^2)), t = tanh(x)."""
    layer = ad.checkpoint(lambda x: ad.array_namespace(x).tanh(x))
    x = rng.uniform(-1.0, 1.0, 4)
    H = ad.hessian(lambda x: ad.array_namespace(x).sum(layer(x) ** 2), x, backend=backend)
    t = np.tanh(x)
    want = np.diag(2.0 * (1.0 - t**2) * (1.0 - 3.0 * t**2))
    np.testing.assert_allclose(np.asarray(H[0][0]), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", REVERSE)
def test_prepared_at_a_second_point(backend: str) -> None:
    loss = _loss(ad.checkpoint(Counted()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tape says it traces every call
        prepared = ad.prepare(ad.gradient, loss, X, WS, backend=backend)
        prepared(X, WS)
        x2 = X * -0.5 + 0.1
        gx, gws = prepared(x2, WS)
    want_x, want_ws = _chain_grads(x2, WS)
    np.testing.assert_allclose(np.asarray(gx), want_x, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(gws[2]), want_ws[2], rtol=1e-12, atol=1e-14)


def test_tape_prepared_call_says_why_it_traces() -> None:
    from adswitch_tape.replay.notices import TapeReplayWarning, reset_warnings

    reset_warnings()
    prepared = ad.prepare(ad.gradient, _loss(ad.checkpoint(Counted())), X, WS, backend="tape")
    with pytest.warns(TapeReplayWarning, match=r"ad\.checkpoint"):
        prepared(X, WS)
        prepared(X, WS)


def test_tape_refuses_f_writing_into_its_argument() -> None:
    def scale(h: Any) -> Any:
        h[0] = 0.0  # would change the value the backward pass recomputes from
        return h * 2.0

    layer = ad.checkpoint(scale)
    with pytest.raises(ad.MutationError, match=r"ad\.checkpoint"):
        ad.gradient(lambda x: ad.array_namespace(x).sum(layer(x * 1.0)), X, backend="tape")


def test_engine_without_the_hook_runs_f_plainly() -> None:
    """The dual example (forward only) has no hook: the same numbers, f run once."""
    layer = Counted()
    ck = ad.checkpoint(layer)
    v = rng.uniform(-1.0, 1.0, X.shape)
    _, t = ad.jvp(lambda x: ck(x, WS[0]), (X,), (v,), backend="dual")
    pre = X @ WS[0]
    np.testing.assert_allclose(np.asarray(t), (1.0 - np.tanh(pre) ** 2) * (v @ WS[0]), rtol=1e-12)
    assert layer.calls == 1


@pytest.mark.parametrize("backend", ["tape", "autograd"])
def test_tree_output_with_an_int_and_a_batched_jacobian(backend: str) -> None:
    @ad.checkpoint
    def f(p: dict[str, Any], x: Any) -> tuple[Any, Any, int]:
        xp = ad.array_namespace(x)
        return xp.sin(x) * p["a"], xp.exp(x[:2]), p["n"]

    p = {"a": rng.uniform(0.5, 1.0, 3), "n": 3}
    x = rng.uniform(-1.0, 1.0, 3)
    J = ad.jacobian(lambda x: ad.array_namespace(x).concat(f(p, x)[:2]), x, backend=backend)
    want = np.vstack([np.diag(np.cos(x) * p["a"]), np.diag(np.exp(x))[:2]])
    np.testing.assert_allclose(np.asarray(J[0]), want, rtol=1e-12, atol=1e-14)
    assert ad.gradient(
        lambda x: ad.array_namespace(x).sum(f(p, x)[0]) * f(p, x)[2], x, backend=backend
    )[0].shape == (3,)


@pytest.mark.parametrize("backend", REVERSE)
def test_closure_over_an_outer_traced_value(backend: str) -> None:
    """f closes over the outer call's x (the tape and autograd then run it plainly): the
    outer derivative of sum(d/dy sum(sin(y x)^2) at y = x) = sum(sin(2 x^2) x)."""
    x0 = np.array([0.3, -0.7, 1.1])

    def outer(x: Any) -> Any:
        xp = ad.array_namespace(x)
        inner = ad.checkpoint(lambda z: xp.sin(z * x))
        return xp.sum(ad.gradient(lambda y: xp.sum(inner(y) ** 2), x)[0])

    g = ad.gradient(outer, x0, backend=backend)[0]
    want = np.sin(2.0 * x0**2) + 4.0 * x0**2 * np.cos(2.0 * x0**2)
    assert type(g) is np.ndarray
    np.testing.assert_allclose(g, want, rtol=1e-12)


@pytest.mark.parametrize("backend", REVERSE)
def test_identity_output(backend: str) -> None:
    ident = ad.checkpoint(lambda z: z)
    x0 = np.array([0.3, -0.7, 1.1])
    value, (g,) = ad.withgradient(
        lambda x: ad.array_namespace(x).sum(ident(x) * x), x0, backend=backend
    )
    np.testing.assert_allclose(np.asarray(g), 2.0 * x0, rtol=1e-15)
    np.testing.assert_allclose(float(value), float(np.sum(x0**2)), rtol=1e-15)
