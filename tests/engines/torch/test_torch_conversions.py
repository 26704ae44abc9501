"""torch: every conversion of a differentiated value to a Python number is refused.

torch hands back a plain number and only warns, so the gradient would silently miss
every path through it (``complex(x[0]).real * sum(x)`` gave ``[0.3, 0.3, 0.3]`` where
the gradient is ``[1.4, 0.3, 0.3]``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import UnsupportedError

pytest.importorskip("torch")

X = np.array([0.3, -1.2, 2.0])

CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "complex(x)": lambda v: complex(v).real,
    "float(x)": float,
    "x.item()": lambda v: v.item(),
    "x.tolist()": lambda v: v.tolist(),
}


def _f(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return convert(x[0]) * xp.sum(x)

    return f


OPERATORS: dict[str, Callable[[Callable[[Any], Any]], Any]] = {
    "gradient": lambda f: ad.gradient(f, X, backend="torch"),
    "jacobian": lambda f: ad.jacobian(f, X, backend="torch"),
    "hessian": lambda f: ad.hessian(f, X, backend="torch"),
    "jvp": lambda f: ad.jvp(f, (X,), (np.ones(3),), backend="torch"),
    "prepared": lambda f: ad.prepare(ad.gradient, f, X, backend="torch")(X),
}


@pytest.mark.parametrize("operator", sorted(OPERATORS))
@pytest.mark.parametrize("what", sorted(CONVERSIONS))
def test_a_conversion_of_a_differentiated_value_is_refused(what: str, operator: str) -> None:
    f = _f(CONVERSIONS[what])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own warning about requires_grad
        with pytest.raises(UnsupportedError, match=r"torch: .*Python number") as info:
            OPERATORS[operator](f)
    assert what in str(info.value) and "Fix:" in str(info.value)
    assert "test_torch_conversions.py" in str(info.value)  # the user's line


def test_the_same_function_kept_in_arrays_has_the_closed_form_gradient() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return x[0] * xp.sum(x)

    (g,) = ad.gradient(f, X, backend="torch")
    np.testing.assert_allclose(g, X[0] + np.array([X.sum(), 0.0, 0.0]), rtol=1e-15)


def test_integer_conversions_stay_allowed_as_exact_constants() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x) * int(x[0] > 0)

    (g,) = ad.gradient(f, X, backend="torch")
    np.testing.assert_array_equal(g, np.ones(3))
