"""adswitch on the torch engine against ``torch.autograd.grad`` called directly.

Three contenders per workload, measured side by side in one run (medians of
interleaved rounds, see ``timing.py``), every parameter a float64 torch tensor:

* ``torch``: the engine's own idiom, ``torch.autograd.grad(loss(*leaves), leaves)``
  on tensors that already require grad;
* ``engine``: ``TorchBackend.value_and_grad`` called with a hand-written ``fn`` --
  the plugin's cost without the front end;
* ``adswitch``: ``ad.gradient(loss, ..., backend="torch")`` -- everything.

The ratios ``engine/torch`` and ``adswitch/torch`` are ratios of medians; "paired
ratio" is the median of the per-round ``adswitch/torch`` ratios (robust on a shared,
noisy machine); "front end" is ``adswitch - engine``, what the front end costs.
Run: ``python benchmarks/bench_torch.py [tiny mlp ...]`` (``BENCH_TORCH_THREADS`` sets
torch's intra-op threads, default 1). On a GPU: ``BENCH_TORCH_DEVICE=cuda python
benchmarks/bench_torch.py tiny mlp wide`` (``wide``: width and batch 4096, float32).
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))

from adswitch_torch import TorchBackend
from timing import calibrate, fmt_seconds, print_table, time_once
from workloads import WORKLOADS

import adswitch as ad
from adswitch.spec import CallInfo

TARGETS = {"tiny": 1.15, "mlp": 1.03, "wide": 1.03}
DEVICE = os.environ.get("BENCH_TORCH_DEVICE", "cpu")


def make_wide(rng: np.random.Generator) -> tuple[Any, ...]:
    """The mlp workload at a size where a GPU is busy: width and batch 4096, float32."""
    n = 4096
    params = {
        "W1": (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32),
        "b1": np.zeros(n, dtype=np.float32),
        "W2": (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32),
        "b2": np.zeros(n, dtype=np.float32),
        "W3": (rng.standard_normal((n, 1)) / np.sqrt(n)).astype(np.float32),
        "b3": np.zeros(1, dtype=np.float32),
    }
    x = rng.standard_normal((n, n), dtype=np.float32)
    return params, x, rng.standard_normal((n, 1), dtype=np.float32)


ALL_WORKLOADS = {**WORKLOADS, "wide": (WORKLOADS["mlp"][0], make_wide)}


def as_tensors(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: as_tensors(v) for k, v in tree.items()}
    return torch.from_numpy(np.ascontiguousarray(tree)).to(DEVICE)


def synchronized(fn: Callable[[], Any]) -> Callable[[], Any]:
    """On a GPU, a call is over when its kernels are: wait for them."""
    if DEVICE == "cpu":
        return fn

    def call() -> Any:
        out = fn()
        torch.cuda.synchronize()
        return out

    return call


def contenders(name: str) -> dict[str, Callable[[], Any]]:
    loss, make_args = ALL_WORKLOADS[name]
    args = [as_tensors(a) for a in make_args(np.random.default_rng(0))]
    first, rest = args[0], args[1:]
    keys = list(first) if isinstance(first, dict) else None
    leaves = list(first.values()) if keys else [first]
    traced = [leaf.detach().requires_grad_() for leaf in leaves]

    def rebuild(values: list[Any]) -> Any:
        return dict(zip(keys, values, strict=True)) if keys else values[0]

    def raw() -> Any:
        return torch.autograd.grad(loss(rebuild(traced), *rest), traced)

    backend = TorchBackend()
    all_leaves = [*leaves, *rest]
    active = [True] * len(leaves) + [False] * len(rest)
    info = CallInfo(entry="gradient")
    n = len(leaves)

    def fn(values: Sequence[Any]) -> tuple[Any, list[Any]]:
        out = loss(rebuild(list(values[:n])), *values[n:])
        return out, [out]

    def engine() -> Any:
        return backend.value_and_grad(fn, all_leaves, active, info)

    consts = [ad.Const(r) for r in rest]

    def front() -> Any:
        return ad.gradient(loss, first, *consts, backend="torch")

    # Same numbers from all three before timing anything.
    expected = raw()
    got_engine = engine()[1][:n]
    got = front()[0]
    got_front = [got[k] for k in keys] if keys else [got]
    tol = 1e-12 if first_dtype(first) == torch.float64 else 1e-5
    for e, a, b in zip(expected, got_engine, got_front, strict=True):
        torch.testing.assert_close(a, e, rtol=tol, atol=tol)
        torch.testing.assert_close(b, e, rtol=tol, atol=tol)
    return {
        "torch": synchronized(raw),
        "engine": synchronized(engine),
        "adswitch": synchronized(front),
    }


def first_dtype(tree: Any) -> Any:
    return next(iter(tree.values())).dtype if isinstance(tree, dict) else tree.dtype


def paired(contenders: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    """Seconds per call of each contender, one sample per round, contenders alternating
    within each round (so a slow spell on the shared machine hits all of them)."""
    inner = {name: calibrate(fn) for name, fn in contenders.items()}
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            gc.collect()
            gc.disable()
            try:
                samples[name].append(time_once(fn, inner[name]))
            finally:
                gc.enable()
    return samples


def main(names: list[str], rounds: int = 31) -> None:
    rows = []
    for name in names:
        samples = paired(contenders(name), rounds)
        med = {k: statistics.median(v) for k, v in samples.items()}
        base = med["torch"]
        ratio = med["adswitch"] / base
        # Median of per-round ratios: robust to load that drifts between rounds.
        paired_ratio = statistics.median(
            a / t for a, t in zip(samples["adswitch"], samples["torch"], strict=True)
        )
        target = TARGETS.get(name)
        verdict = "" if target is None else ("ok" if ratio <= target else "over")
        rows.append(
            [
                name,
                fmt_seconds(base),
                fmt_seconds(med["engine"]),
                fmt_seconds(med["adswitch"]),
                f"{med['engine'] / base:.3f}",
                f"{ratio:.3f}",
                f"{paired_ratio:.3f}",
                fmt_seconds(max(med["adswitch"] - med["engine"], 0.0)),
                f"≤ {target} {verdict}" if target else "-",
            ]
        )
    print(
        f"torch {torch.__version__} on {DEVICE}, {torch.get_num_threads()} threads, "
        f"{rounds} rounds (wide: float32, else float64)\n"
    )
    print_table(
        [
            "workload",
            "torch.autograd.grad",
            "engine",
            "adswitch",
            "engine/torch",
            "adswitch/torch",
            "paired ratio",
            "front end",
            "target",
        ],
        rows,
    )


if __name__ == "__main__":
    # One intra-op thread: on a shared two-core machine a second thread mostly adds
    # scheduling noise, and both contenders run the same kernels either way.
    torch.set_num_threads(int(os.environ.get("BENCH_TORCH_THREADS", "1")))
    main(sys.argv[1:] or ["tiny", "mlp"])
