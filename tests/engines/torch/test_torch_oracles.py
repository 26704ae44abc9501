"""Independent oracles for the torch engine's tests: central finite differences in
float64 numpy, never touching torch. Imported by the other ``test_torch_*`` files."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd as fd_grad

pytest.importorskip("torch")

FD_TOL: dict[str, Any] = dict(rtol=1e-6, atol=1e-7)


def test_fd_grad_matches_a_closed_form() -> None:
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(
        fd_grad(lambda v: np.sum(np.sin(v) * v), x), np.cos(x) * x + np.sin(x), **FD_TOL
    )
