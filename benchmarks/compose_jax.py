"""Inside ``jax.jit``: a step built on adswitch's operators against the same step built on
jax's own (issue 23).

Run: ``python benchmarks/compose_jax.py [rounds]``. Each pair is one jitted function
built on ``ad.gradient``, ``ad.jacobian`` (each mode), ``ad.hessian`` or ``ad.hvp``
(``backend="jax"``), and the same function built on ``jax.grad``, ``jax.jacrev``,
``jax.jacfwd``, ``jax.hessian``, ``jax.jvp(jax.grad)``, on the ``tiny`` and ``mlp``
workloads (``workloads.py``; float64, 64-bit mode). The two of a pair alternate in short
batches in one process (``timing.compare_batches``), medians. Inside a trace adswitch runs
its operator inline (no program of its own), so both sides compile to the same XLA
program and adswitch's checks run once, at trace time.

Target: each adswitch step <= 1.02x jax's.

Where a workload is not of an operator's shape, the nearest one: ``tiny``'s Jacobians are
those of its elementwise map ``sin(x) * x``; ``mlp``'s Jacobians are of the network's
output with respect to the inputs of 8 samples (8 x 512), its Hessian that of the loss
with respect to the last layer's weights (256 x 256), its hvp over all parameters.
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

from timing import compare_batches, fmt_seconds, print_table
from workloads import make_mlp, make_tiny, mlp_forward, mlp_loss, tiny

import adswitch as ad

TARGET = 1.02
Pair = tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...]]


def tiny_map(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sin(x) * x


def _pairs(jax: Any) -> dict[str, Pair]:
    """(workload, operator) -> (adswitch's step, jax's step, arguments), unjitted."""
    jnp = jax.numpy
    (x_np,) = make_tiny(np.random.default_rng(0))
    x = jnp.asarray(x_np)
    v = jnp.asarray(np.random.default_rng(1).standard_normal(x.shape))
    params_np, xs_np, ts_np = make_mlp(np.random.default_rng(0))
    params = {k: jnp.asarray(a) for k, a in params_np.items()}
    xs, ts = jnp.asarray(xs_np), jnp.asarray(ts_np)
    rng = np.random.default_rng(2)
    dp = {k: jnp.asarray(rng.standard_normal(a.shape)) for k, a in params_np.items()}
    x8 = xs[:8]

    def net(x: Any, p: Any) -> Any:
        return mlp_forward(p, x)

    def last_layer(w3: Any, p: Any, x: Any, t: Any) -> Any:
        return mlp_loss({**p, "W3": w3}, x, t)

    def grad_tiny(x: Any) -> Any:
        return ad.gradient(tiny, x, backend="jax")[0]

    def hvp_tiny(x: Any, v: Any) -> Any:
        return ad.hvp(tiny, (x,), (v,), backend="jax")[0]

    def hvp_tiny_jax(x: Any, v: Any) -> Any:
        return jax.jvp(jax.grad(tiny), (x,), (v,))[1]

    def grad_mlp(p: Any, x: Any, t: Any) -> Any:
        return ad.gradient(mlp_loss, p, ad.Const(x), ad.Const(t), backend="jax")[0]

    def jac_mlp(mode: str) -> Callable[..., Any]:
        def step(x: Any, p: Any) -> Any:
            return ad.jacobian(net, x, ad.Const(p), mode=mode, backend="jax")[0]

        return step

    def hess_mlp(w3: Any, p: Any, x: Any, t: Any) -> Any:
        consts = (ad.Const(p), ad.Const(x), ad.Const(t))
        return ad.hessian(last_layer, w3, *consts, backend="jax")[0][0]

    def hvp_mlp(p: Any, dp: Any, x: Any, t: Any) -> Any:
        loss = lambda p: mlp_loss(p, x, t)  # noqa: E731
        return ad.hvp(loss, (p,), (dp,), backend="jax")[0]

    def hvp_mlp_jax(p: Any, dp: Any, x: Any, t: Any) -> Any:
        return jax.jvp(jax.grad(lambda p: mlp_loss(p, x, t)), (p,), (dp,))[1]

    mlp_args = (params, xs, ts)
    return {
        "tiny gradient": (grad_tiny, jax.grad(tiny), (x,)),
        "tiny jacobian reverse": (
            lambda x: ad.jacobian(tiny_map, x, mode="reverse", backend="jax")[0],
            jax.jacrev(tiny_map),
            (x,),
        ),
        "tiny jacobian forward": (
            lambda x: ad.jacobian(tiny_map, x, mode="forward", backend="jax")[0],
            jax.jacfwd(tiny_map),
            (x,),
        ),
        "tiny hessian": (
            lambda x: ad.hessian(tiny, x, backend="jax")[0][0],
            jax.hessian(tiny),
            (x,),
        ),
        "tiny hvp": (hvp_tiny, hvp_tiny_jax, (x, v)),
        "mlp gradient": (grad_mlp, jax.grad(mlp_loss), mlp_args),
        "mlp jacobian reverse": (jac_mlp("reverse"), jax.jacrev(net), (x8, params)),
        "mlp jacobian forward": (jac_mlp("forward"), jax.jacfwd(net), (x8, params)),
        "mlp hessian": (hess_mlp, jax.hessian(last_layer), (params["W3"], params, xs, ts)),
        "mlp hvp": (hvp_mlp, hvp_mlp_jax, (params, dp, xs, ts)),
    }


def _same(got: Any, want: Any, jax: Any) -> None:
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-11)


def main(rounds: int = 150) -> None:
    import importlib

    jax: Any = importlib.import_module("jax")  # (untyped in parts: Any)

    jax.config.update("jax_enable_x64", True)
    rows = []
    for name, (ours, theirs, args) in _pairs(jax).items():
        ours_j, theirs_j = jax.jit(ours), jax.jit(theirs)
        # the same numbers first: a timing of a wrong result means nothing
        _same(ours_j(*args), theirs_j(*args), jax)

        def call(f: Callable[..., Any] = ours_j, a: tuple[Any, ...] = args) -> Any:
            return jax.block_until_ready(f(*a))

        def base(f: Callable[..., Any] = theirs_j, a: tuple[Any, ...] = args) -> Any:
            return jax.block_until_ready(f(*a))

        medians = compare_batches({"adswitch": call, "jax": base}, rounds=rounds)
        ratio = medians["adswitch"] / medians["jax"]
        verdict = "met" if ratio <= TARGET else "MISSED"
        rows.append(
            [
                name,
                fmt_seconds(medians["adswitch"]),
                fmt_seconds(medians["jax"]),
                f"{ratio:.3f}x",
                f"<= {TARGET}x",
                verdict,
            ]
        )
    print(f"jax {jax.__version__}, inside jax.jit, medians of {rounds} alternating batches")
    print_table(["step", "adswitch", "jax", "ratio", "target", ""], rows)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 150)
