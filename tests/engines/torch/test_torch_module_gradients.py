"""A torch module's gradient read every way torch reads a module: parameters(),
named_parameters(), state_dict(), get_parameter, attributes, keys, children and
named_modules, parameters_to_vector -- plain, Duplicated, withgradient and prepared.
Inside f, the argument's parameters()/state_dict() are the traced values.
Oracle: torch's own loss.backward() on a deep copy of the model."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch: Any = pytest.importorskip("torch")

import adswitch as ad  # noqa: E402

nn = torch.nn
to_vec = torch.nn.utils.parameters_to_vector


class Net(torch.nn.Module):  # type: ignore[misc]
    """A submodule, a Sequential, a buffer-carrying BatchNorm and a frozen parameter."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4)).double()
        self.bn = nn.BatchNorm1d(4).double()
        self.head = nn.Linear(4, 1).double()
        self.frozen = nn.Parameter(torch.tensor(1.5, dtype=torch.float64), requires_grad=False)

    def forward(self, x: Any) -> Any:
        return self.frozen * self.head(self.bn(self.body(x)))


def _data() -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(6, 3)), rng.normal(size=(6, 1))


def mse(m: Any, x: Any, y: Any) -> Any:
    return ((m(torch.as_tensor(x)) - torch.as_tensor(y)) ** 2).mean()


def oracle(model: Any, loss: Callable[..., Any], *args: Any) -> tuple[float, dict[str, Any]]:
    """loss(model copy, *args).backward(): the loss and {name: .grad} of trainable ones."""
    twin = copy.deepcopy(model)
    value = loss(twin, *args)
    value.backward()
    return float(value.detach()), {n: p.grad for n, p in twin.named_parameters() if p.requires_grad}


def check_every_accessor(g: Any, model: Any, expected: dict[str, Any]) -> None:
    """Every torch accessor of the gradient ``g`` of ``model`` gives ``expected``."""
    names = list(expected)  # the model's trainable named_parameters() order
    close = torch.testing.assert_close
    assert [n for n, _ in g.named_parameters()] == names
    for (name, value), p in zip(g.named_parameters(), g.parameters()):
        close(value, expected[name])
        close(p, expected[name])
        close(g[name], expected[name])
        close(g.get_parameter(name), expected[name])
    close(next(g.parameters()), expected[names[0]])
    assert list(g.state_dict()) == names
    for name, value in g.state_dict().items():
        close(value, expected[name])
    close(to_vec(g.parameters()), to_vec(list(expected.values())))
    assert dict(g).keys() == expected.keys()
    assert list(g.buffers()) == [] and list(g.named_buffers()) == []
    # Submodules: the same names as the model's, each one's parameters its gradients.
    assert [n for n, _ in g.named_modules()] == [n for n, _ in model.named_modules()]
    for prefix, sub in g.named_modules():
        for name, value in sub.named_parameters(prefix=prefix):
            close(value, expected[name])
    assert len(list(g.children())) == len(list(model.children()))
    assert not any(
        isinstance(v, nn.Parameter) or v.requires_grad for v in g.parameters()
    )  # gradients, not the model's weights


def test_linear_gradient_accessors_match_backward() -> None:
    # The example: every accessor used to give the weights but .weight/["weight"].
    torch.manual_seed(0)
    model = nn.Linear(3, 1).double()
    x, y = _data()
    (g, _, _) = ad.gradient(mse, model, ad.Const(x), ad.Const(y), backend="torch")
    _, expected = oracle(model, mse, x, y)
    check_every_accessor(g, model, expected)
    torch.testing.assert_close(g.weight, expected["weight"])
    assert type(g).__qualname__ == "FunctionalModule"
    assert type(g).__module__ == "adswitch_torch"


def test_nested_module_gradient_accessors_match_backward() -> None:
    torch.manual_seed(1)
    model = Net()
    x, y = _data()
    (g, _, _) = ad.gradient(mse, model, ad.Const(x), ad.Const(y), backend="torch")
    _, expected = oracle(model, mse, x, y)
    check_every_accessor(g, model, expected)
    torch.testing.assert_close(g.body[2].weight, expected["body.2.weight"])
    torch.testing.assert_close(g["body"][0].bias, expected["body.0.bias"])
    torch.testing.assert_close(g.bn.weight, expected["bn.weight"])


def test_buffers_and_frozen_parameters_have_no_gradient_entry() -> None:
    torch.manual_seed(2)
    model = Net()
    x, y = _data()
    (g, _, _) = ad.gradient(mse, model, ad.Const(x), ad.Const(y), backend="torch")
    assert "frozen" not in dict(g.named_parameters())
    assert "bn.running_mean" not in g.state_dict()
    with pytest.raises(AttributeError, match=r"buffer.*not differentiated"):
        _ = g.bn.running_mean
    with pytest.raises(AttributeError, match=r"frozen parameter.*not differentiated"):
        _ = g.frozen
    with pytest.raises(KeyError, match="buffer"):
        _ = g["bn.running_var"]
    with pytest.raises(AttributeError, match="frozen parameter"):
        g.get_parameter("frozen")
    assert g.bn.num_features == 4  # other attributes are the module's
    with pytest.raises(AttributeError, match="read-only"):
        g.double()  # would convert the model's own tensors


def test_duplicated_dval_accessors_are_the_grads() -> None:
    torch.manual_seed(3)
    model = Net()
    x, y = _data()
    _, expected = oracle(model, mse, x, y)
    dup = ad.Duplicated(model)
    ad.gradient(mse, dup, ad.Const(x), ad.Const(y), backend="torch")
    check_every_accessor(dup.dval, model, expected)
    for value, p in zip(dup.dval.parameters(), (p for p in model.parameters() if p.requires_grad)):
        assert value is p.grad  # the very tensors an optimizer reads


def test_withgradient_and_prepared_gradients_match_backward() -> None:
    torch.manual_seed(4)
    model = Net()
    x, y = _data()
    value, expected = oracle(model, mse, x, y)
    val, (g, _, _) = ad.withgradient(mse, model, ad.Const(x), ad.Const(y), backend="torch")
    assert float(val) == pytest.approx(value, rel=1e-12)
    check_every_accessor(g, model, expected)
    prep = ad.prepare(ad.gradient, mse, model, ad.Const(x), ad.Const(y), backend="torch")
    for _ in range(2):
        (g, _, _) = prep(model, ad.Const(x), ad.Const(y))
        check_every_accessor(g, model, expected)


def regularized(m: Any, x: Any, y: Any) -> Any:
    # Reads the argument as torch code does: parameters(), state_dict(), named_modules().
    l2 = sum((p**2).sum() for p in m.parameters())
    bias = sum(v.sum() for k, v in m.state_dict(keep_vars=True).items() if k.endswith("bias"))
    detached = sum(v.sum() for k, v in m.state_dict().items() if k.endswith("weight"))
    layers = sum(sub.weight.sum() for _, sub in m.named_modules() if isinstance(sub, nn.Linear))
    return mse(m, x, y) + 0.1 * l2 + 0.2 * bias + 0.3 * layers + 0.4 * detached


def test_parameters_inside_f_are_the_traced_values() -> None:
    # Inside f, m.parameters() used to be the module's stored weights: the regularizer's
    # gradient was silently missing. Frozen parameters and buffers are still read.
    torch.manual_seed(5)
    model = Net()
    x, y = _data()

    def plain(m: Any, x: Any, y: Any) -> Any:  # named_modules of a plain module: modules
        return regularized(m, x, y)

    value, expected = oracle(model, plain, x, y)
    val, (g, _, _) = ad.withgradient(regularized, model, ad.Const(x), ad.Const(y), backend="torch")
    assert float(val) == pytest.approx(value, rel=1e-12)  # frozen's square included
    check_every_accessor(g, model, expected)


def test_argument_inside_f_keeps_constants() -> None:
    torch.manual_seed(6)
    model = Net()
    seen: dict[str, Any] = {}

    def f(m: Any) -> Any:
        seen["names"] = [n for n, _ in m.named_parameters()]
        seen["buffers"] = [n for n, _ in m.named_buffers()]
        seen["state"] = list(m.state_dict())
        seen["frozen"] = float(m.frozen.detach())
        return sum((p**2).sum() for p in m.parameters())

    (g,) = ad.gradient(f, model, backend="torch")
    assert seen["names"] == [n for n, _ in model.named_parameters()]
    assert seen["buffers"] == [n for n, _ in model.named_buffers()]
    assert seen["state"] == list(model.state_dict())
    assert seen["frozen"] == 1.5
    for name, p in model.named_parameters():
        if p.requires_grad:
            torch.testing.assert_close(g[name], 2 * p.detach())


def test_tied_weights_every_name_gives_the_total_gradient() -> None:
    shared = nn.Linear(2, 2, bias=False).double()
    model = nn.Sequential(shared, nn.Tanh(), shared)
    x = torch.tensor([[0.5, -1.0]], dtype=torch.float64)

    def loss(m: Any) -> Any:
        return m(x).sum()

    (g,) = ad.gradient(loss, model, backend="torch")
    _, expected = oracle(model, loss)
    assert [n for n, _ in g.named_parameters()] == ["0.weight"]
    names = [n for n, _ in g.named_parameters(remove_duplicate=False)]
    assert names == ["0.weight", "2.weight"]
    assert list(g.state_dict()) == list(model.state_dict())  # torch lists both names
    for value in g.state_dict().values():
        torch.testing.assert_close(value, expected["0.weight"])
    torch.testing.assert_close(g[2].weight, expected["0.weight"])
    torch.testing.assert_close(g["2.weight"], expected["0.weight"])


def test_gradient_made_inside_f_is_a_gradient() -> None:
    # A module's gradient built inside an outer call (gradient of a gradient norm) holds
    # gradients only: no frozen parameter, no buffer. Oracle: create_graph backward.
    torch.manual_seed(7)
    model = Net().eval()
    x, y = _data()
    seen: dict[str, Any] = {}

    def penalty(m: Any) -> Any:
        (inner, _, _) = ad.gradient(mse, m, ad.Const(x), ad.Const(y), backend="torch")
        seen["names"] = [n for n, _ in inner.named_parameters()]
        seen["buffers"] = list(inner.buffers())
        return sum((v**2).sum() for v in inner.parameters())

    (g,) = ad.gradient(penalty, model, backend="torch")
    twin = copy.deepcopy(model)
    params = [p for p in twin.parameters() if p.requires_grad]
    grads = torch.autograd.grad(mse(twin, x, y), params, create_graph=True)
    total = torch.autograd.grad(sum((v**2).sum() for v in grads), params)
    expected = dict(zip([n for n, p in twin.named_parameters() if p.requires_grad], total))
    assert seen["names"] == list(expected) and seen["buffers"] == []
    check_every_accessor(g, model, expected)
