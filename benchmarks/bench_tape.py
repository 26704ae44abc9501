"""The tape engine against HIPS autograd and the numpy forward pass (issue 3).

Run: ``python benchmarks/bench_tape.py``. Prints a Markdown table: per workload the
median of ``ad.gradient(..., backend="tape")`` (the front end's overhead included), the
median of ``autograd.grad`` called directly on the same computation written with
``autograd.numpy``, their ratio and its target; for chain and mlp also the ratio to the
numpy forward pass; and the same for the call prepared once with ``ad.prepare``. Then
the same table once more with glibc keeping its free heap
(``mallopt(M_TOP_PAD)`` in this process; ``--default-only`` skips it), and the peak
memory (tracemalloc) of one mlp gradient for both. All medians of one workload are
measured side by side in one run (``timing.compare``).

BLAS runs on one thread unless the environment says otherwise: on this shared 2-core
machine multi-threaded matrix products stalled 30-fold (the mlp took 78 ms instead of
2.3 ms, for every contender alike). Every contender uses the same BLAS, so the ratios
stay comparable; set ``OPENBLAS_NUM_THREADS`` to measure with threads on a quiet machine.
"""

# ruff: noqa: E402  (BLAS threads are set before numpy is imported)
from __future__ import annotations

import functools
import os
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy loads its BLAS

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import compare, fmt_seconds, keep_heap, print_table
from workloads import WORKLOADS

import adswitch as ad

TARGETS = {"tiny": 0.4, "chain": 0.5, "mlp": 0.7, "nested": 0.6}
FORWARD_TARGETS = {"chain": 4.0, "mlp": 3.0}
# prepared calls (ad.prepare, issue 11): against autograd, and against the forward pass
PREPARED_TARGETS = {"tiny": 0.25}
PREPARED_FORWARD_TARGETS = {"chain": 3.2, "mlp": 3.0}


def autograd_versions() -> dict[str, Callable[..., Any]]:
    """The four workloads written for HIPS autograd, each returning its gradient."""
    import autograd
    import autograd.numpy as anp

    def tiny(x: Any) -> Any:
        return anp.sum(anp.sin(x) * x)

    def chain(x: Any) -> Any:
        for _ in range(50):
            x = anp.tanh(anp.sin(x) * 1.01 + 0.1)
        return anp.sum(x)

    def mlp(p: dict[str, Any], x: Any) -> Any:
        h = anp.tanh(anp.dot(x, p["W1"]) + p["b1"])
        h = anp.tanh(anp.dot(h, p["W2"]) + p["b2"])
        return anp.dot(h, p["W3"]) + p["b3"]

    def mlp_loss(p: dict[str, Any], x: Any, t: Any) -> Any:
        return anp.mean((mlp(p, x) - t) ** 2)

    def nested(p: dict[str, Any], x: Any, t: Any) -> Any:
        dx = autograd.grad(lambda x_: anp.sum(mlp(p, x_)))(x)
        return anp.mean((dx - t) ** 2)

    return {
        "tiny": autograd.grad(tiny),
        "chain": autograd.grad(chain),
        "mlp": autograd.grad(mlp_loss),
        "nested": autograd.grad(nested),
    }


def _peak_bytes(fn: Callable[[], Any]) -> int:
    fn()
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def table(direct: dict[str, Callable[..., Any]]) -> None:
    """One run of every workload: tape against autograd and the numpy forward pass."""
    rows = []
    for name, (loss, make_args) in WORKLOADS.items():
        args = make_args(np.random.default_rng(0))
        wrapped = (args[0], *(ad.Const(a) for a in args[1:]))
        prepared = ad.prepare(ad.gradient, loss, *wrapped, backend="tape")
        contenders: dict[str, Callable[[], Any]] = {
            "tape": functools.partial(ad.gradient, loss, *wrapped, backend="tape"),
            "prepared": functools.partial(prepared, *wrapped),
            "autograd": functools.partial(direct[name], *args),
        }
        if name in FORWARD_TARGETS:
            contenders["numpy"] = functools.partial(loss, *args)
        med = compare(contenders)
        ratio = med["tape"] / med["autograd"]
        row = [
            name,
            fmt_seconds(med["tape"]),
            fmt_seconds(med["autograd"]),
            f"{ratio:.2f}x",
            f"≤ {TARGETS[name]}x",
        ]
        if "numpy" in med:
            row.append(f"{med['tape'] / med['numpy']:.2f}x (≤ {FORWARD_TARGETS[name]}x)")
        else:
            row.append("-")
        prep_ratio = med["prepared"] / med["autograd"]
        target = PREPARED_TARGETS.get(name)
        row.append(fmt_seconds(med["prepared"]))
        row.append(f"{prep_ratio:.2f}x" + (f" (≤ {target}x)" if target else ""))
        if "numpy" in med:
            fwd = PREPARED_FORWARD_TARGETS[name]
            row.append(f"{med['prepared'] / med['numpy']:.2f}x (≤ {fwd}x)")
        else:
            row.append("-")
        rows.append(row)
    header = [
        "workload",
        "tape",
        "autograd",
        "tape/autograd",
        "target",
        "tape/numpy forward",
        "prepared",
        "prepared/autograd",
        "prepared/numpy forward",
    ]
    print_table(header, rows)


def main() -> None:
    direct = autograd_versions()
    print("C allocator as configured (glibc defaults unless MALLOC_* is set):\n")
    table(direct)
    if "--default-only" not in sys.argv and keep_heap():
        # The mlp's gradient needs about 1.3 MiB at its peak; glibc returns the top of the
        # heap to the OS after each call and the next call page-faults it back (~350
        # faults, measured 1.6 ms of system time per call -- hand-written numpy pays it
        # too). The same run with the memory kept shows what the code itself costs.
        print("\nSame, with glibc keeping 64 MiB of free heap (mallopt(M_TOP_PAD)):\n")
        table(direct)

    params, x, t = WORKLOADS["mlp"][1](np.random.default_rng(0))
    tape_peak = _peak_bytes(
        lambda: ad.gradient(WORKLOADS["mlp"][0], params, ad.Const(x), ad.Const(t), backend="tape")
    )
    autograd_peak = _peak_bytes(lambda: direct["mlp"](params, x, t))
    print()
    print_table(
        ["mlp gradient", "peak memory (tracemalloc)"],
        [
            ["tape", f"{tape_peak / 2**20:.2f} MiB"],
            ["autograd", f"{autograd_peak / 2**20:.2f} MiB"],
        ],
    )


if __name__ == "__main__":
    main()
