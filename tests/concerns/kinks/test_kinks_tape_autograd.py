"""The kink convention (symmetric-difference limits) on the tape and HIPS autograd.

Each case states its derivative at the kink in closed form (the convention's table) and
checks it against a central finite difference of numpy too, then against every mode of
both engines: reverse gradient, forward Jacobian, Hessian, prepared calls.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import array_api_compat.numpy
import numpy as np
import pytest
from adswitch_conformance import cases_kinks

import adswitch as ad

pytest.importorskip("autograd")

ENGINES = ("tape", "autograd")
W = np.array([1.0, 2.0, 3.0])


def _xp(x: Any) -> Any:
    # numpy (the finite-difference oracle) through array_api_compat: ``sort(descending=)``
    return array_api_compat.numpy if isinstance(x, np.ndarray) else ad.array_namespace(x)


def _sum_of(name: str, *args: Any) -> Callable[[Any], Any]:
    return lambda x: _xp(x).sum(getattr(_xp(x), name)(x, *args))


def _weighted(name: str, **kw: Any) -> Callable[[Any], Any]:
    return lambda x: _xp(x).sum(getattr(_xp(x), name)(x, **kw) * _xp(x).asarray(W))


def _clip(x: Any) -> Any:
    return _xp(x).sum(_xp(x).clip(x, -1.0, 1.0) * _xp(x).asarray(W))


def _sort_rows(x: Any) -> Any:
    xp = _xp(x)
    return xp.sum(xp.sort(x, axis=0) * xp.asarray(np.array([[1.0, 5.0], [2.0, 6.0], [4.0, 7.0]])))


def _sort_squared(x: Any) -> Any:
    xp = _xp(x)
    return xp.sum(xp.sort(x) ** 2 * xp.asarray(W))


def _clip_times_x(x: Any) -> Any:
    return _xp(x).sum(_xp(x).clip(x, -1.0, 1.0) * x)  # f' = clip'(x) x + clip(x)


def _maximum(x: Any) -> Any:
    return _xp(x).sum(_xp(x).maximum(x, _xp(x).asarray(np.array([0.0, 1.0, 0.0]))))


def _minimum(x: Any) -> Any:
    return _xp(x).sum(_xp(x).minimum(x, _xp(x).asarray(np.array([0.0, 1.0, 0.0]))))


def _rounding(x: Any) -> Any:
    xp = _xp(x)
    return xp.sum(xp.floor(x) + xp.ceil(x) + xp.round(x) + xp.trunc(x) + 0.0 * x)


def _relu_where(x: Any) -> Any:
    return _xp(x).sum(_xp(x).where(x > 0, x, 0.0))


def _norm(x: Any) -> Any:
    return _xp(x).linalg.vector_norm(x) if not isinstance(x, np.ndarray) else np.linalg.norm(x)


# name: (f, x, gradient at x by the table, Hessian at x or None where undefined)
CASES: dict[str, tuple[Callable[[Any], Any], np.ndarray, list[Any], Any]] = {
    "abs": (_sum_of("abs"), np.array([0.0, 2.0, -1.0]), [0.0, 1.0, -1.0], np.zeros((3, 3))),
    "clip": (_clip, np.array([-1.0, 1.0, 0.5]), [0.5, 1.0, 3.0], np.zeros((3, 3))),
    # clip'(x) x + clip(x) = [-1.5, 1.5, 0]; f'' = 2 clip'(x) (clip'' = 0, the table's)
    "clip_times_x": (
        _clip_times_x,
        np.array([-1.0, 1.0, 0.0]),
        [-1.5, 1.5, 0.0],
        np.diag([1.0, 1.0, 2.0]),
    ),
    "maximum": (_maximum, np.array([0.0, 1.0, 2.0]), [0.5, 0.5, 1.0], np.zeros((3, 3))),
    "minimum": (_minimum, np.array([0.0, 1.0, 2.0]), [0.5, 0.5, 0.0], np.zeros((3, 3))),
    # sorted: [1, 2, 2] with weights [1, 2, 3]: the tied 2s share (2 + 3) / 2
    "sort": (_weighted("sort"), np.array([2.0, 1.0, 2.0]), [2.5, 1.0, 2.5], np.zeros((3, 3))),
    "sort_desc": (
        _weighted("sort", descending=True),
        np.array([2.0, 1.0, 2.0]),
        [1.5, 3.0, 1.5],
        np.zeros((3, 3)),
    ),
    "sort_all_tied": (_weighted("sort"), np.zeros(3), [2.0, 2.0, 2.0], np.zeros((3, 3))),
    "sort_axis0": (
        _sort_rows,
        np.array([[3.0, 0.0], [3.0, 0.0], [1.0, 0.0]]),
        [[3.0, 6.0], [3.0, 6.0], [1.0, 6.0]],
        None,
    ),
    # sorted [1, 2, 2], 2 w y = [2, 8, 12]: the tied pair shares 10; Hessian A diag(2w) A
    "sort_squared": (
        _sort_squared,
        np.array([2.0, 1.0, 2.0]),
        [10.0, 2.0, 10.0],
        np.array([[2.5, 0.0, 2.5], [0.0, 2.0, 0.0], [2.5, 0.0, 2.5]]),
    ),
    "relu_maximum": (
        _sum_of("maximum", 0.0),
        np.array([0.0, 1.0, -1.0]),
        [0.5, 1.0, 0.0],
        np.zeros((3, 3)),
    ),
    "pow0": (_sum_of("pow", 0.0), np.array([0.0, 2.0]), [0.0, 0.0], np.zeros((2, 2))),
    "pow1": (_sum_of("pow", 1.0), np.array([0.0, 2.0]), [1.0, 1.0], np.zeros((2, 2))),
    "pow2": (_sum_of("pow", 2.0), np.array([0.0, 2.0]), [0.0, 4.0], np.diag([2.0, 2.0])),
}

# Not a central difference's limit, closed forms only: a branch's derivative (where), 0
# at the norm's cone point and at the jumps of sign and the roundings, 1/k to each of k
# tied extrema (the minimum-norm subgradient; one tied coordinate's difference gives 1/2).
SELECTED: dict[str, tuple[Callable[[Any], Any], np.ndarray, list[Any]]] = {
    "sign": (_sum_of("sign"), np.array([0.0, 2.0, -1.0]), [0.0, 0.0, 0.0]),
    "rounding_at_jumps": (_rounding, np.array([1.0, 0.5, 1.5]), [0.0, 0.0, 0.0]),
    "max_ties": (_sum_of("max"), np.array([2.0, 1.0, 2.0, 2.0]), [1 / 3, 0, 1 / 3, 1 / 3]),
    "min_ties": (_sum_of("min"), np.array([1.0, 1.0, 2.0]), [0.5, 0.5, 0.0]),
    "relu_where": (_relu_where, np.array([0.0, 1.0, -1.0]), [0.0, 1.0, 0.0]),
    "vector_norm_at_0": (_norm, np.zeros(3), [0.0, 0.0, 0.0]),
}


def _central(f: Callable[[Any], Any], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_table_matches_central_difference(name: str) -> None:
    """The closed forms are what a central difference converges to (numpy evaluation)."""
    f, x, grad, _ = CASES[name]
    np.testing.assert_allclose(_central(f, x), grad, atol=1e-5)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(CASES) + sorted(SELECTED))
def test_gradient_forward_and_prepared(engine: str, name: str) -> None:
    f, x, grad = SELECTED[name] if name in SELECTED else CASES[name][:3]
    expected = np.asarray(grad)
    (g,) = ad.gradient(f, x, backend=engine)
    np.testing.assert_allclose(g, expected, atol=1e-12)
    (j,) = ad.jacobian(f, x, backend=engine, mode="forward")
    np.testing.assert_allclose(j, expected, atol=1e-12)
    with warnings.catch_warnings():  # (the tape's note that f re-traces: it reads x)
        warnings.simplefilter("ignore")
        prep = ad.prepare(ad.gradient, f, x + 5.0, backend=engine)  # prepared off the kink
        np.testing.assert_allclose(prep(x)[0], expected, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(k for k, v in CASES.items() if v[3] is not None))
def test_hessian(engine: str, name: str) -> None:
    f, x, _, hess = CASES[name]
    (row,) = ad.hessian(f, x, backend=engine)
    np.testing.assert_allclose(row[0], hess, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_clip_bound_gets_the_other_half(engine: str) -> None:
    def f(x: Any, lo: Any, hi: Any) -> Any:
        return _xp(x).sum(_xp(x).clip(x, lo, hi))

    x, lo, hi = np.array([-1.0, 0.0, 1.0, 3.0]), np.array(-1.0), np.array(1.0)
    for mode in ("reverse", "forward"):
        gx, glo, ghi = ad.jacobian(f, x, lo, hi, backend=engine, mode=mode)
        np.testing.assert_allclose(gx, [0.5, 1.0, 0.5, 0.0])
        np.testing.assert_allclose(glo, 0.5)
        np.testing.assert_allclose(ghi, 1.5)  # half of x[2], all of x[3]

    def shifted(d: float) -> float:
        return float(f(x, lo + d, hi))

    np.testing.assert_allclose((shifted(1e-6) - shifted(-1e-6)) / 2e-6, glo, atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_sort_jacobian_and_exact_values(engine: str) -> None:
    """The Jacobian of sort at a tie averages the tied rows; the values stay numpy's."""
    x = np.array([2.0, 1.0, 2.0])
    for mode in ("reverse", "forward"):
        (jac,) = ad.jacobian(lambda v: _xp(v).sort(v), x, backend=engine, mode=mode)
        np.testing.assert_allclose(jac, np.array([[0, 1, 0], [0.5, 0, 0.5], [0.5, 0, 0.5]]))
    rng = np.random.default_rng(0)
    v = np.round(rng.normal(size=(4, 50)), 1) * 0.1  # many ties of inexact values
    seen: list[Any] = []

    def f(u: Any) -> Any:
        out = _xp(u).sort(u, axis=1)
        seen.append(out)
        return _xp(u).sum(out * _xp(u).asarray(np.arange(50.0)))

    (g,) = ad.gradient(f, v, backend=engine)
    sorted_v, order = np.sort(v, axis=1), np.argsort(v, axis=1, kind="stable")
    # each tied entry's gradient: the mean of the weights at the tied sorted positions
    want = np.zeros_like(v)
    for r in range(4):
        for i in order[r]:
            want[r, i] = np.flatnonzero(sorted_v[r] == v[r, i]).mean()
    np.testing.assert_allclose(g, want, atol=1e-12)
    assert any(np.array_equal(np.asarray(_value(s)), sorted_v) for s in seen)


def _value(x: Any) -> Any:
    while hasattr(x, "_value"):
        x = x._value
    return x


@pytest.mark.parametrize("engine", ENGINES)
def test_sqrt_at_zero_is_plus_inf(engine: str) -> None:
    for f in (_sum_of("sqrt"), _sum_of("pow", 0.5)):
        (g,) = ad.gradient(f, np.array([0.0, 4.0]), backend=engine)
        assert g[0] == np.inf  # the one-sided derivative, never nan
        np.testing.assert_allclose(g[1], 0.25)


@pytest.mark.parametrize("engine", ENGINES)
def test_smooth_points_unchanged(engine: str) -> None:
    """Away from kinks and ties the rules give the ordinary derivative (vs central)."""
    x = np.array([0.3, -0.7, 2.0])
    for f in (_sum_of("abs"), _clip, _weighted("sort"), _weighted("sort", descending=True)):
        (g,) = ad.gradient(f, x, backend=engine)
        np.testing.assert_allclose(g, _central(f, x), atol=1e-6)


# The conformance family's points whose closed form is not a central difference's limit:
# a step or a branch (sign, the roundings, where), 1/k for k tied extrema, the norm's cone.
NOT_CENTRAL = {"sign", "relu_where", "where_branch", "reduction_ties", "rounding_at_jumps"}


@pytest.mark.parametrize("point", [p for p in cases_kinks.POINTS if p[0] not in NOT_CENTRAL])
def test_conformance_kinks_match_central_differences(point: Any) -> None:
    """The kinks family's gradients (closed forms) are the symmetric limits: plain central
    differences of numpy, in every argument (the harness's Richardson steps assume a
    smooth function, so the catalogue test leaves this family to this one)."""
    name, _, fn, make, grad, _ = point
    args = list(make())
    for i, want in enumerate(grad):

        def partial(v: Any, i: int = i) -> Any:
            return fn(*args[:i], v, *args[i + 1 :])

        np.testing.assert_allclose(_central(partial, args[i]), want, atol=1e-5, err_msg=name)
