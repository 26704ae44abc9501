"""The torch engine on a CUDA device (skipped without one): gradients and outputs stay
on the device, Duplicated shadows are updated there, numbers match the CPU run."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch: Any = pytest.importorskip("torch")

from adswitch_torch import TorchBackend, grad_shadow  # noqa: E402

import adswitch as ad  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def loss(w: Any, x: Any) -> Any:
    xp = ad.array_namespace(w)
    return xp.sum(xp.tanh(x @ w) ** 2)


def test_cuda_gradient_stays_on_device_and_matches_cpu() -> None:
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    cpu = ad.gradient(loss, torch.tensor(w), ad.Const(torch.tensor(x)))[0]
    out = ad.withgradient(
        loss, torch.tensor(w, device="cuda"), ad.Const(torch.tensor(x, device="cuda"))
    )
    g = out.grad[0]
    assert g.device.type == "cuda" and g.dtype == torch.float64
    assert out.val.device.type == "cuda" and not out.val.requires_grad
    torch.testing.assert_close(g.cpu(), cpu, rtol=1e-12, atol=1e-12)


def test_cuda_shadow_is_updated_on_device() -> None:
    w = torch.ones(4, 3, dtype=torch.float64, device="cuda")
    x = torch.ones(5, 4, dtype=torch.float64, device="cuda")
    shadow = torch.zeros_like(w)
    ptr = shadow.data_ptr()
    (g, _) = ad.gradient(loss, ad.Duplicated(w, shadow), ad.Const(x))
    assert g is shadow and shadow.data_ptr() == ptr and shadow.device.type == "cuda"
    expected = ad.gradient(loss, w.cpu(), ad.Const(x.cpu()))[0]
    torch.testing.assert_close(shadow.cpu(), expected, rtol=1e-12, atol=1e-12)


def test_cuda_module_grad_shadow_and_second_order() -> None:
    model = torch.nn.Linear(3, 2).double().cuda()
    x = torch.ones(4, 3, dtype=torch.float64, device="cuda")
    shadow = grad_shadow(model)
    ad.gradient(lambda m, x: m(x).sum(), ad.Duplicated(model, shadow), ad.Const(x))
    assert model.weight.grad.device.type == "cuda"
    torch.testing.assert_close(model.weight.grad, torch.full_like(model.weight, 4.0))

    def outer(a: Any) -> Any:
        (g,) = ad.gradient(lambda y: (y**3).sum(), a)
        return g.sum()

    a = torch.tensor([0.5, -2.0], dtype=torch.float64, device="cuda")
    (h,) = ad.gradient(outer, a, backend=TorchBackend(copy_saved=True))
    torch.testing.assert_close(h, 6 * a)


def layer(x: Any, W: Any) -> Any:
    return ad.array_namespace(x).tanh(W @ x)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_cuda_operators_stay_on_device_and_match_cpu(mode: str) -> None:
    rng = np.random.default_rng(1)
    x, W, u = rng.standard_normal(3), rng.standard_normal((4, 3)), rng.standard_normal(4)
    on = {"x": torch.tensor(x, device="cuda"), "W": torch.tensor(W, device="cuda")}
    cpu = ad.jacobian(layer, torch.tensor(x), ad.Const(torch.tensor(W)), mode=mode)[0]
    J = ad.jacobian(layer, on["x"], ad.Const(on["W"]), mode=mode)[0]
    assert J.device.type == "cuda"
    torch.testing.assert_close(J.cpu(), cpu, rtol=1e-12, atol=1e-12)
    y, pullback = ad.vjp(layer, on["x"], ad.Const(on["W"]))
    (g, _) = pullback(u)  # a numpy cotangent for a CUDA output
    assert y.device.type == "cuda" and g.device.type == "cuda"
    torch.testing.assert_close(g.cpu(), cpu.T @ torch.tensor(u), rtol=1e-12, atol=1e-12)
    _, t = ad.jvp(layer, (on["x"], ad.Const(on["W"])), (x, None))  # a numpy tangent
    assert t.device.type == "cuda"
    torch.testing.assert_close(t.cpu(), cpu @ torch.tensor(x), rtol=1e-12, atol=1e-12)


def test_cuda_hessian_and_hvp_stay_on_device() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(xp.sin(x) * x**2)

    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    H_cpu = ad.hessian(f, x)[0][0]
    H = ad.hessian(f, x.cuda())[0][0]
    (hv,) = ad.hvp(f, (x.cuda(),), (torch.ones(3, dtype=torch.float64, device="cuda"),))
    assert H.device.type == "cuda" and hv.device.type == "cuda"
    torch.testing.assert_close(H.cpu(), H_cpu, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(hv.cpu(), H_cpu.sum(1), rtol=1e-12, atol=1e-12)
