"""The parts of a program's cache key that come from the call: the argument structure
(from the front end's key, without the function) and the leaves' signature.

Imported only once jax is in use (it imports jax at the top).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from adswitch.spec import CallInfo

__all__ = ["ArrayImpl", "NUMERIC", "Scan", "scan", "static_token", "structure_of"]

# Made concrete even when the engine is first loaded inside a jax trace (adswitch's
# first call of a process inside jax.jit): there jnp.zeros would give a tracer.
with jax.ensure_compile_time_eval():
    ArrayImpl = type(jax.numpy.zeros(()))
NUMERIC = frozenset("biufc")
# Any of these among the leaves turns 64-bit mode on for the call: without it jax would
# silently compute (or truncate) them in 32 bits.
WIDE = frozenset(np.dtype(t) for t in ("float64", "int64", "uint64", "complex128"))


def structure_of(info: CallInfo) -> Hashable:
    """What a program is specialised to besides the function and the leaves
    (``CallInfo.structure.key``): the argument structure, ties, activity, constant leaf
    values and operator. The engine identifies the function itself by what it is
    (:mod:`adswitch_jax.closures.captures`), so that a new function object computing the
    same thing finds the program. A caller that gives only the deprecated ``cache_key``
    (an engine called directly) is keyed by it whole: correct, only not shared between
    look-alike functions.

    Example:
        >>> from adswitch.spec import Structure
        >>> structure_of(CallInfo(structure=Structure(key=("args",), func=len)))
        ('args',)
        >>> structure_of(CallInfo(cache_key=(len, "args")))
        (<built-in function len>, 'args')
    """
    structure = info.structure
    if structure is not None:
        return structure.key
    if info.structure_key is not None:  # (deprecated fields, from a direct caller)
        return info.structure_key
    return info.cache_key


def static_token(leaf: Any) -> Hashable:
    """How a leaf baked into a program (an inactive non-array) enters the key: by value,
    with its type (hex tells -0.0 from 0.0 and makes nan equal to itself)."""
    kind = type(leaf)
    return (kind, leaf.hex() if kind is float else leaf)


class Scan:
    """What the leaves decide about a call's program.

    Attributes:
        sig: per leaf, what the program is specialised to (shape, dtype, weak type and
            sharding of arrays; the value of constants).
        dyn: positions of the leaves passed to the program as arguments.
        static: positions of the leaves baked into it.
        x64: some leaf is 64-bit (the call runs in 64-bit mode).
        jax_kind: some leaf is a jax array (results come back as jax arrays).
        traced: some leaf is a traced value of an enclosing transformation.
        unhashable: a non-numeric numpy array among the leaves (no key possible).
    """

    __slots__ = ("dyn", "jax_kind", "sig", "static", "traced", "unhashable", "x64")

    def __init__(self) -> None:
        self.sig: tuple[Any, ...] = ()
        self.dyn: list[int] = []
        self.static: list[int] = []
        self.x64 = False
        self.jax_kind = False
        self.traced = False
        self.unhashable = False


def scan(leaves: Sequence[Any], active: Sequence[bool]) -> Scan:
    """The :class:`Scan` of one call's leaves."""
    out = Scan()
    x64 = jax_kind = traced = False
    sig: list[Any] = []
    dyn = out.dyn
    for i, leaf in enumerate(leaves):
        t = type(leaf)
        if t is ArrayImpl:
            jax_kind = True
            aval = leaf.aval  # shape, dtype and weak type in one cheap, hashable value
            sig.append((aval, leaf.sharding))
            x64 = x64 or aval.dtype in WIDE
            dyn.append(i)
        elif t is np.ndarray:
            dtype = leaf.dtype
            if dtype.kind not in NUMERIC:
                out.unhashable = True
                sig.append(None)
                continue
            sig.append((leaf.shape, dtype))
            x64 = x64 or dtype in WIDE
            dyn.append(i)
        elif isinstance(leaf, jax.Array):  # tracers of an enclosing transformation
            jax_kind = True
            traced = traced or isinstance(leaf, Tracer)
            sig.append((leaf.shape, leaf.dtype, getattr(leaf, "weak_type", False)))
            x64 = x64 or leaf.dtype in WIDE
            dyn.append(i)
        elif active[i]:  # a Python float: a double, so 64-bit
            x64 = True
            sig.append(t)
            dyn.append(i)
        else:
            out.static.append(i)
            sig.append(static_token(leaf))
    out.sig = tuple(sig)
    out.x64, out.jax_kind, out.traced = x64, jax_kind, traced
    return out


def tangent_sig(tangents: Sequence[Any]) -> tuple[Any, ...]:
    """What a jvp program is specialised to in its tangents (kinds, shapes, dtypes)."""
    return tuple(
        None
        if t is None
        else (type(t), t.shape, t.dtype)
        if hasattr(t, "dtype") and hasattr(t, "shape")
        else type(t)
        for t in tangents
    )
