"""A sparse Jacobian is a host ``scipy.sparse`` matrix: inside a differentiated function
(where it would be a constant to the enclosing derivative) and under ``jax.jit`` (where
its values cannot be read) it is a ``UsageError`` naming the dense operator, never a raw
engine error or a silently constant result."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad

pytest.importorskip("scipy")


def _f(x: Any) -> Any:
    return ad.array_namespace(x).sin(x) * 2.0


def _inner_sum(x: Any) -> Any:
    return ad.array_namespace(x).sum(ad.jacobian(_f, x, sparsity="detect").toarray())


@pytest.mark.parametrize("engine", ["tape", "torch", "autograd", "jax"])
def test_sparse_jacobian_inside_a_differentiated_function(engine: str) -> None:
    if engine != "tape":
        pytest.importorskip(engine)
    with pytest.raises(ad.UsageError, match=r"dense ad\.jacobian"):
        ad.gradient(_inner_sum, np.ones(3), backend=engine)


def test_sparse_jacobian_under_jax_jit() -> None:
    jax = pytest.importorskip("jax")
    with pytest.raises(ad.UsageError, match=r"jax\.jit"):
        jax.jit(lambda x: ad.jacobian(_f, x, sparsity="detect", backend="jax").toarray())(
            np.ones(3)
        )
    with pytest.raises(ad.UsageError, match=r"jax\.jit"):
        x = jax.numpy.ones(3)
        prepared = ad.prepare(ad.jacobian, _f, x, sparsity="detect", backend="jax")
        jax.jit(lambda x: prepared(x).toarray())(x)


def test_sparse_jacobian_outside_still_right() -> None:
    x = np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(
        ad.jacobian(_f, x, sparsity="detect").toarray(), np.diag(2 * np.cos(x))
    )
