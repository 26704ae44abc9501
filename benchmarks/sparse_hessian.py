"""Sparse Hessian of the chained Rosenbrock function at n = 1000 (issue 22): detection +
star coloring, then the prepared sparse ad.hessian against the prepared dense one and one
prepared gradient, on the tape, torch and jax (medians of interleaved rounds, as ratios).

Run: ``python benchmarks/sparse_hessian.py [n]``.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from timing import compare, fmt_seconds, print_table

import adswitch as ad
from adswitch.sparse.coloring import color_columns, n_colors
from adswitch.sparse.hessian import setup_hessian
from adswitch.sparse.star import star_coloring, symmetric_pattern

ENGINES = ("tape", "torch", "jax")


def rosen(x: Any) -> Any:
    """The chained Rosenbrock function (``scipy.optimize.rosen``), tridiagonal Hessian."""
    xp = ad.array_namespace(x)
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def setup_row(x: np.ndarray) -> list[str]:
    """Detection + coloring time, and the colors of each coloring."""
    times = compare({"setup": lambda: setup_hessian(rosen, (x,), "detect")}, rounds=7)
    pattern = symmetric_pattern(ad.sparsity(rosen, x, of="hessian"))
    star, column = n_colors(star_coloring(pattern)), n_colors(color_columns(pattern))
    return [fmt_seconds(times["setup"]), f"star {star}, column {column} (optimum 3)"]


def engine_row(backend: str, x: np.ndarray) -> list[str]:
    """Prepared sparse vs prepared dense ad.hessian, and sparse vs one gradient."""
    sparse = ad.prepare(ad.hessian, rosen, x, sparsity="detect", backend=backend)
    dense = ad.prepare(ad.hessian, rosen, x, backend=backend)
    grad = ad.prepare(ad.gradient, rosen, x, backend=backend)
    want = np.asarray(dense(x)[0][0])
    assert np.allclose(sparse(x).toarray(), want, rtol=1e-10, atol=1e-8), backend
    contenders: dict[str, Callable[[], Any]] = {
        "sparse": lambda: sparse(x),
        "dense": lambda: dense(x),
        "gradient": lambda: grad(x),
    }
    t = compare(contenders, rounds=7)
    return [
        backend,
        str(n_colors(sparse.colors)),
        fmt_seconds(t["sparse"]),
        fmt_seconds(t["dense"]),
        f"{t['dense'] / t['sparse']:.0f}x",
        f"{t['sparse'] / t['gradient']:.1f}x",
    ]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    x = np.random.default_rng(0).uniform(-1.5, 1.5, n)
    print(f"chained Rosenbrock, n = {n}")
    print_table(["detection + coloring", "colors"], [setup_row(x)])
    print()
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the tape's notice: nested calls are not replayed)
        for backend in ENGINES:
            if backend != "tape" and importlib.util.find_spec(backend) is None:
                continue
            rows.append(engine_row(backend, x))
    print_table(
        [
            "engine",
            "colors",
            "sparse ad.hessian",
            "dense ad.hessian",
            "dense / sparse",
            "sparse / one gradient",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
