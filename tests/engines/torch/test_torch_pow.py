"""``xp.pow`` and ``**`` on the torch engine with a differentiated exponent: nested
derivatives at ``e == 0`` (torch masks its own ``d/db`` there), against closed forms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.pow_reference import (
    BASE,
    TOL,
    E,
    base_grad_sum,
    closed_mixed,
    op_base_grad_sum,
    op_pow_sum,
)

torch = pytest.importorskip("torch")

import adswitch as ad  # noqa: E402

BACKEND = "torch"


def test_method_and_inplace_pow() -> None:
    def method(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        return xp.sum(b.pow(e))

    def inplace(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        c = b * 1.0
        c **= e
        return xp.sum(c)

    def keyword_inplace(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        c = b * 1.0
        c.pow_(exponent=e)
        return xp.sum(c)

    for h in (method, inplace, keyword_inplace):

        def f(e: Any, b: Any, h: Any = h) -> Any:
            xp = ad.array_namespace(e, b)
            return xp.sum(ad.gradient(h, e, b)[1])

        g_e, g_b = ad.gradient(f, E.copy(), BASE.copy(), backend=BACKEND)
        np.testing.assert_allclose(g_e, closed_mixed(E, BASE), **TOL)
        np.testing.assert_allclose(g_b, E * (E - 1) * BASE ** (E - 2), **TOL)


def test_inplace_pow_keeps_torch_errors() -> None:
    def into_argument(e: Any, b: Any) -> Any:
        b **= e
        return b.sum()

    with pytest.raises(ad.AdswitchError):
        ad.gradient(into_argument, E.copy(), BASE.copy(), backend=BACKEND)

    def into_integer(e: Any, b: Any) -> Any:
        c = torch.ones(len(BASE), dtype=torch.int64)
        c **= e
        return c.sum()

    with pytest.raises(RuntimeError, match="can't be cast"):
        ad.gradient(into_integer, E.copy(), BASE.copy(), backend=BACKEND)

    def into_smaller(e: Any, b: Any) -> Any:
        c = b[:1] * 1.0
        c **= e
        return c.sum()

    with pytest.raises(RuntimeError, match="shape"):
        ad.gradient(into_smaller, E.copy(), BASE.copy(), backend=BACKEND)


def test_operator_pow_float32_and_non_strict() -> None:
    from adswitch_torch.plugin import TorchBackend

    e = torch.tensor([0.0, 0.5], dtype=torch.float32)
    b = torch.tensor([0.625, 0.625], dtype=torch.float32)
    (g,) = ad.gradient(op_base_grad_sum, e, ad.Const(b), backend=BACKEND)[:1]
    assert isinstance(g, torch.Tensor) and g.dtype == torch.float32
    np.testing.assert_allclose(g.numpy(), [1.6, closed_mixed(0.5, 0.625)], rtol=1e-5)
    e64, b64 = np.array([0.0, 0.5]), np.array([0.625, 0.625])
    lenient = TorchBackend(strict=False)
    (g,) = ad.gradient(op_base_grad_sum, e64, ad.Const(b64), backend=lenient)[:1]
    np.testing.assert_allclose(g, closed_mixed(e64, b64), **TOL)


def test_operators_unchanged_outside_calls() -> None:
    ad.gradient(op_pow_sum, E.copy(), BASE.copy(), backend=BACKEND)  # installs the wrappers
    e = torch.tensor([0.0, 0.5], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([0.625, 0.625], dtype=torch.float64, requires_grad=True)
    for out in (b**e, b.pow(e), 2.0**e):
        assert type(out.grad_fn).__name__.startswith("Pow")  # torch's own node
    c = b.detach().clone()
    c **= 2.0
    assert torch.equal(c, b.detach() ** 2)
    with torch.no_grad():
        assert torch.equal(b**e, torch.pow(b, e))


@pytest.mark.xfail(strict=True, reason="torch.pow is torch's module function (documented limit)")
def test_torch_pow_function_keeps_the_engine_rule() -> None:
    def f(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        return xp.sum(ad.gradient(lambda e_, b_: xp.sum(torch.pow(b_, e_)), e, b)[1])

    (g,) = ad.gradient(f, np.array([0.0]), ad.Const(np.array([0.625])), backend=BACKEND)[:1]
    np.testing.assert_allclose(g, [1.6], **TOL)


def test_copy_saved_mode() -> None:
    from adswitch_torch.plugin import TorchBackend

    g_e, g_b = ad.gradient(
        base_grad_sum, E.copy(), BASE.copy(), backend=TorchBackend(copy_saved=True)
    )
    np.testing.assert_allclose(g_e, closed_mixed(E, BASE), **TOL)
    np.testing.assert_allclose(g_b, E * (E - 1) * BASE ** (E - 2), **TOL)


def test_float32_and_tensor_arguments() -> None:
    e = torch.tensor([0.0, 0.5], dtype=torch.float32)
    b = torch.tensor([0.625, 0.625], dtype=torch.float32)
    (g,) = ad.gradient(base_grad_sum, e, ad.Const(b), backend=BACKEND)[:1]
    assert isinstance(g, torch.Tensor) and g.dtype == torch.float32
    np.testing.assert_allclose(g.numpy(), [1.6, closed_mixed(0.5, 0.625)], rtol=1e-5)
