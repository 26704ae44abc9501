"""Third-party Array API code differentiated by the autograd engine: scipy's
``logsumexp`` (also where its discarded branch overflows), ``expit``, ``logit`` and
``erf`` (``SCIPY_ARRAY_API=1``; the last three through ``xp.special``) and
scikit-learn's ``softmax``, ``rbf_kernel`` and ``cosine_similarity``
(``array_api_dispatch=True``), on 3 by 4 float64 inputs, against
closed forms and finite differences of the same functions on numpy.

The libraries run in a process of their own (``autograd_libraries_child.py``): scipy reads
``SCIPY_ARRAY_API`` when first imported, so setting it here would either come too late or
leak into every other test. This process imports them without it, as numpy users do, for
the finite-difference oracle.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd

pytest.importorskip("autograd")
pytest.importorskip("array_api_compat")
pytest.importorskip("scipy")
pytest.importorskip("sklearn")

from tests.support.autograd_libraries_child import W3, C, W, X, cases

ROOT = Path(__file__).resolve().parents[3]
HERE = ROOT / "tests" / "support"  # the child script's folder


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"}
    root = ROOT
    env["PYTHONPATH"] = os.pathsep.join(
        [str(root), str(root / "plugins"), str(HERE), env.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [sys.executable, str(HERE / "autograd_libraries_child.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _softmax(z: np.ndarray, axis: int | None = None) -> np.ndarray:
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _expit(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _rbf_gradient(gamma: float) -> np.ndarray:
    diff = X[:, None, :] - X[None, :, :]
    k = np.exp(-gamma * np.sum(diff**2, axis=-1))
    return np.einsum("kj,kjd->kd", -2.0 * gamma * (W3 + W3.T) * k, diff)


def _cosine_gradient() -> np.ndarray:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    n = X / norms
    g_n = (W3 + W3.T) @ n  # d sum(W3 * n n^T) / dn
    return (g_n - np.sum(g_n * n, axis=1, keepdims=True) * n) / norms


CLOSED_FORMS = {
    "logsumexp": lambda: _softmax(X),
    "logsumexp_axis": lambda: W[:, :1] * _softmax(X, axis=1),
    "logsumexp_b": lambda: C * np.exp(X) / np.sum(C * np.exp(X)),
    "logsumexp_b_axis": lambda: C * np.exp(X) / np.sum(C * np.exp(X), axis=0, keepdims=True),
    "logsumexp_large": lambda: _softmax(X),
    "expit": lambda: 20.0 * W * _expit(20.0 * X) * (1.0 - _expit(20.0 * X)),
    "logit": lambda: W / 3.2 / ((X / 3.2 + 0.5) * (0.5 - X / 3.2)),
    "erf": lambda: W * 2.0 / math.sqrt(math.pi) * np.exp(-X * X),
    "softmax": lambda: _softmax(X, 1) * (W - np.sum(W * _softmax(X, 1), axis=1, keepdims=True)),
    "rbf_kernel": lambda: _rbf_gradient(1.0 / X.shape[1]),
    "rbf_kernel_gamma": lambda: _rbf_gradient(0.7),
    "cosine_similarity": _cosine_gradient,
}


def test_every_library_case_has_a_closed_form() -> None:
    assert set(CLOSED_FORMS) == set(cases())


@pytest.mark.parametrize("name", sorted(CLOSED_FORMS))
def test_library_code_gives_the_closed_form_and_finite_differences(
    name: str, results: dict[str, Any]
) -> None:
    got = results[name]
    assert "error" not in got, got["error"]
    assert got["namespace"] == "adswitch_autograd.namespace"  # array-api-compat's answer
    gradient = np.asarray(got["gradient"])
    np.testing.assert_allclose(gradient, CLOSED_FORMS[name](), rtol=1e-10, atol=1e-12)
    numpy_loss = cases()[name]  # the libraries' numpy code paths, in this process
    expected = central_fd(lambda x: float(numpy_loss(np, x)), X)
    np.testing.assert_allclose(gradient, expected, rtol=1e-6, atol=1e-8)


def test_this_process_has_no_scipy_array_api_switch() -> None:
    assert "SCIPY_ARRAY_API" not in os.environ
