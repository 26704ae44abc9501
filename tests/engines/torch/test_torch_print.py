"""Printing a traced torch value inside f (print, repr, str, f-strings, format) shows its
numbers in every mode, and the derivative stays right; a tolist()/item() the user calls
is still refused. Oracle: closed forms of f(x) = sum(x**3) (gradient 3 x**2, Hessian
diag(6 x), jvp 3 x**2 . v)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch: Any = pytest.importorskip("torch")

import adswitch as ad  # noqa: E402

X = np.array([1.5, -2.0])


def cube(x: Any) -> Any:
    print("debug:", x)  # str(x) -> repr
    s = x.sum()
    print(f"sum={s:.3f} {s!r} {s} first={x[0]}", format(s, "+.2f"), repr(x), str(x))
    return (x**3).sum()


def check_printed(out: str) -> None:
    assert "debug: tensor([ 1.5000, -2.0000]" in out
    assert "sum=-0.500" in out and "-0.50" in out
    assert "first=1.5 " in out  # a 0-d tensor formats as its number (torch)


CALLS: dict[str, Callable[[], Any]] = {
    "gradient": lambda: ad.gradient(cube, X, backend="torch")[0],
    "jacobian": lambda: ad.jacobian(cube, X, backend="torch")[0],
    "withgradient": lambda: ad.withgradient(cube, X, backend="torch")[1][0],
    "prepared": lambda: ad.prepare(ad.gradient, cube, X, backend="torch")(X)[0],
}


@pytest.mark.parametrize("name", list(CALLS))
def test_print_inside_f_shows_the_values_and_the_gradient_is_right(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    g = CALLS[name]()
    check_printed(capsys.readouterr().out)
    np.testing.assert_allclose(g, 3 * X**2, rtol=1e-14)


def test_print_inside_f_under_hessian_and_jvp(capsys: pytest.CaptureFixture[str]) -> None:
    ((h,),) = ad.hessian(cube, X, backend="torch")
    check_printed(capsys.readouterr().out)
    np.testing.assert_allclose(h, np.diag(6 * X), rtol=1e-14)
    v = np.array([0.5, 2.0])
    y, dy = ad.jvp(cube, (X,), (v,), backend="torch")  # forward mode: dual tensors
    out = capsys.readouterr().out
    check_printed(out)
    assert "tangent=tensor([0.5000, 2.0000]" in out
    np.testing.assert_allclose(dy, np.sum(3 * X**2 * v), rtol=1e-14)
    np.testing.assert_allclose(y, np.sum(X**3), rtol=1e-14)


@pytest.mark.parametrize(
    "convert, what",
    [
        (lambda x: sum(x.tolist()), r"x\.tolist\(\)"),
        (lambda x: x.sum().item(), r"x\.item\(\)"),
        (lambda x: float(x.sum()), r"float\(x\)"),
    ],
)
def test_a_conversion_the_user_calls_stays_refused(convert: Any, what: str) -> None:
    def f(x: Any) -> Any:
        return x.sum() * convert(x)

    with pytest.raises(ad.UnsupportedError, match=what):
        ad.gradient(f, X, backend="torch")


def test_a_conversion_inside_a_printed_objects_repr_is_still_refused() -> None:
    # Only torch's own Tensor.__repr__ may read the numbers: a user's __repr__ that
    # turns the value into a Python number before printing is still refused.
    class Holder:
        def __init__(self, x: Any) -> None:
            self.x = x

        def __repr__(self) -> str:
            return f"Holder({self.x.tolist()})"

    def f(x: Any) -> Any:
        print(Holder(x))
        return x.sum()

    with pytest.raises(ad.UnsupportedError, match=r"tolist"):
        ad.gradient(f, X, backend="torch")
