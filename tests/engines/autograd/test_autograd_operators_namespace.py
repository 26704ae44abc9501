"""Forward mode over every function of the autograd engine's Array API namespace: the
single ``jvp``, the batched one (a forward Jacobian) and forward-over-reverse (``hvp``)
against central finite differences of the same functions on plain numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.engines.autograd.test_autograd_namespace import CASES, np_namespace, project

pytest.importorskip("autograd")

import adswitch as ad

B = "autograd"
IDS = [c[0] for c in CASES]
H = 1e-6


def _tangent(x: np.ndarray) -> np.ndarray:
    return np.random.default_rng(x.size).uniform(-1.0, 1.0, x.shape)


def test_the_package_primitives_and_those_the_namespace_uses_have_jvp_rules() -> None:
    import adswitch_autograd.primitives.engine  # noqa: F401  (what the engine loads defines the rules)
    from adswitch_autograd.mutation.writes import buffer_write, copy_of
    from adswitch_autograd.xp.power import _traced_pow
    from autograd.core import primitive_jvps
    from autograd.numpy import numpy_wrapper

    for fun in (buffer_write, copy_of, _traced_pow, numpy_wrapper.hypot, numpy_wrapper._astype):
        assert fun in primitive_jvps, fun


@pytest.mark.parametrize(("name", "body", "x"), CASES, ids=IDS)
def test_jvp_matches_finite_differences(name: str, body: Any, x: np.ndarray) -> None:
    t = _tangent(x)
    _y, dy = ad.jvp(lambda v: body(ad.array_namespace(v), v), (x.copy(),), (t,), backend=B)
    oracle = np_namespace()
    expected = (np.asarray(body(oracle, x + H * t)) - np.asarray(body(oracle, x - H * t))) / (2 * H)
    np.testing.assert_allclose(dy, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(("name", "body", "x"), CASES, ids=IDS)
def test_forward_jacobian_matches_finite_differences(name: str, body: Any, x: np.ndarray) -> None:
    def loss_vector(v: Any) -> Any:
        xp = ad.array_namespace(v)
        return xp.reshape(xp.asarray(body(xp, v)), (-1,))

    (jac,) = ad.jacobian(loss_vector, x.copy(), backend=B, mode="forward")
    oracle = np_namespace()
    expected = np.zeros(jac.shape)
    for index in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[index] = H
        plus = np.ravel(body(oracle, x + step))
        minus = np.ravel(body(oracle, x - step))
        expected[(slice(None), *index)] = (plus - minus) / (2 * H)
    np.testing.assert_allclose(jac, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(("name", "body", "x"), CASES, ids=IDS)
def test_hvp_matches_second_differences(name: str, body: Any, x: np.ndarray) -> None:
    def loss(v: Any) -> Any:
        xp = ad.array_namespace(v)
        return project(xp, body(xp, v))

    t = _tangent(x)
    (hv,) = ad.hvp(loss, (x.copy(),), (t,), backend=B)
    oracle = np_namespace()
    h = 1e-4

    def plain(s: float) -> float:
        return float(project(np, body(oracle, x + s * t)))

    curvature = (plain(h) - 2.0 * plain(0.0) + plain(-h)) / (h * h)  # t^T H t
    assert float(np.sum(hv * t)) == pytest.approx(curvature, rel=1e-4, abs=1e-4)
