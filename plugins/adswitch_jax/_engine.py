"""How the jax engine picks a way to differentiate one call, and the cache of programs.

Imported lazily by :mod:`adswitch_jax.plugin` the first time jax is used (it imports jax).

One call goes one of three ways:

* **compiled** (top level, the function keyable): one ``jax.jit`` program per cache key
  computes the gradients (and, for ``withgradient``, the output arrays). Output leaves
  that are not arrays (strings, numbers) cannot leave a compiled program, so for such
  functions ``withgradient`` gets the outputs from one extra eager call of ``f``.
* **eager** (the function cannot be traced under ``jit``, or cannot be keyed):
  ``jax.value_and_grad`` without ``jit``. Said once per function with a warning.
* **nested** (inside another differentiation): ``jax.value_and_grad`` on the enclosing
  call's traced values, so the result stays differentiable by the enclosing call.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from adswitch.spec import CallInfo, LossFn
from adswitch_jax._cache import LRUCache
from adswitch_jax._entries import (
    EAGER,
    JIT_AUX,
    Entry,
    forget_compiles,
    name_of,
    note_compile,
    owner_of,
)
from adswitch_jax._errors import TRACE_FAILURES, translate
from adswitch_jax._guard import Guard
from adswitch_jax._program import NUMERIC, ArrayImpl, eager, finish, forward, make_program
from adswitch_jax.notices import warn_once

__all__ = ["CACHE", "reset", "value_and_grad"]

# Any of these among the leaves turns 64-bit mode on for the call: without it jax would
# silently compute (or truncate) them in 32 bits.
_WIDE = frozenset(np.dtype(t) for t in ("float64", "int64", "uint64", "complex128"))

_config: Any = jax.config  # its flags are dynamic attributes

#: Compiled programs, keyed by (front-end cache key, 64-bit mode, outputs wanted, leaf
#: signature).
CACHE = LRUCache(maxsize=256)
_STALE_LIMIT = 3  # stale programs of one function before it runs eagerly for good


def reset() -> None:
    """Forget every compiled program and compile count (for tests)."""
    CACHE.clear()
    forget_compiles()


def value_and_grad(
    fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], list[Any | None]]:
    """The jax engine's :meth:`adswitch.spec.Backend.value_and_grad` (see there)."""
    try:
        return _dispatch(fn, leaves, active, info)
    except Exception as exc:
        replacement = translate(exc)
        if replacement is None:
            raise
        raise replacement from exc


def _dispatch(
    fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], list[Any | None]]:
    x64 = False
    jax_kind = False  # some leaf is a jax array: arrays come back as jax arrays
    traced = info.depth > 0
    sig: list[Any] = []
    dyn: list[int] = []  # leaves passed to the program as arguments
    for i, leaf in enumerate(leaves):
        t = type(leaf)
        if t is ArrayImpl:
            jax_kind = True
            aval = leaf.aval  # shape, dtype and weak type in one cheap, hashable value
            sig.append((aval, leaf.sharding))
            x64 = x64 or aval.dtype in _WIDE
            dyn.append(i)
        elif t is np.ndarray:
            dtype = leaf.dtype
            if dtype.kind not in NUMERIC:
                sig.append(leaf)  # unhashable: the call runs eagerly
                continue
            sig.append((leaf.shape, dtype))
            x64 = x64 or dtype in _WIDE
            dyn.append(i)
        elif isinstance(leaf, jax.Array):  # tracers of an enclosing transformation
            jax_kind = True
            traced = traced or isinstance(leaf, Tracer)
            sig.append((leaf.shape, leaf.dtype, getattr(leaf, "weak_type", False)))
            x64 = x64 or leaf.dtype in _WIDE
            dyn.append(i)
        elif active[i]:  # a Python float: a double, so 64-bit
            x64 = True
            sig.append(t)
            dyn.append(i)
        else:
            # Baked into the program, so its exact value is part of the key (hex tells
            # -0.0 from 0.0 and makes nan equal to itself).
            sig.append((t, leaf.hex() if t is float else leaf))
    if x64 and not _config.jax_enable_x64:
        with jax.enable_x64(True):
            return _run(fn, leaves, active, info, sig, dyn, x64, jax_kind, traced)
    return _run(fn, leaves, active, info, sig, dyn, x64, jax_kind, traced)


def _run(
    fn: LossFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    info: CallInfo,
    sig: list[Any],
    dyn: list[int],
    x64: bool,
    jax_kind: bool,
    traced: bool,
) -> tuple[list[Any], list[Any | None]]:
    # numpy arrays in: numpy's in-place semantics, which jax must refuse where it cannot
    # follow them; inside another differentiation: whatever the enclosing call had.
    semantics: bool | None = None if traced else not jax_kind
    if traced:
        return finish(*eager(fn, leaves, active, semantics), leaves, active, jax_kind)
    func = info.func  # to guard what a program baked in, and to name f in warnings
    with_outputs = info.entry != "gradient"
    entry: Entry | None = None
    key: Hashable = (info.cache_key, x64, with_outputs, tuple(sig))
    try:
        entry = None if info.cache_key is None else CACHE.get(key)
    except TypeError:  # an unhashable constant leaf
        info = info._replace(cache_key=None)
    if info.cache_key is None:
        warn_once(
            ("unkeyed", func),
            f"jax engine: {name_of(func)} cannot be compiled because an argument leaf is "
            "unhashable (a non-numeric array, or a non-array value used as a constant), so it "
            "runs eagerly (much slower). Fix: pass numeric arrays, or hashable constants.",
        )
        return finish(*eager(fn, leaves, active, semantics), leaves, active, jax_kind)

    if entry is not None and entry.guard is not None and not entry.guard.holds(func):
        entry.owner.stale += 1  # f reads something that changed: the program is stale
        entry = None
    fresh = entry is None
    if entry is None:
        owner = owner_of(info.cache_key)
        entry = Entry(owner)
        if owner.stale >= _STALE_LIMIT:
            entry.mode = EAGER
            CACHE.put(key, entry)
            warn_once(
                ("stale", func),
                f"jax engine: {name_of(func)} reads values from outside its arguments "
                "(globals, closure variables, attributes) that keep changing between calls, "
                "so a compiled program would be stale; adswitch runs it eagerly (much "
                "slower). Fix: pass those values as arguments (ad.Const(...) for those not "
                "differentiated).",
            )
        else:
            entry.program = make_program(
                fn, leaves, active, dyn, entry.trace, with_outputs, not jax_kind
            )
            note_compile(func)
    if entry.mode == EAGER or entry.program is None:
        return finish(*eager(fn, leaves, active, semantics), leaves, active, jax_kind)
    try:
        arrays, grads = entry.program(*[leaves[i] for i in dyn])
    except TRACE_FAILURES as exc:
        entry.mode = EAGER
        CACHE.put(key, entry)
        warn_once(
            ("eager", func),
            f"jax engine: {name_of(func)} cannot be compiled with jax.jit ({type(exc).__name__}:"
            " Python control flow or conversions that depend on array values), so adswitch "
            "runs it eagerly (much slower). Fix: use xp.where / jax.lax.cond instead of "
            "Python if/while on array values.",
        )
        return finish(*eager(fn, leaves, active, semantics), leaves, active, jax_kind)
    trace = entry.trace
    if fresh:
        entry.output_structure = fn.output_structure  # f ran while jax traced it
        if with_outputs and trace.aux_types:
            entry.mode = JIT_AUX
            warn_once(
                ("aux", func),
                f"jax engine: {name_of(func)} returns non-array outputs "
                f"({', '.join(sorted(set(trace.aux_types)))}), which cannot leave a compiled "
                "program; adswitch computes the gradient compiled and the outputs with one "
                "extra eager call of f. Fix (faster): return only arrays from f.",
            )
        CACHE.put(key, entry)

    out_leaves: list[Any] = [None] * trace.n_out
    if entry.mode == JIT_AUX:
        out_leaves = forward(fn, leaves, active)  # the non-array outputs, from f itself
    else:
        if not fresh:
            fn.reuse(entry.output_structure)  # f did not run: say what its outputs were
        # Without outputs (ad.gradient) the front end discards them: placeholders suffice.
        for pos, array in zip(trace.slots, arrays):
            out_leaves[pos] = array
    if fresh:
        entry.guard = Guard(func)  # after f ran: its own side effects are settled
        if entry.guard.unchecked_bytes:
            warn_once(
                ("big capture", func),
                f"jax engine: {name_of(func)} reads a large numpy array "
                f"({entry.guard.unchecked_bytes / 2**20:.0f} MiB) from a global or closure; "
                "the compiled program holds it as a constant and will not see changes made "
                "to it in place. Fix: pass it as an argument (ad.Const(data)).",
            )
    return finish(out_leaves, grads, leaves, active, jax_kind)
