"""Sparse Hessian of the chained Rosenbrock function (issue 22), n = 10,000 by default:
detection + star coloring, then the prepared sparse ad.hessian against one prepared
gradient on the tape, torch and jax, against asdex's jitted sparse Hessian on jax (when
installed), and against the prepared dense ad.hessian for n <= 2,000 (the dense one is
n^2 numbers: 800 MB at n = 10,000). Medians of interleaved rounds, as ratios printed
beside the issue's targets.

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
DENSE_UP_TO = 2000
# the targets: sparse / one gradient on the tape, sparse jax / asdex's
TAPE_TARGET, ASDEX_TARGET, SETUP_TARGET_S = 8.0, 1.2, 0.100


def rosen(x: Any) -> Any:
    """The chained Rosenbrock function (``scipy.optimize.rosen``), tridiagonal Hessian."""
    xp = ad.array_namespace(x)
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def setup_row(x: np.ndarray) -> list[str]:
    """Detection + coloring time against its target, and the colors of each coloring."""
    times = compare({"setup": lambda: setup_hessian(rosen, (x,), "detect")}, rounds=7)
    pattern = symmetric_pattern(ad.sparsity(rosen, x, of="hessian"))
    star, column = n_colors(star_coloring(pattern)), n_colors(color_columns(pattern))
    t = times["setup"]
    return [
        fmt_seconds(t),
        f"{t / SETUP_TARGET_S:.2f}x of 100 ms (target <= 1)",
        f"star {star}, column {column} (optimum 3)",
    ]


def engine_row(backend: str, x: np.ndarray) -> list[str]:
    """Prepared sparse ad.hessian vs one prepared gradient (and the dense one, small n)."""
    arg: Any = x
    if backend == "jax":
        import jax

        arg = jax.numpy.asarray(x)
    sparse = ad.prepare(ad.hessian, rosen, arg, sparsity="detect", backend=backend)
    grad = ad.prepare(ad.gradient, rosen, arg, backend=backend)
    contenders: dict[str, Callable[[], Any]] = {
        "sparse": lambda: _ready(sparse(arg)),
        "gradient": lambda: _ready(grad(arg)[0]),
    }
    small = x.size <= DENSE_UP_TO
    if small:
        dense = ad.prepare(ad.hessian, rosen, arg, backend=backend)
        want = np.asarray(dense(arg)[0][0])
        assert np.allclose(_dense_of(sparse(arg)), want, rtol=1e-10, atol=1e-8), backend
        contenders["dense"] = lambda: _ready(dense(arg)[0][0])
    t = compare(contenders, rounds=7)
    ratio = t["sparse"] / t["gradient"]
    target = f" (target <= {TAPE_TARGET:.0f}x)" if backend == "tape" else ""
    return [
        backend,
        str(n_colors(sparse.colors)),
        fmt_seconds(t["sparse"]),
        f"{ratio:.1f}x{target}",
        f"{t['dense'] / t['sparse']:.0f}x" if small else "(n > 2,000: skipped)",
    ]


def asdex_row(x: np.ndarray) -> list[str] | None:
    """asdex's jitted sparse Hessian against the prepared sparse ad.hessian, both on jax
    (asdex: ``hessian_coloring`` + ``hessian_from_coloring``, a BCOO each)."""
    if importlib.util.find_spec("asdex") is None or importlib.util.find_spec("jax") is None:
        return None
    import asdex
    import jax

    jnp = jax.numpy
    xj = jnp.asarray(x)

    def rosen_jnp(v: Any) -> Any:
        return jnp.sum(100.0 * (v[1:] - v[:-1] ** 2) ** 2 + (1.0 - v[:-1]) ** 2)

    coloring = asdex.hessian_coloring(rosen_jnp, xj)
    theirs = jax.jit(asdex.hessian_from_coloring(rosen_jnp, coloring))
    ours = ad.prepare(ad.hessian, rosen, xj, sparsity="detect")
    want = theirs(xj)
    got = ours(xj)
    assert type(got).__name__ == "BCOO", type(got)
    assert np.allclose(_dense_of(got), np.asarray(want.todense()), rtol=1e-10, atol=1e-8)
    t = compare(
        {
            "asdex": lambda: theirs(xj).data.block_until_ready(),
            "adswitch": lambda: ours(xj).data.block_until_ready(),
        },
        rounds=15,
    )
    ratio = t["adswitch"] / t["asdex"]
    return [
        f"{n_colors(ours.colors)} / {int(coloring.num_colors)}",
        fmt_seconds(t["adswitch"]),
        fmt_seconds(t["asdex"]),
        f"{ratio:.2f}x (target <= {ASDEX_TARGET}x)",
    ]


def _ready(value: Any) -> Any:
    """Wait for an asynchronous engine (jax) to finish what it returned."""
    data = getattr(value, "data", value)
    wait = getattr(data, "block_until_ready", None)
    return wait() if wait is not None else value


def _dense_of(m: Any) -> np.ndarray:
    if hasattr(m, "toarray"):
        return np.asarray(m.toarray())
    if hasattr(m, "to_dense"):
        return np.asarray(m.to_dense())
    return np.asarray(m.todense())


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    if importlib.util.find_spec("jax") is not None:
        import jax

        jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]
    x = np.random.default_rng(0).uniform(-1.5, 1.5, n)
    print(f"chained Rosenbrock, n = {n}, float64")
    print_table(["detection + coloring", "ratio to target", "colors"], [setup_row(x)])
    print()
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the tape's notice: nested calls are not replayed)
        for backend in ENGINES:
            if backend != "tape" and importlib.util.find_spec(backend) is None:
                continue
            rows.append(engine_row(backend, x))
    print_table(
        ["engine", "colors", "sparse ad.hessian", "sparse / one gradient", "dense / sparse"],
        rows,
    )
    row = asdex_row(x)
    if row is not None:
        print()
        print_table(["jax: colors (ours / asdex)", "adswitch", "asdex (jitted)", "ratio"], [row])


if __name__ == "__main__":
    main()
