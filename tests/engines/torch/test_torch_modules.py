"""torch.nn.Module arguments: parameters as leaves (tied once, buffers and frozen
parameters constant), the functional view inside f, .grad shadows for torch.optim.
Oracles: closed forms and finite differences on numpy copies of the weights."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch: Any = pytest.importorskip("torch")

from adswitch_torch import FunctionalModule, grad_shadow  # noqa: E402

import adswitch as ad  # noqa: E402
from tests.engines.torch.test_torch_oracles import FD_TOL, fd_grad  # noqa: E402

nn = torch.nn


class Scaled(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2).double()
        self.frozen = nn.Parameter(torch.tensor(2.0, dtype=torch.float64), requires_grad=False)
        self.register_buffer("scale", torch.tensor(3.0, dtype=torch.float64))

    def forward(self, x: Any) -> Any:
        return self.frozen * self.scale * torch.tanh(self.fc(x))

    def energy(self, x: Any) -> Any:
        return (self.fc(x) ** 2).sum()


def weights(module: Any) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in module.named_parameters()}


def test_module_argument_gradient_matches_finite_differences() -> None:
    torch.manual_seed(0)
    model = Scaled()
    x = torch.randn(4, 3, dtype=torch.float64)
    (g, gx) = ad.gradient(lambda m, x: m(x).sum(), model, ad.Const(x))
    assert gx is None
    assert isinstance(g, FunctionalModule) and set(g) == {"fc.weight", "fc.bias"}
    assert model.fc.weight.grad is None  # plain argument: .grad untouched
    w = weights(model)
    xn = x.numpy()

    def with_weight(wn: Any) -> Any:
        return np.sum(6.0 * np.tanh(xn @ wn.T + w["fc.bias"]))

    def with_bias(bn: Any) -> Any:
        return np.sum(6.0 * np.tanh(xn @ w["fc.weight"].T + bn))

    np.testing.assert_allclose(
        g["fc.weight"].numpy(), fd_grad(with_weight, w["fc.weight"]), **FD_TOL
    )
    np.testing.assert_allclose(g.fc.bias.numpy(), fd_grad(with_bias, w["fc.bias"]), **FD_TOL)


def test_tied_weights_get_one_total_gradient() -> None:
    a, b = nn.Linear(2, 2, bias=False).double(), nn.Linear(2, 2, bias=False).double()
    b.weight = a.weight
    model = nn.Sequential(a, b)
    x = torch.tensor([[1.0, -2.0]], dtype=torch.float64)
    (g, _) = ad.gradient(lambda m, x: m(x).sum(), model, ad.Const(x))
    assert list(g) == ["0.weight"]
    w, xn = a.weight.detach().numpy().copy(), x.numpy()
    expected = fd_grad(lambda wn: np.sum(xn @ wn.T @ wn.T), w)
    np.testing.assert_allclose(g["0.weight"].numpy(), expected, **FD_TOL)


def test_other_methods_see_the_traced_parameters() -> None:
    model = Scaled()
    x = torch.tensor([[1.0, 0.5, -1.0]], dtype=torch.float64)
    (g, _) = ad.gradient(lambda m, x: m.energy(x), model, ad.Const(x))
    y = model.fc(x).detach()
    # d/db sum((Wx + b)^2) = 2 (Wx + b)
    assert torch.allclose(g.fc.bias, 2 * y.sum(0), rtol=1e-12)


def test_duplicated_with_grad_shadow_feeds_an_optimizer_step() -> None:
    torch.manual_seed(1)
    model = nn.Linear(3, 1).double()
    x = torch.randn(5, 3, dtype=torch.float64)
    before = weights(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt.zero_grad()
    shadow = grad_shadow(model)
    (g, _) = ad.gradient(lambda m, x: m(x).sum(), ad.Duplicated(model, shadow), ad.Const(x))
    assert g is shadow and shadow["weight"] is model.weight.grad
    # Closed form: d/dW sum(x W^T + b) = column sums of x; d/db = batch size.
    expected_w = x.sum(0, keepdim=True)
    assert torch.allclose(model.weight.grad, expected_w, rtol=1e-12)
    opt.step()
    np.testing.assert_allclose(
        model.weight.detach().numpy(), before["weight"] - 0.1 * expected_w.numpy(), rtol=1e-12
    )
    np.testing.assert_allclose(model.bias.detach().numpy(), before["bias"] - 0.1 * 5, rtol=1e-12)


def test_duplicated_module_with_default_shadow_fills_grad() -> None:
    # The default shadow is the parameters' .grad: set once the gradient is written.
    model = nn.Linear(2, 1).double()
    x = torch.ones(3, 2, dtype=torch.float64)
    dup = ad.Duplicated(model)
    assert model.weight.grad is None  # nothing set before a gradient exists
    ad.gradient(lambda m, x: m(x).sum(), dup, ad.Const(x))
    # Closed form: d/dW sum(x W^T + b) = column sums of x (3, 3); d/db = batch size.
    assert torch.equal(dup.dval["weight"], torch.full((1, 2), 3.0, dtype=torch.float64))
    assert torch.equal(dup.dval["bias"], torch.full((1,), 3.0, dtype=torch.float64))
    assert dup.dval["weight"] is model.weight.grad and dup.dval["bias"] is model.bias.grad


def test_second_order_through_a_module() -> None:
    # Penalty on the input gradient: d/dW sum((d/dx sum(W x))^2) = d/dW sum(colsum(W)^2).
    model = nn.Linear(2, 3, bias=False).double()
    x = torch.ones(1, 2, dtype=torch.float64)

    def penalty(m: Any) -> Any:
        (dx,) = ad.gradient(lambda x_: m(x_).sum(), x)
        return (dx**2).sum()

    (g,) = ad.gradient(penalty, model)
    w = model.weight.detach()
    expected = 2 * w.sum(0, keepdim=True).expand_as(w)
    assert torch.allclose(g["weight"], expected, rtol=1e-12)


def test_destructure_a_module_with_tied_weights() -> None:
    # Seed 001: a model holding one layer twice; its flat vector lists the layer once
    # and the gradient through rebuild sums both uses.
    layer = nn.Linear(1, 1).double()
    model = nn.ModuleDict({"a": layer, "b": layer})
    flat, rebuild = ad.destructure(model)
    assert flat.shape == (2,)
    x = torch.tensor([[2.0]], dtype=torch.float64)

    def loss(p: Any) -> Any:
        m = rebuild(p)
        return (m.a(x) + m.b(x)).sum()

    (g,) = ad.gradient(loss, flat)
    # sum = 2 (w x + b): d/dw = 2 x = 4, d/db = 2, in named_parameters order.
    names = [name for name, _ in model.named_parameters()]
    expected = {"a.weight": 4.0, "a.bias": 2.0}
    assert g.tolist() == [expected[n] for n in names]


def test_children_of_a_view_see_traced_values_tied_ones_included() -> None:
    shared = nn.Linear(2, 2, bias=False).double()
    model = nn.Sequential(shared, nn.Tanh(), shared)
    x = torch.tensor([[0.5, -1.0]], dtype=torch.float64)

    def loss(m: Any) -> Any:
        # Children reached by index: the tied layer at [2] is listed as "0.weight".
        return (m[2](m[1](m[0](x)))).sum()

    (g,) = ad.gradient(loss, model)
    w, xn = shared.weight.detach().numpy().copy(), x.numpy()
    expected = fd_grad(lambda wn: np.sum(np.tanh(xn @ wn.T) @ wn.T), w)
    np.testing.assert_allclose(g["0.weight"].numpy(), expected, **FD_TOL)
