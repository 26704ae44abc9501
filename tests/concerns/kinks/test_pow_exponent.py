"""``xp.pow`` and ``**`` with a differentiated exponent on the engines whose own pow rule
is wrong at ``e == 0`` (torch, HIPS autograd): nested derivatives against closed forms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from tests.support.pow_reference import (
    BASE,
    TOL,
    E,
    base_grad_sum,
    closed_mixed,
    op_base_grad_sum,
    op_pow_sum,
    pow_sum,
)


@pytest.fixture(params=["torch", "autograd"])
def BACKEND(request: pytest.FixtureRequest) -> str:
    pytest.importorskip(request.param)
    return str(request.param)


def test_fuzzer_program_base_const(BACKEND: str) -> None:
    # The fuzzer's program: b passed as Const; the engine's own rule gave [0 or b, 0.9677].
    e, b = np.array([0.0, 0.5]), np.array([0.625, 0.625])
    (g,) = ad.gradient(base_grad_sum, e, ad.Const(b), backend=BACKEND)[:1]
    np.testing.assert_allclose(g, [1.6, closed_mixed(0.5, 0.625)], **TOL)


def test_second_order_both_arguments_closed_form(BACKEND: str) -> None:
    g_e, g_b = ad.gradient(base_grad_sum, E.copy(), BASE.copy(), backend=BACKEND)
    np.testing.assert_allclose(g_e, closed_mixed(E, BASE), **TOL)
    np.testing.assert_allclose(g_b, E * (E - 1) * BASE ** (E - 2), **TOL)


def test_second_order_in_the_exponent_and_mixed(BACKEND: str) -> None:
    def exp_grad_sum(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        return xp.sum(ad.gradient(pow_sum, e, b)[0])  # b**e log b

    g_e, g_b = ad.gradient(exp_grad_sum, E.copy(), BASE.copy(), backend=BACKEND)
    np.testing.assert_allclose(g_e, BASE**E * np.log(BASE) ** 2, **TOL)
    np.testing.assert_allclose(g_b, closed_mixed(E, BASE), **TOL)


def test_third_order_in_the_exponent(BACKEND: str) -> None:
    def second(e: Any, b: Any) -> Any:
        xp = ad.array_namespace(e, b)
        return xp.sum(ad.gradient(base_grad_sum, e, b)[0])

    (g,) = ad.gradient(second, E.copy(), ad.Const(BASE.copy()), backend=BACKEND)[:1]
    # d2/de2 [e b**(e-1)] = b**(e-1) log b (2 + e log b)
    log_b = np.log(BASE)
    np.testing.assert_allclose(g, BASE ** (E - 1) * log_b * (2 + E * log_b), **TOL)


def test_broadcast_shapes_and_scalar_base(BACKEND: str) -> None:
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


def test_first_order_and_exact_value(BACKEND: str) -> None:
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


def test_zero_base_keeps_first_order_conventions(BACKEND: str) -> None:
    # b**0 is constant: d/db = 0 also at b == 0; 0**e is 0 for e > 0: d/de = 0 there.
    e, b = np.array([0.0, 1.0, 2.0, 0.5]), np.zeros(4)
    g_e, g_b = ad.gradient(pow_sum, e.copy(), b.copy(), backend=BACKEND)
    np.testing.assert_array_equal(g_e, [0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(g_b, [0.0, 1.0, 0.0, np.inf])


def test_negative_base_integer_exponent(BACKEND: str) -> None:
    # Real only at integer e: d/db is right, every derivative in e is nan (never a number).
    e, b = np.array([0.0, 1.0, 2.0]), np.array([-2.0, -2.0, -3.0])
    g_e, g_b = ad.gradient(pow_sum, e.copy(), b.copy(), backend=BACKEND)
    np.testing.assert_allclose(g_b, [0.0, 1.0, -6.0], **TOL)
    assert np.isnan(g_e).all()
    (h_e,) = ad.gradient(base_grad_sum, e.copy(), ad.Const(b), backend=BACKEND)[:1]
    assert np.isnan(h_e).all()


def test_constant_exponent_keeps_the_engine_rule(BACKEND: str) -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(xp.pow(x, 0.0) + xp.pow(x, 3.0))

    x = np.array([0.0, -1.5, 2.0])
    (g,) = ad.gradient(f, x.copy(), backend=BACKEND)
    np.testing.assert_allclose(g, 3 * x**2, **TOL)


def test_operator_pow_fuzzer_program(BACKEND: str) -> None:
    # h(e, b) = sum(b ** e), f(e, b) = sum(gradient(h, e, b)[1]): the engines' own rules
    # gave 0 (torch) or b (autograd) at e == 0.
    e, b = np.array([0.0, 0.5]), np.array([0.625, 0.625])
    g_e, g_b = ad.gradient(op_base_grad_sum, e.copy(), b.copy(), backend=BACKEND)
    np.testing.assert_allclose(g_e, [1.6, 0.9676546687], rtol=1e-9)
    np.testing.assert_allclose(g_e, closed_mixed(e, b), **TOL)
    np.testing.assert_allclose(g_b, e * (e - 1) * b ** (e - 2), **TOL)
    (g,) = ad.gradient(op_base_grad_sum, e, ad.Const(b), backend=BACKEND)[:1]
    np.testing.assert_allclose(g, closed_mixed(e, b), **TOL)


def test_operator_pow_closed_forms(BACKEND: str) -> None:
    # ``**`` on traced values takes the exact rule of xp.pow, to any order.
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


def test_reflected_operator_pow(BACKEND: str) -> None:
    # 2.0 ** e goes through the traced value's __rpow__; so does a constant base made with
    # xp.asarray (a torch tensor, or autograd's plain numpy array).
    def inner(e: Any) -> Any:
        xp = ad.array_namespace(e)
        return xp.sum(2.0**e + xp.asarray(np.array([0.625, 3.0])) ** e)

    def outer(e: Any) -> Any:
        xp = ad.array_namespace(e)
        return xp.sum(ad.gradient(inner, e)[0])

    e = np.array([0.0, 0.5])
    (g,) = ad.gradient(outer, e, backend=BACKEND)
    c = np.array([0.625, 3.0])
    np.testing.assert_allclose(g, 2.0**e * np.log(2.0) ** 2 + c**e * np.log(c) ** 2, **TOL)

    def scalar_base_grad(e: Any) -> Any:
        # d/de [2**e] at first order, then the nested derivative through a traced base
        xp = ad.array_namespace(e)
        return xp.sum(ad.gradient(lambda b: xp.sum(b**e), xp.asarray([2.0, 2.0]))[0])

    (g,) = ad.gradient(scalar_base_grad, e.copy(), backend=BACKEND)
    np.testing.assert_allclose(g, closed_mixed(e, 2.0), **TOL)
