"""One type for a scalar result on every engine (issue 19, item 6 and the withgradient
loss): ``ad.derivative`` at a Python float is a Python float (as ``ad.jacobian``'s block
is), at a numpy scalar that scalar type; ``withgradient``'s loss is a numpy scalar of its
dtype for numpy inputs (as numpy's own reductions give) and a Python float for Python
float inputs. Oracles: closed forms."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

import adswitch as ad

ENGINES = ["tape", "torch", "jax", "autograd", "dual"]


def _cube(t: Any) -> Any:
    return t * t * t


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # engines' notices
        yield


@pytest.mark.parametrize("engine", ENGINES)
def test_derivative_at_a_python_float_is_a_python_float(engine: str) -> None:
    d = ad.derivative(_cube, 0.5, backend=engine)
    assert type(d) is float and d == pytest.approx(3 * 0.25, rel=1e-14)
    (j,) = ad.jacobian(_cube, 0.5, backend=engine)
    assert type(j) is float
    prep = ad.prepare(ad.derivative, _cube, 0.5, backend=engine)
    d2 = prep(2.0)
    assert type(d2) is float and d2 == pytest.approx(12.0, rel=1e-14)


@pytest.mark.parametrize("engine", ENGINES)
def test_derivative_at_a_numpy_scalar_keeps_its_type(engine: str) -> None:
    d = ad.derivative(_cube, np.float32(0.5), backend=engine)
    assert type(d) is np.float32 and float(d) == pytest.approx(0.75, rel=1e-6)
    a = np.array([1.0, -2.0])
    # a derivative in t of a Const-weighted scalar: sum(a) * cos(t)
    d = ad.derivative(
        lambda t, w: ad.array_namespace(w).sum(w) * ad.array_namespace(w).cos(t * w[0]),
        np.float64(0.3),
        a,
        backend=engine,
    )
    assert type(d) is np.float64 and float(d) == pytest.approx(
        -(a.sum()) * math.sin(0.3), rel=1e-12
    )


def _sum_squares(x: Any) -> Any:
    return ad.array_namespace(x).sum(x * x)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_withgradient_loss_is_a_numpy_scalar_for_numpy_inputs(engine: str, dtype: Any) -> None:
    x = np.array([1.0, 2.0, -3.0], dtype)
    out = ad.withgradient(_sum_squares, x, backend=engine)
    assert type(out.val) is dtype and float(out.val) == 14.0
    np.testing.assert_array_equal(out.grad[0], 2 * x)
    # with aux outputs, the loss (first element) too; the prepared call the same
    aux = ad.withgradient(lambda v: (_sum_squares(v), "aux"), x, backend=engine)
    assert type(aux.val[0]) is dtype and aux.val[1] == "aux"
    prep = ad.prepare(ad.withgradient, _sum_squares, x, backend=engine)
    assert type(prep(x).val) is dtype


@pytest.mark.parametrize("engine", ENGINES)
def test_withgradient_loss_is_a_python_float_for_python_floats(engine: str) -> None:
    out = ad.withgradient(lambda t, s: t * t * s, 3.0, 2.0, backend=engine)
    assert type(out.val) is float and out.val == 18.0
    assert type(out.grad[0]) is float and out.grad[0] == 12.0
    out = ad.withgradient(lambda t: t * t, np.float64(3.0), backend=engine)
    assert type(out.val) is np.float64 and out.val == 9.0


def test_torch_inputs_keep_a_torch_loss() -> None:
    torch = pytest.importorskip("torch")
    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    out = ad.withgradient(_sum_squares, x)
    assert isinstance(out.val, torch.Tensor) and out.val.shape == () and float(out.val) == 5.0


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vjp_and_jvp_give_a_0d_output_and_tangent_the_same_type(engine: str, dtype: Any) -> None:
    # The tape computed np.float64, torch, jax and dual handed back 0-d ndarrays.
    x = np.array([1.0, 2.0, -3.0], dtype)
    y, pullback = ad.vjp(_sum_squares, x, backend=engine)
    assert type(y) is dtype and float(y) == 14.0
    np.testing.assert_array_equal(pullback(dtype(1.0))[0], 2 * x)
    y, tangent = ad.jvp(_sum_squares, (x,), (np.ones(3, dtype),), backend=engine)
    assert type(y) is dtype and type(tangent) is dtype and float(tangent) == 2 * float(x.sum())
    prep = ad.prepare(ad.jvp, _sum_squares, (x,), (np.ones(3, dtype),), backend=engine)
    y, tangent = prep((x,), (np.ones(3, dtype),))
    assert type(y) is dtype and type(tangent) is dtype
    # in a tree, each 0-d floating leaf; aux as f returned it
    out, _, aux = ad.vjp(
        lambda v: ({"s": _sum_squares(v), "v": v * 2}, "aux"), x, has_aux=True, backend=engine
    )
    assert type(out["s"]) is dtype and out["v"].dtype == dtype and aux == "aux"


@pytest.mark.parametrize("engine", ENGINES)
def test_vjp_and_jvp_at_python_floats_give_python_floats(engine: str) -> None:
    y, pullback = ad.vjp(_cube, 2.0, backend=engine)
    assert type(y) is float and y == 8.0 and pullback(1.0) == (12.0,)
    y, tangent = ad.jvp(_cube, (2.0,), (1.0,), backend=engine)
    assert type(y) is float and type(tangent) is float and (y, tangent) == (8.0, 12.0)
