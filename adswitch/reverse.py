"""``vjp``: reverse mode with a pullback you can call many times."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from adswitch import derive, selection
from adswitch.accepts import check_flag
from adswitch.call import Started, running, start
from adswitch.compilers import outside_compilers
from adswitch.errors import UnsupportedError
from adswitch.outputs import OutputFunction, Outputs
from adswitch.plan import Plan
from adswitch.results import output_scalars, place, restore_scalar_types, write_shadows
from adswitch.spec import Backend
from adswitch.spec import Pullback as EnginePullback
from adswitch.tangents import cotangents_per_output, stand_in

__all__ = ["Pullback", "run_vjp", "vjp"]


class Pullback:
    """The pullback returned by :func:`vjp`: ``pullback(cotangent)`` -> one entry per
    argument, exactly as :func:`adswitch.gradient` returns them.

    ``cotangent`` is a tree shaped like the differentiated output (``None`` where a leaf is
    not floating). Plain arguments get new trees, ``Const`` ones ``None``, a tied array
    its total at its first position; a ``Duplicated`` argument's shadow gets the result
    added (zeroed first unless ``vjp(..., zero=False)``) and is its entry. Call it at the
    nesting level where ``vjp`` was called, as many times as you like.

    An engine whose own transforms stage calls (jax) registers it as one of its trees
    (:meth:`tree_flatten`, :meth:`tree_unflatten`), so a pullback can leave ``jax.jit``
    and ``jax.vmap`` like ``jax.vjp``'s own: its leaves are the engine's residuals.
    """

    __slots__ = (
        "_depth",
        "_engine",
        "_fixed",
        "_layout",
        "_plan",
        "_pullback",
        "_y_leaves",
        "_zero",
    )

    def __init__(
        self,
        engine: Backend,
        plan: Plan,
        layout: Outputs,
        y_leaves: Sequence[Any],
        pullback: EnginePullback,
        depth: int,
        zero: bool,
    ) -> None:
        self._engine = engine
        self._plan = plan
        self._layout = layout
        # What a cotangent is checked against -- shapes and dtypes -- without keeping the
        # outputs themselves alive as long as the pullback.
        self._y_leaves = [stand_in(y) for y in y_leaves]
        self._pullback = pullback
        self._depth = depth
        self._zero = zero
        self._fixed: _Fixed | None = None

    def tree_flatten(self) -> tuple[tuple[Any], _Fixed]:
        """``((engine pullback,), fixed part)``: the engine's pullback is the one child
        (the engine's tree registration takes its residuals apart); everything else is
        one fixed object, the same on every flatten of this pullback (and of those
        rebuilt from it), so that an enclosing ``jax.jit`` taking it as an argument
        compiles once for it.

        Example:
            >>> import numpy as np, adswitch as ad
            >>> _, pullback = ad.vjp(lambda x: x * x, np.array([1.0]), backend="tape")
            >>> children, fixed = pullback.tree_flatten()
            >>> Pullback.tree_unflatten(fixed, children)(np.array([1.0]))[0].tolist()
            [2.0]
        """
        fixed = self._fixed
        if fixed is None:
            fixed = self._fixed = _Fixed(self)
        return (self._pullback,), fixed

    @classmethod
    def tree_unflatten(cls, fixed: _Fixed, children: Sequence[Any]) -> Pullback:
        """The pullback :meth:`tree_flatten` took apart, on ``children``."""
        pullback = cls.__new__(cls)
        pullback._engine, pullback._plan, pullback._layout = fixed.engine, fixed.plan, fixed.layout
        pullback._y_leaves, pullback._depth, pullback._zero = (
            fixed.y_leaves,
            fixed.depth,
            fixed.zero,
        )
        pullback._pullback = children[0]
        pullback._fixed = fixed
        return pullback

    @outside_compilers
    def __call__(self, cotangent: Any) -> tuple[Any, ...]:
        if len(selection.current_calls.get()) != self._depth:
            raise UnsupportedError(
                "this pullback was made at another nesting level than the one it is called "
                "at (inside or outside a function being differentiated), so the enclosing "
                "derivative could not flow through it. Call ad.vjp where you call its pullback."
            )
        cotangents = cotangents_per_output(self._layout, self._y_leaves, cotangent)
        plan, engine = self._plan, self._engine
        with running(engine):
            grads = self._pullback(cotangents)
        if not self._depth:
            grads = restore_scalar_types(plan, grads)
        results = place(plan, grads)
        if plan.has_duplicated:
            write_shadows(plan, engine, grads, self._zero)
        return results

    def __repr__(self) -> str:
        return f"<adswitch pullback on engine {self._engine.name!r}>"


class _Fixed:
    """A :class:`Pullback`'s part that is no engine array (its tree's static data).
    Compared by identity: what it holds (stand-ins of the outputs) is not hashable."""

    __slots__ = ("depth", "engine", "layout", "plan", "y_leaves", "zero")

    def __init__(self, pullback: Pullback) -> None:
        self.engine, self.plan, self.layout = pullback._engine, pullback._plan, pullback._layout
        self.y_leaves, self.depth, self.zero = pullback._y_leaves, pullback._depth, pullback._zero


@outside_compilers
def vjp(
    f: Callable[..., Any],
    *args: Any,
    backend: str | Backend | None = None,
    has_aux: bool = False,
    zero: bool = True,
) -> tuple[Any, ...]:
    """Evaluate ``f(*args)`` and return it with its pullback (reverse mode).

    Args:
        f: the function; its whole output ``y`` (a tree) is differentiated, or with
            ``has_aux`` the first element of the pair ``(y, aux)`` it returns.
        *args: the arguments, plain, ``Const`` or ``Duplicated``, as for
            :func:`adswitch.gradient`.
        backend: the engine (see :func:`adswitch.gradient`).
        has_aux: ``f`` returns ``(y, aux)``; ``aux`` is returned as it is.
        zero: zero ``Duplicated`` shadows before each pullback call adds into them.

    Returns:
        ``(y, pullback)``, or ``(y, pullback, aux)`` with ``has_aux``. ``y`` is concrete, in
        the caller's array kind; ``pullback(cotangent)`` (a tree like ``y``, ``None`` at its
        non-floating leaves) returns one entry per argument (see :class:`Pullback`).

    Example:
        >>> import adswitch as ad, numpy as np
        >>> y, pullback = ad.vjp(lambda x: x * x, np.array([1.0, 2.0]))
        >>> pullback(np.array([1.0, 10.0]))[0].tolist()
        [2.0, 40.0]
    """
    check_flag("zero", zero)
    check_flag("has_aux", has_aux)
    return run_vjp(start(f, args, backend, "vjp"), f, has_aux, zero)


def run_vjp(started: Started, f: Callable[..., Any], has_aux: bool, zero: bool) -> tuple[Any, ...]:
    """:func:`vjp` on a started call (also the run of a prepared one)."""
    plan, engine, depth, _, _ = started
    fn = OutputFunction(f, plan, has_aux, "vjp")
    info = started.info(f, "vjp", ("vjp", has_aux))
    with running(engine):
        out_leaves, engine_pullback = derive.vjp(engine, fn, plan.leaves, plan.active, info)
    layout = fn.outputs()
    value = fn.output(out_leaves if depth else output_scalars(plan, out_leaves, layout.n_y))
    pullback = Pullback(
        engine, plan.for_results(), layout, out_leaves[: layout.n_y], engine_pullback, depth, zero
    )
    if has_aux:
        y, aux = value
        return y, pullback, aux
    return value, pullback
