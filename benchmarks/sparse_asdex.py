"""adswitch's sparse Jacobian on jax against asdex's (issue 22), on the 2-D Brusselator at
N = 32 (2,048 unknowns, 12,288 nonzeros), float64: the colors, detection + coloring, and
one sparse Jacobian per call -- asdex's jitted ``jacobian_from_coloring`` (a BCOO) against
adswitch's prepared ``ad.jacobian(..., sparsity="detect")`` on jax inputs (a BCOO too; on one
bare jax array, and with ``ad.Const(n)``, whose Python int keeps the full path),
and ``ad.jacobian(..., sparsity=pattern)`` inside ``jax.jit`` (the whole sparse Jacobian one
jitted program, as asdex's: the seeds and indices its constants).
Medians of interleaved rounds (``timing``), printed beside the issue's targets.

asdex is not a dependency of adswitch (``pip install asdex``); without it this prints why
and exits 0. Run: ``python benchmarks/sparse_asdex.py [N]``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import compare_batches, fmt_seconds, print_table

import adswitch as ad
from adswitch.sparse.examples import brusselator


def brusselator_jax(jnp: Any, n: int) -> Callable[[Any], Any]:
    """``adswitch.sparse.examples.brusselator(u, n)`` written with ``jax.numpy`` only (what
    asdex traces: a jaxpr), the same equations and forcing."""
    alpha = 10.0 * (n - 1) ** 2 / 10.0  # (alpha / dx^2, dx = 1/(n-1), alpha = 10)
    xs = np.linspace(0.0, 1.0, n)
    forcing = np.where(((xs[:, None] - 0.3) ** 2 + (xs[None, :] - 0.6) ** 2) <= 0.01, 5.0, 0.0)

    def lap(z: Any) -> Any:
        rolled = jnp.roll(z, 1, 0) + jnp.roll(z, -1, 0) + jnp.roll(z, 1, 1)
        return rolled + jnp.roll(z, -1, 1) - 4.0 * z

    def f(u: Any) -> Any:
        grid = jnp.reshape(u, (n, n, 2))
        a, b = grid[:, :, 0], grid[:, :, 1]
        du = 1.0 + a * a * b - 4.4 * a + alpha * lap(a) + forcing
        dv = 3.4 * a - a * a * b + alpha * lap(b)
        return jnp.reshape(jnp.stack([du, dv], axis=-1), (-1,))

    return f


def median_s(fn: Callable[[], Any], repeat: int = 15) -> float:
    """Median wall time of ``repeat`` calls after one untimed call (for one-off work:
    detection + coloring; the untimed call pays each side's imports and first traces)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(n: int = 32) -> None:
    if importlib.util.find_spec("asdex") is None or importlib.util.find_spec("jax") is None:
        print("sparse_asdex: asdex (and jax) not installed -- pip install asdex; skipped")
        return
    import asdex
    import jax

    # (float64, as the asdex figures)
    jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]
    jnp = jax.numpy
    f = brusselator_jax(jnp, n)
    u = np.random.default_rng(0).uniform(0, 1, 2 * n * n)
    uj = jnp.asarray(u)
    assert np.allclose(np.asarray(f(uj)), brusselator(u, n)), "the jax version differs"

    # detection + coloring (asdex: jaxpr analysis + its coloring; adswitch: ad.prepare,
    # which detects, colors both sides and keeps the fewer)
    t_asdex_detect = median_s(lambda: asdex.jacobian_coloring(f, uj))
    coloring = asdex.jacobian_coloring(f, uj)

    def prepare() -> Any:
        return ad.prepare(ad.jacobian, brusselator, uj, ad.Const(n), sparsity="detect")

    t_ad_detect = median_s(prepare)
    prep = prepare()
    colors_ad, colors_asdex = int(prep.colors.max()) + 1, int(coloring.num_colors)

    sparse_jac = jax.jit(asdex.jacobian_from_coloring(f, coloring))
    want = np.asarray(sparse_jac(uj).todense())
    got = prep(uj, ad.Const(n))
    assert type(got).__name__ == "BCOO", type(got)
    assert np.allclose(np.asarray(got.todense()), want, rtol=1e-12, atol=1e-9), "values differ"

    # the whole sparse Jacobian as one jitted program (issue 22): the colored pushforwards
    # on jax's tracers, decompressed by jax's sparse_gather in the same trace
    pattern = prep.sparsity

    def inside(x: Any) -> Any:
        return ad.jacobian(brusselator, x, ad.Const(n), sparsity=pattern, backend="jax")

    jitted = jax.jit(inside)
    got_jit = jitted(uj)
    assert type(got_jit).__name__ == "BCOO", type(got_jit)
    assert np.allclose(np.asarray(got_jit.todense()), want, rtol=1e-12, atol=1e-9), "jit differs"
    # (the seeds, places and coordinates are constants of the program, not its inputs)
    inputs = [v.aval.shape for v in jax.make_jaxpr(inside)(uj).jaxpr.invars]
    assert inputs == [uj.shape], inputs

    # the prepared call on one bare jax array (n closed over): after its first calls, one
    # jitted dispatch (adswitch.shortcut); with ad.Const(n) (a Python int) the full path
    def bare(x: Any) -> Any:
        return brusselator(x, n)

    prep_bare = ad.prepare(ad.jacobian, bare, uj, sparsity="detect")
    for _ in range(3):
        got_bare = prep_bare(uj)
    assert np.allclose(np.asarray(got_bare.todense()), want, rtol=1e-12, atol=1e-9), "bare"

    t = compare_batches(
        {
            "asdex": lambda: sparse_jac(uj).data.block_until_ready(),
            "adswitch": lambda: prep_bare(uj).data.block_until_ready(),
            "adswitch Const(n)": lambda: prep(uj, ad.Const(n)).data.block_until_ready(),
            "adswitch jit": lambda: jitted(uj).data.block_until_ready(),
        },
        rounds=60,
    )
    print(
        f"Brusselator N = {n}, jax {jax.__version__}, asdex "
        f"{importlib.metadata.version('asdex')}, float64, nnz {prep.sparsity.nnz}"
    )
    print_table(
        ["", "adswitch (jax)", "asdex (jitted)", "ratio", "target"],
        [
            ["colors", str(colors_ad), str(colors_asdex), "", f"<= {colors_asdex}"],
            [
                "detection + coloring",
                fmt_seconds(t_ad_detect),
                fmt_seconds(t_asdex_detect),
                f"{t_ad_detect / t_asdex_detect:.2f}x",
                "<= 0.25x (and <= 50 ms)",
            ],
            [
                "sparse Jacobian per call",
                fmt_seconds(t["adswitch"]),
                fmt_seconds(t["asdex"]),
                f"{t['adswitch'] / t['asdex']:.1f}x",
                "<= 1.2x",
            ],
            [
                "  with ad.Const(n) (full path)",
                fmt_seconds(t["adswitch Const(n)"]),
                fmt_seconds(t["asdex"]),
                f"{t['adswitch Const(n)'] / t['asdex']:.1f}x",
                "",
            ],
            [
                "adswitch inside jax.jit",
                fmt_seconds(t["adswitch jit"]),
                fmt_seconds(t["asdex"]),
                f"{t['adswitch jit'] / t['asdex']:.2f}x",
                "<= 1.2x",
            ],
        ],
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 32)
