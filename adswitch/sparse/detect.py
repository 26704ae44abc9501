"""``ad.sparsity``: the pattern of a Jacobian or Hessian, from one run of ``f`` on
sparsity-tracing arrays."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch import trees
from adswitch.activity import Active, Const, Duplicated
from adswitch.bases import Layout
from adswitch.errors import OutputError, UsageError
from adswitch.leaves import is_array, leaf_kind
from adswitch.outputs import LossFunction
from adswitch.plan import Plan
from adswitch.sparse import methods as _methods  # noqa: F401 (completes the tracer; its xp)
from adswitch.sparse.tracer import Trace, Tracer, ValueDependentError, _sp

__all__ = ["sparsity", "to_numpy"]

OFS = ("jacobian", "hessian")


def to_numpy(x: Any) -> np.ndarray:
    """An engine's array (or a float) as a numpy array (a copy off the device if needed)."""
    if isinstance(x, np.ndarray):
        return x
    detach = getattr(x, "detach", None)
    if detach is not None:  # (torch)
        return np.asarray(detach().cpu().numpy())
    return np.asarray(x)


def sparsity(
    f: Callable[..., Any],
    *args: Any,
    of: str = "jacobian",
    local: bool = False,
    has_aux: bool = False,
) -> Any:
    """The sparsity pattern of ``f``'s Jacobian (or Hessian) in its plain arguments.

    ``f`` runs once on adswitch's sparsity-tracing arrays (``ad.array_namespace`` gives it
    their namespace): their elements carry the input elements they depend on, and no
    numbers, so the pattern holds at every point. A branch on a value (``if x[0] > 0``)
    cannot be followed that way: it is an error naming ``local=True``, which runs with the
    given values alongside and gives the pattern at that point.

    With several plain arguments (or trees), the pattern is that of the flattened matrix,
    the order ``ad.jacobian(..., sparsity=pattern)`` takes: its columns are the floating
    leaves of every plain argument, argument by argument, each tree in its flattening order
    (a dict in its own key order) and each leaf's elements in C order (a tied array counts once,
    at its first place; non-floating leaves have no columns); its rows are the floating
    leaves of ``f``'s output, in the same order.

    Args:
        f: the function, written with ``xp = ad.array_namespace(x)``.
        *args: its arguments: plain (differentiated) arrays or trees of them, and
            ``ad.Const`` ones.
        of: ``"jacobian"`` (``f``'s output is an array or a tree of them) or
            ``"hessian"`` (one scalar: or, as for ``ad.hessian``, a tuple/dict whose first
            element is one, the aux outputs after it ignored).
        local: detect at the given values (value-dependent branches take the taken side).
        has_aux: ``f`` returns a pair ``(y, aux)``, as for ``ad.jacobian(...,
            has_aux=True)``: the pattern is ``y``'s, ``aux`` is ignored.

    Returns:
        A boolean ``scipy.sparse.csr_array``: ``(y.size, x.size)`` for a Jacobian (row
        ``i``: output element ``i`` in C order), ``(x.size, x.size)`` for a Hessian, the
        sizes summed over the leaves for several. It may hold more entries than the
        nonzeros at a point (a superset: e.g. both sides of an ``xp.where``), never fewer.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> def f(x):
        ...     xp = ad.array_namespace(x)
        ...     return x[1:] * x[:-1]
        >>> ad.sparsity(f, np.ones(3)).toarray().astype(int).tolist()
        [[1, 1, 0], [0, 1, 1]]
        >>> two = ad.sparsity(lambda a, b: a * b[0], np.ones(2), np.ones(2))  # columns: a, b
        >>> two.toarray().astype(int).tolist()
        [[1, 0, 1, 0], [0, 1, 1, 0]]
    """
    if of not in OFS:
        raise UsageError(f"of={of!r}; ad.sparsity's of is one of {', '.join(OFS)}.")
    for name, flag in (("local", local), ("has_aux", has_aux)):
        if flag not in (True, False):
            raise UsageError(f"{name}={flag!r}; ad.sparsity's {name} is True or False.")
    sp = _sp()
    plan = _plan(args)
    layout = Layout([leaf for leaf, a in zip(plan.leaves, plan.active) if a])
    n = layout.total
    if n == 0:
        raise UsageError("ad.sparsity: the differentiated argument is empty.")
    trace = Trace(n, bool(local), of == "hessian")
    values: list[Any] = []
    a = 0
    for leaf, active in zip(plan.leaves, plan.active):
        if not active:  # (engine arrays as numpy: the tracer's arithmetic is numpy's)
            values.append(
                leaf if isinstance(leaf, np.ndarray) or not is_array(leaf) else _read(leaf, "")
            )
            continue
        start, size = layout.offsets[a], layout.sizes[a]
        deps = sp.csr_array(
            (np.ones(size, dtype=bool), np.arange(start, start + size), np.arange(size + 1)),
            shape=(size, n),
        )
        # (global detection needs the shape only: it runs on an engine's traced array too,
        # inside jax.jit; local detection reads the values)
        x_np = _read(leaf, "local").astype(float) if local else None
        shape = x_np.shape if x_np is not None else tuple(np.shape(leaf))
        values.append(Tracer(trace, shape, deps, x_np))
        a += 1
    try:
        y = _differentiated(LossFunction(f, plan).call_f(values), of, has_aux)
    except ValueDependentError as exc:  # (a misuse of global detection, with its fix)
        raise UsageError(str(exc)) from None
    y_leaves, _ = trees.flatten(y)
    blocks = [_deps_of(leaf, trace) for leaf in y_leaves]
    blocks = [b for b in blocks if b is not None]
    if not blocks:
        raise UsageError(
            f"f's output {type(y).__name__} has no floating-point leaf: ad.sparsity needs f "
            "to return a float array (or a tree holding some)."
        )
    if of == "jacobian":
        out = sp.csr_array(sp.vstack(blocks, format="csr"), dtype=bool)
        out.sort_indices()
        return out
    y_size = sum(b.shape[0] for b in blocks)
    if y_size != 1:
        raise OutputError(
            f"ad.sparsity(..., of='hessian') needs f to return a scalar; its output has "
            f"{y_size} elements. Use of='jacobian' for a vector output."
        )
    hess = trace.hess if trace.hess is not None else trace.empty(n)
    hess = sp.csr_array(hess, dtype=bool)
    hess.sort_indices()
    return hess


def _read(leaf: Any, local: str) -> np.ndarray:
    """A leaf's values as numpy, or the ``UsageError`` of detection that needs values
    inside a trace (``local``: ``"local"`` for a differentiated leaf with local=True,
    ``""`` for an ``ad.Const`` array)."""
    try:
        return to_numpy(leaf)
    except Exception:  # (an engine's traced array: jax's TracerArrayConversionError...)
        pass
    if local:
        raise UsageError(
            "ad.sparsity(..., local=True) detects at the input's values, which a trace "
            "(jax.jit/vmap/grad) does not have: detect with local=False (the pattern at "
            "every point), or detect outside the transform and pass sparsity=pattern."
        )
    raise UsageError(
        "ad.sparsity (sparsity='detect') reads the ad.Const arrays' values (they may mask "
        "or index), which a trace (jax.jit/vmap/grad) does not have: detect outside the "
        "transform (pattern = ad.sparsity(f, x, ad.Const(c))) and pass sparsity=pattern, "
        "or close over c as a numpy array."
    )


def _differentiated(out: Any, of: str, has_aux: bool) -> Any:
    """The part of ``f``'s output the operator differentiates: ``y`` of ``(y, aux)`` with
    ``has_aux``; for a Hessian, the loss first in a tuple/dict, as ``ad.hessian`` takes it
    (``adswitch.outputs.loss_of``); else the whole output."""
    if has_aux:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            if isinstance(out, (tuple, list)):
                what = f"a {type(out).__name__} of length {len(out)}"
            elif hasattr(out, "shape"):  # (a tracing array: named as the user's)
                what = f"an array of shape {tuple(out.shape)}"
            else:
                what = f"a {type(out).__name__}"
            raise OutputError(
                f"ad.sparsity(..., has_aux=True) needs f to return a pair (y, aux); got "
                f"{what}. Return (y, aux), or drop has_aux."
            )
        out = out[0]
    if of == "hessian" and isinstance(out, (tuple, list, dict)) and out:
        out = next(iter(out.values())) if isinstance(out, dict) else out[0]
    return out


def _deps_of(leaf: Any, trace: Trace) -> Any:
    """An output leaf's dependency rows; ``None`` for a leaf that is not floating (it has
    no rows, as in the dense Jacobian)."""
    if isinstance(leaf, Tracer):
        return leaf.deps
    if isinstance(leaf, (np.ndarray, np.generic, float, int)) and not isinstance(leaf, bool):
        if not np.issubdtype(np.asarray(leaf).dtype, np.floating):
            return None
        return trace.empty(int(np.size(leaf)))  # (a constant output)
    if is_array(leaf):
        kind = leaf_kind(leaf)
        return trace.empty(math.prod(np.shape(leaf))) if kind == "f" else None
    raise UsageError(
        f"ad.sparsity: f returned a leaf of type {type(leaf).__name__}; it returns arrays "
        "(or trees of them) written with xp = ad.array_namespace(x). If f returns (y, aux), "
        "pass has_aux=True (to ad.sparsity, and to ad.jacobian)."
    )


def _plan(args: tuple[Any, ...]) -> Plan:
    """The plan of the call (unique leaves, which are differentiated): plain arguments and
    ``ad.Const`` ones only."""
    for k, a in enumerate(args):
        if isinstance(a, (Duplicated, Active)):
            raise UsageError(
                f"args[{k}] is {type(a).__name__}: ad.sparsity takes plain arguments and "
                "ad.Const ones only."
            )
    if not any(not isinstance(a, Const) for a in args):
        raise UsageError(
            "ad.sparsity: every argument is ad.Const; pass the differentiated one(s) plain."
        )
    return Plan(args)
