"""Every dtype the torch engine declares is differentiated: the gradient keeps the input's
dtype and matches float64 central differences of the same function at the same
(rounded) point, with tolerances loosened for the half-precision types."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd

torch: Any = pytest.importorskip("torch")

from adswitch_torch import TorchBackend  # noqa: E402

import adswitch as ad  # noqa: E402

# Worst relative error seen, against the float64 oracle: float16 5e-4, bfloat16 2e-3.
TOLERANCES = {
    "float16": 1e-2,
    "bfloat16": 3e-2,
    "float32": 1e-5,
    "float64": 1e-7,
}


def f(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.tanh(x) * x**2 + xp.exp(-x) / 4)


def f_numpy(x: np.ndarray) -> Any:
    return np.sum(np.tanh(x) * x**2 + np.exp(-x) / 4)


def test_the_declared_dtypes_are_the_tested_ones() -> None:
    assert set(TorchBackend.capabilities.dtypes) == set(TOLERANCES)


@pytest.mark.parametrize("dtype", sorted(TOLERANCES))
def test_torch_tensor_gradient_in_each_declared_dtype(dtype: str) -> None:
    x = torch.linspace(-1.5, 2.0, 7, dtype=getattr(torch, dtype))
    (g,) = ad.gradient(f, x)
    assert g.dtype == x.dtype and g.shape == x.shape
    expected = central_fd(f_numpy, x.double().numpy())
    tol = TOLERANCES[dtype]
    np.testing.assert_allclose(g.double().numpy(), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_numpy_input_keeps_its_dtype(dtype: str) -> None:
    x = np.linspace(-1.5, 2.0, 7).astype(dtype)
    (g,) = ad.gradient(f, x, backend="torch")
    assert isinstance(g, np.ndarray) and g.dtype == x.dtype
    tol = TOLERANCES[dtype]
    np.testing.assert_allclose(
        g.astype(np.float64), central_fd(f_numpy, x.astype(np.float64)), rtol=tol, atol=tol
    )


def test_numpy_bfloat16_input_keeps_its_dtype() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.linspace(-1.5, 2.0, 7).astype(ml_dtypes.bfloat16)
    val, (g,) = ad.withgradient(lambda x: (f(x), x * 2), x, backend="torch")
    assert isinstance(g, np.ndarray) and g.dtype == x.dtype
    assert isinstance(val[1], np.ndarray) and val[1].dtype == x.dtype
    tol = TOLERANCES["bfloat16"]
    expected = central_fd(f_numpy, x.astype(np.float64))
    np.testing.assert_allclose(g.astype(np.float64), expected, rtol=tol, atol=tol)
