"""Run by ``test_autograd_array_api_libraries.py`` in a process of its own: scipy's and
scikit-learn's Array API code differentiated by the autograd engine.

scipy reads ``SCIPY_ARRAY_API`` once, when it is first imported, and scikit-learn's
``array_api_dispatch`` needs it: so this sets it before importing either, in a process of
its own, and nothing of it reaches the test session. Prints one JSON object: per case,
the gradient (a nested list) or the error, and which namespace array-api-compat gave the
traced argument.

Usage: ``python autograd_libraries_child.py`` (with the repository on ``PYTHONPATH``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

X = np.random.default_rng(17).uniform(-1.5, 1.5, (3, 4))
C = np.random.default_rng(18).uniform(0.5, 2.0, (3, 4))
W = np.random.default_rng(19).standard_normal((3, 4))
W3 = np.random.default_rng(20).standard_normal((3, 3))
LARGE = 800.0


def cases() -> dict[str, Callable[[Any, Any], Any]]:
    """name -> the loss, a function of ``(xp, x)`` (the libraries are imported here, so
    that :func:`main` can set the environment first)."""
    from scipy.special import erf, expit, logit, logsumexp
    from sklearn.metrics.pairwise import cosine_similarity, rbf_kernel
    from sklearn.utils.extmath import softmax

    return {
        "logsumexp": lambda xp, x: logsumexp(x),
        "logsumexp_axis": lambda xp, x: xp.sum(logsumexp(x, axis=1) * xp.asarray(W[:, 0])),
        "logsumexp_b": lambda xp, x: logsumexp(x, b=xp.asarray(C)),
        "logsumexp_b_axis": lambda xp, x: xp.sum(logsumexp(x, axis=0, b=xp.asarray(C))),
        # exp(800 + x) overflows in the branch scipy computes and discards
        "logsumexp_large": lambda xp, x: logsumexp(x + LARGE),
        "expit": lambda xp, x: xp.sum(expit(x * 20.0) * xp.asarray(W)),
        "logit": lambda xp, x: xp.sum(logit(x / 3.2 + 0.5) * xp.asarray(W)),
        "erf": lambda xp, x: xp.sum(erf(x) * xp.asarray(W)),
        "softmax": lambda xp, x: xp.sum(softmax(x) * xp.asarray(W)),
        "rbf_kernel": lambda xp, x: xp.sum(rbf_kernel(x) * xp.asarray(W3)),
        "rbf_kernel_gamma": lambda xp, x: xp.sum(rbf_kernel(x, gamma=0.7) * xp.asarray(W3)),
        "cosine_similarity": lambda xp, x: xp.sum(cosine_similarity(x) * xp.asarray(W3)),
    }


def main() -> None:
    os.environ["SCIPY_ARRAY_API"] = "1"
    import array_api_compat
    import sklearn

    import adswitch as ad

    sklearn.set_config(array_api_dispatch=True)
    out: dict[str, Any] = {}
    for name, loss in cases().items():
        seen: list[str] = []

        def f(x: Any, loss: Callable[[Any, Any], Any] = loss, seen: list[str] = seen) -> Any:
            seen.append(array_api_compat.array_namespace(x).__name__)
            return loss(ad.array_namespace(x), x)

        try:
            (g,) = ad.gradient(f, X.copy(), backend="autograd")
            out[name] = {"gradient": np.asarray(g).tolist(), "namespace": seen[0]}
        except Exception as exc:  # reported to the test, which fails naming it
            out[name] = {"error": f"{type(exc).__name__}: {exc}", "namespace": seen[:1]}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
