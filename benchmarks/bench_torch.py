"""adswitch on the torch engine against ``torch.autograd.grad`` called directly.

Three contenders per workload, measured side by side in one run, every parameter a
float64 torch tensor. Calls alternate one by one (the medians of ``timing.compare``'s
20 ms rounds swung by 2x under the shared machine's load; single alternating calls
keep every contender under the same load):

* ``torch``: the engine's own idiom, ``torch.autograd.grad(loss(*leaves), leaves)``
  on tensors that already require grad;
* ``engine``: ``TorchBackend.value_and_grad`` called with a hand-written ``fn`` --
  the plugin's cost without the front end;
* ``adswitch``: ``ad.gradient(loss, ..., backend="torch")`` -- everything;
* ``prepared``: the same call through ``ad.prepare(ad.gradient, loss, ...)``, prepared once
  before timing (the structure checked once; the engine keeps what it can in
  ``CallInfo.prepared``).

The ratios ``engine/torch``, ``adswitch/torch`` and ``prepared/torch`` are ratios of median
call times;
"10% quantiles" is the same ratio on the fastest tenth of the calls (what the code
costs when nothing else runs); "front end" is ``adswitch - engine``, what the front end
costs.
Run: ``python benchmarks/bench_torch.py [tiny mlp ...] [--keep-heap]``
(``BENCH_TORCH_THREADS`` sets torch's intra-op threads, default 1; ``--keep-heap`` adds
a second table with glibc keeping its free heap, see ``timing.keep_heap``). On a GPU:
``BENCH_TORCH_DEVICE=cuda python benchmarks/bench_torch.py tiny mlp wide`` (``wide``:
width and batch 4096, float32).
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))

from adswitch_torch import TorchBackend
from timing import RawLossFn, fmt_seconds, keep_heap, print_table
from workloads import WORKLOADS, mlp_forward

import adswitch as ad
from adswitch.spec import CallInfo

TARGETS = {"tiny": 1.15, "mlp": 1.03, "wide": 1.03}
PREPARED_TARGETS = {"tiny": 1.1, "mlp": 1.02}  # (issue 23: tiny prepared ≤ 1.1x)
KEEP_HEAP = False
DEVICE = os.environ.get("BENCH_TORCH_DEVICE", "cpu")


def make_wide(rng: np.random.Generator) -> tuple[Any, ...]:
    """The mlp workload at a size where a GPU is busy: width and batch 4096 (or
    ``BENCH_TORCH_WIDE``), float32."""
    n = int(os.environ.get("BENCH_TORCH_WIDE", "4096"))
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


def raw_nested_loss(params: dict[str, Any], x: Any, t: Any) -> Any:
    """``nested_loss`` in torch's own idiom: the inner gradient keeps its graph."""
    x_ = x.detach().requires_grad_()
    (dx,) = torch.autograd.grad(mlp_forward(params, x_).sum(), x_, create_graph=True)
    return ((dx - t) ** 2).mean()


# Workloads whose loss calls ad.gradient inside: the engine idiom needs its own version,
# and the engine contender is left out (outside the front end the inner call would not
# know it is nested).
RAW_LOSSES = {"nested": raw_nested_loss}


def contenders(name: str) -> dict[str, Callable[[], Any]]:
    loss, make_args = ALL_WORKLOADS[name]
    raw_loss: Callable[..., Any] = RAW_LOSSES.get(name, loss)
    args = [as_tensors(a) for a in make_args(np.random.default_rng(0))]
    first, rest = args[0], args[1:]
    keys = list(first) if isinstance(first, dict) else None
    leaves = list(first.values()) if keys else [first]
    traced = [leaf.detach().requires_grad_() for leaf in leaves]

    def rebuild(values: list[Any]) -> Any:
        return dict(zip(keys, values, strict=True)) if keys else values[0]

    # nested: d/dx of the network does not depend on the last bias (zeros, like adswitch).
    unused = name in RAW_LOSSES

    def raw() -> Any:
        out = raw_loss(rebuild(traced), *rest)
        return torch.autograd.grad(out, traced, allow_unused=unused, materialize_grads=unused)

    backend = TorchBackend()
    all_leaves = [*leaves, *rest]
    active = [True] * len(leaves) + [False] * len(rest)
    info = CallInfo(entry="gradient")
    n = len(leaves)

    def fn(values: Sequence[Any]) -> tuple[Any, list[Any]]:
        out = loss(rebuild(list(values[:n])), *values[n:])
        return out, [out]

    raw_fn = RawLossFn(fn)

    def engine() -> Any:
        return backend.value_and_grad(raw_fn, all_leaves, active, info)

    consts = [ad.Const(r) for r in rest]

    def front() -> Any:
        return ad.gradient(loss, first, *consts, backend="torch")

    prep = ad.prepare(ad.gradient, loss, first, *consts, backend="torch")

    def prepared() -> Any:
        return prep(first, *consts)

    # Same numbers from every contender before timing anything.
    expected = raw()
    results = []
    for call in (front, prepared):
        got = call()[0]
        results.append([got[k] for k in keys] if keys else [got])
    timed = {
        "torch": synchronized(raw),
        "adswitch": synchronized(front),
        "prepared": synchronized(prepared),
    }
    if name not in RAW_LOSSES:
        results.append(engine()[1][:n])
        timed["engine"] = synchronized(engine)
    tol = 1e-12 if first_dtype(first) == torch.float64 else 1e-5
    for result in results:
        for e, a in zip(expected, result, strict=True):
            torch.testing.assert_close(a, e, rtol=tol, atol=tol)
    return timed


def first_dtype(tree: Any) -> Any:
    return next(iter(tree.values())).dtype if isinstance(tree, dict) else tree.dtype


def interleaved(contenders: dict[str, Callable[[], Any]], seconds: float) -> dict[str, list[float]]:
    """Seconds of each single call, contenders alternating call by call (forward, then
    backward order) for about ``seconds``: a slow spell on the shared machine hits all
    of them alike. The garbage collector runs between rounds, never inside a timing."""
    names = list(contenders)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for fn in contenders.values():  # warm up: first-call imports, allocator pools
        for _ in range(3):
            fn()
    clock = time.perf_counter
    deadline = clock() + seconds
    rounds = 0
    gc.collect()
    gc.disable()
    try:
        while clock() < deadline or rounds < 20:
            for name in names if rounds % 2 == 0 else names[::-1]:
                fn = contenders[name]
                start = clock()
                fn()
                samples[name].append(clock() - start)
            rounds += 1
            if rounds % 500 == 0:
                gc.enable()
                gc.collect()
                gc.disable()
    finally:
        gc.enable()
    return samples


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(names: list[str], seconds: float = 8.0) -> None:
    """The table as the machine is, then (``--keep-heap``) once more with glibc keeping
    its free heap (``timing.keep_heap``)."""
    table(names, seconds)
    if KEEP_HEAP and keep_heap():
        print("\nSame, with glibc keeping 64 MiB of free heap (mallopt(M_TOP_PAD)):\n")
        table(names, seconds)


def table(names: list[str], seconds: float) -> None:
    rows = []
    for name in names:
        samples = interleaved(contenders(name), seconds)
        med = {k: statistics.median(v) for k, v in samples.items()}
        low = {k: quantile(v, 0.1) for k, v in samples.items()}
        base = med["torch"]
        ratio = med["adswitch"] / base
        prepared = med["prepared"] / base
        engine = med.get("engine")
        target = TARGETS.get(name)
        verdict = "" if target is None else ("ok" if ratio <= target else "over")
        prepared_target = PREPARED_TARGETS.get(name)
        prepared_verdict = (
            "" if prepared_target is None else ("ok" if prepared <= prepared_target else "over")
        )
        rows.append(
            [
                name,
                str(len(samples["torch"])),
                fmt_seconds(base),
                fmt_seconds(engine) if engine else "-",
                fmt_seconds(med["adswitch"]),
                f"{engine / base:.3f}" if engine else "-",
                f"{ratio:.3f}",
                f"{low['adswitch'] / low['torch']:.3f}",
                fmt_seconds(max(med["adswitch"] - engine, 0.0)) if engine else "-",
                f"≤ {target} {verdict}" if target else "-",
                fmt_seconds(med["prepared"]),
                f"{prepared:.3f}",
                f"{low['prepared'] / low['torch']:.3f}",
                f"≤ {prepared_target} {prepared_verdict}" if prepared_target else "-",
            ]
        )
    print(
        f"torch {torch.__version__} on {DEVICE}, {torch.get_num_threads()} threads "
        f"(wide: float32, else float64)\n"
    )
    print_table(
        [
            "workload",
            "calls each",
            "torch.autograd.grad",
            "engine",
            "adswitch",
            "engine/torch",
            "adswitch/torch",
            "same, 10% quantiles",
            "front end",
            "target",
            "prepared",
            "prepared/torch",
            "same, 10% quantiles",
            "prepared target",
        ],
        rows,
    )


if __name__ == "__main__":
    # One intra-op thread: on a shared two-core machine a second thread mostly adds
    # scheduling noise, and both contenders run the same kernels either way.
    torch.set_num_threads(int(os.environ.get("BENCH_TORCH_THREADS", "1")))
    KEEP_HEAP = "--keep-heap" in sys.argv
    main([a for a in sys.argv[1:] if not a.startswith("--")] or ["tiny", "mlp"])
