"""The habitual array methods (``x.sum()``, ``x.reshape(2, 3)``, ``x.dot(y)``...) on the
traced arrays of the engines whose arrays are adswitch's own (tape, autograd, dual),
against central differences of the same method on plain numpy arrays; any other name is
an ``UnsupportedError`` naming the ``xp`` function (issue 12, item 5)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from tests.support.fd_oracle import central_fd

METHODS: dict[str, Callable[[Any], Any]] = {
    "sum": lambda x: x.sum(),
    "sum_axis": lambda x: (x.sum(axis=1) ** 2).sum(),
    "mean_keepdims": lambda x: (x.mean(0, keepdims=True) ** 2).sum(),
    "prod": lambda x: x.prod(),
    "max": lambda x: x.max(),
    "min": lambda x: x.min(axis=0).sum(),
    "var": lambda x: x.var(),
    "std_ddof": lambda x: x.std(ddof=1),
    "reshape_args": lambda x: (x.reshape(3, 2) ** 2)[0].sum(),
    "reshape_tuple": lambda x: (x.reshape((6,)) ** 3).sum(),
    "flatten": lambda x: (x.flatten() * np.arange(6.0)).sum(),
    "ravel": lambda x: (x.ravel() * np.arange(6.0)).sum(),
    "T": lambda x: (x.T * np.arange(6.0).reshape(3, 2)).sum(),
    "transpose": lambda x: (x.transpose() * np.arange(6.0).reshape(3, 2)).sum(),
    "swapaxes": lambda x: (x.swapaxes(0, 1) * np.arange(6.0).reshape(3, 2)).sum(),
    "squeeze": lambda x: (x[None].squeeze() ** 2).sum(),
    "dot": lambda x: x[0].dot(x[1]),
    "dot_matrix": lambda x: x.dot(x.T).sum(),
    "clip": lambda x: x.clip(0.2, 0.8).sum(),
    "cumsum": lambda x: (x.cumsum(1) ** 2).sum(),
    "astype": lambda x: x.astype(np.float32).sum(),
    "copy": lambda x: (x.copy() * x).sum(),
    "argmax": lambda x: x.sum() * float(x.argmax() == x.argmax()),
}
X = np.array([[0.3, 0.9, 0.5], [0.1, 0.7, 0.45]])


@pytest.mark.parametrize("backend", ["tape", "autograd", "dual"])
@pytest.mark.parametrize("name", sorted(METHODS))
def test_method_gradient_matches_finite_differences(backend: str, name: str) -> None:
    method = METHODS[name]
    (g,) = ad.gradient(method, X.copy(), backend=backend)
    # float32 in the middle: a step float32 resolves, and its tolerance
    step, tol = (1e-2, 1e-4) if name == "astype" else (1e-6, 1e-6)
    np.testing.assert_allclose(g, central_fd(method, X, step), rtol=tol, atol=tol)


@pytest.mark.parametrize("backend", ["tape", "autograd", "dual"])
def test_a_missing_method_names_the_xp_function(backend: str) -> None:
    with pytest.raises(ad.UnsupportedError, match=r"xp\.exp\(x\)"):
        ad.gradient(lambda x: x.exp().sum(), X.copy(), backend=backend)

    def probe(x: Any) -> Any:
        assert not hasattr(x, "exp")  # still an AttributeError for hasattr
        return x.sum()

    ad.gradient(probe, X.copy(), backend=backend)


@pytest.mark.parametrize("backend", ["tape", "autograd"])
def test_item_of_a_traced_float_is_refused_with_the_fix(backend: str) -> None:
    with pytest.raises(ad.UnsupportedError):
        ad.gradient(lambda x: x.sum() * x[0, 0].item(), X.copy(), backend=backend)
