"""Where a sparse Jacobian cannot be right it is a ``UsageError`` naming the fix, never a
raw engine error or a silently constant result: inside a differentiated function (it
would be a constant to the enclosing derivative), and under an engine's own transforms
wherever the result would have to be built on the host -- engines without traced
decompression (torch under ``torch.func``), several arguments or a tree output,
``check=True`` (it needs the dense values), detection that reads values (``local=True``,
a traced ``ad.Const``). The case jax serves under ``jax.jit`` is ``test_sparse_jit``
(Hessians: ``test_sparse_hessian``)."""

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


def _jit(fn: Any, *args: Any) -> Any:
    jax = pytest.importorskip("jax")
    return jax.jit(fn)(*args)


def test_check_true_under_jax_jit() -> None:
    with pytest.raises(ad.UsageError, match=r"check=False inside"):
        _jit(lambda x: ad.jacobian(_f, x, sparsity="detect", backend="jax", check=True), np.ones(3))


def test_several_arguments_under_jax_jit() -> None:
    def two(a: Any, b: Any) -> Any:
        return a * b

    with pytest.raises(ad.UsageError, match=r"one differentiated array"):
        _jit(lambda x: ad.jacobian(two, x, x * 2.0, sparsity="detect", backend="jax"), np.ones(3))
    with pytest.raises(ad.UsageError, match=r"one differentiated array"):  # (a tree)
        _jit(lambda x: ad.jacobian(lambda t: t["a"], {"a": x}, sparsity="detect"), np.ones(3))


def test_tree_output_under_jax_jit() -> None:
    with pytest.raises(ad.UsageError, match=r"return one\s+array"):
        _jit(lambda x: ad.jacobian(lambda x: (_f(x), x), x, sparsity="detect"), np.ones(3))


def test_detection_reading_values_under_jax_jit() -> None:
    def masked(x: Any, c: Any) -> Any:
        return x * c

    with pytest.raises(ad.UsageError, match=r"local=False"):
        _jit(lambda x: ad.sparsity(_f, x, local=True).nnz + x, np.ones(3))
    with pytest.raises(ad.UsageError, match=r"sparsity=pattern"):
        _jit(lambda x: ad.jacobian(masked, x, ad.Const(x * 2.0), sparsity="detect"), np.ones(3))


def test_torch_under_torch_func_vmap() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(ad.UsageError, match=r"on 'torch'.*dense ad\.jacobian"):
        torch.func.vmap(lambda x: ad.jacobian(_f, x, sparsity="detect").to_dense())(
            torch.ones(2, 3, dtype=torch.float64)
        )


def test_sparse_jacobian_outside_still_right() -> None:
    x = np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(
        ad.jacobian(_f, x, sparsity="detect").toarray(), np.diag(2 * np.cos(x))
    )
