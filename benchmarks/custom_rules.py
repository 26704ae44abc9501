"""A user rule through adswitch against the engine's own rule mechanism, side by side.

Run: ``python benchmarks/custom_rules.py [torch] [autograd] [tape]``. Prints a Markdown
table of medians and ratios, measured in alternating rounds in one process. For each
engine and workload three contenders compute the same gradient:

* ``ad.custom_vjp``: ``ad.gradient(loss, ..., backend=E)`` with the rule written once
  with ``ad.custom_vjp`` (what this issue adds);
* ``engine rule in ad``: the same ``ad.gradient`` call whose rule is the engine's own
  (``torch.autograd.Function``, autograd's ``primitive``/``defvjp``) around the same xp
  code, which isolates what adswitch's rule layer costs (target: <= 1.1x);
* ``engine direct`` (torch, autograd): the engine's own rule written in its own idiom
  (torch / autograd.numpy calls) and its own gradient, without adswitch: the whole cost
  of going through adswitch and its namespace.

Workloads: ``tiny`` -- a stable logsumexp of 10 floats, times 2; ``mlp`` -- the README's
64 -> 256 -> 256 -> 1 tanh network (batch 128) whose two hidden layers are a rule
(``tanh(x W + b)`` with its vjp).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import compare, fmt_seconds, print_table
from workloads import make_mlp

import adswitch as ad

# --- the rules, written once against xp ------------------------------------------------


@ad.custom_vjp
def lse(x: Any) -> Any:
    xp = ad.array_namespace(x)
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m)))


def _lse_fwd(x: Any) -> tuple[Any, Any]:
    out = lse(x)
    return out, (x, out)


def _lse_bwd(res: Any, ct: Any) -> tuple[Any]:
    x, out = res
    return (ad.array_namespace(x).exp(x - out) * ct,)


lse.defvjp(_lse_fwd, _lse_bwd)


@ad.custom_vjp
def layer(x: Any, W: Any, b: Any) -> Any:
    return ad.array_namespace(x).tanh(x @ W + b)


def _layer_fwd(x: Any, W: Any, b: Any) -> tuple[Any, Any]:
    h = layer(x, W, b)
    return h, (x, W, h)


def _layer_bwd(res: Any, ct: Any) -> tuple[Any, Any, Any]:
    x, W, h = res
    xp = ad.array_namespace(h)
    d = ct * (1.0 - h * h)
    return d @ xp.matrix_transpose(W), xp.matrix_transpose(x) @ d, xp.sum(d, axis=0)


layer.defvjp(_layer_fwd, _layer_bwd)


def tiny_loss(rule: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda x: rule(x) * 2.0


def mlp_loss(rule: Callable[..., Any]) -> Callable[..., Any]:
    def loss(p: dict[str, Any], x: Any, t: Any) -> Any:
        xp = ad.array_namespace(p["W1"])
        h = rule(x, p["W1"], p["b1"])
        h = rule(h, p["W2"], p["b2"])
        return xp.mean((h @ p["W3"] + p["b3"] - t) ** 2)

    return loss


# --- the engines' own rules -------------------------------------------------------------
#
# ``xp=True``: the bodies are the same xp code as the adswitch rule (``lse.fun``,
# ``_lse_bwd``...), so the ratio is the rule layer's cost alone; ``xp=False``: the engine's
# own idiom (torch/autograd.numpy calls), as a user of that engine writes it.


def torch_rules(xp: bool) -> tuple[Any, Any]:
    import torch

    class Lse(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            if xp:
                out = lse.fun(x)
            else:
                m = x.max()
                out = m + torch.log(torch.exp(x - m).sum())
            ctx.save_for_backward(x, out)
            return out

        @staticmethod
        def backward(ctx: Any, ct: Any) -> Any:
            x, out = ctx.saved_tensors
            return _lse_bwd((x, out), ct)[0] if xp else torch.exp(x - out) * ct

    class Layer(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, W: Any, b: Any) -> Any:
            h = layer.fun(x, W, b) if xp else torch.tanh(x @ W + b)
            ctx.save_for_backward(x, W, h)
            return h

        @staticmethod
        def backward(ctx: Any, ct: Any) -> Any:
            x, W, h = ctx.saved_tensors
            if xp:
                return _layer_bwd((x, W, h), ct)
            d = ct * (1.0 - h * h)
            return d @ W.T, x.T @ d, d.sum(0)

    return Lse.apply, Layer.apply


def autograd_rules(xp: bool) -> tuple[Any, Any]:
    import autograd.numpy as anp
    from autograd.extend import defvjp, primitive

    @primitive  # type: ignore[untyped-decorator]
    def a_lse(x: Any) -> Any:
        if xp:
            return lse.fun(x)
        m = anp.max(x)
        return m + anp.log(anp.sum(anp.exp(x - m)))

    defvjp(a_lse, lambda out, x: lambda ct: _lse_bwd((x, out), ct)[0])

    @primitive  # type: ignore[untyped-decorator]
    def a_layer(x: Any, W: Any, b: Any) -> Any:
        return layer.fun(x, W, b) if xp else anp.tanh(x @ W + b)

    def _d(h: Any, ct: Any) -> Any:
        return ct * (1.0 - h * h)

    defvjp(
        a_layer,
        lambda h, x, W, b: lambda ct: _d(h, ct) @ W.T,
        lambda h, x, W, b: lambda ct: x.T @ _d(h, ct),
        lambda h, x, W, b: lambda ct: anp.sum(_d(h, ct), axis=0),
    )
    return a_lse, a_layer


def contenders(engine: str, workload: str) -> dict[str, Callable[[], Any]]:
    rng = np.random.default_rng(0)
    if workload == "tiny":
        args: tuple[Any, ...] = (rng.standard_normal(10) * 3.0,)
        ours, build = lse, tiny_loss
    else:
        args, ours, build = make_mlp(rng), layer, mlp_loss
    out: dict[str, Callable[[], Any]] = {}
    loss = build(ours)
    out["ad.custom_vjp"] = lambda: ad.gradient(loss, *args, backend=engine)
    if engine == "torch":
        import torch

        t_lse, t_layer = torch_rules(xp=True)
        same = build(t_lse if workload == "tiny" else t_layer)
        t_lse, t_layer = torch_rules(xp=False)
        theirs = build(t_lse if workload == "tiny" else t_layer)
        targs: list[Any] = [
            {k: torch.as_tensor(v) for k, v in a.items()}
            if isinstance(a, dict)
            else torch.as_tensor(a)
            for a in args
        ]
        out["engine rule in ad"] = lambda: ad.gradient(same, *args, backend="torch")
        wrt = [
            v.detach().requires_grad_()
            for v in (targs[0].values() if workload == "mlp" else targs[:1])
        ]

        run: Any = theirs

        def direct() -> Any:
            if workload == "tiny":
                value = run(wrt[0])
            else:
                p = dict(zip(targs[0], wrt))
                value = run(p, targs[1], targs[2])
            return torch.autograd.grad(value, wrt)

        out["engine direct"] = direct
    elif engine == "autograd":
        import autograd

        a_lse, a_layer = autograd_rules(xp=True)
        same = build(a_lse if workload == "tiny" else a_layer)
        out["engine rule in ad"] = lambda: ad.gradient(same, *args, backend="autograd")
        a_lse, a_layer = autograd_rules(xp=False)
        theirs = build(a_lse if workload == "tiny" else a_layer)
        grad = autograd.grad(theirs)
        out["engine direct"] = lambda: grad(*args)
    return out


def main(engines: list[str]) -> None:
    rows = []
    for engine in engines:
        for workload in ("tiny", "mlp"):
            times = compare(contenders(engine, workload))
            ours = times["ad.custom_vjp"]
            cells = [engine, workload, fmt_seconds(ours)]
            for other in ("engine rule in ad", "engine direct"):
                t = times.get(other)
                cells.append("-" if t is None else f"{fmt_seconds(t)} ({ours / t:.2f}x)")
            cells.append("<= 1.1x" if "engine rule in ad" in times else "-")
            rows.append(cells)
    print_table(
        [
            "engine",
            "workload",
            "ad.custom_vjp",
            "engine rule in ad (ratio)",
            "engine direct (ratio)",
            "target (vs engine rule in ad)",
        ],
        rows,
    )


if __name__ == "__main__":
    main(sys.argv[1:] or ["torch", "autograd"])
