"""The autograd engine's namespace as an Array API namespace, where the standard's test
suite (``tests/array_api/run_suite.sh autograd``, on plain arrays) cannot look: traced
arrays -- inside ``ad.gradient``, and nested -- give numpy's values and dtypes and the
engine's array type; one namespace for array-api-compat (constants included); gradients
of what the standard asks, against finite differences of numpy code. The array object
itself (conversions, DLPack, operators) is ``test_autograd_array_object.py``'s."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import MutationError
from tests.support.fd_oracle import central_fd
from tests.support.library_style import check_library_code_is_differentiated

pytest.importorskip("autograd")
array_api_compat = pytest.importorskip("array_api_compat")

B = "autograd"
RNG = np.random.default_rng(11)
X = RNG.uniform(-2.0, 2.0, (3, 4))  # no ties, no zeros: every function is smooth here
SORTED_ROW = np.sort(X[0])


def _xp(x: Any) -> Any:
    return ad.array_namespace(x)


def _namespace() -> Any:
    from adswitch_autograd import namespace

    return namespace


def _box_types() -> tuple[type, ...]:
    from adswitch_autograd.tracing.boxes import GuardedBox

    return (GuardedBox,)


def _raw(x: Any) -> Any:
    while hasattr(x, "_value") and hasattr(x, "_node"):
        x = x._value
    return x


# name -> (the function on the namespace, the same on numpy); both take (xp, x)
Case = tuple[Callable[[Any, Any], Any], Callable[[Any], Any]]
CASES: dict[str, Case] = {
    # elementwise: primitives and zero-derivative functions
    "sin": (lambda xp, x: xp.sin(x), np.sin),
    "abs": (lambda xp, x: xp.abs(x), np.abs),
    "sign": (lambda xp, x: xp.sign(x), np.sign),
    "floor": (lambda xp, x: xp.floor(x), np.floor),
    "round": (lambda xp, x: xp.round(x), np.round),
    "isnan": (lambda xp, x: xp.isnan(x), np.isnan),
    "greater": (lambda xp, x: xp.greater(x, 0.5), lambda x: x > 0.5),
    "operator_le": (lambda xp, x: x <= 0.5, lambda x: x <= 0.5),
    "logical_not": (lambda xp, x: xp.logical_not(x > 0), lambda x: ~(x > 0)),
    "where": (lambda xp, x: xp.where(x > 0, x, -x), np.abs),
    "clip": (lambda xp, x: xp.clip(x, -1.0, 1.0), lambda x: np.clip(x, -1.0, 1.0)),
    "floor_divide": (lambda xp, x: x // 0.3, lambda x: x // 0.3),
    "remainder": (lambda xp, x: x % 0.7, lambda x: x % 0.7),
    "positive": (lambda xp, x: +x, lambda x: +x),
    "copysign": (lambda xp, x: xp.copysign(x, x[::-1]), lambda x: np.copysign(x, x[::-1])),
    "real": (lambda xp, x: xp.real(x), np.real),
    "conj": (lambda xp, x: xp.conj(x), np.conj),
    # reductions and statistics
    "sum_axis": (lambda xp, x: xp.sum(x, axis=1), lambda x: np.sum(x, axis=1)),
    "sum_dtype": (lambda xp, x: xp.sum(x, dtype=xp.float32), lambda x: np.sum(x, dtype=np.float32)),
    "prod": (lambda xp, x: xp.prod(x, axis=0), lambda x: np.prod(x, axis=0)),
    "var": (lambda xp, x: xp.var(x, correction=1), lambda x: np.var(x, ddof=1)),
    "std_axis": (lambda xp, x: xp.std(x, axis=0), lambda x: np.std(x, axis=0)),
    "max_keepdims": (
        lambda xp, x: xp.max(x, axis=1, keepdims=True),
        lambda x: np.max(x, axis=1, keepdims=True),
    ),
    "min_axes": (lambda xp, x: xp.min(x, axis=(0, 1)), lambda x: np.min(x)),
    "cumulative_sum": (
        lambda xp, x: xp.cumulative_sum(x, axis=1, include_initial=True),
        lambda x: np.concatenate([np.zeros((3, 1)), np.cumsum(x, axis=1)], axis=1),
    ),
    # searching, sorting
    "argmax": (lambda xp, x: xp.argmax(x, axis=1, keepdims=True), lambda x: x.argmax(1)[:, None]),
    "argmin_flat": (lambda xp, x: xp.argmin(x), np.argmin),
    "argsort_descending": (
        lambda xp, x: xp.argsort(x, axis=1, descending=True),
        lambda x: np.argsort(-x, axis=1),
    ),
    "sort_descending": (
        lambda xp, x: xp.sort(x, axis=0, descending=True),
        lambda x: -np.sort(-x, axis=0),
    ),
    "nonzero": (lambda xp, x: xp.nonzero(x > 0)[1], lambda x: np.nonzero(x > 0)[1]),
    "searchsorted": (
        lambda xp, x: xp.searchsorted(xp.asarray(SORTED_ROW), x, side="right"),
        lambda x: np.searchsorted(SORTED_ROW, x, side="right"),
    ),
    "all_any": (
        lambda xp, x: xp.stack([xp.all(x > -3.0), xp.any(x > 1.5, axis=(0, 1))]),
        lambda x: np.array([np.all(x > -3.0), np.any(x > 1.5)]),
    ),
    # shapes and indexing
    "expand_dims": (lambda xp, x: xp.expand_dims(x, 1), lambda x: x[:, None]),
    "squeeze": (lambda xp, x: xp.squeeze(x[:1], axis=0), lambda x: x[0]),
    "permute_dims": (lambda xp, x: xp.permute_dims(x, (1, 0)), lambda x: x.T),
    "mT": (lambda xp, x: x.mT @ x, lambda x: x.T @ x),
    "moveaxis": (lambda xp, x: xp.moveaxis(x[None], 0, 2), lambda x: np.moveaxis(x[None], 0, 2)),
    "roll": (lambda xp, x: xp.roll(x, (1, -1), axis=(0, 1)), lambda x: np.roll(x, (1, -1), (0, 1))),
    "tile": (lambda xp, x: xp.tile(x, (2, 1)), lambda x: np.tile(x, (2, 1))),
    "repeat_array": (
        lambda xp, x: xp.repeat(x, xp.asarray([1, 0, 2]), axis=0),
        lambda x: np.repeat(x, [1, 0, 2], axis=0),
    ),
    "take": (lambda xp, x: xp.take(x, xp.asarray([2, 0]), axis=1), lambda x: x[:, [2, 0]]),
    "boolean_mask": (lambda xp, x: x[x > 0], lambda x: x[x > 0]),
    "index_by_argmax": (lambda xp, x: x[0, xp.argmax(x[0])], lambda x: x[0, np.argmax(x[0])]),
    "tril": (lambda xp, x: xp.tril(x, k=1), lambda x: np.tril(x, 1)),
    "triu": (lambda xp, x: xp.triu(x, k=-1), lambda x: np.triu(x, -1)),
    # creation and dtypes
    "asarray_copy": (lambda xp, x: xp.asarray(x, copy=True), np.copy),
    "asarray_list": (lambda xp, x: xp.asarray([x[0, 0], x[1, 1]]), lambda x: x[[0, 1], [0, 1]]),
    "full_like": (lambda xp, x: xp.full_like(x, 2.5), lambda x: np.full_like(x, 2.5)),
    "linspace": (
        lambda xp, x: xp.linspace(x[0, 0], x[1, 1], 5),
        lambda x: np.linspace(x[0, 0], x[1, 1], 5),
    ),
    "arange": (lambda xp, x: xp.arange(x[0, 0], 3.0, 0.5), lambda x: np.arange(x[0, 0], 3.0, 0.5)),
    "eye_times": (lambda xp, x: xp.eye(3, 4, k=1) * x, lambda x: np.eye(3, 4, k=1) * x),
    "astype_float32": (lambda xp, x: xp.astype(x, xp.float32), lambda x: x.astype(np.float32)),
    "astype_int": (lambda xp, x: xp.astype(x * 3, xp.int64), lambda x: (x * 3).astype(np.int64)),
    "bitwise": (
        lambda xp, x: (xp.argsort(x, axis=1) & 2) | (xp.argmax(x, axis=1)[:, None] << 1),
        lambda x: (np.argsort(x, axis=1) & 2) | (np.argmax(x, axis=1)[:, None] << 1),
    ),
    "bitwise_traced_int": (
        lambda xp, x: (xp.astype(x * 3, xp.int64) ^ 5) >> 1,
        lambda x: ((x * 3).astype(np.int64) ^ 5) >> 1,
    ),
    "invert": (lambda xp, x: ~(x > 0), lambda x: ~(x > 0)),
    # linear algebra
    "matmul": (lambda xp, x: x @ xp.matrix_transpose(x), lambda x: x @ x.T),
    "vecdot": (lambda xp, x: xp.vecdot(x, x[0]), lambda x: x @ x[0]),
    "tensordot": (
        lambda xp, x: xp.tensordot(x, x, axes=([0], [0])),
        lambda x: np.tensordot(x, x, axes=([0], [0])),
    ),
    "vector_norm": (
        lambda xp, x: xp.linalg.vector_norm(x, axis=1),
        lambda x: np.sqrt((x * x).sum(1)),
    ),
    "matrix_norm_1": (lambda xp, x: xp.linalg.matrix_norm(x, ord=1), lambda x: abs(x).sum(0).max()),
    "svdvals": (lambda xp, x: xp.linalg.svdvals(x), lambda x: np.linalg.svd(x, compute_uv=False)),
    "inv": (lambda xp, x: xp.linalg.inv(x[:, :3]), lambda x: np.linalg.inv(x[:, :3])),
    "matrix_rank": (lambda xp, x: xp.linalg.matrix_rank(x), np.linalg.matrix_rank),
    "fftshift": (lambda xp, x: xp.fft.fftshift(x, axes=1), lambda x: np.fft.fftshift(x, axes=1)),
}  # fmt: skip


def _check_case(name: str, x: Any, seen: dict[str, Any]) -> None:
    """Run one case on the traced ``x``: floating results are the engine's array type
    and their namespace is the autograd namespace; integer and boolean ones are numpy's
    (they carry no gradient)."""
    out = CASES[name][0](_xp(x), x)
    if np.result_type(_raw(out)).kind in "fc":
        assert isinstance(out, _box_types()), f"{name}: {type(out)}"
        assert array_api_compat.array_namespace(out) is _namespace()
    else:
        assert isinstance(out, (np.ndarray, np.generic, *_box_types())), f"{name}: {type(out)}"
    seen[name] = np.asarray(_raw(out))


def _assert_numpys(name: str, got: Any) -> None:
    want = np.asarray(CASES[name][1](X.copy()))
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype}, numpy's {want.dtype}"
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_plain_arrays_give_numpys_values(name: str) -> None:
    got = CASES[name][0](_namespace(), X.copy())
    assert isinstance(got, (np.ndarray, np.generic)), type(got)
    _assert_numpys(name, np.asarray(got))


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_arrays_inside_a_gradient_give_numpys_values(name: str) -> None:
    seen: dict[str, Any] = {}

    def f(x: Any) -> Any:
        _check_case(name, x, seen)
        return _xp(x).sum(x * x)

    ad.gradient(f, X.copy(), backend=B)
    _assert_numpys(name, seen[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_arrays_nested_two_deep_give_numpys_values(name: str) -> None:
    seen: dict[str, Any] = {}

    def inner(y: Any) -> Any:
        assert isinstance(y._value, _box_types())  # traced twice
        _check_case(name, y, seen)
        return _xp(y).sum(_xp(y).sin(y))

    def outer(x: Any) -> Any:
        (g,) = ad.gradient(inner, x * 1.0)
        return _xp(g).sum(g * g)

    ad.gradient(outer, X.copy(), backend=B)
    _assert_numpys(name, seen[name])


# -- gradients of the compositions: against finite differences of numpy code -------------
DIFFERENTIABLE = [
    "sin", "abs", "where", "clip", "remainder", "positive", "copysign", "real", "conj",
    "sum_axis", "prod", "var", "std_axis", "max_keepdims", "min_axes",
    "cumulative_sum", "sort_descending", "expand_dims", "squeeze", "permute_dims", "mT",
    "moveaxis", "roll", "tile", "repeat_array", "take", "boolean_mask", "index_by_argmax",
    "tril", "triu", "asarray_copy", "asarray_list", "linspace", "arange", "eye_times",
    "matmul", "vecdot", "tensordot", "vector_norm", "matrix_norm_1",
    "svdvals", "inv", "fftshift",
]  # fmt: skip


def _weights(shape: tuple[int, ...]) -> Any:
    return np.linspace(0.5, 1.5, math.prod(shape) or 1).reshape(shape)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradients_match_finite_differences_of_numpy(name: str) -> None:
    body, numpy_fn = CASES[name]
    w = _weights(np.shape(numpy_fn(X.copy())))

    def f(x: Any) -> Any:
        return _xp(x).sum(body(_xp(x), x) * w)

    (g,) = ad.gradient(f, X.copy(), backend=B)
    expected = central_fd(lambda x: np.sum(numpy_fn(x) * w), X)
    np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-6)


def test_casts_to_float32_pass_the_gradient_back_in_float64() -> None:
    # (finite differences of float32 code are too coarse an oracle: closed forms)
    w = _weights((3, 4))
    (g,) = ad.gradient(lambda x: _xp(x).sum(_xp(x).astype(x, np.float32) * w), X, backend=B)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, w, rtol=1e-6)
    (g,) = ad.gradient(lambda x: _xp(x).sum(x * w, dtype=np.float32) * 2.0, X, backend=B)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2.0 * w, rtol=1e-6)


def test_linspace_and_arange_with_traced_end_points() -> None:
    def f(a: Any, b: Any) -> Any:
        return _xp(a).sum(_xp(a).linspace(a, b, 5) * _weights((5,)))

    ga, gb = ad.gradient(f, np.array(0.5), np.array(2.0), backend=B)
    # value i is a + (b - a) * i / 4: d/da = sum w_i (1 - i/4), d/db = sum w_i i/4
    t = np.arange(5) / 4
    np.testing.assert_allclose(
        [ga, gb], [np.sum(_weights((5,)) * (1 - t)), np.sum(_weights((5,)) * t)]
    )
    (g,) = ad.gradient(lambda s: _xp(s).sum(_xp(s).arange(s, 3.0)), np.array(0.5), backend=B)
    assert float(g) == 3.0  # 0.5, 1.5, 2.5: each moves with the start


# -- one namespace for libraries ---------------------------------------------------------
def test_array_api_compat_sees_the_autograd_namespace_for_traced_values_and_constants() -> None:
    c = np.arange(4.0)
    xp_module = _namespace()

    def f(x: Any) -> Any:
        xp = array_api_compat.array_namespace(x)
        assert xp is xp_module
        const = xp.asarray(c)
        assert isinstance(const, _box_types()) and np.shares_memory(_raw(const), c)  # no copy
        mixed = array_api_compat.array_namespace(x, const, xp.ones(2), xp.eye(2), x[0])
        assert mixed is xp
        assert const.__array_namespace__(api_version="2022.12") is xp
        with pytest.raises(ValueError, match=r"2099\.12"):
            const.__array_namespace__(api_version="2099.12")
        assert x.device == "cpu" and x.to_device("cpu") is x
        return xp.sum(x * const)

    (g,) = ad.gradient(f, np.ones(4), backend=B)
    np.testing.assert_array_equal(g, c)


def test_forward_mode_traced_arrays_have_the_autograd_namespace_too() -> None:
    def f(x: Any) -> Any:
        assert array_api_compat.array_namespace(x, _xp(x).asarray(X)) is _namespace()
        return _xp(x).sin(x)

    _, dy = ad.jvp(f, (X.copy(),), (np.ones((3, 4)),), backend=B)
    np.testing.assert_allclose(dy, np.cos(X))


def test_zero_dimensional_buffers_stay_zero_dimensional() -> None:
    def f(x: Any) -> Any:
        xp = _xp(x)
        made = (xp.zeros(()), xp.ones(()), xp.empty(()), xp.full((), 2.0), xp.asarray(3.0))
        for buffer in made:
            assert isinstance(buffer, _box_types()) and buffer.shape == (), buffer.shape
        made[0][...] = x[0]
        return xp.sum(made[0] * x[1])

    (g,) = ad.gradient(f, np.array([2.0, 3.0]), backend=B)
    np.testing.assert_array_equal(g, [3.0, 2.0])


def test_numpy_sees_the_constants_the_namespace_makes() -> None:
    def f(x: Any) -> Any:
        xp = _xp(x)
        eye = xp.eye(2)
        np.testing.assert_array_equal(np.asarray(eye), np.eye(2))
        np.testing.assert_array_equal(np.linalg.inv(xp.asarray([[2.0, 0.0], [0.0, 4.0]])),
                                      [[0.5, 0.0], [0.0, 0.25]])  # fmt: skip
        eye[0, 0] = x[0]  # now it carries a gradient: numpy may no longer see it
        np.asarray(eye)
        return xp.sum(eye)

    with pytest.raises(MutationError, match=r"numpy array.*Fix:"):
        ad.gradient(f, np.ones(2), backend=B)


def test_a_constant_shares_memory_read_only_and_a_copy_is_writable() -> None:
    c = np.arange(3.0)

    def f(x: Any) -> Any:
        xp = _xp(x)
        buf = xp.asarray(c, copy=True)
        buf[0] = x[0]  # a copy: written like any traced buffer
        built = xp.asarray([0.0, 0.0])  # new memory: writable too
        built[1] = x[1]
        shared = xp.asarray(c)
        shared[0] = 1.0  # numpy would write into c: refused rather than copied
        return xp.sum(buf + built)

    with pytest.raises(MutationError, match="read-only"):
        ad.gradient(f, np.ones(2), backend=B)
    np.testing.assert_array_equal(c, [0.0, 1.0, 2.0])


def test_library_code_written_against_array_api_compat_is_differentiated() -> None:
    check_library_code_is_differentiated(B)


def test_a_branch_that_where_never_chooses_is_not_traced() -> None:
    # the discarded branch overflows; a zero gradient into it would become 0 * inf = NaN
    def f(x: Any) -> Any:
        xp = _xp(x)
        with np.errstate(over="ignore"):
            huge = xp.log(xp.sum(xp.exp(x * 1000.0)))
        y = xp.where(x < 10.0, x, huge)
        y[0] = 5.0  # a new array, as numpy's: x is not written
        return xp.sum(y * x)

    x = np.array([1.0, 2.0, 3.0])
    (g,) = ad.gradient(f, x.copy(), backend=B)
    np.testing.assert_array_equal(g, [5.0, 4.0, 6.0])  # d/dx of 5 x0 + x1^2 + x2^2


def test_special_functions_for_scipy_with_first_and_second_derivatives() -> None:
    x = np.array([-30.0, -0.7, 0.0, 0.4, 25.0])
    p = np.array([1e-6, 0.2, 0.5, 0.7, 0.999])
    e = np.exp(-np.abs(x))  # s (1 - s) and 1 - 2 s of s = expit(x), without cancellation
    slope, bend = e / (1.0 + e) ** 2, -np.sign(x) * (1.0 - e) / (1.0 + e)
    cases = [
        ("expit", x, slope, slope * bend),
        ("logit", p, 1.0 / (p * (1.0 - p)), (2.0 * p - 1.0) / (p * (1.0 - p)) ** 2),
        ("erf", x / 10.0, 2 / np.sqrt(np.pi) * np.exp(-(x / 10) ** 2),
         -4 * x / 10 / np.sqrt(np.pi) * np.exp(-(x / 10) ** 2)),
        ("exp2", x / 10.0, np.log(2.0) * 2.0 ** (x / 10), np.log(2.0) ** 2 * 2.0 ** (x / 10)),
        ("exp10", x / 10.0, np.log(10.0) * 10.0 ** (x / 10),
         np.log(10.0) ** 2 * 10.0 ** (x / 10)),
        ("cosm1", x / 10.0, -np.sin(x / 10), -np.cos(x / 10)),
    ]  # fmt: skip
    for name, at, first, second in cases:
        f = lambda v, n=name: _xp(v).sum(getattr(_xp(v).special, n)(v))  # noqa: E731
        (g,) = ad.gradient(f, at.copy(), backend=B)
        np.testing.assert_allclose(g, first, rtol=1e-10, atol=1e-300, err_msg=name)
        (h,) = ad.hvp(f, (at.copy(),), (np.ones_like(at),), backend=B)
        np.testing.assert_allclose(h, second, rtol=1e-9, atol=1e-12, err_msg=name)
    assert _namespace().special.expit(np.array([0.0])).tolist() == [0.5]
