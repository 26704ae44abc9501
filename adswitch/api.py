"""``withgradient`` -- the one entry point -- and ``gradient``, which is it minus the value."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

from adswitch import keys, selection, trees
from adswitch.errors import ActivityError, OutputError
from adswitch.leaves import describe, is_float_dtype, leaf_kind
from adswitch.plan import CONST, DUPLICATED, PLAIN, Plan
from adswitch.registry import default_registry
from adswitch.shadow import write
from adswitch.spec import Backend, CallInfo

__all__ = ["WithGradient", "gradient", "withgradient"]


class WithGradient(NamedTuple):
    """The result of :func:`withgradient`: the function's whole output and the gradients."""

    val: Any
    grad: tuple[Any, ...]


# Output structures seen per cache key: a compiling engine that hits its cache does not
# run ``fn``, so the front end must remember how to rebuild the output.
_OUTPUT_DEFS: OrderedDict[Hashable, trees.TreeDef] = OrderedDict()
_OUTPUT_DEFS_MAX = 1024


def withgradient(
    f: Callable[..., Any], *args: Any, backend: str | Backend | None = None, zero: bool = True
) -> WithGradient:
    """Evaluate ``f(*args)`` and its gradient with respect to every non-``Const`` argument.

    Args:
        f: the function. It returns a real scalar (a Python number or a 0-d floating
            array), or a tuple/list/namedtuple/dict whose first element is one; only
            that first element is differentiated, the rest rides along (aux outputs).
        *args: the arguments, each plain (differentiated; gradient returned as a new
            tree of the same type), ``Duplicated(x, dx)`` (gradient added into ``dx`` in
            place; the entry is ``dx`` itself) or ``Const(x)`` (not differentiated; entry
            ``None``). Trees may be dicts, lists, tuples, namedtuples, dataclasses or
            registered types; the same array object at several places is one parameter
            whose total gradient sits at its first occurrence (``None`` at the others).
        backend: the engine's name or object; by default the enclosing call's engine,
            then ``ad.use``, ``ADSWITCH_BACKEND``, the arguments' array types, ``"tape"``.
        zero: zero ``Duplicated`` shadows before adding (``False`` accumulates).

    Returns:
        ``WithGradient(val, grad)``: ``val`` is ``f``'s whole output with arrays concrete,
        in the caller's array kind; ``grad`` has one entry per argument.

    Raises:
        ActivityError, OutputError, AliasingError, MutationError, UnsupportedError,
        BackendUnavailableError: each message says the fix. Exceptions raised by ``f``
        propagate unchanged. On any exception, no ``Duplicated`` shadow has been touched.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> def loss(w, x):
        ...     xp = ad.array_namespace(w)
        ...     y = xp.sum(w * x)
        ...     return y, "aux"
        >>> out = ad.withgradient(loss, np.array([1.0, 2.0]), ad.Const(np.array([3.0, 4.0])))
        >>> float(out.val[0]), out.val[1], out.grad[0].tolist(), out.grad[1]
        (11.0, 'aux', [3.0, 4.0], None)
    """
    val, grad = _run(f, args, backend, zero, "withgradient")
    return WithGradient(val, grad)


def gradient(
    f: Callable[..., Any], *args: Any, backend: str | Backend | None = None, zero: bool = True
) -> tuple[Any, ...]:
    """The gradient of ``f`` at ``args``: :func:`withgradient` without the value.

    Returns:
        One entry per positional argument (see :func:`withgradient`).

    Example:
        >>> import adswitch as ad, numpy as np
        >>> ad.gradient(lambda x: ad.array_namespace(x).sum(x**2), np.array([1.0, 2.0]))
        (array([2., 4.]),)
    """
    return _run(f, args, backend, zero, "gradient")[1]


def _run(
    f: Callable[..., Any],
    args: tuple[Any, ...],
    backend: str | Backend | None,
    zero: bool,
    entry: str,
) -> tuple[Any, tuple[Any, ...]]:
    """``(f's output, gradients)``; the output is ``None`` for ``entry == "gradient"``."""
    if not callable(f):
        raise ActivityError(
            f"the function to differentiate must come first; got {describe(f)}. "
            "Call ad.gradient(f, *args)."
        )
    plan = Plan(args)
    engine = selection.select(backend, plan.leaves, default_registry())
    plan.check_overlap(engine)
    calls = selection.current_calls.get()
    if calls and plan.has_duplicated:
        raise ActivityError(
            "Duplicated is not allowed inside a function that is itself being differentiated: "
            "an in-place shadow cannot carry the outer derivative. Pass the argument plain and "
            "use the returned gradient."
        )
    cache_key = keys.cache_key(plan, f) if engine.capabilities.compiles else None
    info = CallInfo(len(calls), cache_key, entry, f)
    fn, output_def = _loss_function(f, plan, cache_key)

    token = selection.current_calls.set((*calls, engine))
    try:
        out_leaves, grads = engine.value_and_grad(fn, plan.leaves, plan.active, info)
    finally:
        selection.current_calls.reset(token)

    # ad.gradient discards the value: it is not rebuilt (nor, for a compiled program that
    # skipped f, looked up).
    val = None if entry == "gradient" else trees.unflatten(output_def(), out_leaves)
    return val, _results(plan, engine, grads, zero, not calls)


def _loss_function(
    f: Callable[..., Any], plan: Plan, cache_key: Hashable | None
) -> tuple[Callable[[Any], tuple[Any, list[Any]]], Callable[[], trees.TreeDef]]:
    """Build the engine's ``fn(leaves) -> (loss, out_leaves)`` and a getter of the output
    structure seen by its last run."""
    arg_plans = plan.args
    seen: list[trees.TreeDef] = []
    # Arguments that are single leaves need no rebuilding: just their leaves' positions.
    bare = [p.leaf_ids[0] for p in arg_plans if p.treedef is None]
    positions = bare if len(bare) == len(arg_plans) else None

    def fn(values: Any) -> tuple[Any, list[Any]]:
        if positions is not None:
            out = f(*[values[u] for u in positions])
        else:
            out = f(
                *[
                    values[p.leaf_ids[0]]
                    if p.treedef is None
                    else trees.unflatten(p.treedef, [values[u] for u in p.leaf_ids])
                    for p in arg_plans
                ]
            )
        loss = _loss_of(out)
        out_leaves, out_def = trees.flatten(out)
        seen.append(out_def)
        if cache_key is not None:
            output_key = (cache_key, keys.signature(plan))
            _OUTPUT_DEFS[output_key] = out_def
            _OUTPUT_DEFS.move_to_end(output_key)
            if len(_OUTPUT_DEFS) > _OUTPUT_DEFS_MAX:
                _OUTPUT_DEFS.popitem(last=False)
        return loss, out_leaves

    def output_def() -> trees.TreeDef:
        if seen:
            return seen[-1]
        # A compiled program ran without calling fn. The output structure may depend on
        # shapes, so it is remembered per cache key *and* leaf signature (computed only
        # here and when fn runs: off the hot path of other engines).
        output_key = None if cache_key is None else (cache_key, keys.signature(plan))
        if output_key is not None and output_key in _OUTPUT_DEFS:
            _OUTPUT_DEFS.move_to_end(output_key)  # least recently used goes first
            return _OUTPUT_DEFS[output_key]
        raise OutputError("the engine returned without running the function; this is an engine bug")

    return fn, output_def


def _loss_of(out: Any) -> Any:
    """The differentiated part of ``f``'s output, checked to be a real scalar."""
    if leaf_kind(out) == "f" and (isinstance(out, float) or out.shape == ()):
        return out  # the loss alone, the commonest output: nothing else to check
    loss = out
    if isinstance(out, (tuple, list)):
        if not out:
            raise OutputError(f"f returned an empty {type(out).__name__}; return the loss first.")
        loss = out[0]
    elif isinstance(out, dict):
        if not out:
            raise OutputError("f returned an empty dict; put the loss first.")
        loss = next(iter(out.values()))
    if isinstance(loss, (int, float)) and not isinstance(loss, bool):
        return loss
    shape = getattr(loss, "shape", None)
    dtype = getattr(loss, "dtype", None)
    where = "f returned" if loss is out else "the first element of f's output is"
    if shape is None or dtype is None:
        raise OutputError(
            f"{where} {describe(loss)}; gradient needs a real scalar loss (a Python float or "
            "a 0-d floating array) there. Return the loss first, e.g. (loss, aux)."
        )
    if tuple(shape) != ():
        raise OutputError(
            f"{where} an array of shape {tuple(shape)}; gradient needs a scalar loss. Reduce "
            "it (xp.sum(y) or xp.mean(y)), or for a vector function compute a Jacobian: one "
            "gradient per output element."
        )
    if not is_float_dtype(dtype):
        raise OutputError(
            f"{where} a 0-d array of dtype {dtype}; the loss must be real floating point. "
            "Compute it in floating point (x.astype(float)); complex losses are not "
            "differentiable here -- take xp.real(...) or abs(...)**2."
        )
    return loss


def _results(
    plan: Plan, engine: Backend, grads: list[Any], zero: bool, top_level: bool
) -> tuple[Any, ...]:
    """Place gradients: new trees for plain arguments, shadows for Duplicated ones."""
    active = plan.active
    first = plan.first
    if top_level and plan.scalar_leaves:
        # Scalar leaves get their own type back (np.float32 in, np.float32 out), whatever
        # the engine computed them as; inside an outer differentiation they stay traced.
        grads = list(grads)
        for u in plan.scalar_leaves:
            leaf = plan.leaves[u]
            if type(grads[u]) is not type(leaf):
                grads[u] = type(leaf)(grads[u])
    if len(plan.args) == 1 and plan.args[0].kind == PLAIN and plan.args[0].treedef is None:
        return (grads[0],)  # one bare array or scalar, the commonest call: kept cheap
    results: list[Any] = []
    untied = len(plan.leaves) == sum([len(p.leaf_ids) for p in plan.args])
    for a, p in enumerate(plan.args):
        if p.kind == CONST:
            results.append(None)
        elif p.kind == DUPLICATED:
            results.append(p.dval)
        else:
            if untied:  # every position is its unique leaf's first: no need to ask
                entries = [grads[u] if active[u] else None for u in p.leaf_ids]
            else:
                entries = [
                    grads[u] if active[u] and first[u] == (a, j) else None
                    for j, u in enumerate(p.leaf_ids)
                ]
            results.append(entries[0] if p.treedef is None else trees.unflatten(p.treedef, entries))
    # Shadows last: every check has passed and every gradient exists.
    written: set[int] = set()  # a tied parameter has one shadow: add its total once
    for p in plan.args:
        if p.kind != DUPLICATED:
            continue
        for j, (u, shadow) in enumerate(zip(p.leaf_ids, p.shadow_leaves)):
            if not active[u] or u in written:
                continue
            written.add(u)
            if isinstance(plan.leaves[u], float):
                container, key, is_attr = p.float_slots[j]  # located by the plan's checks
                old = 0.0 if zero else (getattr(container, key) if is_attr else container[key])
                if is_attr:
                    setattr(container, key, old + grads[u])
                else:
                    container[key] = old + grads[u]
            else:
                write(engine, shadow, grads[u], zero)
    return tuple(results)
