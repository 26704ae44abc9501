"""``xp.pow`` and ``**`` on the autograd engine with a traced exponent: nested derivatives at
``e == 0`` (autograd's own ``d/db`` uses ``b ** where(e, e - 1, 1)``), against closed forms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.pow_reference import (
    BASE,
    TOL,
    E,
    closed_mixed,
    op_pow_sum,
)

pytest.importorskip("autograd")

import adswitch as ad

BACKEND = "autograd"


def test_inplace_operator_pow() -> None:
    def inplace(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        c = xp.asarray(b, copy=True)
        c **= e
        return xp.sum(c)

    def f(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        return xp.sum(ad.gradient(inplace, e, b)[1])

    g_e, g_b = ad.gradient(f, E.copy(), BASE.copy(), backend=BACKEND)
    np.testing.assert_allclose(g_e, closed_mixed(E, BASE), **TOL)
    np.testing.assert_allclose(g_b, E * (E - 1) * BASE ** (E - 2), **TOL)


def test_constant_exponent_operator_keeps_the_engine_rule() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x**0.0 + x**3 + 2.0**x)

    x = np.array([0.0, -1.5, 2.0])
    (g,) = ad.gradient(f, x.copy(), backend=BACKEND)
    np.testing.assert_allclose(g, 3 * x**2 + 2.0**x * np.log(2.0), **TOL)


def test_stock_boxes_unchanged_outside_calls() -> None:
    import autograd
    from autograd.numpy.numpy_boxes import ArrayBox

    ad.gradient(op_pow_sum, E.copy(), BASE.copy(), backend=BACKEND)
    assert "__pow__" not in vars(ArrayBox) or vars(ArrayBox)["__pow__"].__module__.startswith(
        "autograd"
    )
    # autograd alone keeps its own rule (b at e == 0 for the mixed derivative).
    inner = autograd.grad(lambda b, e: (b**e).sum())
    mixed = autograd.grad(lambda e, b: inner(b, e).sum())
    np.testing.assert_allclose(mixed(np.array([0.0]), np.array([0.625])), [0.625], **TOL)


@pytest.mark.xfail(strict=True, reason="anp.power is autograd's own primitive (documented limit)")
def test_anp_power_keeps_the_engine_rule() -> None:
    import autograd.numpy as anp

    def f(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        return xp.sum(ad.gradient(lambda e_, b_: xp.sum(anp.power(b_, e_)), e, b)[1])

    (g,) = ad.gradient(f, np.array([0.0]), ad.Const(np.array([0.625])), backend=BACKEND)[:1]
    np.testing.assert_allclose(g, [1.6], **TOL)
