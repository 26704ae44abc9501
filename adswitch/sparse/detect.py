"""``ad.sparsity``: the pattern of a Jacobian or Hessian, from one run of ``f`` on
sparsity-tracing arrays."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch.activity import Active, Const, Duplicated
from adswitch.errors import OutputError, UsageError
from adswitch.sparse import methods as _methods  # noqa: F401 (completes the tracer; its xp)
from adswitch.sparse.tracer import Trace, Tracer, _sp

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


def sparsity(f: Callable[..., Any], *args: Any, of: str = "jacobian", local: bool = False) -> Any:
    """The sparsity pattern of ``f``'s Jacobian (or Hessian) in its one plain argument.

    ``f`` runs once on adswitch's sparsity-tracing arrays (``ad.array_namespace`` gives it
    their namespace): their elements carry the input elements they depend on, and no
    numbers, so the pattern holds at every point. A branch on a value (``if x[0] > 0``)
    cannot be followed that way: it is an error naming ``local=True``, which runs with the
    given values alongside and gives the pattern at that point.

    Args:
        f: the function, written with ``xp = ad.array_namespace(x)``.
        *args: its arguments: one plain (differentiated) array, the others ``ad.Const``.
        of: ``"jacobian"`` (``f``'s output is one array) or ``"hessian"`` (one scalar).
        local: detect at the given values (value-dependent branches take the taken side).

    Returns:
        A boolean ``scipy.sparse.csr_array``: ``(y.size, x.size)`` for a Jacobian (row
        ``i``: output element ``i`` in C order), ``(x.size, x.size)`` for a Hessian. It
        may hold more entries than the nonzeros at a point (a superset: e.g. both sides of
        an ``xp.where``), never fewer.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> def f(x):
        ...     xp = ad.array_namespace(x)
        ...     return x[1:] * x[:-1]
        >>> ad.sparsity(f, np.ones(3)).toarray().astype(int).tolist()
        [[1, 1, 0], [0, 1, 1]]
    """
    if of not in OFS:
        raise UsageError(f"of={of!r}; ad.sparsity's of is one of {', '.join(OFS)}.")
    if local not in (True, False):
        raise UsageError(f"local={local!r}; ad.sparsity's local is True or False.")
    sp = _sp()
    position, x = _the_input(args)
    x_np = to_numpy(x)
    n = x_np.size
    trace = Trace(n, bool(local), of == "hessian")
    deps = sp.csr_array(sp.eye_array(n, dtype=bool, format="csr"))
    tracer = Tracer(trace, x_np.shape, deps, x_np.astype(float) if local else None)
    call_args = [
        tracer if k == position else to_numpy(a.val) if isinstance(a, Const) else a
        for k, a in enumerate(args)
    ]
    y = f(*call_args)
    if isinstance(y, Tracer):
        y_deps, y_size = y.deps, y.size
    elif isinstance(y, (np.ndarray, np.generic, float, int)):
        y_size = int(np.size(y))
        y_deps = trace.empty(y_size)  # (a constant output)
    else:
        raise UsageError(
            f"ad.sparsity supports f returning one array in this version; got "
            f"{type(y).__name__}. Return one array (concatenate the outputs, xp.concat)."
        )
    if of == "jacobian":
        out = sp.csr_array(y_deps, dtype=bool)
        out.sort_indices()
        return out
    if y_size != 1:
        raise OutputError(
            f"ad.sparsity(..., of='hessian') needs f to return a scalar; its output has "
            f"{y_size} elements. Use of='jacobian' for a vector output."
        )
    hess = trace.hess if trace.hess is not None else trace.empty(n)
    hess = sp.csr_array(hess, dtype=bool)
    hess.sort_indices()
    return hess


def _the_input(args: tuple[Any, ...]) -> tuple[int, Any]:
    """The position and value of the one plain argument."""
    plain = []
    for k, a in enumerate(args):
        if isinstance(a, (Duplicated, Active)):
            raise UsageError(
                f"args[{k}] is {type(a).__name__}: ad.sparsity takes plain arguments and "
                "ad.Const ones only."
            )
        if not isinstance(a, Const):
            plain.append(k)
    if len(plain) != 1 or not (
        hasattr(args[plain[0]], "shape") or isinstance(args[plain[0]], float)
    ):
        raise UsageError(
            f"ad.sparsity supports one differentiated array argument in this version; got "
            f"{len(plain)} plain argument(s). Mark the others ad.Const, or concatenate "
            "several inputs into one array."
        )
    if math.prod(np.shape(args[plain[0]])) == 0:
        raise UsageError("ad.sparsity: the differentiated argument is empty.")
    return plain[0], args[plain[0]]
