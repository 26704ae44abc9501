"""``jvp`` and ``derivative``: forward mode, one tangent pushed through ``f``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch import derive, trees
from adswitch.accepts import check_flag
from adswitch.activity import Const, Duplicated
from adswitch.bases import numpy_dtype
from adswitch.call import Started, running, start
from adswitch.compilers import outside_compilers
from adswitch.errors import ActivityError
from adswitch.leaves import describe, leaf_kind
from adswitch.outputs import OutputFunction, Outputs
from adswitch.results import as_leaf_scalar, output_scalars, tangent_like
from adswitch.spec import Backend
from adswitch.tangents import tangents_per_leaf

__all__ = ["derivative", "derivative_primals", "jvp", "run_jvp"]


@outside_compilers
def jvp(
    f: Callable[..., Any],
    primals: Sequence[Any],
    tangents: Sequence[Any],
    backend: str | Backend | None = None,
    has_aux: bool = False,
) -> tuple[Any, ...]:
    """``f(*primals)`` and its directional derivative along ``tangents`` (forward mode).

    Args:
        f: the function; its whole output ``y`` is differentiated (with ``has_aux``, the
            first element of the pair ``(y, aux)`` it returns).
        primals: a tuple of arguments, plain or ``Const``.
        tangents: a tuple with one tree per primal, shaped like it (``None`` at ``Const``
            primals and at leaves that are not floating). A tied array has one tangent,
            the one at its first place.
        backend: the engine (see :func:`adswitch.gradient`).
        has_aux: ``f`` returns ``(y, aux)``.

    Returns:
        ``(y, y_tangent)``, or ``(y, y_tangent, aux)`` with ``has_aux``: ``y_tangent`` is a
        tree like ``y`` (``None`` at its non-floating leaves) holding ``J @ tangents``.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> y, t = ad.jvp(lambda x: x ** 3, (np.array([1.0, 2.0]),), (np.array([1.0, 0.5]),))
        >>> t.tolist()
        [3.0, 6.0]
    """
    if not isinstance(primals, (tuple, list)):
        raise ActivityError(
            f"primals must be a tuple of f's arguments, e.g. ad.jvp(f, (x,), (v,)); got "
            f"{describe(primals)}."
        )
    check_flag("has_aux", has_aux)
    started = start(f, tuple(primals), backend, "jvp", duplicated_ok=False)
    return run_jvp(started, f, tangents, has_aux)


def run_jvp(
    started: Started,
    f: Callable[..., Any],
    tangents: Any,
    has_aux: bool,
    operator: str = "jvp",
) -> tuple[Any, ...]:
    """:func:`jvp` on a started call (also the run of a prepared one); ``operator``
    ``"derivative"``: the caller keeps only the tangent."""
    plan, engine, depth, _, _ = started
    per_leaf = tangents_per_leaf(plan, tangents)
    fn = OutputFunction(f, plan, has_aux, operator)
    info = started.info(f, operator, ("jvp", has_aux), outputs=operator == "jvp")
    with running(engine):
        out_leaves, out_tangents = derive.jvp(engine, fn, plan.leaves, plan.active, per_leaf, info)
    layout = fn.outputs()
    if not depth:
        out_leaves = output_scalars(plan, out_leaves, layout.n_y)
    value = fn.output(out_leaves)
    # A derivative in a Python float (or numpy scalar) x is that type where it is 0-d, as
    # the Jacobian block of such an x is.
    x = plan.leaves[0] if operator == "derivative" and not depth else None
    tangent = output_tree(layout, out_tangents, out_leaves, depth, x)
    if has_aux:
        y, aux = value
        return y, tangent, aux
    return value, tangent


def output_tree(
    layout: Outputs,
    per_output: Sequence[Any],
    out_leaves: Sequence[Any],
    depth: int,
    scalar_of: Any = None,
) -> Any:
    """A tree like ``y`` with ``per_output`` at its floating leaves (``None`` elsewhere);
    at top level a Python float output gets a Python float, and with ``scalar_of`` (a
    scalar input) a 0-d value gets its type (see ``results.as_leaf_scalar``)."""
    leaves: list[Any] = [None] * layout.n_y
    for k, value in zip(layout.diff_positions, per_output):
        if not depth:  # a 0-d tangent in its output's scalar type
            value = tangent_like(value, out_leaves[k])
        if scalar_of is not None:
            value = as_leaf_scalar(value, scalar_of)
        leaves[k] = value
    return trees.unflatten(layout.y_def, leaves)


@outside_compilers
def derivative(
    f: Callable[..., Any], x: Any, *args: Any, backend: str | Backend | None = None
) -> Any:
    """The derivative of ``f`` with respect to the scalar ``x``, shaped like the output.

    Args:
        f: the function ``f(x, *args)``; its whole output (a tree) is differentiated.
        x: a Python float or a 0-d floating array.
        *args: further arguments, constant (plain or ``Const``: neither is differentiated).
        backend: the engine (see :func:`adswitch.gradient`).

    Returns:
        A tree like ``f``'s output holding ``d f / d x`` at its floating leaves (``None``
        elsewhere).

    Example:
        >>> import adswitch as ad, numpy as np
        >>> ad.derivative(lambda t, a: a * t ** 2, 3.0, np.array([1.0, 2.0])).tolist()
        [6.0, 12.0]
    """
    primals, tangents = derivative_primals(x, args)
    started = start(f, primals, backend, "derivative", duplicated_ok=False)
    return run_jvp(started, f, tangents, False, "derivative")[1]


def derivative_primals(x: Any, args: Sequence[Any]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``ad.derivative``'s call as a ``jvp``: its primals (``x``, then the constants) and
    tangents (``1`` for ``x``)."""
    if (
        isinstance(x, (Const, Duplicated))
        or leaf_kind(x) != "f"
        or tuple(getattr(x, "shape", ())) != ()
    ):
        raise ActivityError(
            f"ad.derivative differentiates with respect to a scalar x (a Python float or a "
            f"0-d floating array); got {describe(x)}. For arrays use ad.jacobian or ad.jvp."
        )
    constants = []
    for a, arg in enumerate(args, start=1):
        if isinstance(arg, Duplicated):
            raise ActivityError(
                f"args[{a}] is Duplicated, but ad.derivative differentiates only x; pass the "
                "argument plain (it is held constant)."
            )
        constants.append(arg if isinstance(arg, Const) else Const(arg))
    one = 1.0 if isinstance(x, float) else np.ones((), dtype=numpy_dtype(x.dtype))
    return (x, *constants), (one, *[None] * len(constants))
