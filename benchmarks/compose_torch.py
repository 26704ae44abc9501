"""Per-sample gradients inside ``torch.func.vmap``: adswitch against torch's own idiom.

Run: ``python benchmarks/compose_torch.py [rounds]``. The mlp workload (``workloads.py``:
64 -> 256 -> 256 -> 1 tanh, float64) with a batch of 64 samples; each contender computes
every sample's gradient of the squared error with respect to all parameters, in one
process, alternating round by round (``timing.compare``), medians:

* ``vmap(ad.gradient)``: ``torch.func.vmap`` of ``ad.gradient(mlp_loss, params,
  Const(x), Const(t), backend="torch")`` (the engine runs ``torch.func.vjp`` inside);
* ``vmap(ad.prepare(gradient))``: the same through a prepared call;
* ``vmap(grad)``: ``torch.func.vmap(torch.func.grad(mlp_loss), in_dims=(None, 0, 0))``.

Target: ``vmap(ad.gradient)`` <= 1.1x ``vmap(grad)`` (issue 23).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import compare, fmt_seconds, print_table
from workloads import make_mlp, mlp_loss

import adswitch as ad

TARGET = 1.1
BATCH = 64


def sample_loss(params: dict[str, Any], x: Any, t: Any) -> Any:
    """One sample's loss: the workload's loss on a batch of one."""
    return mlp_loss(params, x[None], t[None])


def main(rounds: int = 15) -> None:
    import torch

    torch.set_num_threads(1)
    func = torch.func
    params_np, x_np, t_np = make_mlp(np.random.default_rng(0))
    params = {k: torch.from_numpy(v) for k, v in params_np.items()}
    xs, ts = torch.from_numpy(x_np[:BATCH]), torch.from_numpy(t_np[:BATCH])

    def by_adswitch(x: Any, t: Any) -> Any:
        return ad.gradient(sample_loss, params, ad.Const(x), ad.Const(t), backend="torch")[0]

    prepared = ad.prepare(
        ad.gradient, sample_loss, params, ad.Const(xs[0]), ad.Const(ts[0]), backend="torch"
    )

    def by_prepared(x: Any, t: Any) -> Any:
        return prepared(params, ad.Const(x), ad.Const(t))[0]

    adswitch_vmap = func.vmap(by_adswitch)
    prepared_vmap = func.vmap(by_prepared)
    torch_vmap = func.vmap(func.grad(sample_loss), in_dims=(None, 0, 0))

    # the same numbers first: a timing of a wrong result means nothing
    want = torch_vmap(params, xs, ts)
    for got in (adswitch_vmap(xs, ts), prepared_vmap(xs, ts)):
        for k in want:
            torch.testing.assert_close(got[k], want[k], rtol=1e-10, atol=1e-12)

    medians = compare(
        {
            "vmap(ad.gradient)": lambda: adswitch_vmap(xs, ts),
            "vmap(ad.prepare(gradient))": lambda: prepared_vmap(xs, ts),
            "vmap(grad)": lambda: torch_vmap(params, xs, ts),
        },
        rounds=rounds,
    )
    base = medians["vmap(grad)"]
    rows = []
    for name, seconds in medians.items():
        ratio = seconds / base
        target = f"<= {TARGET}x" if name != "vmap(grad)" else "(baseline)"
        verdict = "" if name == "vmap(grad)" else ("met" if ratio <= TARGET else "MISSED")
        rows.append([name, fmt_seconds(seconds), f"{ratio:.2f}x", target, verdict])
    print(f"torch {torch.__version__}, mlp workload, per-sample gradients of {BATCH} samples")
    print_table(["contender", "median", "ratio", "target", ""], rows)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
