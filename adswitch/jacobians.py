"""``jacobian``: every partial derivative of every output, in jax's ``jacrev`` layout.

One batched primitive call computes the whole matrix: reverse mode pulls back an identity
basis over the outputs (one row per output element), forward mode pushes one over the
inputs (one column per input element). Engines without batching get a loop of single
calls from the front end (``derive``); the numbers are the same either way.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from adswitch import derive, trees
from adswitch.accepts import check_flag
from adswitch.bases import Layout, basis, block, numpy_dtype, shape_of
from adswitch.call import Started, running, start
from adswitch.compilers import outside_compilers
from adswitch.errors import UsageError
from adswitch.namespace import array_namespace
from adswitch.outputs import OutputFunction
from adswitch.plan import Plan
from adswitch.results import as_leaf_scalar, place
from adswitch.spec import Backend, CallInfo

__all__ = ["jacobian", "run_jacobian"]

MODES = ("auto", "reverse", "forward")

# Output sizes seen per function code and input signature: lets "auto" pick the cheaper
# mode before running f (a compiling engine then fuses the whole Jacobian). Only a guess
# of the cheaper mode hangs on it -- both modes give the same numbers -- so a code object
# (shared by the fresh lambdas of a loop) is key enough.
_OUTPUT_SIZES: OrderedDict[Hashable, int] = OrderedDict()
_OUTPUT_SIZES_MAX = 512


@outside_compilers
def jacobian(
    f: Callable[..., Any],
    *args: Any,
    backend: str | Backend | None = None,
    mode: str = "auto",
    has_aux: bool = False,
    sparsity: Any = None,
    check: bool = False,
) -> Any:
    """The Jacobian of ``f`` with respect to every non-``Const`` argument.

    Args:
        f: the function; its whole output ``y`` is differentiated (with ``has_aux``, the
            first element of the pair ``(y, aux)`` it returns).
        *args: the arguments, plain or ``Const`` (``Duplicated`` has no meaning here).
        backend: the engine (see :func:`adswitch.gradient`).
        mode: ``"reverse"`` (one pullback per output element), ``"forward"`` (one tangent
            per input element) or ``"auto"`` (whichever needs fewer, given the engine's
            primitives); all give the same numbers.
        has_aux: ``f`` returns ``(y, aux)``; the call then returns ``(jacobian, aux)``.
        sparsity: ``None`` (dense), ``"detect"`` (``ad.sparsity``) or a pattern of shape
            ``(y.size, x.size)``: the Jacobian is then computed compressed (one batched
            call over the pattern's colors) and returned as a ``scipy.sparse.csr_array``
            (for numpy, torch and jax inputs alike) for one array argument and output.
            With several differentiated arguments (or trees), or a tree output, the
            pattern is the whole flattened matrix (the order of ``ad.sparsity``: rows the
            floating output leaves, columns the differentiated leaves, leaf after leaf,
            each in C order), and the result has the dense layout below with each block a
            ``csr_array`` of shape ``(out_leaf.size, in_leaf.size)``. An incomplete
            pattern drops the entries outside it: ``check=True`` compares with the dense
            Jacobian and raises if a nonzero lies outside. With ``has_aux``, the pattern
            is ``y``'s (``ad.sparsity(f, *args, has_aux=True)``).

    Returns:
        The layout of ``jax.jacrev(f, argnums=<every position>)``, each block in the
        promoted dtype of its output and input (the same in every mode): for ``y`` one
        array, a tuple with one entry per argument -- ``None`` for ``Const``, else a tree like the
        argument whose leaves have shape ``y.shape + leaf.shape`` (``None`` at leaves that
        are not floating, and at the later places of a tied array). For a tree ``y``, the
        tree of ``y`` with each floating leaf replaced by such a tuple.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> W = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> ad.jacobian(lambda x, W: W @ x, np.ones(2), ad.Const(W))[0].tolist()
        [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    """
    if mode not in MODES:
        raise UsageError(f"mode={mode!r}; ad.jacobian's mode is one of {', '.join(MODES)}.")
    check_flag("has_aux", has_aux)
    started = start(f, args, backend, "jacobian", duplicated_ok=False)
    if sparsity is not None:  # (compressed: adswitch.sparse, which imports scipy)
        from adswitch.sparse.compressed import refuse_traced, setup, sparse_jacobian

        refuse_traced(started)
        s = setup(f, args, sparsity, mode, started.engine, has_aux)
        return sparse_jacobian(started, f, has_aux, s, run_jacobian if check else None)
    return run_jacobian(started, f, mode, has_aux)


def run_jacobian(started: Started, f: Callable[..., Any], mode: str, has_aux: bool) -> Any:
    """:func:`jacobian` on a started call (also the run of a prepared one)."""
    plan, engine, depth, _, _ = started
    fn = OutputFunction(f, plan, has_aux, "jacobian")
    info = started.info(f, "jacobian", ("jacobian", has_aux), outputs=has_aux)
    inputs = [leaf for leaf, a in zip(plan.leaves, plan.active) if a]
    memo = started.memo  # a prepared call's: shapes are fixed, the mode once known chosen once
    in_layout = None if memo is None else memo.get("jacobian inputs")
    if in_layout is None:
        in_layout = Layout(inputs)
        if memo is not None:
            memo["jacobian inputs"] = in_layout
    chosen = None if memo is None else memo.get(("jacobian mode", mode))
    known = chosen is not None
    if chosen is None:
        chosen = _choose(mode, engine, f, in_layout.total, plan)
    with running(engine):
        if chosen == "forward":
            out_leaves, per_output = _forward(engine, fn, plan, inputs, in_layout, info)
        elif chosen == "reverse":
            out_leaves, per_output = _reverse(engine, fn, plan, in_layout, info)
        else:
            out_leaves, per_output = _auto(engine, fn, plan, inputs, in_layout, info)
    layout = fn.outputs()
    if not known:
        _remember_size(f, plan, sum(Layout(derive.diff_leaves(fn, out_leaves)).sizes))
        if memo is not None and chosen != "auto":
            # (the output's size only picks the faster mode: both give the same Jacobian)
            memo[("jacobian mode", mode)] = chosen
    entries: list[Any] = [None] * layout.n_y
    for k, per_leaf in zip(layout.diff_positions, per_output):
        if not depth and plan.scalar_leaves:  # (only scalar leaves' blocks change type)
            per_leaf = [as_leaf_scalar(v, leaf) for v, leaf in zip(per_leaf, plan.leaves)]
        entries[k] = place(plan, per_leaf)
    jac = trees.unflatten(layout.y_def, entries)
    if has_aux:  # (only then is the value rebuilt: without aux it is not returned)
        return jac, fn.output(out_leaves)[1]
    return jac


PerOutput = list[list[Any]]  # per differentiated output leaf: per unique leaf, its block


def _reverse(
    engine: Backend, fn: OutputFunction, plan: Plan, in_layout: Layout, info: CallInfo
) -> tuple[list[Any], PerOutput]:
    def seed(diffs: Sequence[Any]) -> list[Any]:
        return basis(diffs, Layout(diffs))

    out_leaves, rows = derive.vjp_apply(
        engine, fn, plan.leaves, plan.active, seed, derive.with_batched(info, True)
    )
    diffs = derive.diff_leaves(fn, out_leaves)
    return out_leaves, _row_blocks(engine, plan, diffs, Layout(diffs), rows)


def _forward(
    engine: Backend,
    fn: OutputFunction,
    plan: Plan,
    inputs: list[Any],
    in_layout: Layout,
    info: CallInfo,
) -> tuple[list[Any], PerOutput]:
    seeds = iter(basis(inputs, in_layout))
    tangents = [next(seeds) if a else None for a in plan.active]
    out_leaves, columns = derive.jvp(
        engine, fn, plan.leaves, plan.active, tangents, derive.with_batched(info, True)
    )
    diffs = derive.diff_leaves(fn, out_leaves)
    return out_leaves, _column_blocks(engine, plan, diffs, in_layout, columns)


def _auto(
    engine: Backend,
    fn: OutputFunction,
    plan: Plan,
    inputs: list[Any],
    in_layout: Layout,
    info: CallInfo,
) -> tuple[list[Any], PerOutput]:
    """Both modes available and the output size unknown: run ``f`` once in reverse mode,
    then pull back (fewer outputs) or push forward (fewer inputs)."""
    replay = derive.Replay(engine, plan.leaves)  # f may run twice (then on copies)
    out_leaves, pullback = derive.vjp(
        engine, fn, plan.leaves, plan.active, derive.with_batched(info, False)
    )
    diffs = derive.diff_leaves(fn, out_leaves)
    out_layout = Layout(diffs)
    if out_layout.total <= in_layout.total:
        rows = pullback(basis(diffs, out_layout), batched=True)
        return out_leaves, _row_blocks(engine, plan, diffs, out_layout, rows)
    seeds = iter(basis(inputs, in_layout))
    tangents = [next(seeds) if a else None for a in plan.active]
    _, columns = derive.jvp(
        engine, fn, replay.values(), plan.active, tangents, derive.with_batched(info, True)
    )
    return out_leaves, _column_blocks(engine, plan, diffs, in_layout, columns)


def _row_blocks(
    engine: Backend, plan: Plan, diffs: Sequence[Any], out_layout: Layout, rows: Sequence[Any]
) -> PerOutput:
    """Per output leaf k, per input leaf: rows ``k`` of the batched pullback, shaped
    ``y_k.shape + x.shape``."""
    per_output: PerOutput = []
    for k in range(len(diffs)):
        start_k, size_k = out_layout.offsets[k], out_layout.sizes[k]
        per_leaf: list[Any] = []
        for u, r in enumerate(rows):
            if r is None or not plan.active[u]:
                per_leaf.append(None)
                continue
            xp = array_namespace(r)
            lead, trail = out_layout.shapes[k], shape_of(plan.leaves[u])
            piece = block(xp, r, start_k, start_k + size_k, lead, trail)
            per_leaf.append(promoted(piece, diffs[k], plan.leaves[u]))
        per_output.append(per_leaf)
    return per_output


def _column_blocks(
    engine: Backend, plan: Plan, diffs: Sequence[Any], in_layout: Layout, columns: Sequence[Any]
) -> PerOutput:
    """Per output leaf k, per input leaf: the columns of that input, shaped
    ``y_k.shape + x.shape`` (the batch axis moved behind the output's axes)."""
    per_output: PerOutput = []
    for k, col in enumerate(columns):
        y_shape = shape_of(diffs[k])
        xp = array_namespace(col)
        per_leaf: list[Any] = [None] * len(plan.leaves)
        a = 0
        for u, active in enumerate(plan.active):
            if not active:
                continue
            x_shape = in_layout.shapes[a]
            start_a = in_layout.offsets[a]
            piece = block(xp, col, start_a, start_a + in_layout.sizes[a], x_shape, y_shape)
            nx = len(x_shape)
            order = (*range(nx, nx + len(y_shape)), *range(nx))
            piece = xp.permute_dims(piece, order) if nx and y_shape else piece
            per_leaf[u] = promoted(piece, diffs[k], plan.leaves[u])
            a += 1
        per_output.append(per_leaf)
    return per_output


def promoted(piece: Any, y: Any, x: Any) -> Any:
    """A block in the promoted dtype of its output and its input, whichever mode computed
    it (reverse mode works in the input's dtype, forward mode in the output's)."""
    y_dtype = numpy_dtype(getattr(y, "dtype", None))
    x_dtype = numpy_dtype(getattr(x, "dtype", None))
    wanted = np.promote_types(y_dtype, x_dtype)
    if numpy_dtype(piece.dtype) == wanted:
        return piece
    xp = array_namespace(piece)
    return xp.astype(piece, getattr(xp, wanted.name))


def _choose(mode: str, engine: Backend, f: Any, n_inputs: int, plan: Plan) -> str:
    """The mode to run: ``"auto"`` is kept only when both are cheap and the output size
    is not known yet."""
    if mode != "auto":
        return mode
    have = derive.natives(engine)
    if not have & {"vjp", "vjp_apply", "value_and_grad"}:
        return "forward"
    if "jvp" not in have or not engine.capabilities.forward:
        return "reverse"  # no true forward mode: one reverse sweep per row is the cheapest
    size = _known_size(f, plan)
    if size is None:
        return "auto"
    return "reverse" if size <= n_inputs else "forward"


def _size_key(f: Any, plan: Plan) -> Hashable:
    shapes = tuple([(shape_of(v), getattr(v, "dtype", None)) for v in plan.leaves])
    return (getattr(f, "__code__", None) or id(type(f)), tuple(plan.active), shapes)


def _known_size(f: Any, plan: Plan) -> int | None:
    return _OUTPUT_SIZES.get(_size_key(f, plan))


def _remember_size(f: Any, plan: Plan, size: int) -> None:
    key = _size_key(f, plan)
    _OUTPUT_SIZES[key] = size
    _OUTPUT_SIZES.move_to_end(key)
    if len(_OUTPUT_SIZES) > _OUTPUT_SIZES_MAX:
        _OUTPUT_SIZES.popitem(last=False)
