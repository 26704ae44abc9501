"""The tape's second-order path (issue 22): the prepared sparse ``ad.hessian`` and
``ad.hvp`` of the chained Rosenbrock function against one prepared gradient, each as
the median of interleaved rounds, with the page faults and the peak of numpy memory of
one call -- at this size a call's temporaries are mostly page faults: glibc gives the
top of its heap back after each call (``timing.keep_heap``; the second table keeps it,
showing what the code itself costs).

Run: ``python benchmarks/tape_second_order.py [n] [rounds]`` (n = 10,000, 15 rounds).
"""

from __future__ import annotations

import resource
import sys
import tracemalloc
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from sparse_hessian import TAPE_TARGET, rosen
from timing import compare, fmt_seconds, keep_heap, print_table

import adswitch as ad


def _faults(fn: Callable[[], Any], calls: int = 50) -> float:
    """Minor page faults per call of ``fn``."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def _peak(fn: Callable[[], Any]) -> float:
    """The peak of traced (numpy and Python) memory during one call of ``fn``, in KiB."""
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        fn()
        return (tracemalloc.get_traced_memory()[1] - base) / 1024
    finally:
        tracemalloc.stop()


def rows(n: int, rounds: int) -> list[list[str]]:
    """One row per contender: median time, ratio to one gradient, faults, peak memory."""
    x = np.random.default_rng(0).standard_normal(n)
    v = np.random.default_rng(1).standard_normal(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the tape traces a prepared hessian: warned once)
        hess = ad.prepare(ad.hessian, rosen, x, backend="tape", sparsity="detect")
        hvp = ad.prepare(ad.hvp, rosen, (x,), (v,), backend="tape")
        hess(x), hvp((x,), (v,))
    grad = ad.prepare(ad.gradient, rosen, x, backend="tape")
    contenders: dict[str, Callable[[], Any]] = {
        "gradient": lambda: grad(x),
        "sparse hessian": lambda: hess(x),
        "hvp": lambda: hvp((x,), (v,)),
    }
    times = compare(contenders, rounds=rounds)
    out = []
    for name, fn in contenders.items():
        ratio = times[name] / times["gradient"]
        target = f" (target <= {TAPE_TARGET:.0f}x)" if name == "sparse hessian" else ""
        out.append(
            [
                name,
                fmt_seconds(times[name]),
                f"{ratio:.1f}x{target}",
                f"{_faults(fn):.0f}",
                f"{_peak(fn):.0f} KiB",
            ]
        )
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    header = ["tape, n = " + f"{n:,}", "median", "/ one gradient", "faults/call", "peak"]
    print("default heap")
    print_table(header, rows(n, rounds))
    if keep_heap():
        print("\nheap kept (timing.keep_heap)")
        print_table(header, rows(n, rounds))


if __name__ == "__main__":
    main()
