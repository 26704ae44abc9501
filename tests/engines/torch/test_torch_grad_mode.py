"""torch's grad mode does not leak into adswitch's calls: under ``torch.no_grad()`` (an
evaluation loop) every operator still differentiates -- before, gradients, Jacobians and
Hessians came back silently zero -- and under ``torch.inference_mode()`` numpy arguments
work while inference tensors are refused with the fix. Oracles: closed forms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import UnsupportedError

torch = pytest.importorskip("torch")

X = np.array([1.0, -2.0, 0.5])


def _loss(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * x)


def _grad(x: np.ndarray) -> np.ndarray:
    return np.sin(x) + x * np.cos(x)


def _hess(x: np.ndarray) -> np.ndarray:
    return np.diag(2 * np.cos(x) - x * np.sin(x))


MODES = {"no_grad": torch.no_grad, "inference_mode": torch.inference_mode}


@pytest.mark.parametrize("mode", list(MODES))
def test_every_operator_differentiates_under_a_torch_mode(mode: str) -> None:
    with MODES[mode]():
        (g,) = ad.gradient(_loss, X, backend="torch")
        value, (g2,) = ad.withgradient(_loss, X, backend="torch")
        (jac,) = ad.jacobian(lambda x: x * x, X, backend="torch")
        (jac_f,) = ad.jacobian(lambda x: x * x, X, backend="torch", mode="forward")
        ((h,),) = ad.hessian(_loss, X, backend="torch")
        (hv,) = ad.hvp(_loss, (X,), (X,), backend="torch")
        _, pull = ad.vjp(lambda x: x * x, X, backend="torch")
        (pulled,) = pull(np.ones(3))
        prep = ad.prepare(ad.gradient, _loss, X, backend="torch")
        (gp,) = prep(X + 1.0)
    np.testing.assert_allclose(g, _grad(X))
    np.testing.assert_allclose(g2, _grad(X))
    assert value == pytest.approx(float(np.sum(np.sin(X) * X)))
    np.testing.assert_allclose(jac, np.diag(2 * X))
    np.testing.assert_allclose(jac_f, np.diag(2 * X))
    np.testing.assert_allclose(h, _hess(X))
    np.testing.assert_allclose(hv, _hess(X) @ X)
    np.testing.assert_allclose(pulled, 2 * X)
    np.testing.assert_allclose(gp, _grad(X + 1.0))


def test_grad_mode_is_restored() -> None:
    with torch.no_grad():
        ad.gradient(_loss, X, backend="torch")
        assert not torch.is_grad_enabled()
    with torch.inference_mode():
        ad.gradient(_loss, X, backend="torch")
        assert torch.is_inference_mode_enabled()


def test_inference_tensor_is_refused_with_the_fix() -> None:
    with torch.inference_mode():
        x = torch.tensor(X)
        with pytest.raises(UnsupportedError, match=r"inference tensor.*clone"):
            ad.gradient(_loss, x, backend="torch")
    with torch.inference_mode(False):
        y = x.clone()
    (g,) = ad.gradient(_loss, y, backend="torch")
    np.testing.assert_allclose(g.detach().numpy(), _grad(X))
