"""Side-by-side timing: medians of interleaved repeats, reported as ratios.

The machine is shared and noisy, so every comparison runs its contenders in the
same process, alternating them round by round, and reports the median of each and
their ratio -- never a lone absolute time.
"""

from __future__ import annotations

import ctypes
import gc
import statistics
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any


class RawLossFn:
    """A plain ``fn(values) -> (loss, out_leaves)`` in the engine contract's ``LossFn``
    form, for timing an engine called directly (without the front end)."""

    def __init__(self, fn: Callable[[Sequence[Any]], tuple[Any, list[Any]]]) -> None:
        self.fn = fn
        self.output_structure: Hashable = None

    def __call__(self, values: Sequence[Any], /) -> tuple[Any, list[Any]]:
        return self.fn(values)

    def reuse(self, structure: Hashable, /) -> None:
        self.output_structure = structure


def time_once(fn: Callable[[], Any], inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def calibrate(fn: Callable[[], Any], target_s: float = 0.02) -> int:
    """How many calls make one round last about ``target_s``."""
    fn()
    elapsed = time_once(fn, 1)
    return max(1, min(10_000, int(target_s / max(elapsed, 1e-9))))


def compare(contenders: dict[str, Callable[[], Any]], rounds: int = 15) -> dict[str, float]:
    """Median seconds per call of each contender, measured in alternating rounds."""
    inner = {name: calibrate(fn) for name, fn in contenders.items()}
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    gc_was_enabled = gc.isenabled()
    try:
        for _ in range(rounds):
            for name, fn in contenders.items():
                gc.collect()
                gc.disable()
                samples[name].append(time_once(fn, inner[name]))
                if gc_was_enabled:
                    gc.enable()
    finally:
        if gc_was_enabled:
            gc.enable()
    return {name: statistics.median(values) for name, values in samples.items()}


def compare_batches(
    contenders: dict[str, Callable[[], Any]], rounds: int = 150, batch_s: float = 0.002
) -> dict[str, float]:
    """Median seconds per call, contenders alternating in short batches (~2 ms each).

    The machine is shared: short alternating batches (instead of :func:`compare`'s
    20 ms ones) keep a change of load from landing on one contender only (calls of a
    jitted jax function last tens of microseconds).
    """
    inner = {name: calibrate(fn, batch_s) for name, fn in contenders.items()}
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    gc.collect()
    gc.disable()
    try:
        for r in range(rounds):
            for name in names[r % 2 :] + names[: r % 2]:  # alternate who goes first
                samples[name].append(time_once(contenders[name], inner[name]))
    finally:
        gc.enable()
    return {name: statistics.median(values) for name, values in samples.items()}


def fmt_seconds(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    return f"{seconds * 1e3:.2f} ms"


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A Markdown table, ready to paste into the README."""
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def keep_heap(pad_bytes: int = 64 * 2**20) -> bool:
    """Ask glibc to keep ``pad_bytes`` of free heap instead of returning it to the OS after
    every call (``mallopt(M_TOP_PAD)``, what ``MALLOC_TOP_PAD_`` sets at start-up). For
    this process only -- the benchmark's, never the library's. False where not glibc.

    Why: a gradient of the mlp workload needs about 1.3 MiB at its peak; glibc gives the
    top of the heap back after each call and the next call page-faults it in again (one
    to a few hundred faults, 0.1-1.6 ms of system time per call on this machine, varying
    with what else ran). Numbers with the heap kept show what the code itself costs.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(-2, pad_bytes))  # M_TOP_PAD is -2 in <malloc.h>
    except (OSError, AttributeError):
        return False
