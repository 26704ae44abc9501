"""autograd's failures say what tape and torch say (issue 19): ``np.asarray`` of a traced
value gave a raw ``ValueError: setting an array element with a sequence`` after f ran,
and ``ad.Duplicated(x)`` inside a differentiated f a message about ``dtype object`` and
``LeafBox`` instead of "Duplicated is not allowed inside a function that is itself
being differentiated"."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import ActivityError, MutationError

X = [1.0, -2.0, 3.0]


def _with_asarray(x: Any) -> Any:
    return ad.array_namespace(x).sum(np.asarray(x) * x)


@pytest.mark.parametrize("operator", ["gradient", "withgradient", "jacobian"])
def test_asarray_of_a_traced_value_is_a_mutation_error(operator: str) -> None:
    x = np.array(X)
    with pytest.raises(MutationError) as info:
        getattr(ad, operator)(_with_asarray, x, backend="autograd")
    message = str(info.value)
    assert "np.asarray(x)" in message and "xp.asarray(x)" in message
    assert "ad.array_namespace(x)" in message
    assert np.array_equal(x, X) and x.flags.writeable


def test_asarray_pullback_is_a_mutation_error() -> None:
    x = np.array(X)
    _, pullback = ad.vjp(_with_asarray, x, backend="autograd")
    with pytest.raises(MutationError, match=r"np\.asarray"):
        pullback(1.0)
    assert np.array_equal(x, X) and x.flags.writeable


def test_the_fix_gives_the_closed_form() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(xp.asarray(x) * x)

    np.testing.assert_allclose(ad.gradient(f, np.array(X), backend="autograd")[0], 2 * np.array(X))


@pytest.mark.parametrize("engine", ["autograd", "tape", "torch", "jax"])
@pytest.mark.parametrize("shadow", [False, True])
def test_duplicated_inside_f_says_so(engine: str, shadow: bool) -> None:
    def inner(y: Any) -> Any:
        return ad.array_namespace(y).sum(y * y)

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        arg = ad.Duplicated(x, xp.zeros_like(x)) if shadow else ad.Duplicated(x)
        return xp.sum(ad.gradient(inner, arg)[0])

    x = np.array(X)
    with pytest.raises(ActivityError) as info:
        ad.gradient(f, x, backend=engine)
    message = str(info.value)
    assert message.startswith(
        "Duplicated is not allowed inside a function that is itself being differentiated"
    ), message
    assert "dtype object" not in message and "LeafBox" not in message
    assert "Pass the argument plain" in message
    assert np.array_equal(x, X) and x.flags.writeable


def test_duplicated_outside_f_still_works() -> None:
    """Closed form: d sum(x^2) = 2x, added into the shadow."""
    x = np.array(X)
    arg = ad.Duplicated(x)
    ad.gradient(lambda y: ad.array_namespace(y).sum(y * y), arg, backend="autograd")
    np.testing.assert_allclose(arg.dval, 2 * x)
