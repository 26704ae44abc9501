"""Sparse Jacobian of the 2-D Brusselator at N = 32 (issue 22): detection + coloring time,
colors, and the prepared sparse Jacobian on the tape and torch against one evaluation of
f and the dense ad.jacobian (medians of interleaved repeats)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import adswitch as ad
from adswitch.sparse.coloring import color_columns, n_colors
from adswitch.sparse.examples import brusselator

N = 32


def median_s(fn: Callable[[], Any], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    u = np.random.default_rng(0).uniform(0, 1, 2 * N * N)

    def detect() -> Any:
        return color_columns(ad.sparsity(brusselator, u, ad.Const(N)))

    t_detect = median_s(detect)
    colors = n_colors(detect())
    print(
        f"detection + coloring: {t_detect * 1e3:.1f} ms (target <= 50 ms); "
        f"colors {colors} (asdex: 8)"
    )
    t_f = median_s(lambda: brusselator(u, N), 21)
    prep = ad.prepare(ad.jacobian, brusselator, u, ad.Const(N), sparsity="detect", backend="tape")
    t_tape = median_s(lambda: prep(u, ad.Const(N)), 11)
    print(
        f"tape sparse Jacobian {t_tape * 1e3:.2f} ms = {t_tape / t_f:.1f}x one numpy f "
        f"({t_f * 1e6:.0f} us) (target <= 12x)"
    )
    t_dense = median_s(lambda: ad.jacobian(brusselator, u, ad.Const(N), backend="tape"), 3)
    print(
        f"tape dense ad.jacobian {t_dense * 1e3:.0f} ms: sparse is {t_dense / t_tape:.0f}x faster"
    )
    try:
        import torch
    except ImportError:
        return
    ut = torch.tensor(u)
    prep_t = ad.prepare(ad.jacobian, brusselator, ut, ad.Const(N), sparsity="detect")
    t_ts = median_s(lambda: prep_t(ut, ad.Const(N)), 11)
    t_td = median_s(lambda: ad.jacobian(brusselator, ut, ad.Const(N)), 3)
    print(
        f"torch sparse {t_ts * 1e3:.2f} ms, dense {t_td * 1e3:.0f} ms: "
        f"{t_td / t_ts:.0f}x faster (target >= 200x)"
    )


if __name__ == "__main__":
    main()
