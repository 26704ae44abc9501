"""The shipped finite-difference engine (plugins/adswitch_fd), against closed forms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from adswitch_conformance.verify import scaled_tolerances
from adswitch_fd import engine
from adswitch_fd.plugin import ACCURACY

import adswitch as ad
from adswitch.errors import UnsupportedError


def _f(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * xp.exp(x / 3))


def _df(x: np.ndarray) -> np.ndarray:
    return np.asarray((np.cos(x) + np.sin(x) / 3) * np.exp(x / 3))


def _rel(got: Any, want: Any) -> float:
    return float(np.max(np.abs(np.asarray(got) - want)) / np.max(np.abs(want)))


def test_installed_and_declared_approximate() -> None:
    caps = next(b for b in ad.backends() if b.name == "fd").capabilities
    assert caps is not None
    assert caps.accuracy == ACCURACY == 1e-6
    assert caps.kinks is False and caps.nested is False


@pytest.mark.parametrize(
    ("f", "df", "x"),
    [
        (_f, _df, np.array([0.3, -1.2, 2.0, 5.0])),
        (lambda x: ad.array_namespace(x).sum(x**3), lambda x: 3 * x**2, np.array([1e3, -2.0])),
        (
            lambda x: ad.array_namespace(x).sum(ad.array_namespace(x).sin(1e4 * x)),
            lambda x: 1e4 * np.cos(1e4 * x),
            np.array([1.0, 1.2345]),
        ),
    ],
)
def test_gradient_matches_closed_form(f: Any, df: Any, x: np.ndarray) -> None:
    (g,) = ad.gradient(f, x, backend="fd")
    assert g.dtype == np.float64
    assert _rel(g, df(x)) < ACCURACY


def test_jacobian_of_a_vector_function() -> None:
    x = np.array([0.5, 2.0])
    (jac,) = ad.jacobian(lambda x: ad.array_namespace(x).exp(x) * x[::-1], x, backend="fd")
    want = np.array([[np.exp(0.5) * 2.0, np.exp(0.5)], [np.exp(2.0), np.exp(2.0) * 0.5]])
    assert _rel(jac, want) < ACCURACY


def test_stencil_error_decays_as_h_to_the_fourth() -> None:
    # The raw order-4 stencil on exp at 0 (derivative 1): halving h divides the error by 16.
    def g_at(s: float) -> list[Any]:
        return [np.exp(np.array(s))]

    errors = []
    for h in (0.2, 0.1, 0.05):
        probes = {o: [np.float64(g_at(o * h)[0])] for o, _ in engine.STENCIL}
        errors.append(abs(engine._stencil(probes, h)[0] - 1.0))
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    assert all(14.0 < r < 18.0 for r in ratios), ratios


def test_float32_keeps_its_dtype_and_is_accurate() -> None:
    x = np.array([0.3, -1.2, 2.0], dtype=np.float32)
    (g,) = ad.gradient(_f, x, backend="fd")
    assert g.dtype == np.float32
    assert _rel(g, _df(x.astype(np.float64))) < 1e-4


def test_mutating_f_runs_as_once_on_the_callers_array() -> None:
    x = np.array([1.0, 2.0, 3.0])

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        x *= 2.0  # in place: a plain call doubles the caller's array once
        return xp.sum(x * x)

    (g,) = ad.gradient(f, x, backend="fd")
    np.testing.assert_allclose(x, [2.0, 4.0, 6.0], rtol=0, atol=0)
    assert _rel(g, 8.0 * np.array([1.0, 2.0, 3.0])) < ACCURACY


@pytest.mark.parametrize(
    "f",
    [
        lambda x: ad.array_namespace(x).sum(ad.array_namespace(x).abs(x)),
        lambda x: ad.array_namespace(x).sum(ad.array_namespace(x).sign(x)),
        lambda x: ad.array_namespace(x).sum(ad.array_namespace(x).sqrt(x)),
    ],
)
def test_kinks_jumps_and_domain_edges_are_refused(f: Any) -> None:
    with pytest.raises(UnsupportedError, match="fd engine"), np.errstate(invalid="ignore"):
        ad.gradient(f, np.array([0.0, 1.0]), backend="fd")


def test_nested_is_refused() -> None:
    def outer(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(ad.gradient(lambda y: xp.sum(y * y), x, backend="fd")[0])

    with pytest.raises(UnsupportedError, match="nested"):
        ad.gradient(outer, np.array([1.0]), backend="fd")


def test_conformance_tolerances_scale_with_accuracy() -> None:
    tols = {"float64": (1e-8, 1e-10), "float32": (2e-3, 2e-4)}
    assert scaled_tolerances(tols, None) == tols
    assert scaled_tolerances(tols, 1e-6) == {"float64": (1e-6, 1e-6), "float32": (2e-3, 2e-4)}
