"""The degenerate-spectrum predicates of ``adswitch.linalg_kit`` (through ``adswitch.spec``)
against closed forms, on numpy, torch and jax arrays (and jax under ``jit``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from adswitch import spec

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
compat_torch = pytest.importorskip("array_api_compat.torch")

# (make an array from a numpy one, its namespace (None: the array's own), back to numpy)
_LIBRARIES: dict[str, tuple[Callable[[np.ndarray], Any], Any]] = {
    "numpy": (lambda a: a, None),
    "torch": (torch.from_numpy, compat_torch),
    "jax": (jnp.asarray, jnp),
}


def _np(x: Any) -> np.ndarray:
    return np.asarray(x)


@pytest.fixture(params=sorted(_LIBRARIES))
def lib(request: pytest.FixtureRequest) -> Iterator[tuple[Callable[[np.ndarray], Any], Any]]:
    if request.param != "jax":
        yield _LIBRARIES[request.param]
        return
    with jax.enable_x64(True):  # (else jax makes every float64 array float32)
        yield _LIBRARIES[request.param]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tolerance_is_16_n_eps_times_the_largest_magnitude(
    lib: tuple[Callable[[np.ndarray], Any], Any], dtype: Any
) -> None:
    make, xp = lib
    values = np.array([[1.0, -3.0, 2.0], [0.5, 0.25, 0.0]], dtype=dtype)
    eps = float(np.finfo(dtype).eps)
    expected = np.array([[3.0], [0.5]]) * 16 * 3 * eps
    got = _np(spec.tolerance(make(values), xp=xp))
    assert got.shape == (2, 1)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_tolerance_of_no_values_is_zero(lib: tuple[Callable[[np.ndarray], Any], Any]) -> None:
    make, xp = lib
    got = _np(spec.tolerance(make(np.zeros((4, 0))), xp=xp))
    assert got.shape == (4, 1) and not got.any()


def test_close_pairs_and_equal_pairs(lib: tuple[Callable[[np.ndarray], Any], Any]) -> None:
    make, xp = lib
    eps = float(np.finfo(np.float64).eps)
    # tolerance: 16 * 4 * eps * 2 = 128 eps; 64 eps apart is repeated, 400 eps is not
    values = np.array([1.0, 1.0 + 64 * eps, 1.0 + 400 * eps, 2.0])
    close = _np(spec.close_pairs(make(values), xp=xp))
    expected = np.zeros((4, 4), dtype=bool)
    expected[0, 1] = expected[1, 0] = True
    np.testing.assert_array_equal(close, expected)
    equal = _np(spec.equal_pairs(make(values), xp=xp))
    np.testing.assert_array_equal(equal, expected | np.eye(4, dtype=bool))


def test_close_pairs_per_matrix_of_a_stack(lib: tuple[Callable[[np.ndarray], Any], Any]) -> None:
    make, xp = lib
    values = np.array([[3.0, 3.0], [3.0, 1.0]])
    close = _np(spec.close_pairs(make(values), xp=xp))
    assert close[0].tolist() == [[False, True], [True, False]]
    assert not close[1].any()


def test_negligible(lib: tuple[Callable[[np.ndarray], Any], Any]) -> None:
    make, xp = lib
    values = np.array([[2.0, 0.5, 1e-17], [0.0, 0.0, 0.0]])
    got = _np(spec.negligible(make(values), xp=xp))
    # an all-zero vector: every value is zero to rounding (0 <= 0)
    assert got.tolist() == [[False, False, True], [True, True, True]]


def test_beyond_rounding(lib: tuple[Callable[[np.ndarray], Any], Any]) -> None:
    make, xp = lib
    x = np.array([1e-12, -1e-3, 0.0, 2.0])
    got = _np(spec.beyond_rounding(make(x), 1.0, xp=xp))
    assert got.tolist() == [False, True, False, True]  # sqrt(eps) ~ 1.5e-8


def test_any_beyond_on_numpy() -> None:
    mask = np.array([True, True, False])
    assert not spec.any_beyond(np.array([0.0, 1e-12, 5.0]), mask, np.array([1.0]))
    assert spec.any_beyond(np.array([0.0, 1e-3, 5.0]), mask, np.array([1.0]))
    # (no scale: a bound of 0, every nonzero picked entry is beyond it)
    assert spec.any_beyond(np.array([1.0]), np.array([True]), np.zeros(0))


def test_gap_factor() -> None:
    assert spec.gap_factor(0, 0.5) == spec.gap_factor(1, 0.5) == 8.0
    assert spec.GAP_ULPS == 16


def _spread_extreme_gradient(kind: str, s: np.ndarray, largest: bool) -> np.ndarray:
    if kind == "torch":
        t = torch.tensor(s, requires_grad=True)
        spec.spread_extreme(t, t.detach(), largest, xp=compat_torch).backward()
        assert t.grad is not None
        grad: np.ndarray = t.grad.numpy()
        return grad

    def f(v: Any) -> Any:
        return spec.spread_extreme(v, jax.lax.stop_gradient(v), largest, xp=jnp)

    with jax.enable_x64(True):
        return np.asarray(jax.grad(f)(jnp.asarray(s)))


@pytest.mark.parametrize("kind", ["torch", "jax"])
@pytest.mark.parametrize(
    ("s", "largest", "slope"),
    [
        ([2.0, 2.0, 1.0], True, [0.5, 0.5, 0.0]),  # the slope spread over the tied largest
        ([3.0, 1.0, 1.0], False, [0.0, 0.5, 0.5]),
        ([3.0, 2.0, 1.0], True, [1.0, 0.0, 0.0]),
        ([1.0, 0.0], False, [0.0, 0.0]),  # a zero smallest one: a kink, slope 0
    ],
)
def test_spread_extreme_slope(kind: str, s: list[float], largest: bool, slope: list[float]) -> None:
    values = np.array(s)
    np.testing.assert_allclose(_spread_extreme_gradient(kind, values, largest), slope)


def test_spread_extreme_value(lib: tuple[Callable[[np.ndarray], Any], Any]) -> None:
    make, xp = lib
    s = np.array([[4.0, 4.0, 1.0], [5.0, 2.0, 0.0]])
    top = _np(spec.spread_extreme(make(s), make(s), True, xp=xp))
    bottom = _np(spec.spread_extreme(make(s), make(s), False, xp=xp))
    np.testing.assert_array_equal(top, [4.0, 5.0])
    np.testing.assert_array_equal(bottom, [1.0, 0.0])


def test_predicates_trace_under_jit() -> None:
    eps = float(np.finfo(np.float32).eps)
    values = jnp.asarray(np.array([1.0, 1.0 + eps, 3.0], dtype=np.float32))
    close = jax.jit(lambda v: spec.close_pairs(v, xp=jnp))(values)
    small = jax.jit(lambda v: spec.negligible(v, xp=jnp))(values)
    assert np.asarray(close)[0].tolist() == [False, True, False]
    assert not np.asarray(small).any()


def test_well_conditioned(lib: tuple[Callable[[np.ndarray], Any], Any]) -> None:
    make, xp = lib
    # sqrt(eps) ~ 1.5e-8 (float64): 1e-6 of the largest is regular, 1e-10 is not
    size = np.array([[4.0, 1.0, 4e-6], [4.0, 1.0, 4e-10], [0.0, 0.0, 0.0]])
    got = _np(spec.well_conditioned(make(size), xp=xp))
    assert got.tolist() == [True, False, False]
