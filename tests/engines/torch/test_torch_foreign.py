"""Arrays of another engine's kind on the torch engine: jax arrays in, jax gradients out
(dtype and device kept), and a clear error before ``f`` runs for any kind it cannot take.
Oracle: float64 central differences in numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd

torch: Any = pytest.importorskip("torch")
jax: Any = pytest.importorskip("jax")
jnp = jax.numpy

from adswitch_torch import TorchBackend  # noqa: E402

import adswitch as ad  # noqa: E402

TOL = {"float16": 1e-2, "bfloat16": 3e-2, "float32": 1e-5, "float64": 1e-7}


def f(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * x)


def f_numpy(x: np.ndarray) -> Any:
    return np.sum(np.sin(x) * x)


def _jax_array(values: Any, dtype: str) -> Any:
    if dtype == "float64":
        with jax.enable_x64(True):  # the caller's own 64-bit scope; globally it stays off
            return jnp.asarray(values, dtype=jnp.float64)
    return jnp.asarray(values, dtype=getattr(jnp, dtype))


def test_jax_is_a_declared_array_kind() -> None:
    assert TorchBackend.capabilities.array_kinds == ("numpy", "torch", "jax")


@pytest.mark.parametrize("dtype", sorted(TOL))
def test_jax_gradient_keeps_kind_and_dtype(dtype: str) -> None:
    x = _jax_array([0.3, -1.2, 2.0], dtype)
    (g,) = ad.gradient(f, x, backend="torch")
    assert isinstance(g, jax.Array) and g.dtype == x.dtype and g.devices() == x.devices()
    expected = central_fd(f_numpy, np.asarray(x, dtype=np.float64))
    np.testing.assert_allclose(
        np.asarray(g, dtype=np.float64), expected, rtol=TOL[dtype], atol=TOL[dtype]
    )
    assert not jax.config.jax_enable_x64  # 64-bit mode was scoped, not left on


def test_const_jax_array_is_copied_for_f() -> None:
    c = jnp.asarray([1.0, 2.0, 3.0])
    x = np.array([0.5, -1.0, 2.0])

    def g(x: Any, c: Any) -> Any:
        c.add_(1)  # f writes into what it received: the jax array must not change
        return (x * c).sum()

    (gx, gc) = ad.gradient(g, x, ad.Const(c), backend="torch")
    assert gc is None and isinstance(gx, np.ndarray)
    np.testing.assert_allclose(gx, [2.0, 3.0, 4.0], rtol=1e-7)
    assert np.asarray(c).tolist() == [1.0, 2.0, 3.0]


def test_outputs_come_back_in_the_callers_kind() -> None:
    x = jnp.asarray([0.3, -1.2], dtype=jnp.float32)
    val, _ = ad.withgradient(lambda x: (f(x), x * 2), x, backend="torch")
    assert isinstance(val[0], jax.Array) and isinstance(val[1], jax.Array)
    assert val[1].dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(val[1]), np.asarray(x) * 2)
    # a numpy argument besides: numpy outputs, as for any call without a torch tensor
    val, _ = ad.withgradient(lambda x, y: (f(x) + y.sum(), x * 2), x, np.ones(2), backend="torch")
    assert isinstance(val[1], np.ndarray)


def test_a_jax_tracer_is_refused_before_f_runs() -> None:
    calls = []

    def counted(x: Any) -> Any:
        calls.append(1)
        return f(x)

    with pytest.raises(ad.UnsupportedError, match=r"jax tracer.*backend='jax'"):
        jax.jit(lambda x: ad.gradient(counted, x, backend="torch")[0])(jnp.ones(2))
    assert not calls


class Foreign:
    """An array kind the torch engine does not know (it has DLPack, like cupy's)."""

    shape = (2,)

    @property
    def dtype(self) -> Any:
        return np.dtype("float64")

    def __dlpack__(self, stream: Any = None) -> Any:
        raise AssertionError("never converted")


def test_an_unknown_array_kind_is_refused_before_f_runs() -> None:
    calls = []

    def counted(x: Any) -> Any:
        calls.append(1)
        return x.sum()

    with pytest.raises(ad.UnsupportedError, match=r"Foreign of shape.*numpy, torch, jax"):
        ad.gradient(counted, Foreign(), backend="torch")
    assert not calls
