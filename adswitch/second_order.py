"""``hessian`` and ``hvp``: second derivatives of a scalar loss.

Both differentiate the gradient once more: forward-over-reverse (a ``jvp`` of the
gradient) on engines with a true forward mode, reverse-over-reverse (a pullback of the
gradient) on the others; the gradient itself is an inner call on the same engine, so an
engine needs ``Capabilities.nested``. The Hessian is the batched form, over an identity
basis: one engine call for the whole matrix.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from adswitch import derive, selection, trees
from adswitch.accepts import check_flag
from adswitch.bases import Layout, basis, block
from adswitch.call import Started, running, start
from adswitch.compilers import outside_compilers
from adswitch.errors import NoForwardRuleError, UnsupportedError
from adswitch.namespace import array_namespace
from adswitch.outputs import LossFunction, Outputs
from adswitch.plan import CONST, Plan
from adswitch.results import place, restore_scalar_types, write_shadows
from adswitch.spec import Backend, CallInfo
from adswitch.tangents import tangents_per_leaf

__all__ = ["GradientFunction", "hessian", "hvp", "run_hessian", "run_hvp", "run_sparse_hessian"]


class GradientFunction:
    """An ``OutputFn`` whose differentiated outputs are the gradient of ``f``'s loss with
    respect to the active leaves, computed by an inner call on the same engine."""

    __slots__ = ("_layout", "active", "engine", "f", "loss", "output_structure")

    def __init__(self, engine: Backend, f: Callable[..., Any], plan: Plan) -> None:
        self.engine = engine
        self.f = f
        self.loss = LossFunction(f, plan)
        self.active = plan.active
        n = sum(1 for a in plan.active if a)
        self._layout = Outputs(None if n == 1 else _tuple_def(n), n, tuple(range(n)), None)
        self.output_structure: Hashable = self._layout

    def __call__(self, values: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        depth = len(selection.current_calls.get())
        info = CallInfo(depth=depth, entry="gradient", func=self.f)
        with running(self.engine):
            _, grads = derive.value_and_grad(self.engine, self.loss, values, self.active, info)
        diffs = [g for g, a in zip(grads, self.active) if a]
        return diffs, list(diffs)

    def reuse(self, structure: Hashable) -> None:
        pass  # the structure never changes: one gradient per active leaf

    def outputs(self) -> Outputs:
        return self._layout


def _tuple_def(n: int) -> trees.TreeDef:
    return trees.flatten(tuple(range(n)))[1]


def _second_order_strategy(engine: Backend, operator: str) -> str:
    if not engine.capabilities.nested:
        raise UnsupportedError(
            f"engine {engine.name!r} cannot compute ad.{operator}: second derivatives need an "
            "engine that differentiates its own gradients (Capabilities.nested). Choose "
            "another engine with backend=, e.g. 'tape'."
        )
    # (``Capabilities.second_order`` is resolved when made: never ``""`` here)
    if engine.capabilities.second_order == "forward-over-reverse" and "jvp" in derive.natives(
        engine
    ):
        return "forward-over-reverse"
    return "reverse-over-reverse"


@outside_compilers
def hessian(
    f: Callable[..., Any],
    *args: Any,
    backend: str | Backend | None = None,
    sparsity: Any = None,
    check: bool = False,
) -> Any:
    """The Hessian of ``f``'s scalar loss with respect to every non-``Const`` argument.

    Args:
        f: as for :func:`adswitch.gradient`: returns a real scalar loss, or a tuple/dict
            whose first element is one (aux outputs after it are ignored).
        *args: the arguments, plain or ``Const``.
        backend: the engine (see :func:`adswitch.gradient`).
        sparsity: ``None`` (dense), ``"detect"`` (``ad.sparsity(f, *args,
            of="hessian")``) or a pattern of shape ``(x.size, x.size)``: the Hessian is
            then computed compressed -- a star (or column) coloring of the pattern, one
            batched H·v per color -- and returned in sparse blocks. With several
            differentiated arguments (or trees) the pattern is that of the flattened
            Hessian (the order of ``ad.sparsity``: the differentiated leaves, leaf after
            leaf, each in C order). A pattern missing nonzeros gives wrong
            entries (the missing ones are summed into those of their color):
            ``check=True`` compares with the dense Hessian and raises a ``UsageError``
            naming the entries it misses.
        check: with ``sparsity``, compare with the dense Hessian (a debugging aid: it
            costs the dense Hessian).

    Returns:
        ``H`` with ``H[a][b]`` the block for arguments ``a`` and ``b`` (``None`` where
        either is ``Const``): for array arguments an array of shape
        ``x_a.shape + x_b.shape``; for trees, the tree of ``a`` with each leaf replaced
        by the tree of ``b`` holding the blocks (jax's ``hessian`` layout). With
        ``sparsity``, the same layout with each block a sparse matrix of shape
        ``(leaf_a.size, leaf_b.size)`` (a ``scipy.sparse.csr_array``; torch's sparse CSR,
        jax's ``BCOO`` for those engines' arrays); for one plain array argument, the
        symmetric sparse matrix alone.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> H = ad.hessian(lambda x: ad.array_namespace(x).sum(x ** 3), np.array([1.0, 2.0]))
        >>> H[0][0].tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    check_flag("check", check)
    started = start(f, args, backend, "hessian", duplicated_ok=False)
    if sparsity is not None:  # (compressed: adswitch.sparse, which imports scipy)
        from adswitch.sparse.hessian import setup_hessian

        setup = setup_hessian(f, args, sparsity, started)
        return run_sparse_hessian(started, f, setup, check)
    return run_hessian(started, f)


def run_sparse_hessian(started: Started, f: Callable[..., Any], setup: Any, check: bool) -> Any:
    """A sparse :func:`hessian` on a started call and a colored pattern
    (``adswitch.sparse.hessian.HessianSetup``); the strategy as in :func:`run_hessian`."""
    from adswitch.sparse.hessian import sparse_hessian

    dense = run_hessian if check else None
    strategy = _strategy(started.engine, "hessian", f)
    if strategy == "forward-over-reverse":
        try:
            return sparse_hessian(started, f, setup, GradientFunction, strategy, dense)
        except NoForwardRuleError:
            _remember_vjp_rule(f)
            strategy = "reverse-over-reverse"
    return sparse_hessian(started, f, setup, GradientFunction, strategy, dense)


# The functions whose forward-over-reverse met an ``ad.custom_vjp`` (which has no
# pushforward): their second derivatives go reverse-over-reverse, where ``bwd`` is
# differentiated in turn, from then on without trying forward mode first.
_met_vjp_rule: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _strategy(engine: Backend, operator: str, f: Callable[..., Any]) -> str:
    strategy = _second_order_strategy(engine, operator)
    try:
        if strategy == "forward-over-reverse" and f in _met_vjp_rule:
            return "reverse-over-reverse"
    except TypeError:  # not weakly referable: try forward mode every time
        pass
    return strategy


def _remember_vjp_rule(f: Callable[..., Any]) -> None:
    with contextlib.suppress(TypeError):  # not weakly referable: not remembered
        _met_vjp_rule[f] = True


def run_hessian(started: Started, f: Callable[..., Any]) -> Any:
    """:func:`hessian` on a started call (also the run of a prepared one).

    Forward-over-reverse that meets an ``ad.custom_vjp`` (a ``NoForwardRuleError``) runs
    again reverse-over-reverse: ``f`` runs once more that first time."""
    strategy = _strategy(started.engine, "hessian", f)
    if strategy == "forward-over-reverse":
        try:
            return _hessian(started, f, strategy)
        except NoForwardRuleError:
            _remember_vjp_rule(f)
            strategy = "reverse-over-reverse"
    return _hessian(started, f, strategy)


def _hessian(started: Started, f: Callable[..., Any], strategy: str) -> Any:
    plan, engine, depth, _, _ = started
    inner = GradientFunction(engine, f, plan)
    info = started.info(f, "hessian", ("hessian", strategy), outputs=False)
    info = derive.with_batched(info, True)
    inputs = [leaf for leaf, a in zip(plan.leaves, plan.active) if a]
    layout = Layout(inputs)
    seeds = basis(inputs, layout)
    with running(engine):
        if strategy == "forward-over-reverse":
            tangents = iter(seeds)
            _, columns = derive.jvp(
                engine,
                inner,
                plan.leaves,
                plan.active,
                [next(tangents) if a else None for a in plan.active],
                info,
            )
            # columns[j]: (n, *x_j.shape), row r = d grad_j / d (input element r)
            per_pair = _blocks(engine, columns, layout)
        else:
            _, rows = derive.vjp_apply(
                engine, inner, plan.leaves, plan.active, lambda diffs: seeds, info
            )
            # rows[j] (spread over leaves): (n, *x_j.shape), row r = d (grad element r) / d x_j
            per_pair = _blocks(engine, [r for r, a in zip(rows, plan.active) if a], layout)
    return _hessian_layout(plan, per_pair, depth)


def _blocks(engine: Backend, results: Sequence[Any], layout: Layout) -> dict[tuple[int, int], Any]:
    """``{(i, j): H_ij}`` over active-leaf indices from one batched result per leaf ``j``
    whose rows ``i`` are the basis directions of leaf ``i``. (Forward-over-reverse gives
    ``d grad_j / d x_i``, reverse-over-reverse ``d grad_i / d x_j``: the same block of a
    twice-differentiable function, jax's ``H[i][j][p, q] = d grad_i[p] / d x_j[q]``.)"""
    out: dict[tuple[int, int], Any] = {}
    for j, res in enumerate(results):
        xp = array_namespace(res)
        for i in range(len(layout.sizes)):
            start_i = layout.offsets[i]
            out[(i, j)] = block(
                xp, res, start_i, start_i + layout.sizes[i], layout.shapes[i], layout.shapes[j]
            )
    return out


def _hessian_layout(plan: Plan, per_pair: dict[tuple[int, int], Any], depth: int) -> Any:
    """``H[a][b]``: the tree of argument ``a`` with each leaf replaced by the tree of
    argument ``b`` holding the blocks (first places of tied arrays only)."""
    index: dict[int, int] = {}  # unique leaf -> its index among the active leaves
    for u, a in enumerate(plan.active):
        if a:
            index[u] = len(index)

    def row_for(u: int) -> tuple[Any, ...]:
        per_leaf = [
            _scalar(per_pair[(index[u], index[v])], plan.leaves[u], plan.leaves[v], depth)
            if v in index
            else None
            for v in range(len(plan.leaves))
        ]
        return place(plan, per_leaf)

    rows = [row_for(u) if u in index else None for u in range(len(plan.leaves))]
    return tuple(
        None if p.kind == CONST else entry for p, entry in zip(plan.args, place(plan, rows))
    )


def _scalar(value: Any, leaf_a: Any, leaf_b: Any, depth: int) -> Any:
    if not depth and isinstance(leaf_a, float) and isinstance(leaf_b, float):
        return float(value)
    return value


@outside_compilers
def hvp(
    f: Callable[..., Any],
    primals: Sequence[Any],
    tangents: Sequence[Any],
    backend: str | Backend | None = None,
    zero: bool = True,
) -> tuple[Any, ...]:
    """The Hessian of ``f``'s scalar loss times ``tangents``, one entry per argument.

    Args:
        f: as for :func:`adswitch.gradient`.
        primals: a tuple of arguments (plain, ``Const`` or ``Duplicated``).
        tangents: a tuple with one tree per primal, shaped like it (``None`` at ``Const``).
        backend: the engine (see :func:`adswitch.gradient`).
        zero: zero ``Duplicated`` shadows before adding ``H @ v`` into them.

    Returns:
        ``H @ tangents``, placed exactly as :func:`adswitch.gradient` places gradients.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> f = lambda x: ad.array_namespace(x).sum(x ** 3)
        >>> ad.hvp(f, (np.array([1.0, 2.0]),), (np.array([1.0, 1.0]),))[0].tolist()
        [6.0, 12.0]
    """
    check_flag("zero", zero)
    return run_hvp(start(f, tuple(primals), backend, "hvp"), f, tangents, zero)


def run_hvp(started: Started, f: Callable[..., Any], tangents: Any, zero: bool) -> tuple[Any, ...]:
    """:func:`hvp` on a started call (also the run of a prepared one); an ``ad.custom_vjp``
    met by forward-over-reverse as in :func:`run_hessian`."""
    strategy = _strategy(started.engine, "hvp", f)
    if strategy == "forward-over-reverse":
        try:
            return _hvp(started, f, tangents, zero, strategy)
        except NoForwardRuleError:
            _remember_vjp_rule(f)
            strategy = "reverse-over-reverse"
    return _hvp(started, f, tangents, zero, strategy)


def _hvp(
    started: Started, f: Callable[..., Any], tangents: Any, zero: bool, strategy: str
) -> tuple[Any, ...]:
    plan, engine, depth, _, _ = started
    per_leaf = tangents_per_leaf(plan, tangents)
    inner = GradientFunction(engine, f, plan)
    info = started.info(f, "hvp", ("hvp", strategy), outputs=False)
    with running(engine):
        if strategy == "forward-over-reverse":
            _, out = derive.jvp(engine, inner, plan.leaves, plan.active, per_leaf, info)
            it = iter(out)
            products = [next(it) if a else None for a in plan.active]
        else:
            # The tangents are values: as a seed they may not be baked into a compiled
            # program, so the call is unkeyed (and one fused pass keeps no graph).
            cotangents = [t for t, a in zip(per_leaf, plan.active) if a]
            _, products = derive.vjp_apply(
                engine,
                inner,
                plan.leaves,
                plan.active,
                lambda diffs: cotangents,
                derive.uncached(info),
            )
    if not depth:
        products = restore_scalar_types(plan, products)
    results = place(plan, products)
    if plan.has_duplicated:
        write_shadows(plan, engine, products, zero)
    return results
