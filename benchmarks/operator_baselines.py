"""The engines' own calls for the operator workloads of issue 10, each in its own idiom.

For every workload and engine, the calls a user of that engine would write (the best of
them is the baseline adswitch is measured against):

* torch: ``torch.func.jacrev`` / ``jacfwd``, ``torch.func.hessian``, the Hessian-vector
  product reverse-over-reverse (``torch.autograd.grad`` twice, ``create_graph``) and
  forward-over-reverse (``torch.func.jvp(torch.func.grad(f))``), ``torch.func.jvp``;
* jax: ``jax.jit`` of ``jax.jacrev`` / ``jax.jacfwd``, ``jax.hessian``,
  ``jax.jvp(jax.grad(f))`` and ``jax.jvp``, the constants passed as arguments of the
  jitted function (not baked into the program);
* HIPS autograd: ``autograd.jacobian`` (reverse mode only), ``autograd.hessian``, the
  Hessian-vector product with ``autograd.make_hvp`` and as ``grad`` of ``grad(f) . v``
  (``autograd.hessian_vector_product`` itself takes arrays only: its ``tensordot``
  refuses the mlp's parameter dict), ``autograd.make_jvp`` (true forward mode).

Engines are imported when first asked for; loading torch sets its intra-op threads
(``BENCH_TORCH_THREADS``, default 1), loading jax turns on 64-bit mode for the process.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from workloads import OperatorWorkload

__all__ = ["Contender", "baselines", "engine_arrays", "installed", "load", "numbers", "synchronous"]

# The package each engine's own calls need.
PACKAGES = {"tape": "numpy", "torch": "torch", "jax": "jax", "autograd": "autograd"}


def _identity(result: Any) -> Any:
    return result


class Contender(NamedTuple):
    """A timed call and how to read its numbers (for the check before timing)."""

    run: Callable[[], Any]
    answer: Callable[[Any], Any] = _identity


def installed(engine: str) -> bool:
    return importlib.util.find_spec(PACKAGES[engine]) is not None


@functools.cache
def load(engine: str) -> Any:
    """The engine's package, set up once for this benchmark (threads, float64)."""
    module = importlib.import_module(PACKAGES[engine])
    if engine == "torch":
        module.set_num_threads(int(os.environ.get("BENCH_TORCH_THREADS", "1")))
    elif engine == "jax":
        module.config.update("jax_enable_x64", True)
    return module


def engine_arrays(engine: str, tree: Any) -> Any:
    """A tree of numpy arrays as the engine's arrays (torch tensors, jax arrays)."""
    if tree is None:
        return None
    if isinstance(tree, dict):
        return {k: engine_arrays(engine, v) for k, v in tree.items()}
    if isinstance(tree, tuple):
        return tuple(engine_arrays(engine, v) for v in tree)
    if engine == "torch":
        return load("torch").from_numpy(np.ascontiguousarray(tree))
    if engine == "jax":
        return load("jax").numpy.asarray(tree)
    return tree


def numbers(tree: Any) -> list[np.ndarray]:
    """The arrays of a result as numpy, dicts in sorted key order (jax sorts them)."""
    if tree is None:
        return []
    if isinstance(tree, dict):
        return [a for k in sorted(tree) for a in numbers(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [a for t in tree for a in numbers(t)]
    if hasattr(tree, "detach"):  # a torch tensor
        tree = tree.detach().cpu().numpy()
    return [np.asarray(tree)]


def synchronous(engine: str, fn: Callable[[], Any]) -> Callable[[], Any]:
    """On jax, a call is over when its result is computed (jax dispatches asynchronously)."""
    if engine != "jax":
        return fn
    block: Any = load("jax").block_until_ready

    def call() -> Any:
        return block(fn())

    return call


def baselines(
    engine: str, workload: OperatorWorkload, args: tuple[Any, ...], tangent: Any
) -> dict[str, Contender]:
    """The engine's own calls for ``workload`` at ``args`` (the engine's arrays), by name."""
    calls = {"torch": _torch_calls, "jax": _jax_calls, "autograd": _autograd_calls}[engine]
    return {
        name: Contender(synchronous(engine, c.run), c.answer)
        for name, c in calls(workload, args, tangent).items()
    }


def _torch_calls(w: OperatorWorkload, args: tuple[Any, ...], v: Any) -> dict[str, Contender]:
    torch = load("torch")
    tf = torch.func
    f = w.build(torch)
    x, rest = args[0], args[1:]
    if w.operator == "jacobian":
        return {
            "torch.func.jacrev": Contender(functools.partial(tf.jacrev(f), *args)),
            "torch.func.jacfwd": Contender(functools.partial(tf.jacfwd(f), *args)),
        }
    if w.operator == "hessian":
        return {"torch.func.hessian": Contender(functools.partial(tf.hessian(f), *args))}

    def at(p: Any) -> Any:
        return f(p, *rest)

    if w.operator == "jvp":
        return {"torch.func.jvp": Contender(lambda: tf.jvp(at, (x,), (v,))[1])}
    keys = list(x)
    leaves = [x[k].detach().requires_grad_() for k in keys]
    directions = [v[k] for k in keys]

    def reverse_over_reverse() -> Any:
        loss = f(dict(zip(keys, leaves)), *rest)
        grads = torch.autograd.grad(loss, leaves, create_graph=True)
        return torch.autograd.grad(grads, leaves, grad_outputs=directions)

    grad_at = tf.grad(at)
    return {
        "torch.autograd.grad x2": Contender(
            reverse_over_reverse, lambda r: dict(zip(keys, r, strict=True))
        ),
        "torch.func.jvp(grad)": Contender(lambda: tf.jvp(grad_at, (x,), (v,))[1]),
    }


def _jax_calls(w: OperatorWorkload, args: tuple[Any, ...], v: Any) -> dict[str, Contender]:
    jax = load("jax")
    f = w.build(jax.numpy)
    if w.operator == "jacobian":
        rev, fwd = jax.jit(jax.jacrev(f)), jax.jit(jax.jacfwd(f))
        return {
            "jax.jit(jax.jacrev)": Contender(functools.partial(rev, *args)),
            "jax.jit(jax.jacfwd)": Contender(functools.partial(fwd, *args)),
        }
    if w.operator == "hessian":
        return {
            "jax.jit(jax.hessian)": Contender(functools.partial(jax.jit(jax.hessian(f)), *args))
        }
    x, rest = args[0], args[1:]
    if w.operator == "hvp":

        def hvp(p: Any, t: Any, *consts: Any) -> Any:
            return jax.jvp(lambda q: jax.grad(f)(q, *consts), (p,), (t,))[1]

        return {
            "jax.jit(jax.jvp(jax.grad))": Contender(functools.partial(jax.jit(hvp), x, v, *rest))
        }

    def jvp(p: Any, t: Any, *consts: Any) -> Any:
        return jax.jvp(lambda q: f(q, *consts), (p,), (t,))[1]

    return {"jax.jit(jax.jvp)": Contender(functools.partial(jax.jit(jvp), x, v, *rest))}


def _autograd_calls(w: OperatorWorkload, args: tuple[Any, ...], v: Any) -> dict[str, Contender]:
    autograd = load("autograd")
    anp = importlib.import_module("autograd.numpy")
    f = w.build(anp)
    if w.operator == "jacobian":
        return {"autograd.jacobian": Contender(functools.partial(autograd.jacobian(f), *args))}
    if w.operator == "hessian":
        return {"autograd.hessian": Contender(functools.partial(autograd.hessian(f), *args))}
    x, rest = args[0], args[1:]
    if w.operator == "jvp":
        return {"autograd.make_jvp": Contender(lambda: autograd.make_jvp(f)(x, *rest)(v)[1])}
    grad_f = autograd.grad(f)

    def grad_dot_v(p: Any, *consts: Any) -> Any:
        g = grad_f(p, *consts)
        return sum(anp.sum(g[k] * v[k]) for k in g)

    hessian_dot = autograd.grad(grad_dot_v)
    return {
        "autograd.make_hvp": Contender(lambda: autograd.make_hvp(f)(x, *rest)[0](v)),
        "autograd.grad(grad . v)": Contender(functools.partial(hessian_dot, x, *rest)),
    }
