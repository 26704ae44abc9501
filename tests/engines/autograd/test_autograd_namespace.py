"""The autograd engine's Array API namespace: every function's gradient against central
finite differences, values against numpy, and unsupported functions refused by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd

pytest.importorskip("autograd")

import adswitch as ad
from adswitch.errors import UnsupportedError

RNG = np.random.default_rng(0)


def weights(shape: tuple[int, ...]) -> np.ndarray:
    # A fixed random projection makes every output element matter to the loss.
    return np.random.default_rng(1).standard_normal(shape)


def project(xp: Any, y: Any) -> Any:
    y = xp.asarray(y)
    return xp.sum(y * weights(tuple(y.shape)))


# (name, function of (xp, x), input) -- x is kept away from non-smooth points.
A = RNG.uniform(0.2, 0.9, (3, 4))
V = RNG.uniform(0.2, 0.9, 5)
BIG = RNG.uniform(1.2, 3.0, (3, 4))
CASES: list[tuple[str, Callable[[Any, Any], Any], np.ndarray]] = [
    ("exp", lambda xp, x: xp.exp(x), A),
    ("log", lambda xp, x: xp.log(x), A),
    ("log1p", lambda xp, x: xp.log1p(x), A),
    ("log2", lambda xp, x: xp.log2(x), A),
    ("log10", lambda xp, x: xp.log10(x), A),
    ("expm1", lambda xp, x: xp.expm1(x), A),
    ("sqrt", lambda xp, x: xp.sqrt(x), A),
    ("sin", lambda xp, x: xp.sin(x), A),
    ("cos", lambda xp, x: xp.cos(x), A),
    ("tan", lambda xp, x: xp.tan(x), A),
    ("tanh", lambda xp, x: xp.tanh(x), A),
    ("sinh", lambda xp, x: xp.sinh(x), A),
    ("cosh", lambda xp, x: xp.cosh(x), A),
    ("asin", lambda xp, x: xp.asin(x), A),
    ("acos", lambda xp, x: xp.acos(x), A),
    ("atan", lambda xp, x: xp.atan(x), A),
    ("asinh", lambda xp, x: xp.asinh(x), A),
    ("acosh", lambda xp, x: xp.acosh(x), BIG),
    ("atanh", lambda xp, x: xp.atanh(x), A),
    ("atan2", lambda xp, x: xp.atan2(x, x[::-1]), A),
    ("hypot", lambda xp, x: xp.hypot(x, 2.0 * x[::-1]), A),
    ("abs", lambda xp, x: xp.abs(x - 0.55), A),
    ("sign", lambda xp, x: xp.sign(x - 0.55) * x, A),
    ("square", lambda xp, x: xp.square(x), A),
    ("pow", lambda xp, x: xp.pow(x, x[::-1]), A),
    ("pow-scalar", lambda xp, x: xp.pow(2.5, x), A),
    (
        "add-sub-mul-div",
        lambda xp, x: xp.divide(xp.multiply(xp.add(x, 1.0), x), xp.subtract(3.0, x)),
        A,
    ),
    ("operators", lambda xp, x: (2.0 - x) / (x + 1.0) * x**2 - (-x) + 1.0 / x, A),
    ("numpy-op-traced", lambda xp, x: np.ones((3, 4)) * x + np.arange(4.0) - x, A),
    ("negative-positive", lambda xp, x: xp.negative(xp.positive(x)), A),
    ("remainder", lambda xp, x: xp.remainder(x * 3.0, 0.7), A),
    ("maximum", lambda xp, x: xp.maximum(x, 0.5), A),
    ("minimum", lambda xp, x: xp.minimum(x, x[::-1] + 0.01), A),
    ("clip", lambda xp, x: xp.clip(x, 0.4, 0.7), A),
    ("clip-min-only", lambda xp, x: xp.clip(x, min=0.5), A),
    ("clip-traced-bounds", lambda xp, x: xp.clip(V, min=x[0, :1], max=x[1, :1] + 0.3), A),
    ("where", lambda xp, x: xp.where(x > 0.5, xp.sin(x), x**2), A),
    ("logaddexp", lambda xp, x: xp.logaddexp(x, 2.0 * x[::-1]), A),
    ("comparisons", lambda xp, x: x * (x > 0.5) + x * xp.less_equal(x, 0.3), A),
    ("matmul-matrix", lambda xp, x: x @ x.T, A),
    ("matmul-vector", lambda xp, x: xp.matmul(x, V[:4]), A),
    ("matmul-batched", lambda xp, x: xp.reshape(x, (3, 2, 2)) @ xp.reshape(x, (3, 2, 2)), A),
    ("rmatmul-numpy", lambda xp, x: np.ones((2, 3)) @ x, A),
    ("sum-axis", lambda xp, x: xp.sum(x, axis=1) ** 2, A),
    ("sum-keepdims", lambda xp, x: x / xp.sum(x, axis=0, keepdims=True), A),
    ("mean", lambda xp, x: xp.mean(x, axis=0) ** 2 + xp.mean(x), A),
    ("prod", lambda xp, x: xp.prod(x, axis=1), A),
    ("prod-all-keepdims", lambda xp, x: xp.prod(x[:2], axis=None, keepdims=True), A),
    ("prod-with-zero", lambda xp, x: xp.prod(x * np.array([1.0, 0.0, 1.0, 1.0]), axis=1), A),
    ("prod-two-zeros", lambda xp, x: xp.prod(x[0] * np.array([0.0, 0.0, 1.0, 1.0])), A),
    ("max", lambda xp, x: xp.max(x, axis=1) + xp.max(x), A),
    ("min", lambda xp, x: xp.min(x, axis=0, keepdims=True) * x, A),
    ("var", lambda xp, x: xp.var(x, axis=1), A),
    ("var-correction", lambda xp, x: xp.var(x, correction=1), A),
    ("std", lambda xp, x: xp.std(x, axis=0, correction=1, keepdims=True), A),
    ("reshape", lambda xp, x: xp.reshape(x, (2, 6)), A),
    ("permute_dims", lambda xp, x: xp.permute_dims(xp.reshape(x, (3, 2, 2)), (2, 0, 1)), A),
    ("matrix_transpose", lambda xp, x: xp.matrix_transpose(x) @ x, A),
    (".T", lambda xp, x: x.T, A),
    ("expand_dims", lambda xp, x: xp.expand_dims(x, axis=1), A),
    ("squeeze", lambda xp, x: xp.squeeze(x[:1], axis=0), A),
    ("broadcast_to", lambda xp, x: xp.broadcast_to(x[0], (2, 4)), A),
    ("broadcast_arrays", lambda xp, x: xp.stack(xp.broadcast_arrays(x[:1], x)), A),
    ("concat", lambda xp, x: xp.concat([x, x**2], axis=1), A),
    ("concat-none", lambda xp, x: xp.concat([x, x[0]], axis=None), A),
    ("stack", lambda xp, x: xp.stack([x, xp.sin(x)], axis=1), A),
    ("unstack", lambda xp, x: xp.unstack(x, axis=1)[2] * 3.0, A),
    ("take", lambda xp, x: xp.take(x, np.array([0, 2, 2]), axis=1), A),
    ("take-1d", lambda xp, x: xp.take(x[0], np.array([3, 0, 3])), A),
    ("indexing-basic", lambda xp, x: x[1:, ::2] + x[0, 1], A),
    ("indexing-integer-array", lambda xp, x: x[np.array([0, 0, 2]), np.array([1, 1, 3])], A),
    ("indexing-boolean", lambda xp, x: x[x > 0.5], A),
    ("indexing-0d", lambda xp, x: xp.sum(x)[None] * x[0, 0][...] + x[1, 1][()], A),
    ("flip", lambda xp, x: xp.flip(x, axis=1) * x, A),
    ("flip-all", lambda xp, x: xp.flip(x) * x, A),
    ("roll", lambda xp, x: xp.roll(x, 1, axis=0) * x, A),
    ("repeat", lambda xp, x: xp.repeat(x, 2, axis=0), A),
    ("repeat-counts", lambda xp, x: xp.repeat(x, np.array([1, 0, 3, 2]), axis=1), A),
    ("tile", lambda xp, x: xp.tile(x, (2, 1)), A),
    ("moveaxis", lambda xp, x: xp.moveaxis(xp.reshape(x, (3, 2, 2)), 0, 2), A),
    ("tril-triu", lambda xp, x: xp.tril(x) + 2.0 * xp.triu(x, k=1), A),
    ("tensordot", lambda xp, x: xp.tensordot(x, x, axes=([1], [1])), A),
    ("vecdot", lambda xp, x: xp.vecdot(x, x[::-1]), A),
    ("cumulative_sum", lambda xp, x: xp.cumulative_sum(x, axis=1) ** 2, A),
    ("cumulative_sum-initial", lambda xp, x: xp.cumulative_sum(x[0], include_initial=True) ** 2, A),
    ("sort", lambda xp, x: xp.sort(x, axis=1) * np.arange(4.0), A),
    (
        "sort-descending",
        lambda xp, x: xp.sort(x, axis=0, descending=True) * np.arange(3.0)[:, None],
        A,
    ),
    (
        "take_along_axis",
        lambda xp, x: xp.take_along_axis(x, np.array([[0, 3], [1, 1], [2, 0]]), axis=1),
        A,
    ),
    ("cumulative_prod", lambda xp, x: xp.cumulative_prod(x - 0.5, axis=1), A),
    (
        "cumulative_prod-zero",
        lambda xp, x: xp.cumulative_prod(
            x[0] * np.array([1.0, 0.0, -1.0, 2.0]), include_initial=True
        ),
        A,
    ),
    ("copysign", lambda xp, x: xp.copysign(x, np.array([1.0, -1.0, -0.0, 2.0])), A),
    ("where-broadcast", lambda xp, x: xp.where(A > 0.5, x[0], x[:, :1] * 2.0), A),
    ("diff", lambda xp, x: xp.diff(x, axis=1, prepend=x[:, :1] * 2.0) ** 2, A),
    ("astype", lambda xp, x: xp.astype(x, xp.float64) * 2.0, A),
    ("asarray-of-traced-list", lambda xp, x: xp.asarray([x[0, 0], x[1, 1] ** 2]), A),
    ("full", lambda xp, x: xp.full((2, 2), x[0, 0]) * x[:2, :2], A),
    ("full_like", lambda xp, x: xp.full_like(x, x[1, 1]) * x, A),
    (
        "zeros/ones/empty_like",
        lambda xp, x: x * xp.ones_like(x) + xp.zeros_like(x) + 0 * xp.ones((3, 4)),
        A,
    ),
    ("meshgrid", lambda xp, x: xp.stack(xp.meshgrid(x[0], x[1, :3])) ** 2, A),
    ("meshgrid-ij", lambda xp, x: xp.stack(xp.meshgrid(x[0], x[1, :3], indexing="ij")) ** 2, A),
    ("real-imag-conj", lambda xp, x: xp.real(xp.conj(x)) + 0 * xp.imag(x), A),
    (
        "trunc-floor-ceil-round",
        lambda xp, x: x * (xp.floor(x * 3) + xp.ceil(x) + xp.round(x) + xp.trunc(x)),
        A,
    ),
]


@pytest.mark.parametrize(("name", "body", "x"), CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_finite_differences(name: str, body: Any, x: np.ndarray) -> None:
    def loss(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return project(xp, body(xp, x))

    (grad,) = ad.gradient(loss, x.copy(), backend="autograd")
    expected = central_fd(lambda v: float(project(np, body(np_namespace(), v))), x)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-7)


class _NumpyOracle:
    """numpy (>= 2.1 speaks the Array API) as the oracle, plus the standard's keywords
    numpy 2.4 still lacks."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def sort(x: Any, axis: int = -1, descending: bool = False) -> Any:
        if descending:
            return -np.sort(-x, axis=axis, stable=True)
        return np.sort(x, axis=axis, stable=True)


def np_namespace() -> Any:
    return _NumpyOracle()


@pytest.mark.parametrize(("name", "body", "x"), CASES, ids=[c[0] for c in CASES])
def test_values_match_numpy(name: str, body: Any, x: np.ndarray) -> None:
    from adswitch_autograd import namespace as xp

    np.testing.assert_allclose(
        np.asarray(body(xp, x)), np.asarray(body(np_namespace(), x)), rtol=1e-12
    )


def test_namespace_is_returned_for_traced_arrays() -> None:
    from adswitch_autograd import namespace

    seen = []

    def loss(x: Any) -> Any:
        xp = ad.array_namespace(x)
        seen.append(xp)
        return xp.sum(x)

    ad.gradient(loss, np.ones(2), backend="autograd")
    assert seen == [namespace]
    assert namespace.__array_api_version__ == "2023.12"
    assert namespace.float64 is np.float64 and namespace.newaxis is None
    assert namespace.isdtype(namespace.float32, "real floating")


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("unique_values", lambda xp, x: xp.unique_values(x)),
        ("unique_inverse", lambda xp, x: xp.unique_inverse(x).values),
    ],
)
def test_undifferentiable_functions_raise_unsupported_naming_them(name: str, call: Any) -> None:
    from adswitch_autograd import namespace as xp

    x = np.array([0.5, 0.25])
    np.testing.assert_allclose(call(xp, x), call(np, x))  # plain arrays: numpy's answer

    def loss(x: Any) -> Any:
        return ad.array_namespace(x).sum(call(ad.array_namespace(x), x))

    with pytest.raises(UnsupportedError, match=name) as info:
        ad.gradient(loss, x, backend="autograd")
    assert "autograd" in str(info.value) and "backend=" in str(info.value)


def test_missing_vjp_of_a_raw_primitive_is_translated() -> None:
    import autograd.numpy as anp

    def loss(x: Any) -> Any:
        return anp.sum(anp.nextafter(x, 2.0))

    with pytest.raises(UnsupportedError, match="nextafter") as info:
        ad.gradient(loss, np.ones(2), backend="autograd")
    assert isinstance(info.value.__cause__, NotImplementedError)


def test_signbit_is_computed_on_traced_values() -> None:
    def loss(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x * xp.signbit(x - 0.5))

    (grad,) = ad.gradient(loss, np.array([0.25, 0.75]), backend="autograd")
    np.testing.assert_array_equal(grad, [1.0, 0.0])


@pytest.mark.parametrize(
    ("body", "x", "expected"),
    [
        # ties in a max reduction share the gradient equally
        (lambda xp, x: xp.max(x), [1.0, 3.0, 3.0], [0.0, 0.5, 0.5]),
        # maximum against an equal value: half and half
        (lambda xp, x: xp.sum(xp.maximum(x, 1.0)), [1.0, 3.0, 0.0], [0.5, 1.0, 0.0]),
        # abs at 0: 0
        (lambda xp, x: xp.sum(xp.abs(x)), [0.0, -2.0, 3.0], [0.0, -1.0, 1.0]),
        # clip: 1 strictly inside, 0.5 on a bound (the kink convention), 0 outside
        (lambda xp, x: xp.sum(xp.clip(x, 0.0, 1.0)), [0.0, 0.5, 1.0, 2.0], [0.5, 1.0, 0.5, 0.0]),
    ],
    ids=["max-ties", "maximum-tie", "abs-at-0", "clip-bounds"],
)
def test_documented_gradients_at_kinks(body: Any, x: list[float], expected: list[float]) -> None:
    (grad,) = ad.gradient(lambda a: body(ad.array_namespace(a), a), np.array(x), backend="autograd")
    np.testing.assert_array_equal(grad, expected)
