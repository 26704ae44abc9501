"""Issue 19: an infinite slope times a ZERO seed is 0, never ``0 * inf = nan``.

``sqrt`` at 0 and ``x ** p`` (a float ``p < 1``) at 0 have an infinite slope; every engine
used to multiply every seed -- cotangent or tangent -- by it, so a zero seed (a Jacobian's
structurally zero entries, a zero weight downstream in reverse mode, an unrelated hvp
direction) gave nan. The references are closed forms: d sqrt(x) = 1 / (2 sqrt(x)),
d x ** p = p x ** (p - 1), d2 sqrt(x) = -x ** -1.5 / 4; +inf at 0 on the diagonal (the
kink convention), exactly 0 off it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import adswitch as ad

ENGINES = ["tape", "torch", "jax", "autograd"]
INF = np.inf
X = np.array([0.0, 1.0, 4.0])
SQRT_J = np.array([[INF, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 0.25]])  # at X


@pytest.fixture(params=ENGINES)
def engine(request: Any) -> Iterator[str]:
    pytest.importorskip(f"adswitch_{request.param}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's divide-by-zero at 0
        yield request.param


def _sqrt(x: Any) -> Any:
    return ad.array_namespace(x).sqrt(x)


def _pow_half(x: Any) -> Any:
    return ad.array_namespace(x).pow(x, 0.5)


def _pow_third(x: Any) -> Any:
    return ad.array_namespace(x).pow(x, 1.0 / 3.0)


def _weighted(w: np.ndarray, dtype: Any = np.float64) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(xp.sqrt(x) * xp.asarray(w.astype(dtype)))

    return f


def _np(value: Any) -> np.ndarray:
    while isinstance(value, (tuple, list)):
        (value,) = value
    return np.asarray(value, dtype=np.float64)


def _same(got: Any, want: np.ndarray) -> None:
    """Equal, infinities and exact zeros included (no nan anywhere)."""
    got = _np(got)
    assert not np.isnan(got).any(), got
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("fn", [_sqrt, _pow_half], ids=["sqrt", "pow_half"])
@pytest.mark.parametrize("prepared", [False, True], ids=["plain", "prepared"])
def test_jacobian_at_0_is_inf_on_the_diagonal_and_0_off_it(
    engine: str, fn: Any, mode: str, prepared: bool
) -> None:
    with ad.use(engine):
        if prepared:
            call = ad.prepare(ad.jacobian, fn, np.array([1.0, 2.0, 3.0]), mode=mode)
            got = call(X.copy())
        else:
            got = ad.jacobian(fn, X.copy(), mode=mode)
    _same(got, SQRT_J)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_cube_root_like_power_and_float32(engine: str, mode: str) -> None:
    x = np.array([0.0, 8.0], dtype=np.float32)
    with ad.use(engine):
        got = ad.jacobian(_pow_third, x, mode=mode)
    assert _np(got).dtype == np.float64 and np.asarray(got[0]).dtype == np.float32
    _same(got, np.array([[INF, 0.0], [0.0, 1.0 / 12.0]]))  # x ** (-2/3) / 3 at 8: 1/12


def test_vjp_and_jvp_with_zero_seeds(engine: str) -> None:
    with ad.use(engine):
        _, pullback = ad.vjp(_sqrt, X.copy())
        _same(pullback(np.array([0.0, 1.0, 0.0])), np.array([0.0, 0.5, 0.0]))
        _same(pullback(np.array([1.0, 0.0, 2.0])), np.array([INF, 0.0, 0.5]))
        _, t = ad.jvp(_pow_half, (X.copy(),), (np.array([0.0, 1.0, 1.0]),))
        _same(t, np.array([0.0, 0.5, 0.25]))
        _, t = ad.jvp(_sqrt, (X.copy(),), (np.array([1.0, 0.0, 0.0]),))
        _same(t, np.array([INF, 0.0, 0.0]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("prepared", [False, True], ids=["plain", "prepared"])
def test_gradient_with_a_zero_weight_at_0(engine: str, dtype: Any, prepared: bool) -> None:
    f = _weighted(np.array([0.0, 1.0, 2.0]), dtype)  # d/dx = w / (2 sqrt(x)): 0 * inf -> 0
    x = X.astype(dtype)
    with ad.use(engine):
        if prepared:  # prepared away from 0, called at it: no stale choice at 0
            (got,) = ad.prepare(ad.gradient, f, np.array([1.0, 2.0, 3.0], dtype=dtype))(x)
        else:
            (got,) = ad.gradient(f, x)
    assert np.asarray(got).dtype == dtype
    _same(got, np.array([0.0, 0.5, 0.5]))


def test_gradient_prepared_at_0_then_called_away_from_it(engine: str) -> None:
    f = _weighted(np.array([0.0, 1.0, 2.0]))
    with ad.use(engine):
        call = ad.prepare(ad.gradient, f, X.copy())
        _same(call(X.copy()), np.array([0.0, 0.5, 0.5]))
        x = np.array([1.0, 4.0, 16.0])
        _same(call(x), np.array([0.0, 0.25, 0.25]))  # w / (2 sqrt(x))


def test_hessian_and_hvp_at_0(engine: str) -> None:
    w = np.array([1.0, 0.0, 2.0])
    f = _weighted(w)
    want = np.diag(w * -0.25 * np.array([INF, 1.0, 4.0**-1.5]))  # -x ** -1.5 / 4
    want[1, 1] = 0.0  # w = 0 there
    with ad.use(engine):
        _same(ad.hessian(f, X.copy()), want)
        _same(ad.prepare(ad.hessian, f, X.copy())(X.copy()), want)
        _same(ad.hvp(f, (X.copy(),), (np.array([0.0, 0.0, 1.0]),)), want[2])


def test_a_zero_seed_times_a_finite_slope_keeps_its_derivative(engine: str) -> None:
    """The mask is only where the slope is infinite: d/dw of d/dx sum(w sqrt(x)) at w = 0
    (x > 0) is 1 / (2 sqrt(x)), not 0 (a seed of 0 there is still differentiated)."""
    x = np.array([1.0, 4.0, 9.0])

    def g(w: Any) -> Any:
        def f(x_: Any, w_: Any) -> Any:
            xp = ad.array_namespace(x_, w_)
            return xp.sum(xp.sqrt(x_) * w_)

        return ad.gradient(f, ad.array_namespace(w).asarray(x), w)[0]

    with ad.use(engine):
        got = ad.jacobian(g, np.array([0.0, 1.0, 0.0]))
    _same(got, np.diag(0.5 / np.sqrt(x)))


INVERSE = {  # name: (point, closed-form slope, closed-form second derivative)
    "asin": ([1.0, 0.5], lambda x: 1 / np.sqrt(1 - x * x), lambda x: x * (1 - x * x) ** -1.5),
    "acos": ([1.0, 0.5], lambda x: -1 / np.sqrt(1 - x * x), lambda x: -x * (1 - x * x) ** -1.5),
    "acosh": ([1.0, 2.0], lambda x: 1 / np.sqrt(x * x - 1), lambda x: -x * (x * x - 1) ** -1.5),
}


def _closed(f: Any, x: np.ndarray, at_kink: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.diag([at_kink, f(x[1])])


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("name", sorted(INVERSE))
def test_inverse_trig_at_their_infinite_slopes(engine: str, name: str, mode: str) -> None:
    point, slope, _ = INVERSE[name]
    x = np.array(point)
    fn = lambda v: getattr(ad.array_namespace(v), name)(v)  # noqa: E731
    want = _closed(slope, x, -INF if name == "acos" else INF)
    with ad.use(engine):
        _same(ad.jacobian(fn, x.copy(), mode=mode), want)
        away = np.array([1.5, 3.0] if name == "acosh" else [0.5, 0.25])  # no kink there
        _same(ad.prepare(ad.jacobian, fn, away, mode=mode)(x.copy()), want)


@pytest.mark.parametrize("name", sorted(INVERSE))
def test_inverse_trig_hessian_at_their_infinite_slopes(engine: str, name: str) -> None:
    point, _, second = INVERSE[name]
    x = np.array(point)

    def fn(v: Any) -> Any:
        xp = ad.array_namespace(v)
        return xp.sum(getattr(xp, name)(v))

    want = _closed(second, x, {"asin": INF, "acos": -INF, "acosh": -INF}[name])
    with ad.use(engine):
        _same(ad.hessian(fn, x.copy()), want)


def test_derived_contraction_takes_zero_times_inf_as_0() -> None:
    """The front end's contraction of an engine's Jacobian with seeds (derived pullbacks
    and pushforwards): 0 * inf is 0, a nonzero times inf that infinity, +inf - inf nan."""
    from adswitch.zero_safe import matmul_zero_safe

    j = SQRT_J
    _same(matmul_zero_safe(np, np.array([[0.0, 1.0, 0.0]]), j), np.array([[0.0, 0.5, 0.0]]))
    _same(matmul_zero_safe(np, j, np.array([[2.0], [0.0], [4.0]])), np.array([[INF], [0], [1]]))
    _same(
        matmul_zero_safe(np, np.array([[-1.0, 0.0]]), np.array([[INF], [-INF]])), np.array([[-INF]])
    )
    assert np.isnan(matmul_zero_safe(np, np.array([[1.0, 1.0]]), np.array([[INF], [-INF]])))
    assert np.isnan(matmul_zero_safe(np, np.array([[np.nan, 1.0]]), np.array([[1.0], [INF]])))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_the_dual_example_engine(mode: str) -> None:
    """A forward-only engine: its tangents (``chain.combine``) and the front end's derived
    pullback (the contraction above) both keep zero seeds at 0."""
    chain = pytest.importorskip(
        "adswitch_dual.chain", reason="pip install ./examples/adswitch-dual"
    )
    if not hasattr(chain, "_times"):
        pytest.skip("the installed adswitch-dual predates this fix: pip install it again")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with ad.use("dual"):
            _same(ad.jacobian(_sqrt, X.copy(), mode=mode), SQRT_J)
            (g,) = ad.gradient(_weighted(np.array([0.0, 1.0, 2.0])), X.copy())
    _same(g, np.array([0.0, 0.5, 0.5]))
