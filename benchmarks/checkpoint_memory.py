"""Peak memory of a 64-layer mlp gradient with and without ``ad.checkpoint`` (issue 20).

The model: ``h = tanh(h @ W_k + b_k)``, 64 layers of width 256, a batch of 64, loss
``sum(h ** 2)``. Variants: ``plain``; ``layer`` (each layer checkpointed: only the layer
inputs are kept -- on a one-activation layer that is what the plain tape keeps anyway);
``segment`` (the classic sqrt(n) scheme: 8 checkpoints of 8 layers each, so the forward
pass keeps 8 segment inputs and the backward pass holds one segment's activations at a
time). Gradients with respect to the input only (``wrt=x``: the weights are ``Const``;
the activations are all there is to save) and with respect to everything (``wrt=all``:
the 64 weight gradients, 32 MiB, are part of the result and no checkpoint removes them).

How it measures (honestly for numpy *and* torch's CPU allocator, which tracemalloc does
not see): each variant runs in a fresh subprocess; after a warm-up call (imports,
caches; the big gradient is never taken before) the process's peak resident set is
reset (``echo 5 > /proc/self/clear_refs``, Linux) and the gradient is taken; the
figure is ``VmHWM`` (peak RSS since the reset) minus the RSS at the reset, with glibc
told to map large blocks (see ``_ENV``) so that freed memory leaves the resident set.
On the tape ``tracemalloc``'s peak (numpy's allocations) is given too. Inputs are made
before the reset, so they are not counted.

Usage: ``python benchmarks/checkpoint_memory.py`` (all engines and variants), or
``--engines tape`` / ``--depth 64 --width 256 --batch 64``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc
from typing import Any

import numpy as np

VARIANTS = ("plain", "layer", "segment")

# glibc keeps freed heap memory resident and raises its mmap threshold as blocks are
# freed, so the RSS would not follow what is live; a fixed threshold makes every large
# block an mmap, returned to the system when freed (numpy's and torch's alike).
_ENV = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}


def _status(key: str) -> int:
    """A ``/proc/self/status`` field in bytes (``VmHWM``, ``VmRSS``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _loss(variant: str, depth: int) -> Any:
    import adswitch as ad

    def layer(h: Any, w: Any, b: Any) -> Any:
        return ad.array_namespace(h).tanh(h @ w + b)

    def run(h: Any, ws: list[Any], bs: list[Any]) -> Any:
        for w, b in zip(ws, bs):
            h = step(h, w, b)
        return h

    step = ad.checkpoint(layer) if variant == "layer" else layer
    segment = ad.checkpoint(run)
    size = max(1, round(depth**0.5))

    def loss(x: Any, ws: list[Any], bs: list[Any]) -> Any:
        if variant == "segment":
            h = x
            for s in range(0, depth, size):
                h = segment(h, ws[s : s + size], bs[s : s + size])
        else:
            h = run(x, ws, bs)
        return ad.array_namespace(x).sum(h**2)

    return loss


def _inputs(depth: int, width: int, batch: int) -> tuple[Any, list[Any], list[Any]]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, width))
    ws = [rng.standard_normal((width, width)) / np.sqrt(width) for _ in range(depth)]
    bs = [rng.standard_normal(width) * 0.1 for _ in range(depth)]
    return x, ws, bs


def one(engine: str, variant: str, wrt: str, depth: int, width: int, batch: int) -> dict[str, Any]:
    """One measurement, in this process (run it in a fresh one)."""
    import adswitch as ad

    def grad(x: Any, ws: list[Any], bs: list[Any]) -> Any:
        loss = _loss(variant, len(ws))
        if wrt == "x":
            return ad.gradient(loss, x, ad.Const(ws), ad.Const(bs), backend=engine)
        return ad.gradient(loss, x, ws, bs, backend=engine)

    small = _inputs(4, 8, 2)
    grad(*small)  # warm-up: imports, caches
    x, ws, bs = _inputs(depth, width, batch)
    tracemalloc.start()
    tracemalloc.reset_peak()
    base_traced = tracemalloc.get_traced_memory()[0]
    _reset_peak()
    base = _status("VmRSS")
    start = time.perf_counter()
    result = grad(x, ws, bs)
    seconds = time.perf_counter() - start
    peak = _status("VmHWM") - base
    traced = tracemalloc.get_traced_memory()[1] - base_traced
    tracemalloc.stop()
    gx = np.asarray(result[0])
    return {
        "engine": engine, "variant": variant, "wrt": wrt, "peak_rss": peak,
        "peak_traced": traced, "seconds": seconds, "gx_norm": float(np.linalg.norm(gx)),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="tape,torch")
    parser.add_argument("--depth", type=int, default=64)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--one", nargs=3, metavar=("ENGINE", "VARIANT", "WRT"))
    args = parser.parse_args(argv)
    shape = (args.depth, args.width, args.batch)
    if args.one:
        engine, variant, wrt = args.one
        print(json.dumps(one(engine, variant, wrt, *shape)))
        return 0
    mib = 1024.0 * 1024.0
    print(
        f"{args.depth}-layer mlp, width {args.width}, batch {args.batch}: peak MiB over "
        "the inputs (RSS high-water mark; tracemalloc for numpy), time of one gradient"
    )
    print(
        f"{'engine':8} {'wrt':4} {'variant':8} {'peak RSS':>9} {'traced':>8} {'vs plain':>9}"
        f" {'seconds':>8}  |grad x|"
    )
    failed = 0
    for engine in args.engines.split(","):
        for wrt in ("x", "all"):
            plain = None
            for variant in VARIANTS:
                cmd = [sys.executable, __file__, "--one", engine, variant, wrt,
                       "--depth", str(args.depth), "--width", str(args.width),
                       "--batch", str(args.batch)]  # fmt: skip
                done = subprocess.run(cmd, capture_output=True, text=True, env=_ENV)
                if done.returncode:
                    print(f"{engine:8} {wrt:4} {variant:8} failed: {done.stderr[-400:]}")
                    failed += 1
                    continue
                r = json.loads(done.stdout.strip().splitlines()[-1])
                plain = r["peak_rss"] if variant == "plain" else plain
                ratio = r["peak_rss"] / plain if plain else float("nan")
                traced = f"{r['peak_traced'] / mib:8.1f}" if engine == "tape" else f"{'-':>8}"
                print(
                    f"{engine:8} {wrt:4} {variant:8} {r['peak_rss'] / mib:9.1f} {traced} "
                    f"{ratio:9.2f} {r['seconds']:8.3f}  {r['gx_norm']:.12g}"
                )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
