"""The jax engine refuses conversions of a differentiated value to a Python number or a
numpy array, on every operator, with the conversion, the user's line and the fix.

Without ``jit`` jax's tracers hold values, and ``x.item()`` used to hand one out: the
gradient of ``x[0].item() * sum(x)`` came out as if ``x[0]`` were a constant (issue 19).
What carries no gradient (``bool(x)`` for a branch, integer values) and printing keep
working; the oracle for those is the closed form.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad

pytest.importorskip("jax")

X = np.array([0.3, -1.2, 2.0])


def _sum(x: Any) -> Any:
    return ad.array_namespace(x).sum(x)


# Each f reads one entry through a conversion; the comment is the line the message names.
CONVERSIONS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "x.item()": (lambda x: x[0].item() * _sum(x), "x[0].item() * _sum(x)"),
    "float(x)": (lambda x: float(x[0]) * _sum(x), "float(x[0]) * _sum(x)"),
    "int(x)": (lambda x: int(x[2]) * _sum(x), "int(x[2]) * _sum(x)"),
    "complex(x)": (lambda x: complex(x[0]).real * _sum(x), "complex(x[0]).real"),
    "x.tolist()": (lambda x: sum(x.tolist()) * _sum(x), "sum(x.tolist())"),
    "np.asarray": (
        lambda x: _sum(x * ad.array_namespace(x).asarray(np.asarray(x))),
        "np.asarray(x)",
    ),
    "np.array": (lambda x: _sum(x * ad.array_namespace(x).asarray(np.array(x))), "np.array(x)"),
    "__array__": (
        lambda x: _sum(x * ad.array_namespace(x).asarray(x.__array__())),
        "x.__array__()",
    ),
    "np.sin": (lambda x: _sum(np.sin(x)), "np.sin(x)"),
}


def _vector(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda x: f(x) * x  # a vector output, for jacobian/vjp/jvp


def _call(operator: str, f: Callable[[Any], Any]) -> Any:
    """Run ``operator`` of ``f`` at ``X`` on jax (with the fallback warning silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if operator == "gradient":
            return ad.gradient(f, X, backend="jax")
        if operator == "withgradient":
            return ad.withgradient(f, X, backend="jax")
        if operator == "jacobian":
            return ad.jacobian(_vector(f), X, backend="jax")
        if operator == "hessian":
            return ad.hessian(f, X, backend="jax")
        if operator == "hvp":
            return ad.hvp(f, (X,), (np.ones(3),), backend="jax")
        if operator == "vjp":
            _, pullback = ad.vjp(_vector(f), X, backend="jax")
            return pullback(np.ones(3))
        if operator == "jvp":
            return ad.jvp(_vector(f), (X,), (np.ones(3),), backend="jax")
        assert operator == "prepared"
        prepared = ad.prepare(ad.gradient, f, X, backend="jax")
        return prepared(X)


OPERATORS = ["gradient", "withgradient", "jacobian", "hessian", "hvp", "vjp", "jvp", "prepared"]


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("conversion", list(CONVERSIONS))
def test_conversion_is_refused_with_its_name_line_and_fix(conversion: str, operator: str) -> None:
    f, source = CONVERSIONS[conversion]
    with pytest.raises(ad.UnsupportedError) as caught:
        _call(operator, f)
    message = str(caught.value)
    assert conversion in message
    assert "test_jax_conversions.py:" in message and source in message  # the user's line
    assert "ad.array_namespace" in message and "ad.Const" in message  # the fixes


def test_item_gradient_example_from_the_issue() -> None:
    # tape, torch and autograd refuse it; jax returned [0.3, 0.3, 0.3] (right: [1.4, 0.3, 0.3]).
    f = CONVERSIONS["x.item()"][0]
    with pytest.raises(ad.UnsupportedError, match=r"x\.item\(\)"):
        _call("gradient", f)
    with pytest.raises(ad.UnsupportedError, match=r"x\.item\(\)"):
        ad.gradient(f, X, backend="tape")


def test_a_const_argument_may_be_converted() -> None:
    # The fix the message names: a value not differentiated converts as in numpy.
    def f(x: Any, c: Any) -> Any:
        return c[0].item() * float(c[1]) * _sum(x * x)

    c = np.array([2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (g,) = ad.gradient(f, X, ad.Const(c), backend="jax")[:1]
    np.testing.assert_allclose(g, 12.0 * X, rtol=1e-12)  # closed form: 2 * 6 * x


@pytest.mark.parametrize("operator", ["gradient", "prepared", "hessian"])
def test_branching_and_integer_values_keep_working(operator: str) -> None:
    # bool(x) selects a branch (piecewise differentiation); an integer value carries no
    # gradient; both convert. Closed form: d/dx (k * sum(x^2)) with k = int(argmax) + 1 = 3.
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        k = int(xp.argmax(x)) + 1
        return k * _sum(x * x) if x[0] > 0 else -_sum(x * x)

    result = _call(operator, f)
    if operator == "hessian":
        np.testing.assert_allclose(result[0][0], 6.0 * np.eye(3), rtol=1e-12)
    else:
        np.testing.assert_allclose(result[0], 6.0 * X, rtol=1e-12)


def test_print_of_a_traced_value_works(capsys: pytest.CaptureFixture[str]) -> None:
    def f(x: Any) -> Any:
        print("debug:", x, f"{x}", repr(x), str(x))
        return _sum(x * x)

    for operator in ("gradient", "prepared"):
        np.testing.assert_allclose(_call(operator, f)[0], 2.0 * X, rtol=1e-12)
    assert "debug:" in capsys.readouterr().out


def test_print_in_the_eager_fallback_works(capsys: pytest.CaptureFixture[str]) -> None:
    # A branch on the value makes jit fail, so f runs eagerly, where tracers hold values.
    def f(x: Any) -> Any:
        print("debug:", x, repr(x))
        return _sum(x * x) if x[0] > 0 else _sum(x)

    np.testing.assert_allclose(_call("gradient", f)[0], 2.0 * X, rtol=1e-12)
    assert "debug:" in capsys.readouterr().out
