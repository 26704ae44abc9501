"""numpy functions applied to the tensors ``f`` receives on torch: those torch's tensor can
serve give the right gradient (oracle: finite differences); the others raise an
``UnsupportedError`` naming the numpy function, the ``xp`` function to use, and the
user's line -- never torch's or numpy's raw ``TypeError``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd

pytest.importorskip("torch")

import adswitch as ad

X = np.array([0.5, -1.0, 2.0])


def _message(f: Any, *args: Any) -> str:
    with pytest.raises(ad.UnsupportedError) as info:
        ad.gradient(f, *args, backend="torch")
    return str(info.value)


@pytest.mark.parametrize(
    ("f", "numpy_name", "xp_name"),
    [
        (lambda x: np.mean(x), "np.mean", "xp.mean"),  # a method numpy calls with its kwargs
        (lambda x: np.sum(x * x), "np.sum", "xp.sum"),
        (lambda x: np.amax(x), "np.amax", "xp.max"),
        (lambda x: np.flip(x).sum(), "np.flip", "xp.flip"),  # torch's ValueError
        (lambda x: np.linalg.norm(x), "np.linalg.norm", "xp.linalg.vector_norm"),
        (lambda x: np.exp(x).sum(), "np.exp", "xp.exp"),  # a ufunc: named from the line
        (lambda x: np.concatenate([x, x]).sum(), "np.concatenate", "xp.concat"),
    ],
    ids=["mean", "sum", "amax", "flip", "norm", "exp", "concatenate"],
)
def test_numpy_function_on_a_traced_tensor_names_the_fix(
    f: Any, numpy_name: str, xp_name: str
) -> None:
    text = _message(f, X)
    assert f"{numpy_name}" in text and f"use {xp_name} for {numpy_name}" in text
    assert "test_torch_numpy_calls.py:" in text  # the user's line, not numpy's or torch's


def test_numpy_function_on_a_const_tensor_too() -> None:
    text = _message(lambda x, c: x.sum() * np.mean(c), X, ad.Const(X.copy()))
    assert "np.mean" in text and "xp.mean" in text


def test_numpy_functions_torch_can_serve_are_differentiated() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        m = np.squeeze(xp.reshape(x, (1, 3)))  # numpy calls x.squeeze(): a traced result
        return xp.sum(np.swapaxes(xp.reshape(m, (3, 1)), 0, 1) ** 3)

    (g,) = ad.gradient(f, X, backend="torch")
    np.testing.assert_allclose(g, central_fd(lambda v: np.sum(v**3), X), rtol=1e-6)


def test_a_numpy_error_of_the_users_own_is_left_alone() -> None:
    def f(x: Any) -> Any:
        return x.sum() + np.mean(np.ones(2), axis="bad")  # numpy arrays only

    with pytest.raises(TypeError) as info:
        ad.gradient(f, X, backend="torch")
    assert not isinstance(info.value, ad.AdswitchError)


def test_numpy_array_times_traced_tensor_keeps_its_message() -> None:
    text = _message(lambda x: (np.ones(3) * x).sum(), X)
    assert "numpy operation met a traced torch tensor" in text and "xp.asarray(c)" in text
