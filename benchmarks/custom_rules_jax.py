"""A user rule through adswitch on jax against ``jax.custom_vjp`` itself, side by side.

Run: ``python benchmarks/custom_rules_jax.py``. Prints a Markdown table of medians of
interleaved short batches (float32 jax arrays in, jax's default mode) and the ratios.
For each workload these contenders compute the same gradient:

* ``ad.custom_vjp``: ``ad.gradient(loss, ..., backend="jax")`` with the rule written once
  with ``ad.custom_vjp`` (issue 20), plain and prepared (``ad.prepare``);
* ``jax.custom_vjp in ad``: the same ``ad.gradient`` calls whose rule is a
  ``jax.custom_vjp`` around the same xp code: the ratio ``ad.custom_vjp`` / this is what
  adswitch's rule layer costs (target: <= 1.1x);
* ``jax.jit(jax.grad)``: jax's own rule in jax's own idiom, jitted by hand, without
  adswitch; and ``ad in jax.jit``: the ``ad.custom_vjp`` call inside the user's
  ``jax.jit`` (there adswitch's Python runs only while jax traces).

Workloads: ``tiny`` -- a stable logsumexp of 10 floats, times 2; ``mlp`` -- the
64 -> 256 -> 256 -> 1 tanh network (batch 128) whose two hidden layers are a rule
(``tanh(x W + b)`` with its vjp).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax
import jax.numpy as jnp
from timing import compare_batches, fmt_seconds, print_table
from workloads import make_mlp

import adswitch as ad

TARGET = 1.1  # ad.custom_vjp against jax.custom_vjp, both through adswitch
_block: Any = jax.block_until_ready  # untyped in jax

# The rules, written once against xp, and the losses: those of benchmarks/custom_rules.py
# (the torch/autograd side of this comparison).
from custom_rules import _layer_bwd, _lse_bwd, mlp_loss, tiny_loss  # noqa: E402
from custom_rules import layer as ad_layer  # noqa: E402
from custom_rules import lse as ad_lse  # noqa: E402


def ad_rules() -> tuple[Any, Any]:
    return ad_lse, ad_layer


def jax_rules(xp: bool) -> tuple[Any, Any]:
    """``jax.custom_vjp`` rules: the same xp code (``xp=True``), or jax's own idiom."""

    def lse_value(x: Any) -> Any:
        return ad_lse.fun(x) if xp else jax.nn.logsumexp(x)

    def lse_bwd(res: Any, ct: Any) -> tuple[Any]:
        x, out = res
        return _lse_bwd(res, ct) if xp else (jnp.exp(x - out) * ct,)

    lse = jax.custom_vjp(lse_value)
    lse.defvjp(lambda x: (lse_value(x), (x, lse_value(x))), lse_bwd)

    def layer_value(x: Any, W: Any, b: Any) -> Any:
        return ad_layer.fun(x, W, b) if xp else jnp.tanh(x @ W + b)

    def layer_bwd(res: Any, ct: Any) -> tuple[Any, Any, Any]:
        x, W, h = res
        if xp:
            return _layer_bwd(res, ct)
        d = ct * (1.0 - h * h)
        return d @ W.T, x.T @ d, d.sum(0)

    def layer_fwd(x: Any, W: Any, b: Any) -> tuple[Any, Any]:
        h = layer_value(x, W, b)
        return h, (x, W, h)

    layer = jax.custom_vjp(layer_value)
    layer.defvjp(layer_fwd, layer_bwd)
    return lse, layer


def contenders(workload: str) -> tuple[dict[str, Callable[[], Any]], dict[str, Any]]:
    """The timed calls, and their gradients (checked equal before timing)."""
    rng = np.random.default_rng(0)
    raw = (rng.standard_normal(10) * 3.0,) if workload == "tiny" else make_mlp(rng)
    args: tuple[Any, ...] = jax.tree.map(lambda a: jnp.asarray(a, dtype=jnp.float32), raw)
    pick = 0 if workload == "tiny" else 1
    build = tiny_loss if workload == "tiny" else mlp_loss
    ours = build(ad_rules()[pick])
    same = build(jax_rules(xp=True)[pick])
    theirs = build(jax_rules(xp=False)[pick])
    wrapped = (args[0], *(ad.Const(a) for a in args[1:]))
    p_ours = ad.prepare(ad.gradient, ours, *wrapped, backend="jax")
    p_same = ad.prepare(ad.gradient, same, *wrapped, backend="jax")
    direct = jax.jit(jax.grad(theirs))
    inside = jax.jit(
        lambda *a: ad.gradient(ours, a[0], *(ad.Const(v) for v in a[1:]), backend="jax")[0]
    )
    calls: dict[str, Callable[[], Any]] = {
        "ad.custom_vjp": lambda: _block(ad.gradient(ours, *wrapped, backend="jax")[0]),
        "jax.custom_vjp in ad": lambda: _block(ad.gradient(same, *wrapped, backend="jax")[0]),
        "ad.custom_vjp prepared": lambda: _block(p_ours(*wrapped)[0]),
        "jax.custom_vjp prepared": lambda: _block(p_same(*wrapped)[0]),
        "ad in jax.jit": lambda: _block(inside(*args)),
        "jax.jit(jax.grad)": lambda: _block(direct(*args)),
    }
    return calls, {name: fn() for name, fn in calls.items()}


def _check(grads: dict[str, Any]) -> None:
    ref = jax.tree.leaves(grads["jax.jit(jax.grad)"])
    for name, g in grads.items():
        for a, b in zip(jax.tree.leaves(g), ref):
            np.testing.assert_allclose(
                np.asarray(a), np.asarray(b), rtol=2e-4, atol=1e-6, err_msg=name
            )


def _cell(t: dict[str, float], name: str, base: str) -> str:
    return f"{fmt_seconds(t[name])} ({t[name] / t[base]:.2f}x)"


def main() -> None:
    rows = []
    for workload in ("tiny", "mlp"):
        calls, grads = contenders(workload)
        _check(grads)
        t = compare_batches(calls)
        rows.append(
            [
                workload,
                _cell(t, "ad.custom_vjp", "jax.custom_vjp in ad"),
                fmt_seconds(t["jax.custom_vjp in ad"]),
                _cell(t, "ad.custom_vjp prepared", "jax.custom_vjp prepared"),
                fmt_seconds(t["jax.custom_vjp prepared"]),
                _cell(t, "ad in jax.jit", "jax.jit(jax.grad)"),
                fmt_seconds(t["jax.jit(jax.grad)"]),
                f"{t['ad.custom_vjp'] / t['jax.jit(jax.grad)']:.2f}x",
            ]
        )
    print(f"float32 jax arrays, medians; rule-layer target <= {TARGET}x (ratios in brackets)")
    print_table(
        [
            "workload",
            "ad.custom_vjp (/ jax rule in ad)",
            "jax.custom_vjp in ad",
            "prepared ad.custom_vjp (/ jax rule)",
            "prepared jax.custom_vjp",
            "ad in jax.jit (/ jax direct)",
            "jax.jit(jax.grad)",
            "plain ad.custom_vjp / jax direct",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
