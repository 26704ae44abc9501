"""Every differentiable function of the tape's namespace against finite differences."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import UnsupportedError
from tests.engines.tape.test_tape_support import check_gradient

RNG = np.random.default_rng(7)
POS = RNG.uniform(0.5, 2.0, (3, 4))  # inside every domain below
UNIT = RNG.uniform(-0.8, 0.8, (3, 4))
ROW = RNG.standard_normal(4)
COL = RNG.standard_normal((3, 1))


def _xp(*arrays: Any) -> Any:
    return ad.array_namespace(*arrays)


def _weighted(out: Any) -> Any:
    """A scalar that depends on every element of ``out`` differently."""
    xp = _xp(out)
    w = np.linspace(0.5, 1.5, int(np.prod(out.shape)) or 1).reshape(out.shape)
    return xp.sum(out * w)


UNARY = {
    "exp": UNIT, "log": POS, "log1p": POS, "expm1": UNIT, "sqrt": POS, "sin": UNIT,
    "cos": UNIT, "tan": UNIT, "tanh": UNIT, "sinh": UNIT, "cosh": UNIT, "asin": UNIT,
    "acos": UNIT, "atan": UNIT, "asinh": UNIT, "acosh": POS + 1.0, "atanh": UNIT,
    "abs": UNIT, "square": UNIT, "negative": UNIT, "positive": UNIT, "log2": POS,
    "log10": POS, "real": UNIT, "conj": UNIT,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(UNARY))
def test_elementwise_unary(name: str) -> None:
    check_gradient(lambda x: _weighted(getattr(_xp(x), name)(x)), UNARY[name])


BINARY = ["add", "subtract", "multiply", "divide", "pow", "maximum", "minimum", "atan2",
          "hypot", "logaddexp", "copysign", "remainder"]  # fmt: skip
SHAPES = {"same": (POS, POS[::-1] + 0.1), "row": (POS, ROW**2 + 0.5), "col": (COL**2 + 0.5, POS)}


@pytest.mark.parametrize("shapes", sorted(SHAPES))
@pytest.mark.parametrize("name", BINARY)
def test_elementwise_binary_broadcasting_both_ways(name: str, shapes: str) -> None:
    a, b = SHAPES[shapes]
    check_gradient(lambda x, y: _weighted(getattr(_xp(x, y), name)(x, y)), a, b)


OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "/": lambda x, y: x / y,
    "**": lambda x, y: x**y,
    "%": lambda x, y: x % y,
}


@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_operators_with_scalars_and_numpy_constants_on_either_side(op: str) -> None:
    fn = OPERATORS[op]
    const = ROW**2 + 0.5
    check_gradient(lambda x: _weighted(fn(x, 1.5)) + _weighted(fn(2.5, x)), POS)
    check_gradient(lambda x: _weighted(fn(x, const)) + _weighted(fn(const, x)), POS)


def test_numpy_ufuncs_on_traced_values_are_recorded() -> None:
    check_gradient(lambda x: _weighted(np.exp(x) + np.sin(ROW) * x), UNIT)


REDUCTIONS = ["sum", "mean", "prod", "max", "min", "var", "std"]
AXES = [None, 0, 1, -1, (0, 1)]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_with_axis_and_keepdims(name: str, axis: Any, keepdims: bool) -> None:
    def f(x: Any) -> Any:
        return _weighted(getattr(_xp(x), name)(x, axis=axis, keepdims=keepdims))

    check_gradient(f, UNIT)


def test_var_and_std_with_correction() -> None:
    check_gradient(lambda x: _xp(x).var(x, axis=0, correction=1.0)[1], UNIT)
    check_gradient(lambda x: _xp(x).std(x, correction=1.0), UNIT)


@pytest.mark.parametrize("include_initial", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumulative_sum(axis: int, include_initial: bool) -> None:
    def f(x: Any) -> Any:
        return _weighted(_xp(x).cumulative_sum(x, axis=axis, include_initial=include_initial))

    check_gradient(f, UNIT)


MATMUL_SHAPES = [((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)), ((3, 4), (4, 2)),
                 ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (2, 4, 2)),
                 ((1, 3, 4), (2, 4, 2))]  # fmt: skip


@pytest.mark.parametrize(("sa", "sb"), MATMUL_SHAPES, ids=str)
def test_matmul_shapes(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    check_gradient(lambda x, y: _weighted(x @ y), a, b)
    check_gradient(lambda x, y: _weighted(_xp(x).matmul(x, y)), a, b)


def test_matmul_with_a_numpy_constant_on_the_left() -> None:
    const = RNG.standard_normal((2, 3))
    check_gradient(lambda x: _weighted(const @ x), UNIT)


SHAPE_FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "reshape": lambda x: _xp(x).reshape(x, (4, 3)),
    "permute_dims": lambda x: _xp(x).permute_dims(x, (1, 0)),
    ".T": lambda x: x.T,
    ".mT": lambda x: x.mT,
    "matrix_transpose": lambda x: _xp(x).matrix_transpose(x),
    "expand_dims": lambda x: _xp(x).expand_dims(x, axis=1),
    "squeeze": lambda x: _xp(x).squeeze(_xp(x).expand_dims(x, axis=0), axis=0),
    "broadcast_to": lambda x: _xp(x).broadcast_to(x[0:1], (5, 4)),
    "concat": lambda x: _xp(x).concat([x, x * 2.0, ROW[None, :]], axis=0),
    "concat_axis1": lambda x: _xp(x).concat([x, COL], axis=1),
    "concat_none": lambda x: _xp(x).concat([x, ROW], axis=None),
    "stack": lambda x: _xp(x).stack([x, x**2], axis=1),
    "unstack": lambda x: _xp(x).unstack(x, axis=1)[2],
    "flip": lambda x: _xp(x).flip(x, axis=1),
    "roll": lambda x: _xp(x).roll(x, 1, axis=1),
    "roll_flat": lambda x: _xp(x).roll(x, 5),
    "moveaxis": lambda x: _xp(x).moveaxis(x, 0, 1),
    "take": lambda x: _xp(x).take(x, np.array([2, 0, 2]), axis=1),
    "take_along_axis": lambda x: _xp(x).take_along_axis(x, np.array([[1], [0], [3]]), axis=1),
    "repeat": lambda x: _xp(x).repeat(x, 2, axis=0),
    "tile": lambda x: _xp(x).tile(x, (2, 1)),
    "diff": lambda x: _xp(x).diff(x, axis=1, n=2),
    "tril": lambda x: _xp(x).tril(x),
    "triu": lambda x: _xp(x).triu(x, k=1),
    "sort": lambda x: _xp(x).sort(x, axis=1),
    "where": lambda x: _xp(x).where(x > 0, x, x**2),
    "clip": lambda x: _xp(x).clip(x, -0.5, 0.5),
    "clip_traced_bounds": lambda x: _xp(x).clip(x[0], x[1] - 0.3, x[1] + 0.3),
    "vecdot": lambda x: _xp(x).vecdot(x, x[::-1]),
    "tensordot": lambda x: _xp(x).tensordot(x, x, axes=([0], [0])),
    "meshgrid": lambda x: _xp(x).meshgrid(x[0], x[1][:3])[0],
    "broadcast_arrays": lambda x: _xp(x).broadcast_arrays(x[0:1], COL)[0],
    "astype": lambda x: _xp(x).astype(x, np.float64) * x,
    "asarray_list": lambda x: _xp(x).asarray([x[0, 0], x[1, 1], 2.0]),
    "full_like_traced": lambda x: _xp(x).full_like(x, x[0, 0]),
}


@pytest.mark.parametrize("name", sorted(SHAPE_FUNCTIONS))
def test_shape_and_indexing_functions(name: str) -> None:
    check_gradient(lambda x: _weighted(SHAPE_FUNCTIONS[name](x)), UNIT, rtol=1e-4)


INDEXES: dict[str, Any] = {
    "int": 1,
    "slice": (slice(None), slice(1, 3)),
    "negative_step": (slice(None, None, -1), 2),
    "ellipsis_newaxis": (Ellipsis, None, 0),
    "int_array_repeats": (np.array([0, 2, 0]),),
    "bool_mask": UNIT > 0,
    "two_int_arrays": (np.array([0, 1, 2]), np.array([3, 3, 0])),
    "list": [2, 0, 2],
}


@pytest.mark.parametrize("name", sorted(INDEXES))
def test_indexing(name: str) -> None:
    check_gradient(lambda x: _weighted(x[INDEXES[name]] * 1.0), UNIT)


def test_sort_descending_sends_each_gradient_to_its_element() -> None:
    def f(x: Any) -> Any:
        xp = _xp(x)
        return xp.sum(xp.sort(x, descending=True) * np.array([1.0, 2.0, 3.0]))

    (g,) = ad.gradient(f, np.array([3.0, 1.0, 2.0]), backend="tape")
    np.testing.assert_array_equal(g, [1.0, 3.0, 2.0])


def test_iteration_and_len() -> None:
    def f(x: Any) -> Any:
        assert len(x) == 3
        return sum(_weighted(row) * (i + 1) for i, row in enumerate(x))

    check_gradient(f, UNIT)


def test_zero_derivative_functions_return_tape_arrays_of_numpys_values() -> None:
    # one namespace for libraries: the results are the tape's arrays, without history
    def f(x: Any) -> Any:
        xp = _xp(x)
        outs = (xp.sign(x), xp.floor(x), xp.round(x), x > 0, xp.argmax(x), xp.isnan(x))
        wants = (np.sign(UNIT), np.floor(UNIT), np.round(UNIT), UNIT > 0, np.argmax(UNIT))
        for out, want in zip(outs, (*wants, np.isnan(UNIT)), strict=True):
            assert out.__array_namespace__() is xp
            np.testing.assert_array_equal(np.asarray(out), want)
        return xp.sum(x * xp.sign(x))

    (g,) = ad.gradient(f, UNIT, backend="tape")
    np.testing.assert_allclose(g, np.sign(UNIT))


NON_SMOOTH: dict[str, tuple[Callable[[Any], Any], Any, list[float]]] = {
    "abs_at_zero": (lambda x: _xp(x).sum(_xp(x).abs(x)), np.array([0.0, 1.0, -2.0]), [0, 1, -1]),
    "max_ties_split": (lambda x: _xp(x).max(x), np.array([3.0, 1.0, 3.0]), [0.5, 0, 0.5]),
    "min_ties_split": (lambda x: _xp(x).min(x), np.array([1.0, 1.0, 2.0]), [0.5, 0.5, 0]),
    "maximum_tie_split": (
        lambda x: _xp(x).sum(_xp(x).maximum(x, 1.0)),
        np.array([1.0, 2.0]),
        [0.5, 1.0],
    ),
    "prod_with_one_zero": (lambda x: _xp(x).prod(x), np.array([2.0, 0.0, 3.0]), [0, 6, 0]),
    "prod_with_two_zeros": (lambda x: _xp(x).prod(x), np.array([2.0, 0.0, 0.0]), [0, 0, 0]),
}


@pytest.mark.parametrize("name", sorted(NON_SMOOTH))
def test_documented_non_smooth_points(name: str) -> None:
    # Each expected value is what central differences give at that point.
    f, x, expected = NON_SMOOTH[name]
    (g,) = ad.gradient(f, x, backend="tape")
    np.testing.assert_allclose(g, expected, atol=1e-12)


def test_zeros_like_gives_a_traced_buffer() -> None:
    def f(x: Any) -> Any:
        xp = _xp(x)
        buf = xp.zeros_like(x)
        buf[1] = x[0] * 3.0
        buf[2] += x[2] ** 2
        return xp.sum(buf)

    (g,) = check_gradient(f, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(g, [3.0, 0.0, 6.0])


ISSUE_FUNCTIONS = [
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sinh",
    "cosh",
    "asin",
    "acos",
    "atan",
    "asinh",
    "acosh",
    "atanh",
    "abs",
    "sign",
    "square",
    "pow",
    "maximum",
    "minimum",
    "clip",
    "where",
    "logaddexp",
    "add",
    "subtract",
    "multiply",
    "divide",
    "equal",
    "less",
    "greater",
    "matmul",
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "var",
    "std",
    "reshape",
    "permute_dims",
    "matrix_transpose",
    "expand_dims",
    "squeeze",
    "broadcast_to",
    "concat",
    "stack",
    "take",
    "zeros",
    "ones",
    "full",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "asarray",
    "astype",
    "cumulative_sum",
]


@pytest.mark.parametrize("name", ISSUE_FUNCTIONS)
def test_the_issues_functions_are_in_the_namespace(name: str) -> None:
    import adswitch_tape.namespace as tape_xp

    assert callable(getattr(tape_xp, name))
    assert name in tape_xp.__all__


def test_fresh_buffers_from_creation_functions_take_traced_writes() -> None:
    def f(a: Any, b: Any) -> Any:
        xp = _xp(a, b)
        buf = xp.zeros((3,), dtype=a.dtype)
        buf[0] = a * b
        buf[1] = a + b
        buf[2] = buf[0] * buf[1]
        grid = xp.ones((2, 2))
        grid[0, :] = xp.stack([a, b])
        return xp.sum(xp.sin(buf)) + xp.sum(grid * xp.eye(2)) + xp.sum(xp.full((2,), a))

    check_gradient(f, np.array(0.7), np.array(-1.3))


def test_fresh_buffers_come_back_as_numpy() -> None:
    def f(x: Any) -> Any:
        xp = _xp(x)
        return xp.sum(x), xp.zeros((2,)), xp.asarray([1.0, 2.0])

    (_, zeros, listed), _ = ad.withgradient(f, np.ones(2), backend="tape")
    assert type(zeros) is np.ndarray and type(listed) is np.ndarray
    np.testing.assert_array_equal(listed, [1.0, 2.0])


@pytest.mark.parametrize("name", ["cumulative_prod", "nextafter", "no_such_function"])
def test_unsupported_names_raise_unsupported_error_naming_them(name: str) -> None:
    def f(x: Any) -> Any:
        return getattr(_xp(x), name)

    with pytest.raises(UnsupportedError, match=name):
        ad.gradient(lambda x: (f(x), _xp(x).sum(x))[1], UNIT, backend="tape")


def test_unsupported_numpy_function_on_a_tracer_names_it() -> None:
    with pytest.raises(UnsupportedError, match=r"numpy\.linalg\.norm"):
        ad.gradient(lambda x: np.linalg.norm(x), UNIT, backend="tape")


def test_float32_stays_float32() -> None:
    x = UNIT.astype(np.float32)
    (g,) = ad.gradient(lambda v: _xp(v).sum(_xp(v).tanh(v) * 2.0), x, backend="tape")
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2.0 / np.cosh(UNIT) ** 2, rtol=1e-5)
