"""adswitch on the autograd engine against HIPS autograd called directly, side by side.

Run: ``python benchmarks/bench_autograd.py``. Prints a Markdown table of medians and
ratios (adswitch / direct), measured in alternating rounds in one process. Contenders:

* ``autograd.grad`` on the same Array-API workload function (``ad.array_namespace`` then
  resolves to adswitch's autograd namespace in both), which isolates adswitch's cost;
* ``autograd.grad`` on the workload hand-written with ``autograd.numpy`` (the engine's own
  idiom; target for tiny: adswitch <= 1.15x of it);
* the engine plugin's ``value_and_grad`` with a hand-built leaf closure, which splits
  adswitch's cost into engine and front end.
"""

from __future__ import annotations

import functools
import os
import sys

# One BLAS thread: on a shared machine multithreaded matmuls make the mlp rows noise.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import autograd
import autograd.numpy as anp
from adswitch_autograd.plugin import AutogradBackend
from timing import RawLossFn, compare, fmt_seconds, print_table
from workloads import WORKLOADS

import adswitch as ad
from adswitch.spec import CallInfo


def tiny_anp(x: Any) -> Any:
    return anp.sum(anp.sin(x) * x)


def chain_anp(x: Any) -> Any:
    for _ in range(50):
        x = anp.tanh(anp.sin(x) * 1.01 + 0.1)
    return anp.sum(x)


def mlp_anp(params: dict[str, Any], x: Any, t: Any) -> Any:
    h = anp.tanh(x @ params["W1"] + params["b1"])
    h = anp.tanh(h @ params["W2"] + params["b2"])
    return anp.mean((h @ params["W3"] + params["b3"] - t) ** 2)


IDIOMS: dict[str, Callable[..., Any]] = {"tiny": tiny_anp, "chain": chain_anp, "mlp": mlp_anp}


def engine_only(loss: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[], Any]:
    """The plugin alone: flat leaves and a closure, no tree walking or checks."""
    flat, rebuild = _flatten(args)
    backend = AutogradBackend()
    active = [True] * len(flat)
    info = CallInfo()

    def fn(leaves: Any) -> Any:
        value = loss(*rebuild(leaves))
        return value, [value]

    return lambda: backend.value_and_grad(RawLossFn(fn), flat, active, info)


def _flatten(args: tuple[Any, ...]) -> tuple[list[Any], Callable[[Any], tuple[Any, ...]]]:
    flat: list[Any] = []
    layout: list[Any] = []
    for arg in args:
        if isinstance(arg, dict):
            keys = list(arg)
            layout.append(keys)
            flat.extend(arg[k] for k in keys)
        else:
            layout.append(None)
            flat.append(arg)

    def rebuild(leaves: Any) -> tuple[Any, ...]:
        out, i = [], 0
        for keys in layout:
            if keys is None:
                out.append(leaves[i])
                i += 1
            else:
                out.append(dict(zip(keys, leaves[i : i + len(keys)], strict=True)))
                i += len(keys)
        return tuple(out)

    return flat, rebuild


def _adswitch(loss: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[], Any]:
    return lambda: ad.gradient(loss, *args, backend="autograd")


def _direct(loss: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[], Any]:
    """``autograd.grad`` with respect to every argument, as adswitch differentiates them."""
    argnums = tuple(range(len(args)))
    return lambda: autograd.grad(loss, argnums)(*args)


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for name in ("tiny", "chain", "mlp", "nested"):
        loss, make = WORKLOADS[name]
        args = make(rng)
        prepared = ad.prepare(ad.gradient, loss, *args, backend="autograd")
        contenders: dict[str, Callable[[], Any]] = {
            "adswitch": _adswitch(loss, args),
            "prepared": functools.partial(prepared, *args),
            "engine": engine_only(loss, args),
            "grad(same f)": _direct(loss, args),
        }
        if name in IDIOMS:
            contenders["grad(anp f)"] = _direct(IDIOMS[name], args)
        if name == "nested":
            # nested_loss calls ad.gradient inside; on raw autograd that inner call is
            # adswitch's again, so only adswitch vs its engine is meaningful here.
            del contenders["grad(same f)"]
        times = compare(contenders, rounds=25)
        base = times.get("grad(anp f)", times.get("grad(same f)"))
        rows.append(
            [
                name,
                fmt_seconds(times["adswitch"]),
                fmt_seconds(times["engine"]),
                fmt_seconds(times["grad(same f)"]) if "grad(same f)" in times else "-",
                fmt_seconds(times["grad(anp f)"]) if "grad(anp f)" in times else "-",
                f"{times['adswitch'] / base:.2f}x" if base else "-",
                f"{times['adswitch'] / times['grad(same f)']:.2f}x"
                if "grad(same f)" in times
                else "-",
                f"{(times['adswitch'] - times['engine']) * 1e6:.0f} µs",
                fmt_seconds(times["prepared"]),
                f"{times['prepared'] / base:.2f}x" + (" (≤ 1.05x)" if name == "tiny" else "")
                if base
                else "-",
            ]
        )
    print_table(
        [
            "workload",
            "adswitch",
            "engine only",
            "autograd.grad (same f)",
            "autograd.grad (anp f)",
            "adswitch / anp idiom",
            "adswitch / same f",
            "front-end cost",
            "prepared",
            "prepared / anp idiom",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
