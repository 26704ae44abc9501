"""One differentiation call, start to end: plan, engine, run, results.

Every operator starts the same way -- :func:`start` plans the arguments, picks the engine
and checks what can be checked before ``f`` runs -- and runs its engine primitive inside
:func:`running`, so that calls made inside ``f`` know which engine encloses them.
:func:`run_gradient` is ``gradient``/``withgradient`` on that machinery.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

from adswitch import derive, keys, selection
from adswitch.accepts import check_accepts
from adswitch.activity import Duplicated
from adswitch.derive_support import NATIVES
from adswitch.errors import ActivityError
from adswitch.leaves import describe
from adswitch.outputs import LossFunction
from adswitch.overlap import check_overlap
from adswitch.plan import DUPLICATED, Plan
from adswitch.registry import default_registry
from adswitch.results import loss_value, place, restore_scalar_types, write_shadows
from adswitch.spec import Backend, CallInfo, Structure

__all__ = ["Started", "run_gradient", "running", "start"]


class Started(NamedTuple):
    """A call whose arguments are planned and whose engine is chosen."""

    plan: Plan
    engine: Backend
    depth: int  # differentiations on this engine enclosing the call
    # A prepared call's engine slots: per operator step (``extra``), what the engine's
    # ``prepare_slot`` made (without the hook: the dict itself, a dict per step nested in it)
    prepared: dict[Hashable, Any] | None = None
    # A prepared call's memo, when its CallInfos depend on its structure alone (no leaf
    # value in the cache key): per (entry, extra, outputs), the CallInfo, made once; also
    # what an operator derives from the structure (``jacobians``' mode). ``None`` else.
    memo: dict[Hashable, Any] | None = None

    def info(
        self, f: Callable[..., Any], entry: str, extra: Hashable = None, outputs: bool = True
    ) -> CallInfo:
        """The call's :class:`CallInfo`; ``extra`` (hashable) distinguishes compiled
        programs of one function by what else the operator asks (``has_aux``, mode...);
        ``outputs``: whether the caller uses the outputs' values."""
        memo = self.memo
        if memo is None:
            return self._info(f, entry, extra, outputs)
        key = (entry, extra, outputs)
        info: CallInfo | None = memo.get(key)
        if info is None:  # (threads racing here make equal CallInfos: either one serves)
            info = memo[key] = self._info(f, entry, extra, outputs)
        return info

    def _info(self, f: Callable[..., Any], entry: str, extra: Hashable, outputs: bool) -> CallInfo:
        engine = self.engine
        cache_key = key = structure = None
        if engine.capabilities.compiles:
            base = keys.cache_key(self.plan, f)
            if base is not None:
                cache_key = base if extra is None else (base, extra)
                rest = keys.without_function(base)
                key = rest if extra is None else (rest, extra)
                structure = Structure(key=key, func=f, entry=entry)
        prepared = self.prepared
        if prepared is not None:
            prepared = _slot_of(prepared, engine, extra, structure, self.plan, f, entry)
        # (by keyword: a field added to ``spec.CallInfo`` cannot shift meanings here; it
        # costs about half a microsecond more than a positional build, once per call)
        return CallInfo(
            depth=self.depth,
            cache_key=cache_key,
            entry=entry,
            func=f,
            prepared=prepared,
            structure_key=key,
            wants_outputs=outputs,
            structure=structure,
        )


def _slot_of(
    slots: dict[Hashable, Any],
    engine: Backend,
    extra: Hashable,
    structure: Structure | None,
    plan: Plan,
    f: Callable[..., Any],
    entry: str,
) -> Any:
    """The engine's slot of a prepared call's operator step ``extra``, made on its first
    call: the engine's ``prepare_slot`` object (kept in ``slots`` under ``extra``), or a
    dict -- ``slots`` itself for the first step (``extra`` ``None``), else one nested in it."""
    hook = getattr(engine, "prepare_slot", None)
    if hook is None:
        return slots if extra is None else slots.setdefault(extra, {})
    found = slots.get(extra, _MISSING)
    if found is _MISSING:
        if structure is None:  # (an engine that does not compile: no key made yet)
            base = keys.cache_key(plan, f)
            rest = None if base is None else keys.without_function(base)
            structure = Structure(key=rest if extra is None else (rest, extra), func=f, entry=entry)
        made = hook(structure)
        # (threads racing here each ask the hook: the first stored serves them all)
        found = slots.setdefault(extra, {} if made is None else made)
    return found


_MISSING = object()


def start(
    f: Callable[..., Any],
    args: tuple[Any, ...],
    backend: str | Backend | None,
    operator: str = "gradient",
    duplicated_ok: bool = True,
) -> Started:
    """Plan ``args``, choose the engine, and check everything that can be checked
    before ``f`` runs."""
    if not callable(f):
        raise ActivityError(
            f"the function to differentiate must come first; got {describe(f)}. "
            f"Call ad.{operator}(f, ...)."
        )
    calls = selection.current_calls.get()
    # Refused before planning: the plan checks a shadow against its value first, and the
    # shadow ``Duplicated(x)`` makes of a traced x (autograd's boxes: an object array)
    # would fail that check with a message about its dtype instead of this one.
    if calls and any(isinstance(arg, Duplicated) for arg in args):
        raise ActivityError(
            "Duplicated is not allowed inside a function that is itself being differentiated: "
            "an in-place shadow cannot carry the outer derivative. Pass the argument plain and "
            "use the returned gradient."
        )
    plan = Plan(args)
    if plan.has_duplicated and not duplicated_ok:
        a = next(i for i, p in enumerate(plan.args) if p.kind == DUPLICATED)
        raise ActivityError(
            f"args[{a}] is Duplicated, but ad.{operator} returns results that are not shaped "
            "like the argument, so there is no shadow to write into. Pass the argument "
            "plain (Duplicated makes sense for gradient, withgradient, hvp and the pullback "
            "of vjp)."
        )
    registry = default_registry()
    engine = selection.select(backend, plan.leaves, registry)
    check_accepts(plan, engine, registry)
    if plan.n_active_arrays > 1:  # (one array cannot overlap another: no call)
        check_overlap(plan, engine)
    # ``tuple.__new__`` is ``Started(...)`` without the named tuple's Python-level
    # ``__new__`` (a frame of its own on every call)
    return _new_tuple(Started, (plan, engine, len(calls), None, None))


_new_tuple = tuple.__new__  # (the internal ``Started`` only: public tuples by keyword)


class running:  # (lower case: it reads as the function it was, ``with running(engine):``)
    """Mark ``engine`` as differentiating while the ``with`` block runs (calls inside ``f``
    then run on it, one level deeper). A class, not a ``contextmanager`` generator: that
    costs a microsecond per call of every operator."""

    __slots__ = ("engine", "token")

    def __init__(self, engine: Backend) -> None:
        self.engine = engine

    def __enter__(self) -> None:
        calls = selection.current_calls
        self.token = calls.set((*calls.get(), self.engine))

    def __exit__(self, *exc: object) -> None:
        selection.current_calls.reset(self.token)


def run_gradient(
    started: Started, f: Callable[..., Any], zero: bool, entry: str
) -> tuple[Any, tuple[Any, ...]]:
    """``(f's output, gradients)`` of a started call (also the run of a prepared one); the
    output is ``None`` for ``entry == "gradient"`` (it is not rebuilt)."""
    plan, engine, depth, prepared, _ = started
    fn = LossFunction(f, plan)
    if prepared is None and not engine.capabilities.compiles:  # no keys to make: built here
        info = CallInfo(depth=depth, entry=entry, func=f, wants_outputs=entry != "gradient")
    else:
        info = started.info(f, entry, outputs=entry != "gradient")
    calls = selection.current_calls
    token = calls.set((*calls.get(), engine))
    try:  # (not ``running``: a context manager costs a microsecond on this hot path)
        if "value_and_grad" in (NATIVES.get(type(engine)) or derive.natives(engine)):
            out_leaves, grads = engine.value_and_grad(fn, plan.leaves, plan.active, info)
        else:
            out_leaves, grads = derive.value_and_grad(engine, fn, plan.leaves, plan.active, info)
    finally:
        calls.reset(token)

    val = None
    if entry != "gradient":
        if not depth and out_leaves:  # (the loss is the output's first leaf)
            out_leaves = [loss_value(plan, out_leaves[0]), *out_leaves[1:]]
        val = fn.output(out_leaves)
    if not depth and plan.scalar_leaves:
        grads = restore_scalar_types(plan, grads)
    results = place(plan, grads)
    if plan.has_duplicated:
        write_shadows(plan, engine, grads, zero)
    return val, results
