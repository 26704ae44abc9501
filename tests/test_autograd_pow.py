"""``xp.pow`` and ``**`` on the autograd engine with a traced exponent: nested derivatives at
``e == 0`` (autograd's own ``d/db`` uses ``b ** where(e, e - 1, 1)``), against closed forms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("autograd")

import adswitch as ad

BACKEND = "autograd"
TOL: dict[str, Any] = dict(rtol=1e-12, atol=1e-12)


def pow_sum(e: Any, b: Any) -> Any:
    xp = ad.array_namespace(e, b)
    return xp.sum(xp.pow(b, e))


def base_grad_sum(e: Any, b: Any) -> Any:
    """sum over the inner d/db sum(b**e) = e b**(e-1): its d/de needs d2/(de db) at e == 0."""
    xp = ad.array_namespace(e, b)
    return xp.sum(ad.gradient(pow_sum, e, b)[1])


def closed_mixed(e: Any, b: Any) -> Any:
    """d/de [e b**(e-1)] = b**(e-1) (1 + e log b)."""
    return b ** (e - 1) * (1 + e * np.log(b))


E = np.array([0.0, 0.5, 0.0, -1.0, 2.0])
BASE = np.array([0.625, 0.625, 2.0, 1.5, 1.75])


def test_fuzzer_program_base_const() -> None:
    # The fuzzer's program: b passed as Const; the engine's own rule gave [0 or b, 0.9677].
    e, b = np.array([0.0, 0.5]), np.array([0.625, 0.625])
    (g,) = ad.gradient(base_grad_sum, e, ad.Const(b), backend=BACKEND)[:1]
    np.testing.assert_allclose(g, [1.6, closed_mixed(0.5, 0.625)], **TOL)


def test_second_order_both_arguments_closed_form() -> None:
    g_e, g_b = ad.gradient(base_grad_sum, E.copy(), BASE.copy(), backend=BACKEND)
    np.testing.assert_allclose(g_e, closed_mixed(E, BASE), **TOL)
    np.testing.assert_allclose(g_b, E * (E - 1) * BASE ** (E - 2), **TOL)


def test_second_order_in_the_exponent_and_mixed() -> None:
    def exp_grad_sum(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        return xp.sum(ad.gradient(pow_sum, e, b)[0])  # b**e log b

    g_e, g_b = ad.gradient(exp_grad_sum, E.copy(), BASE.copy(), backend=BACKEND)
    np.testing.assert_allclose(g_e, BASE**E * np.log(BASE) ** 2, **TOL)
    np.testing.assert_allclose(g_b, closed_mixed(E, BASE), **TOL)


def test_third_order_in_the_exponent() -> None:
    def second(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        return xp.sum(ad.gradient(base_grad_sum, e, b)[0])

    (g,) = ad.gradient(second, E.copy(), ad.Const(BASE.copy()), backend=BACKEND)[:1]
    # d2/de2 [e b**(e-1)] = b**(e-1) log b (2 + e log b)
    log_b = np.log(BASE)
    np.testing.assert_allclose(g, BASE ** (E - 1) * log_b * (2 + E * log_b), **TOL)


def test_broadcast_shapes_and_scalar_base() -> None:
    def f(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        inner = ad.gradient(lambda e_, b_: xp.sum(xp.pow(b_, e_) * xp.pow(1.5, e_)), e, b)
        return xp.sum(inner[1])

    e, b = np.array([0.0, 0.5, 2.0]), np.array([[0.625], [1.7]])
    g_e, g_b = ad.gradient(f, e.copy(), b.copy(), backend=BACKEND)
    # d/db summed over the grid: sum_b e b**(e-1) 1.5**e
    want_e = np.sum(closed_mixed(e, b) * 1.5**e + e * b ** (e - 1) * 1.5**e * np.log(1.5), axis=0)
    want_b = np.sum(e * (e - 1) * b ** (e - 2) * 1.5**e, axis=1, keepdims=True)
    assert g_e.shape == e.shape and g_b.shape == b.shape
    np.testing.assert_allclose(g_e, want_e, **TOL)
    np.testing.assert_allclose(g_b, want_b, **TOL)


def test_first_order_and_exact_value() -> None:
    e, b = np.array([0.0, 3.0, 0.5, -1.0]), np.array([0.625, 2.0, 1.5, 4.0])
    value, (g_e, g_b) = ad.withgradient(pow_sum, e.copy(), b.copy(), backend=BACKEND)
    assert float(value) == float(np.sum(np.power(b, e)))  # the engine's pow value, not exp(e log b)

    def scalar_base(e: Any) -> Any:
        xp = ad.array_namespace(e)
        return xp.sum(xp.pow(1.7, e) * xp.pow(xp.asarray(b), e[0]))  # Python base; 0-d exponent

    value, (g,) = ad.withgradient(scalar_base, e.copy(), backend=BACKEND)
    assert float(value) == float(np.sum(np.power(1.7, e) * np.power(b, e[0])))
    want = 1.7**e * np.log(1.7) * b ** e[0]
    want[0] += np.sum(1.7**e * b ** e[0] * np.log(b))
    np.testing.assert_allclose(g, want, **TOL)
    np.testing.assert_allclose(g_e, b**e * np.log(b), **TOL)
    np.testing.assert_allclose(g_b, e * b ** (e - 1), **TOL)


def test_zero_base_keeps_first_order_conventions() -> None:
    # b**0 is constant: d/db = 0 also at b == 0; 0**e is 0 for e > 0: d/de = 0 there.
    e, b = np.array([0.0, 1.0, 2.0, 0.5]), np.zeros(4)
    g_e, g_b = ad.gradient(pow_sum, e.copy(), b.copy(), backend=BACKEND)
    np.testing.assert_array_equal(g_e, [0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(g_b, [0.0, 1.0, 0.0, np.inf])


def test_negative_base_integer_exponent() -> None:
    # Real only at integer e: d/db is right, every derivative in e is nan (never a number).
    e, b = np.array([0.0, 1.0, 2.0]), np.array([-2.0, -2.0, -3.0])
    g_e, g_b = ad.gradient(pow_sum, e.copy(), b.copy(), backend=BACKEND)
    np.testing.assert_allclose(g_b, [0.0, 1.0, -6.0], **TOL)
    assert np.isnan(g_e).all()
    (h_e,) = ad.gradient(base_grad_sum, e.copy(), ad.Const(b), backend=BACKEND)[:1]
    assert np.isnan(h_e).all()


def test_constant_exponent_keeps_the_engine_rule() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(xp.pow(x, 0.0) + xp.pow(x, 3.0))

    x = np.array([0.0, -1.5, 2.0])
    (g,) = ad.gradient(f, x.copy(), backend=BACKEND)
    np.testing.assert_allclose(g, 3 * x**2, **TOL)


def op_pow_sum(e: Any, b: Any) -> Any:
    xp = ad.array_namespace(e, b)
    return xp.sum(b**e)


def op_base_grad_sum(e: Any, b: Any) -> Any:
    xp = ad.array_namespace(e, b)
    return xp.sum(ad.gradient(op_pow_sum, e, b)[1])


def test_operator_pow_fuzzer_program() -> None:
    # h(e, b) = sum(b ** e), f(e, b) = sum(gradient(h, e, b)[1]): autograd's rule gave b at e == 0.
    e, b = np.array([0.0, 0.5]), np.array([0.625, 0.625])
    g_e, g_b = ad.gradient(op_base_grad_sum, e.copy(), b.copy(), backend=BACKEND)
    np.testing.assert_allclose(g_e, [1.6, 0.9676546687], rtol=1e-9)
    np.testing.assert_allclose(g_e, closed_mixed(e, b), **TOL)
    np.testing.assert_allclose(g_b, e * (e - 1) * b ** (e - 2), **TOL)
    (g,) = ad.gradient(op_base_grad_sum, e, ad.Const(b), backend=BACKEND)[:1]
    np.testing.assert_allclose(g, closed_mixed(e, b), **TOL)


def test_operator_pow_closed_forms() -> None:
    def exp_grad_sum(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        return xp.sum(ad.gradient(op_pow_sum, e, b)[0])  # b**e log b

    def second(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        return xp.sum(ad.gradient(op_base_grad_sum, e, b)[0])

    g_e, g_b = ad.gradient(op_base_grad_sum, E.copy(), BASE.copy(), backend=BACKEND)
    np.testing.assert_allclose(g_e, closed_mixed(E, BASE), **TOL)
    np.testing.assert_allclose(g_b, E * (E - 1) * BASE ** (E - 2), **TOL)
    g_e, g_b = ad.gradient(exp_grad_sum, E.copy(), BASE.copy(), backend=BACKEND)
    np.testing.assert_allclose(g_e, BASE**E * np.log(BASE) ** 2, **TOL)
    np.testing.assert_allclose(g_b, closed_mixed(E, BASE), **TOL)
    (g,) = ad.gradient(second, E.copy(), ad.Const(BASE.copy()), backend=BACKEND)[:1]
    log_b = np.log(BASE)
    np.testing.assert_allclose(g, BASE ** (E - 1) * log_b * (2 + E * log_b), **TOL)
    value, (g_e, g_b) = ad.withgradient(op_pow_sum, E.copy(), BASE.copy(), backend=BACKEND)
    assert float(value) == float(np.sum(np.power(BASE, E)))
    np.testing.assert_allclose(g_e, BASE**E * np.log(BASE), **TOL)
    np.testing.assert_allclose(g_b, E * BASE ** (E - 1), **TOL)


def test_reflected_operator_pow() -> None:
    # 2.0 ** e and a numpy base ** e go through the box's __rpow__.
    def inner(e: Any) -> Any:
        xp = ad.array_namespace(e)
        return xp.sum(2.0**e + np.array([0.625, 3.0]) ** e)

    def outer(e: Any) -> Any:
        xp = ad.array_namespace(e)
        return xp.sum(ad.gradient(inner, e)[0])

    e = np.array([0.0, 0.5])
    (g,) = ad.gradient(outer, e, backend=BACKEND)
    c = np.array([0.625, 3.0])
    np.testing.assert_allclose(g, 2.0**e * np.log(2.0) ** 2 + c**e * np.log(c) ** 2, **TOL)

    def scalar_base_grad(e: Any) -> Any:
        xp = ad.array_namespace(e)
        return xp.sum(ad.gradient(lambda b: xp.sum(b**e), np.array([2.0, 2.0]))[0])

    (g,) = ad.gradient(scalar_base_grad, e.copy(), backend=BACKEND)
    np.testing.assert_allclose(g, closed_mixed(e, 2.0), **TOL)


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
