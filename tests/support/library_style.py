"""Code written the way scipy and scikit-learn write theirs, for the namespace tests of the
engines whose traced arrays are adswitch's own (``test_tape_array_api``,
``test_autograd_array_api``): the namespace of the arguments through
``array_api_compat``, constants through ``xp.asarray``, helpers that ask again."""

from __future__ import annotations

from typing import Any

import array_api_compat
import numpy as np

import adswitch as ad


def library_softplus_mean(x: Any, weights: Any) -> Any:
    """``mean(softplus(x))`` weighted, overflow-safe with ``where``, as a library writes it."""
    xp = array_api_compat.array_namespace(x, weights)
    big = x > 20.0
    safe = xp.where(big, 0.0, x)
    out = xp.where(big, x, xp.log1p(xp.exp(safe)))
    return _library_weighted_mean(out, weights)


def _library_weighted_mean(values: Any, weights: Any) -> Any:
    xp = array_api_compat.array_namespace(values, weights)
    return xp.sum(values * weights) / xp.sum(weights)


def check_library_code_is_differentiated(backend: str) -> None:
    """The gradient of :func:`library_softplus_mean` on ``backend`` against its closed form
    (the sigmoid, 1 on the overflow-safe branch)."""
    x = np.array([-1.0, 0.5, 30.0])
    w = np.array([1.0, 2.0, 3.0])
    # the caller converts its constants to the namespace of its arrays, as scipy asks
    (g,) = ad.gradient(
        lambda v: library_softplus_mean(v, ad.array_namespace(v).asarray(w)), x, backend=backend
    )
    sigmoid = 1.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(g, np.where(x > 20.0, 1.0, sigmoid) * w / w.sum())
