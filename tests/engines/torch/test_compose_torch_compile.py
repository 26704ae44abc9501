"""adswitch operators inside ``torch.compile`` (issue 23): every operator, called from a
compiled function, gives torch's own derivatives (``torch.func``), with one graph break
at the call (as ``torch.autograd.grad`` would break the graph) and the code around it
still compiled. Oracle: ``torch.func`` on the same function, outside any compiler."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad

torch = pytest.importorskip("torch")
dynamo = pytest.importorskip("torch._dynamo")


def _loss(w: Any, x: Any) -> Any:
    xp = ad.array_namespace(w)
    return xp.sum(xp.tanh(x @ w) ** 2)


def _torch_loss(w: Any, x: Any) -> Any:
    return torch.sum(torch.tanh(x @ w) ** 2)


W = torch.linspace(-1.0, 1.0, 12, dtype=torch.float64).reshape(4, 3)
X = torch.cos(torch.arange(20, dtype=torch.float64)).reshape(5, 4)


@pytest.fixture(autouse=True)
def _fresh_compiler() -> Any:
    dynamo.reset()
    yield
    dynamo.reset()


def test_gradient_inside_a_compiled_training_step() -> None:
    def step(w: Any, x: Any) -> Any:
        g = ad.gradient(_loss, w, ad.Const(x), backend="torch")[0]
        return w - 0.1 * g.cos()

    compiled = torch.compile(step)
    for scale in (1.0, 2.0):  # (the second call reuses the compiled pieces)
        w = W * scale
        want = w - 0.1 * torch.func.grad(_torch_loss)(w, X).cos()
        torch.testing.assert_close(compiled(w, X), want)
    assert dynamo.explain(step)(W, X).graph_count >= 1  # (the code around it is compiled)


def test_every_operator_inside_torch_compile() -> None:
    v = torch.ones_like(W)

    def all_operators(w: Any, x: Any) -> Any:
        value, (g, _) = ad.withgradient(_loss, w, ad.Const(x), backend="torch")
        _, pull = ad.vjp(lambda w: ad.array_namespace(w).tanh(x @ w), w, backend="torch")
        _, t = ad.jvp(_loss, (w, ad.Const(x)), (v, None), backend="torch")
        j = ad.jacobian(lambda w: x @ w, w, backend="torch")[0]
        h = ad.hvp(_loss, (w, ad.Const(x)), (v, None), backend="torch")[0]
        return value, g, pull(torch.ones(5, 3, dtype=w.dtype))[0], t, j, h

    got = torch.compile(all_operators)(W, X)
    grad = torch.func.grad(_torch_loss)
    want = (
        _torch_loss(W, X),
        grad(W, X),
        torch.func.vjp(lambda w: torch.tanh(X @ w), W)[1](torch.ones(5, 3, dtype=W.dtype))[0],
        torch.func.jvp(lambda w: _torch_loss(w, X), (W,), (v,))[1],
        torch.func.jacrev(lambda w: X @ w)(W),
        torch.func.jvp(lambda w: grad(w, X), (W,), (v,))[1],
    )
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b)


def test_prepared_call_and_numpy_inside_torch_compile() -> None:
    prepared = ad.prepare(ad.gradient, _loss, W, ad.Const(X), backend="torch")
    w_np = np.linspace(0.0, 1.0, 12).reshape(4, 3)

    def step(w: Any) -> Any:
        g = prepared(w, ad.Const(X))[0]
        # a tape call on numpy arrays from the same compiled function
        (gn,) = ad.gradient(lambda a: ad.array_namespace(a).sum(a**3), w_np)
        return g * 2 + torch.as_tensor(gn)

    got = torch.compile(step)(W)
    torch.testing.assert_close(
        got, torch.func.grad(_torch_loss)(W, X) * 2 + 3 * torch.as_tensor(w_np) ** 2
    )


def test_no_compiler_no_barrier() -> None:
    from adswitch.registry import default_registry

    assert default_registry().compiler_barrier()() is None
