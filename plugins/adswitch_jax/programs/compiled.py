"""The compiled way of a call: look its program up (or compile it), run it, settle it.

The key of a program is what ``f`` *is* (:mod:`adswitch_jax.closures.captures`: its code and what
it reads besides its arguments, the arrays among that as shapes), the argument
structure (the front end's key without the function), the primitive, batching, 64-bit
mode and the leaves' signature. A prepared call (``CallInfo.prepared``, a :class:`Slot`) keeps the
last program it ran in its own slot and skips the leaves' signature and the cache lookup.
Output leaves that are not arrays cannot leave a compiled program: for such functions
the outputs come from one extra eager call of ``f``.

Imported only once jax is in use (it imports jax through its imports).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from adswitch_jax.closures.baked import Guard
from adswitch_jax.closures.captures import Walk, bake
from adswitch_jax.closures.recall import forget, recall
from adswitch_jax.notices import warn_once
from adswitch_jax.primitives.calls import Body, Holder, Layout, Retrace, forward
from adswitch_jax.primitives.pullback import Pullback, compiled_apply
from adswitch_jax.primitives.request import Request, eager_run, finish, unkeyed
from adswitch_jax.primitives.results import Kinds, outputs
from adswitch_jax.programs.basis import Basis, identity_basis
from adswitch_jax.programs.cache import LRUCache
from adswitch_jax.programs.entries import (
    EAGER,
    JIT_AUX,
    Entry,
    name_of,
    note_compile,
    owner_of,
    warning_key,
)
from adswitch_jax.programs.keys import Scan, scan, static_token, structure_of, tangent_sig
from adswitch_jax.programs.program import appliers, build
from adswitch_jax.refusals.errors import TRACE_FAILURES

__all__ = ["CACHE", "SLOT", "Prepared", "Slot", "compiled", "state_of"]

#: Compiled programs (see the module docstring for the key).
CACHE = LRUCache(maxsize=256)
_STALE_LIMIT = 3  # stale programs of one function before it runs eagerly for good


class Prepared:
    """What this engine keeps in a prepared call's slot: the scan of its leaves (the same
    on every call but for the values of constants) and the last program it ran, with
    what it was looked up by."""

    __slots__ = ("last", "scan")

    def __init__(self, found: Scan) -> None:
        self.scan = found
        self.last: tuple[Hashable, Hashable, Entry] | None = None


SLOT = "adswitch_jax"  # the first part of this engine's keys in a Slot


class Slot(dict[Hashable, Prepared]):
    """This engine's slot of one prepared structure (``Backend.prepare_slot``): a
    :class:`Prepared` per primitive program the structure's calls ran, keyed ``(SLOT,
    primitive, batched, wants_outputs)`` (:func:`state_of`). A dict, so that the prepared
    shortcut (:mod:`adswitch_jax.programs.shortcut`) reads the programs the full path ran."""

    __slots__ = ()


def state_of(slot: dict[Hashable, Any], request: Request) -> Prepared:
    """The :class:`Prepared` of ``request``'s program in ``slot`` (a :class:`Slot`, or
    the plain dict of a caller that calls the engine directly), made from a scan of its
    leaves on its first call; threads racing here share the first one stored."""
    key = (SLOT, request.primitive, request.batched, request.info.wants_outputs)
    state: Prepared | None = slot.get(key)
    if state is None:
        state = slot.setdefault(key, Prepared(scan(request.leaves, request.active)))
    return state


def compiled(
    request: Request, found: Scan, captures: Walk, x64: bool, state: Prepared | None
) -> tuple[list[Any], Any]:
    """Run ``request`` as a compiled program: ``(output leaves, result)`` as
    :func:`adswitch_jax.primitives.dispatch.run` returns them.

    Args:
        request: the call.
        found: the scan of its leaves (a prepared call's: of its first call).
        captures: the walk of its function.
        x64: the call runs in 64-bit mode.
        state: a prepared call's slot, or ``None``.
    """
    info, leaves = request.info, request.leaves
    basis = None
    tangent_key: Hashable = None
    if request.tangents is not None:
        basis = identity_basis(request.tangents) if request.batched else None
        # an identity basis is baked into the program: the key holds its layout instead.
        # Unbatched tangents have their primals' shapes and dtypes (the front end checked
        # them), so their kinds tell the programs apart; a program traced again for other
        # ones is recompiled (Retrace, below).
        if basis is not None:
            tangent_key = ("basis", basis)
        elif request.batched:
            tangent_key = tangent_sig(request.tangents)
        else:
            tangent_key = tuple(map(type, request.tangents))
    try:
        fast, key, entry = _lookup(request, found, captures, x64, state, tangent_key)
    except TypeError:  # an unhashable constant leaf
        return unkeyed(request, found, x64)
    if entry is not None and entry.guard is not None and not entry.guard.holds(captures.roots):
        entry.owner.stale += 1  # f reads something that changed: the program is stale
        entry = None
    fresh = entry is None
    if entry is None:
        entry = _new_entry(request, found, captures, structure_of(info), basis)
    if entry.mode == EAGER:
        CACHE.put(key, entry)
        if state is not None:
            state.last = (fast, key, entry)
        return eager_run(request, found, not found.jax_kind, x64)
    args = [leaves[i] for i in found.dyn]
    args += captures.lifted
    if request.tangents is not None and basis is None:
        args += request.tangents
    program = entry.program
    assert program is not None
    try:
        arrays, result = program(*args)
    except TRACE_FAILURES as exc:
        if fresh and captures.lifted:
            # Python control flow on a captured array's value: compile again with the
            # captured arrays baked in and guarded (as jax.jit bakes them), before eager.
            bake(captures)
            forget(info.func)
            return compiled(request, found, recall(info.func), x64, None)
        entry.mode = EAGER
        CACHE.put(key, entry)
        if state is not None:
            state.last = (fast, key, entry)
        func = info.func
        warn_once(
            warning_key("eager", func),
            f"jax engine: {name_of(func)} cannot be compiled with jax.jit "
            f"({type(exc).__name__}: Python control flow or conversions that depend on "
            "array values), so adswitch runs it eagerly (much slower). Fix: use xp.where / "
            "jax.lax.cond instead of Python if/while on array values.",
        )
        return eager_run(request, found, not found.jax_kind, x64)
    except Retrace:
        # jax traced this cached program again (for an input signature its key did not
        # tell apart): drop it and compile one for this call, keyed from a fresh scan.
        CACHE.discard(key)
        return compiled(request, scan(leaves, request.active), captures, x64, None)
    finally:
        if fresh and entry.holder is not None:
            entry.holder.clear()  # the program must not keep this call's objects alive
    if fresh:
        _settle(request, entry, captures, key)
    if state is not None:
        state.last = (fast, key, entry)

    trace = entry.trace
    if entry.mode == JIT_AUX:
        out_leaves = forward(request.fn, leaves, request.active)  # non-array outputs
    else:
        if not fresh:
            request.fn.reuse(entry.output_structure)  # f did not run: say what it gave
        if request.info.wants_outputs:
            out_leaves = [None] * trace.n_out
            for pos, array in zip(trace.slots, arrays):
                out_leaves[pos] = array
        else:  # the caller reads their shapes and dtypes only
            out_leaves = list(trace.stand_ins)
    if request.primitive == "vjp":
        if entry.appliers is None:
            entry.appliers = appliers(trace, entry.layout)
        pullback = Pullback(compiled_apply(entry.appliers), result, entry.kinds, x64)
        return outputs(out_leaves, found.jax_kind), pullback
    return finish(request, found, out_leaves, result, entry.kinds)


def _lookup(
    request: Request,
    found: Scan,
    captures: Walk,
    x64: bool,
    state: Prepared | None,
    tangent_key: Hashable,
) -> tuple[Hashable, Hashable, Entry | None]:
    """``(fast key, key, entry or None)``: from a prepared call's slot when its last
    program applies (the fast key: what f read, constant values, 64-bit mode, tangents),
    else from the cache."""
    leaves = request.leaves
    fast: Hashable = None
    if state is not None:
        statics = tuple([static_token(leaves[u]) for u in found.static])
        fast = (captures.key, statics, x64, tangent_key)
        last = state.last
        if last is not None and last[0] == fast:
            return fast, last[1], last[2]
    sig = found.sig
    if state is not None and found.static:  # the prepared scan has the first values
        patched = list(sig)
        for u in found.static:
            patched[u] = static_token(leaves[u])
        sig = tuple(patched)
    head = (captures.key, structure_of(request.info), request.primitive, request.batched, x64)
    key = (head, request.info.wants_outputs, sig, tangent_key)
    return fast, key, CACHE.get(key)


def _new_entry(
    request: Request, found: Scan, captures: Walk, structure: Hashable, basis: Basis | None
) -> Entry:
    leaves = request.leaves
    owner = owner_of((captures.key, structure))
    layout = Layout(
        leaves,
        request.active,
        found.dyn,
        len(captures.lifted),
        not found.jax_kind,
        # Where the caller reads only the outputs' shapes and dtypes the program does not
        # return them (stand-ins serve): XLA then drops the inner gradient's own backward
        # pass from the jvp of a Hessian or Hessian-vector product (about a quarter of its
        # work), and a Jacobian's program returns one array less.
        request.info.wants_outputs,
        request.batched,
    )
    entry = Entry(owner, layout, Kinds(leaves, request.active))
    func = request.info.func
    if owner.stale >= _STALE_LIMIT:
        entry.mode = EAGER
        warn_once(
            warning_key("stale", func),
            f"jax engine: {name_of(func)} reads values from outside its arguments "
            "(globals, closure variables, attributes) that keep changing between calls, "
            "so a compiled program would be stale; adswitch runs it eagerly (much "
            "slower). Fix: pass those values as arguments (ad.Const(...) for those not "
            "differentiated).",
        )
        return entry
    dyn = set(found.dyn)
    # Only the baked leaves are kept, and only until the compile: not this call's arrays.
    base = [None if i in dyn else leaf for i, leaf in enumerate(leaves)]
    entry.holder = Holder(Body(request.fn, base, captures.slots, request.seed, basis))
    entry.program = build(request.primitive, layout, entry.trace, entry.holder)
    note_compile(func, captures.key)
    return entry


def _settle(request: Request, entry: Entry, captures: Walk, key: Hashable) -> None:
    """After a program's first run: what its outputs were, what it baked in."""
    func = request.info.func
    entry.output_structure = request.fn.output_structure  # f ran while jax traced it
    if request.info.wants_outputs and entry.trace.aux_types:
        entry.mode = JIT_AUX
        warn_once(
            warning_key("aux", func),
            f"jax engine: {name_of(func)} returns non-array outputs "
            f"({', '.join(sorted(set(entry.trace.aux_types)))}), which cannot leave a "
            "compiled program; adswitch computes the derivatives compiled and the outputs "
            "with one extra eager call of f. Fix (faster): return only arrays from f.",
        )
    entry.held = captures.held
    if captures.roots:
        entry.guard = Guard(captures.roots)  # after f ran: its own side effects are settled
        if entry.guard.unchecked_bytes:
            warn_once(
                warning_key("big capture", func),
                f"jax engine: {name_of(func)} reads a large numpy array "
                f"({entry.guard.unchecked_bytes / 2**20:.0f} MiB) from a global or an "
                "object's attribute; the compiled program holds it as a constant and will "
                "not see changes made to it in place. Fix: pass it as an argument "
                "(ad.Const(data)), or capture it in a closure (closure arrays are inputs).",
            )
    CACHE.put(key, entry)
