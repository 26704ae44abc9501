"""The jax engine with ``jax_enable_x64`` switched on while the caller's arrays stay
float32 (a process that turned x64 on after making its data, or a library that turns
it on for its own code): tangents keep the primal's dtype. Oracle: ``jax.jacfwd``.

x64 is switched on inside ``jax.enable_x64`` only: the process-wide flag would change
every later test's dtypes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax: Any = pytest.importorskip("jax")
jnp: Any = pytest.importorskip("jax.numpy")

import adswitch as ad  # noqa: E402

S = jnp.asarray(0.3)  # (made with x64 off: float32, weakly typed)
W = jnp.asarray(np.array([1.0, 2.0, 3.0], dtype=np.float32))


def curve(s: Any, w: Any) -> Any:
    return jnp.sin(s * w)


@pytest.mark.parametrize("wrap", ["eager", "jit", "grad"])
def test_derivative_of_a_weakly_typed_float32_scalar(wrap: str) -> None:
    # (before: jax's raw TypeError "primal and tangent arguments to jax.jvp do not
    # match ... got tangent dtype float64": the tangent took jnp.result_type's float64)
    def ours(w: Any) -> Any:
        return ad.derivative(lambda s: curve(s, w), S, backend="jax")

    def theirs(w: Any) -> Any:
        return jax.jacfwd(curve)(S, w)

    wrappers: dict[str, Any] = {
        "eager": lambda f: f,
        "jit": jax.jit,
        "grad": lambda f: jax.grad(lambda w: jnp.sum(f(w) ** 2)),
    }
    with jax.enable_x64(True):
        got, want = wrappers[wrap](ours)(W), wrappers[wrap](theirs)(W)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
