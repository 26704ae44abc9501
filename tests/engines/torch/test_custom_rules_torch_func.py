"""``ad.custom_vjp`` / ``ad.custom_jvp`` on torch composed with ``torch.func`` (the
new-style Functions of ``adswitch_torch.integrations.custom``). Oracles: closed forms (softmax,
sigmoid and their derivatives), never the engine against itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import NoForwardRuleError

torch = pytest.importorskip("torch")
# torch.func.jvp loads decompositions that torch 2.13 builds with its own deprecated
# torch.jit.script: a warning about torch's code, nothing these tests can act on.
pytestmark = pytest.mark.filterwarnings("ignore:.*torch.jit.script.*:DeprecationWarning")
F = torch.func

CALLS = [0]


@ad.custom_vjp
def lse(x: Any) -> Any:
    xp = ad.array_namespace(x)
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m)))


def _lse_fwd(x: Any) -> tuple[Any, Any]:
    out = lse(x)
    return out, (x, out)


def _lse_bwd(res: Any, ct: Any) -> tuple[Any]:
    x, out = res
    return (ad.array_namespace(x).exp(x - out) * ct,)


lse.defvjp(_lse_fwd, _lse_bwd)


@ad.custom_jvp
def softplus(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.log1p(xp.exp(x))


@softplus.defjvp
def _softplus_jvp(primals: Any, tangents: Any) -> Any:
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1 + ad.array_namespace(x).exp(-x))


@ad.custom_vjp
def softmax(x: Any) -> Any:
    xp = ad.array_namespace(x)
    e = xp.exp(x - xp.max(x))
    return e / xp.sum(e)


def _sm_fwd(x: Any) -> tuple[Any, Any]:
    y = softmax(x)
    return y, y


def _sm_bwd(y: Any, ct: Any) -> tuple[Any]:
    CALLS[0] += 1
    xp = ad.array_namespace(y)
    return (y * (ct - xp.sum(ct * y)),)


softmax.defvjp(_sm_fwd, _sm_bwd)

XB = torch.tensor(
    [[0.3, -1.2, 2.0, 0.5], [1.0, 0.0, -0.5, 0.25], [-2.0, 3.0, 0.1, 0.0]], dtype=torch.float64
)
X = XB[0].clone()


def _grad_lse(x: Any) -> Any:
    return ad.gradient(lse, x, backend="torch")[0]


def _grad_softplus(x: Any) -> Any:
    return ad.gradient(lambda v: ad.array_namespace(v).sum(softplus(v)), x, backend="torch")[0]


def test_vmap_of_gradient_through_a_vjp_rule() -> None:
    got = F.vmap(_grad_lse)(XB)
    torch.testing.assert_close(got, torch.softmax(XB, -1))


def test_vmap_of_gradient_through_a_jvp_rule() -> None:
    got = F.vmap(_grad_softplus)(XB)
    torch.testing.assert_close(got, torch.sigmoid(XB))


def test_jacrev_of_gradient_is_the_hessian_through_a_vjp_rule() -> None:
    s = torch.softmax(X, 0)
    torch.testing.assert_close(F.jacrev(_grad_lse)(X), torch.diag(s) - torch.outer(s, s))


def test_jacrev_and_grad_of_gradient_through_a_jvp_rule() -> None:
    s = torch.sigmoid(X)
    torch.testing.assert_close(F.jacrev(_grad_softplus)(X), torch.diag(s * (1 - s)))
    got = F.grad(lambda x: _grad_softplus(x).sum())(X)
    torch.testing.assert_close(got, s * (1 - s))


def test_reverse_jacobian_vmaps_bwd_once() -> None:
    CALLS[0] = 0
    x = X.numpy()
    J = np.asarray(ad.jacobian(softmax, x, backend="torch", mode="reverse")).reshape(4, 4)
    s = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    np.testing.assert_allclose(J, np.diag(s) - np.outer(s, s), atol=1e-12)
    assert CALLS[0] == 1  # one vmapped bwd, not one per row


def test_forward_mode_through_a_vjp_rule_is_refused_under_torch_func() -> None:
    with pytest.raises(NoForwardRuleError, match="custom_jvp"):
        F.jvp(_grad_lse, (X,), (X,))


def test_host_rule_under_vmap_is_a_clear_refusal() -> None:
    from adswitch.errors import UnsupportedError

    sq = ad.custom_vjp(lambda x: np.asarray(x) ** 2, host=True)
    sq.defvjp(lambda x: (np.asarray(x) ** 2, np.asarray(x)), lambda x, g: (2 * x * g,))

    def grad(x: Any) -> Any:
        return ad.gradient(lambda v: ad.array_namespace(v).sum(sq(v)), x, backend="torch")[0]

    with pytest.raises(UnsupportedError, match="host=True"):
        F.vmap(grad)(XB)
