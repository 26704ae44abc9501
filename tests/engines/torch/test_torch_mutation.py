"""Mutation inside f on the torch engine (seed 003): the right answer or a
MutationError/UnsupportedError naming torch, the line and the fix, with torch's own
exception chained -- never a wrong number, never a half-written shadow."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from adswitch_torch import TorchBackend  # noqa: E402

import adswitch as ad  # noqa: E402
from tests.engines.torch.test_torch_oracles import FD_TOL, fd_grad  # noqa: E402


def overwrite_argument(x: Any) -> Any:
    xp = ad.array_namespace(x)
    y = xp.log(x)
    x[...] = 0  # seed 003: fill!(x, 0) after log.(x)
    return xp.sum(y + x)


@pytest.mark.parametrize("kind", ["numpy", "tensor"])
def test_write_into_differentiated_argument_is_a_mutation_error(kind: str) -> None:
    x = np.array([1.0, 2.0, 3.0])
    arg = x if kind == "numpy" else torch.tensor(x)
    with pytest.raises(ad.MutationError) as info:
        ad.gradient(overwrite_argument, arg, backend="torch")
    message = str(info.value)
    assert "torch" in message and "x[...] = 0" in message and "zeros_like" in message
    assert isinstance(info.value.__cause__, RuntimeError)
    # The write was refused before it happened: the caller's data is intact.
    np.testing.assert_array_equal(np.asarray(arg), [1.0, 2.0, 3.0])


def test_augmented_assignment_on_argument_is_a_mutation_error() -> None:
    def f(x: Any) -> Any:
        x += 1
        return ad.array_namespace(x).sum(x**2)

    with pytest.raises(ad.MutationError, match="x \\+= 1"):
        ad.gradient(f, np.array([1.0, 2.0]), backend="torch")


def test_write_into_a_copy_is_differentiated() -> None:
    def f(x: Any, y: Any) -> Any:
        xp = ad.array_namespace(x)
        x = xp.asarray(x, copy=True)
        x[0] = y**2
        return xp.sum(x * y)

    x, y = np.array([1.0, 2.0, 3.0]), 2.0
    gx, gy = ad.gradient(f, x, y, backend="torch")
    # Closed form: sum = y^3 + y (x1 + x2).
    np.testing.assert_allclose(gx, [0.0, y, y], rtol=1e-14)
    assert gy == pytest.approx(3 * y**2 + x[1] + x[2], rel=1e-14)


def test_overwriting_a_saved_value_is_a_mutation_error_with_torch_chained() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        z = xp.asarray(x, copy=True)
        y = xp.exp(z)
        y[...] = 0  # exp saved its output for the backward pass
        return xp.sum(y + z)

    with pytest.raises(ad.MutationError, match="saved for the gradient") as info:
        ad.gradient(f, np.array([1.0, 2.0]), backend="torch")
    assert "modified by an inplace operation" in str(info.value.__cause__)


def test_fresh_buffer_writes_match_finite_differences() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        buf = xp.zeros_like(x)
        buf[0] = xp.sum(x**2)
        buf[1:] = xp.sin(x[1:])
        return xp.sum(buf * buf)

    def f_numpy(x: Any) -> Any:
        buf = np.concatenate([[np.sum(x**2)], np.sin(x[1:])])
        return np.sum(buf * buf)

    x = np.array([0.5, -1.0, 2.0])
    (g,) = ad.gradient(f, x, backend="torch")
    np.testing.assert_allclose(g, fd_grad(f_numpy, x), **FD_TOL)


def test_write_under_no_grad_is_caught_by_the_version_check() -> None:
    def f(x: Any) -> Any:
        with torch.no_grad():
            x.mul_(2)  # torch lets this through; its gradient would be wrong
        return (x * x).sum()

    with pytest.raises(ad.MutationError, match="in place"):
        ad.gradient(f, torch.tensor([1.0, 2.0], dtype=torch.float64))


def test_write_into_a_const_array_reaches_the_caller() -> None:
    counts = np.zeros(2)

    def f(x: Any, counts: Any) -> Any:
        counts += 1  # a plain call would do this too
        return ad.array_namespace(x).sum(x**2)

    (g, _) = ad.gradient(f, np.array([1.0, 3.0]), ad.Const(counts), backend="torch")
    np.testing.assert_allclose(g, [2.0, 6.0], rtol=1e-14)
    np.testing.assert_array_equal(counts, [1.0, 1.0])


def test_write_into_a_const_array_torch_had_to_copy_reaches_the_caller() -> None:
    base = np.zeros(3)
    reversed_view = base[::-1]  # negative strides: torch cannot wrap it in place

    def f(x: Any, r: Any) -> Any:
        r[0] = 5.0
        return ad.array_namespace(x).sum(x)

    ad.gradient(f, np.ones(2), ad.Const(reversed_view), backend="torch")
    np.testing.assert_array_equal(base, [0.0, 0.0, 5.0])


def test_numpy_functions_on_traced_values_are_refused_with_the_fix() -> None:
    def f(x: Any) -> Any:
        return np.sum(np.sin(x))

    with pytest.raises(ad.UnsupportedError, match="array_namespace") as info:
        ad.gradient(f, np.array([1.0, 2.0]), backend="torch")
    assert info.value.__cause__ is not None


def test_shadow_untouched_on_mutation_error() -> None:
    shadow = np.full(3, 4.0)
    with pytest.raises(ad.MutationError):
        ad.gradient(overwrite_argument, ad.Duplicated(np.ones(3), shadow), backend="torch")
    np.testing.assert_array_equal(shadow, [4.0, 4.0, 4.0])


def test_user_runtime_error_passes_unchanged() -> None:
    def f(x: Any) -> Any:
        raise RuntimeError("mine")

    with pytest.raises(RuntimeError, match=r"^mine$") as info:
        ad.gradient(f, np.ones(2), backend="torch")
    assert not isinstance(info.value, ad.AdswitchError)


# -- copy_saved mode: every in-place write at top level is differentiated ----------------

COPYING = TorchBackend(copy_saved=True)


def test_copy_saved_gives_the_seed_003_answer_and_the_callers_write() -> None:
    x = np.array([1.0, 2.0, 4.0])
    (g,) = ad.gradient(overwrite_argument, x, backend=COPYING)
    # ForwardDiff's answer: d/dx sum(log(x) + 0) = 1/x.
    np.testing.assert_allclose(g, [1.0, 0.5, 0.25], rtol=1e-14)
    np.testing.assert_array_equal(x, [0.0, 0.0, 0.0])  # as a plain call leaves it


def test_copy_saved_differentiates_a_write_after_use() -> None:
    def f(x: Any) -> Any:
        y = x * 3
        z = y * y
        y *= 2  # z's gradient must use the old y
        return ad.array_namespace(x).sum(z + y)

    x = np.array([1.0, -2.0])
    (g,) = ad.gradient(f, x, backend=COPYING)
    np.testing.assert_allclose(g, 18 * x + 6, rtol=1e-14)
    with pytest.raises(ad.MutationError, match="saved for the gradient"):
        ad.gradient(f, x, backend="torch")


def assemble(a: Any, b: Any) -> Any:
    xp = ad.array_namespace(a)
    buf = xp.zeros((3,), dtype=a.dtype)
    buf[0] = a * b
    buf[1] = a + b
    buf[2] = buf[0] * buf[1]  # reads the buffer it writes into
    return xp.sum(xp.sin(buf))


def test_copy_saved_assembles_a_buffer_that_default_mode_refuses() -> None:
    a, b = np.array(0.7), np.array(-1.2)
    ga, gb = ad.gradient(assemble, a, b, backend=COPYING)

    def f_numpy(v: Any) -> Any:
        p, s = v[0] * v[1], v[0] + v[1]
        return np.sin(p) + np.sin(s) + np.sin(p * s)

    expected = fd_grad(f_numpy, np.array([0.7, -1.2]))
    np.testing.assert_allclose([float(ga), float(gb)], expected, **FD_TOL)
    with pytest.raises(ad.MutationError) as info:
        ad.gradient(assemble, a, b, backend="torch")
    assert isinstance(info.value.__cause__, RuntimeError)


def test_copy_saved_second_order_closed_form() -> None:
    def inner(x: Any) -> Any:
        xp = ad.array_namespace(x)
        y = xp.asarray(x, copy=True)
        y *= x  # x^2, written in place
        return xp.sum(y * x)  # sum x^3

    def outer(x: Any) -> Any:
        (g,) = ad.gradient(inner, x)
        return ad.array_namespace(g).sum(g)

    x = np.array([0.5, -2.0])
    (g,) = ad.gradient(outer, x, backend=COPYING)
    np.testing.assert_allclose(g, 6 * x, rtol=1e-14)


def test_copy_saved_still_refuses_writes_into_a_nested_argument() -> None:
    def outer(x: Any) -> Any:
        xp = ad.array_namespace(x)

        def inner(z: Any) -> Any:
            z[0] = 1.0
            return xp.sum(z)

        (g,) = ad.gradient(inner, x * 2)
        return xp.sum(g)

    with pytest.raises(ad.MutationError, match="torch"):
        ad.gradient(outer, np.array([1.0, 2.0]), backend=COPYING)


# -- Python numbers made from values being differentiated (refused by default) ---------


def square_of_sum_through_float(x: Any) -> Any:
    xp = ad.array_namespace(x)
    s = float(xp.sum(x))  # torch would treat s as a constant
    return xp.sum(x) * s


def test_float_of_a_traced_value_is_refused_by_default() -> None:
    with pytest.raises(ad.UnsupportedError, match=r"float\(x\).*s = float"):
        ad.gradient(square_of_sum_through_float, np.array([1.0, 2.0]), backend="torch")


def test_item_of_a_traced_value_is_refused_and_torch_is_untouched_outside() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x) * xp.sum(x).item()

    with pytest.raises(ad.UnsupportedError, match=r"x\.item\(\)"):
        ad.gradient(f, np.array([1.0, 2.0]), backend="torch")
    t = torch.ones(2, dtype=torch.float64, requires_grad=True)
    with warnings.catch_warnings():  # outside a call: torch's own behaviour (it may warn)
        warnings.simplefilter("ignore")
        assert float(t.sum()) == 2.0
    assert t.sum().item() == 2.0 and t.tolist() == [1.0, 1.0]


def test_strict_false_restores_plain_torch_behaviour() -> None:
    # d/dx [sum(x) * s] with s held constant: the number plain torch gives.
    with warnings.catch_warnings():  # torch warns (once per process) about the conversion
        warnings.simplefilter("ignore")
        (g,) = ad.gradient(
            square_of_sum_through_float, np.array([1.0, 2.0]), backend=TorchBackend(strict=False)
        )
    np.testing.assert_allclose(g, [3.0, 3.0], rtol=1e-14)


def test_strict_mode_allows_value_dependent_branches_and_integers() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        n = int(x.shape[0])
        if bool(xp.sum(x) > 0) and n == 2:
            return xp.sum(x**2)
        return xp.sum(x)

    (g,) = ad.gradient(f, np.array([1.0, 2.0]), backend="torch")
    np.testing.assert_allclose(g, [2.0, 4.0], rtol=1e-14)
