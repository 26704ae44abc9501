"""Rule 5: what f may return, what withgradient gives back, and the OutputErrors."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import adswitch as ad

Out = namedtuple("Out", ["loss", "pred", "note"])


def test_scalar_output(fd) -> None:
    res = ad.withgradient(lambda w: float(np.sum(w**2)), np.array([1.0, 2.0]), backend=fd)
    assert res.val == pytest.approx(5.0)
    np.testing.assert_allclose(res.grad[0], [2.0, 4.0], rtol=1e-6)


@pytest.mark.parametrize(
    "wrap",
    [
        lambda loss, pred: (loss, pred, "note"),
        lambda loss, pred: [loss, pred, "note"],
        lambda loss, pred: Out(loss, pred, "note"),
        lambda loss, pred: {"loss": loss, "pred": pred, "note": "note"},
    ],
    ids=["tuple", "list", "namedtuple", "dict"],
)
def test_aux_outputs_ride_along(fd, wrap) -> None:
    w = np.array([1.0, 2.0])

    def f(w):
        pred = w * 3
        return wrap(np.sum(pred), pred)

    res = ad.withgradient(f, w, backend=fd)
    expected = wrap(9.0, w * 3)
    assert type(res.val) is type(expected)
    leaves = list(res.val.values()) if isinstance(res.val, dict) else list(res.val)
    assert float(leaves[0]) == pytest.approx(9.0)
    np.testing.assert_allclose(leaves[1], [3.0, 6.0])
    assert leaves[2] == "note"
    np.testing.assert_allclose(res.grad[0], [3.0, 3.0], rtol=1e-6)


def test_python_number_loss_gives_zero_gradient(fd) -> None:
    (g,) = ad.gradient(lambda w: 1.0, np.ones(2), backend=fd)
    np.testing.assert_array_equal(g, [0.0, 0.0])


@pytest.mark.parametrize(
    ("output", "pattern"),
    [
        (np.ones(3), r"array of shape \(3,\).*xp\.sum\(y\).*Jacobian"),
        (np.ones(1), r"shape \(1,\)"),
        ((np.ones(2), 1.0), r"first element of f's output is an array of shape \(2,\)"),
        ("text", r"f returned str 'text'"),
        (None, r"f returned NoneType None"),
        (np.array(3), r"dtype int64.*floating point"),
        (np.array(1 + 2j), r"complex128"),
        ((), r"empty tuple"),
        ({}, r"empty dict"),
    ],
)
def test_output_errors_say_the_fix(fd, output, pattern) -> None:
    with pytest.raises(ad.OutputError, match=pattern):
        ad.gradient(lambda w: output, np.ones(2), backend=fd)


def test_output_error_is_a_value_error(fd) -> None:
    with pytest.raises(ValueError):
        ad.gradient(lambda w: w, np.ones(2), backend=fd)
