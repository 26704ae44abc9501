"""``ad.Duplicated(model)`` writes into the parameters' ``.grad``, so ``torch.optim`` trains.
Oracle: the same steps driven by torch's own ``loss.backward()`` on a copy of the model."""

from __future__ import annotations

import copy
from typing import Any

import pytest

torch: Any = pytest.importorskip("torch")

import adswitch as ad  # noqa: E402

nn = torch.nn


def loss(model: Any, x: Any, y: Any) -> Any:
    return ((model(x) - y) ** 2).mean()


def _model() -> Any:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()


def _data() -> tuple[Any, Any]:
    g = torch.Generator().manual_seed(1)
    return (
        torch.randn(6, 3, dtype=torch.float64, generator=g),
        torch.randn(6, 2, dtype=torch.float64, generator=g),
    )


def _same_parameters(a: Any, b: Any) -> None:
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        assert torch.allclose(p, q, rtol=1e-12, atol=1e-14), name


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
        lambda ps: torch.optim.Adam(ps, lr=0.01),
    ],
    ids=["sgd", "adam"],
)
def test_optimizer_steps_through_duplicated_equal_backward(make_optimizer: Any) -> None:
    ours, theirs = _model(), _model()
    x, y = _data()
    opt_ours, opt_theirs = make_optimizer(ours.parameters()), make_optimizer(theirs.parameters())
    for _ in range(4):
        opt_ours.zero_grad()
        ad.gradient(loss, ad.Duplicated(ours), ad.Const(x), ad.Const(y))
        opt_ours.step()
        opt_theirs.zero_grad()
        loss(theirs, x, y).backward()
        opt_theirs.step()
    _same_parameters(ours, theirs)
    assert not torch.equal(ours[0].weight, _model()[0].weight)  # it moved


def test_a_shadow_made_once_survives_zero_grad() -> None:
    # zero_grad() sets .grad to None; the shadow becomes .grad again when written.
    ours, theirs = _model(), _model()
    x, y = _data()
    opt_ours = torch.optim.SGD(ours.parameters(), lr=0.1)
    opt_theirs = torch.optim.SGD(theirs.parameters(), lr=0.1)
    dup = ad.Duplicated(ours)
    for _ in range(3):
        opt_ours.zero_grad()
        ad.gradient(loss, dup, ad.Const(x), ad.Const(y))
        opt_ours.step()
        opt_theirs.zero_grad()
        loss(theirs, x, y).backward()
        opt_theirs.step()
    _same_parameters(ours, theirs)


def test_zero_false_accumulates_into_grad_as_backward_does() -> None:
    ours, theirs = _model(), _model()
    x, y = _data()
    for i in range(2):
        ad.gradient(loss, ad.Duplicated(ours), ad.Const(x + i), ad.Const(y), zero=False)
        loss(theirs, x + i, y).backward()
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.allclose(p.grad, q.grad, rtol=1e-12, atol=1e-14)


def test_a_failing_call_leaves_grad_as_it_was() -> None:
    model = _model()
    x, y = _data()

    def broken(m: Any, x: Any, y: Any) -> Any:
        loss(m, x, y)
        raise KeyError("from f")

    with pytest.raises(KeyError, match="from f"):
        ad.gradient(broken, ad.Duplicated(model), ad.Const(x), ad.Const(y))
    assert all(p.grad is None for p in model.parameters())
    loss(model, x, y).backward()
    before = [p.grad.clone() for p in model.parameters()]
    with pytest.raises(KeyError, match="from f"):
        ad.gradient(broken, ad.Duplicated(model), ad.Const(x), ad.Const(y))
    assert all(torch.equal(p.grad, b) for p, b in zip(model.parameters(), before, strict=True))


def test_a_shadow_whose_grad_was_replaced_is_refused_before_f_runs() -> None:
    model = _model()
    x, y = _data()
    dup = ad.Duplicated(model)  # made while .grad is None
    loss(model, x, y).backward()  # .grad is now a tensor torch made, not the shadow
    replaced = [p.grad for p in model.parameters()]
    calls = []

    def counted(m: Any, x: Any, y: Any) -> Any:
        calls.append(1)
        return loss(m, x, y)

    with pytest.raises(ad.ActivityError, match=r"no longer that \.grad.*Duplicated\(model\)"):
        ad.gradient(counted, dup, ad.Const(x), ad.Const(y))
    assert not calls
    assert all(p.grad is g for p, g in zip(model.parameters(), replaced, strict=True))


def test_make_zero_of_a_module_is_made_of_its_grads() -> None:
    model = _model()
    x, y = _data()
    loss(model, x, y).backward()
    shadow = ad.make_zero(model)
    assert all(shadow[name] is p.grad for name, p in model.named_parameters())
    # a frozen parameter is no leaf, and a tensor that is no parameter gets fresh zeros
    frozen = copy.deepcopy(model)
    frozen[0].weight.requires_grad_(False)
    assert "0.weight" not in ad.make_zero(frozen)
    t = torch.ones(2, dtype=torch.float64, requires_grad=True)
    (t * 2).sum().backward()
    assert ad.make_zero(t) is not t.grad and not ad.make_zero(t).any()


def test_a_sparse_grad_left_by_backward_is_refused_with_the_fix() -> None:
    emb = nn.Embedding(5, 2, sparse=True).double()
    idx = torch.tensor([0, 3])
    emb(idx).sum().backward()
    assert emb.weight.grad.layout is torch.sparse_coo
    with pytest.raises(ad.ActivityError, match=r"sparse.*zero_grad\(\)"):
        ad.Duplicated(emb)
    emb.zero_grad()
    dup = ad.Duplicated(emb)
    ad.gradient(lambda m: m(idx).sum(), dup)
    expected = torch.zeros(5, 2, dtype=torch.float64)
    expected[[0, 3]] = 1.0  # d/dW sum(W[idx]) = 1 at the rows looked up
    assert torch.equal(emb.weight.grad, expected)
