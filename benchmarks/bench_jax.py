"""adswitch on the jax engine against a hand-written ``jax.jit(jax.grad(f))``, side by side.

Run: ``python benchmarks/bench_jax.py [--profile]``. Prints a Markdown table of medians of
interleaved short batches and the ratios adswitch / jax for each workload -- a plain
``ad.gradient`` call and a prepared one (``ad.prepare(ad.gradient, ...)``) -- with the same
64-bit setting on both sides:

* ``float32, jax arrays``: jax's default mode; arrays in, arrays out.
* ``float64, numpy``: numpy float64 in and out. adswitch scopes 64-bit mode to the call;
  the hand-written side does the same (``with jax.enable_x64(True)``) and converts its
  gradients to numpy, as a caller holding numpy data must.

A second table splits the tiny workload's time between jax, the jax engine and the front
end; a third times the inline-lambda trap (issue 11): ``ad.gradient(lambda v: ..., x)``
with a fresh lambda of the same code and captures on every call, against a cached call
of one function object. ``--profile`` then prints a cProfile of adswitch on the tiny
workload.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax
import jax.numpy as jnp
from timing import RawLossFn, compare_batches, fmt_seconds, print_table
from workloads import WORKLOADS

import adswitch as ad

TARGETS = {"tiny": 1.5, "mlp": 1.05}
PREPARED_TARGETS = {"tiny": 1.3, "mlp": 1.03}
INLINE_TARGET = 3.0  # a fresh lambda per call against a cached call


# The differentiable arguments come first; every workload differentiates only its first
# argument (tiny/chain: x; mlp/nested: the parameters), the rest are ad.Const.
N_ACTIVE = 1
_block: Any = jax.block_until_ready  # untyped in jax


def _consts(args: tuple[Any, ...], n_active: int) -> tuple[Any, ...]:
    return (*args[:n_active], *(ad.Const(a) for a in args[n_active:]))


def _contenders_f32(name: str) -> dict[str, Callable[[], Any]]:
    loss, make_args = WORKLOADS[name]
    args = jax.tree.map(
        lambda a: jnp.asarray(a, dtype=jnp.float32), make_args(np.random.default_rng(0))
    )
    n = N_ACTIVE
    wrapped = _consts(args, n)
    direct = jax.jit(jax.grad(loss, argnums=tuple(range(n))))

    prepared = ad.prepare(ad.gradient, loss, *wrapped, backend="jax")

    def run_adswitch() -> Any:
        return _block(ad.gradient(loss, *wrapped, backend="jax")[:n])

    def run_prepared() -> Any:
        return _block(prepared(*wrapped)[:n])

    def run_jax() -> Any:
        return _block(direct(*args))

    return {"adswitch": run_adswitch, "prepared": run_prepared, "jax.jit(jax.grad)": run_jax}


def _contenders_f64(name: str) -> dict[str, Callable[[], Any]]:
    loss, make_args = WORKLOADS[name]
    args = make_args(np.random.default_rng(0))
    n = N_ACTIVE
    wrapped = _consts(args, n)
    direct = jax.jit(jax.grad(loss, argnums=tuple(range(n))))

    prepared = ad.prepare(ad.gradient, loss, *wrapped, backend="jax")

    def run_adswitch() -> Any:
        return ad.gradient(loss, *wrapped, backend="jax")[:n]

    def run_prepared() -> Any:
        return prepared(*wrapped)[:n]

    def run_jax() -> Any:
        with jax.enable_x64(True):
            grads = direct(*args)
        return jax.tree.map(np.array, grads)

    return {"adswitch": run_adswitch, "prepared": run_prepared, "jax.jit(jax.grad)": run_jax}


def _check(contenders: dict[str, Callable[[], Any]]) -> None:
    # The two sides must compute the same gradient before their times mean anything.
    theirs = jax.tree.leaves(contenders["jax.jit(jax.grad)"]())
    for name in ("adswitch", "prepared"):
        for a, b in zip(jax.tree.leaves(contenders[name]()), theirs):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=1e-6)


def breakdown() -> None:
    """Where adswitch's time goes on tiny: jax, the jax engine, the front end."""
    from adswitch.registry import default_registry
    from adswitch.spec import CallInfo, Structure

    loss, make_args = WORKLOADS["tiny"]
    x = jnp.asarray(make_args(np.random.default_rng(0))[0], dtype=jnp.float32)
    direct = jax.jit(jax.grad(loss))
    engine = default_registry().get("jax")

    def fn(leaves: Any) -> tuple[Any, list[Any]]:
        value = loss(leaves[0])
        return value, [value]

    raw_fn = RawLossFn(fn)
    structure = Structure(key="bench", func=loss, entry="gradient")
    info = CallInfo(depth=0, entry="gradient", func=loss, structure=structure)
    medians = compare_batches(
        {
            "jax.jit(jax.grad)": lambda: direct(x),
            "engine.value_and_grad": lambda: engine.value_and_grad(raw_fn, [x], [True], info),
            'ad.gradient(backend="jax")': lambda: ad.gradient(loss, x, backend="jax"),
            "ad.gradient (engine from array type)": lambda: ad.gradient(loss, x),
        }
    )
    base = medians["jax.jit(jax.grad)"]
    print_table(
        ["tiny, float32 jax arrays", "median", "over jax"],
        [[name, fmt_seconds(t), f"+{fmt_seconds(t - base)}"] for name, t in medians.items()],
    )


def _against(ratio: float, target: float | None) -> str:
    if target is None:
        return f"{ratio:.2f}x"
    return f"{ratio:.2f}x (<= {target}x {'ok' if ratio <= target else 'over'})"


def inline_lambdas() -> None:
    """The inline-lambda trap: a fresh lambda (same code, same captures) on every call
    must reuse the first one's compiled program, not recompile (35-45 ms a call)."""
    loss, make_args = WORKLOADS["tiny"]
    x = make_args(np.random.default_rng(0))[0]
    scale = np.float64(1.5)  # captured: part of what the lambda is

    def named(v: Any) -> Any:
        return loss(v) * scale

    def fresh() -> Any:
        return ad.gradient(lambda v: loss(v) * scale, x, backend="jax")

    def cached() -> Any:
        return ad.gradient(named, x, backend="jax")

    np.testing.assert_allclose(fresh()[0], cached()[0], rtol=1e-12)
    medians = compare_batches({"fresh lambda each call": fresh, "one function object": cached})
    ratio = medians["fresh lambda each call"] / medians["one function object"]
    print_table(
        ["tiny, float64 numpy", "median", "against one function object"],
        [
            ["one function object", fmt_seconds(medians["one function object"]), "1.00x"],
            [
                "fresh lambda each call",
                fmt_seconds(medians["fresh lambda each call"]),
                _against(ratio, INLINE_TARGET),
            ],
        ],
    )


def main(profile: bool = False) -> None:
    rows = []
    modes = (("float32, jax arrays", _contenders_f32), ("float64, numpy", _contenders_f64))
    for mode, build in modes:
        for name in ("tiny", "chain", "mlp", "nested"):
            contenders = build(name)
            _check(contenders)
            medians = compare_batches(contenders)
            ours, theirs = medians["adswitch"], medians["jax.jit(jax.grad)"]
            prepared = medians["prepared"]
            rows.append(
                [
                    name,
                    mode,
                    fmt_seconds(ours),
                    fmt_seconds(prepared),
                    fmt_seconds(theirs),
                    _against(ours / theirs, TARGETS.get(name)),
                    _against(prepared / theirs, PREPARED_TARGETS.get(name)),
                ]
            )
    print_table(
        [
            "workload",
            "arrays",
            "adswitch",
            "prepared",
            "jax.jit(jax.grad)",
            "adswitch / jax",
            "prepared / jax",
        ],
        rows,
    )
    print()
    breakdown()
    print()
    inline_lambdas()
    if profile:
        run = _contenders_f32("tiny")["adswitch"]
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(3000):
            run()
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main(profile="--profile" in sys.argv)
