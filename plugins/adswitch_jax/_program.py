"""The jax computations themselves: the compiled program, the eager and nested paths, and
turning jax results into what the caller expects (numpy for numpy, floats for floats).

Imported only once jax is in use (it imports jax at the top).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from adswitch.spec import LossFn
from adswitch_jax._inplace import watching
from adswitch_jax._nnx import record, refuse_lost_writes

__all__ = ["ArrayImpl", "NUMERIC", "Trace", "eager", "finish", "forward", "make_program"]

ArrayImpl = type(jnp.zeros(()))
_constrain: Any = jax.lax.with_sharding_constraint  # untyped in jax
NUMERIC = frozenset("biufc")


class Trace:
    """What tracing ``f`` once found out about its outputs, shared by all later calls.

    Attributes:
        n_out: how many output leaves ``f`` returns.
        slots: positions of the array leaves among them (the program returns these).
        aux_types: type names of the other leaves that are not ``None`` (these cannot
            leave a compiled program).
        count: how many times the program was traced (tests count recompiles with it).
    """

    __slots__ = ("aux_types", "count", "n_out", "slots")

    def __init__(self) -> None:
        self.n_out = 0
        self.slots: tuple[int, ...] = ()
        self.aux_types: tuple[str, ...] = ()
        self.count = 0


def as_loss(loss: Any) -> Any:
    """``loss`` as a floating jax scalar (a Python int or integer loss becomes float)."""
    loss = jnp.asarray(loss)
    if not jnp.issubdtype(loss.dtype, jnp.inexact):
        loss = loss.astype(jnp.result_type(float))
    return loss


def make_program(
    fn: LossFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    dyn: Sequence[int],
    trace: Trace,
    with_outputs: bool,
    numpy_semantics: bool,
) -> Callable[..., tuple[tuple[Any, ...], tuple[Any, ...]]]:
    """A ``jax.jit`` program ``program(*leaves[dyn]) -> (output arrays, gradients)``.

    Args:
        fn: the front end's loss function.
        leaves: this call's leaves; only the static ones (not in ``dyn``) are kept.
        active: which leaves are differentiated.
        dyn: positions of the leaves passed as program arguments (arrays, active floats).
        trace: filled in while jax traces the program.
        with_outputs: return ``f``'s output arrays too (not needed by ``ad.gradient``).
        numpy_semantics: the arrays came as numpy arrays: refuse in-place operators whose
            numpy meaning jax cannot follow (see :mod:`adswitch_jax._inplace`).

    Returns:
        The jitted program; gradients come in the order of the active leaves.

    Example:
        >>> import numpy as np
        >>> fn = lambda v: (jnp.sum(v[0] ** 2), [jnp.sum(v[0] ** 2)])
        >>> prog = make_program(fn, [np.ones(2)], [True], [0], Trace(), True, True)
        >>> [np.asarray(g).tolist() for g in prog(np.ones(2))[1]]
        [[2.0, 2.0]]
    """
    dyn_set = set(dyn)
    # Only the static leaves are kept: the program must not hold the first call's arrays.
    base = [None if i in dyn_set else leaf for i, leaf in enumerate(leaves)]
    act = [i for i in dyn if active[i]]
    act_in_dyn = [k for k, i in enumerate(dyn) if active[i]]
    arrays_at = _array_positions(leaves)
    # Sharded inputs get gradients with the same sharding, whatever XLA would prefer.
    constraints = [
        (k, leaves[i].sharding)
        for k, i in enumerate(act)
        if type(leaves[i]) is ArrayImpl and len(leaves[i].sharding.device_set) > 1
    ]

    def program(*values: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        trace.count += 1
        full = list(base)
        for i, v in zip(dyn, values):
            full[i] = v

        def loss_of(act_values: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
            vals = list(full)
            for i, v in zip(act, act_values):
                vals[i] = v
            with watching(numpy_semantics, [vals[i] for i in arrays_at]), record() as rebuilt:
                loss, outs = fn(vals)
            refuse_lost_writes(rebuilt, outs)
            slots: list[int] = []
            arrays: list[Any] = []
            aux_types: list[str] = []
            for pos, out in enumerate(outs):
                if isinstance(out, jax.Array):
                    slots.append(pos)
                    arrays.append(out)
                elif out is not None:
                    aux_types.append(type(out).__name__)
            trace.n_out, trace.slots, trace.aux_types = len(outs), tuple(slots), tuple(aux_types)
            return as_loss(loss), tuple(arrays) if with_outputs else ()

        (_, arrays), grads = jax.value_and_grad(loss_of, has_aux=True)(
            tuple(values[k] for k in act_in_dyn)
        )
        grads = list(grads)
        for k, sharding in constraints:
            grads[k] = _constrain(grads[k], sharding)
        return arrays, tuple(grads)

    return jax.jit(program)


def _array_positions(leaves: Sequence[Any]) -> list[int]:
    return [i for i, leaf in enumerate(leaves) if isinstance(leaf, (np.ndarray, jax.Array))]


def jax_values(leaves: Sequence[Any], active: Sequence[bool]) -> list[Any]:
    """The leaves as ``f`` sees them under the compiled program: numeric numpy arrays and
    active Python floats as jax values, everything else unchanged."""
    return [
        jnp.asarray(leaf)
        if (type(leaf) is np.ndarray and leaf.dtype.kind in NUMERIC)
        or (active[i] and not isinstance(leaf, jax.Array))
        else leaf
        for i, leaf in enumerate(leaves)
    ]


def forward(fn: LossFn, leaves: Sequence[Any], active: Sequence[bool]) -> list[Any]:
    """``f``'s output leaves from one plain eager call (no differentiation)."""
    with record() as rebuilt:
        _, outs = fn(jax_values(leaves, active))
    refuse_lost_writes(rebuilt, outs)
    return list(outs)


def eager(
    fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], numpy_semantics: bool | None
) -> tuple[list[Any], tuple[Any, ...]]:
    """``(output leaves, gradients of the active leaves)`` with ``jax.value_and_grad`` and
    no ``jit``: for functions ``jit`` cannot trace, and inside enclosing differentiations
    (the results then stay traced, so the enclosing call differentiates through them).
    ``numpy_semantics`` as for :func:`make_program`; ``None`` inherits the enclosing
    call's."""
    vals = jax_values(leaves, active)
    act = [i for i, a in enumerate(active) if a]
    arrays_at = _array_positions(leaves)

    def loss_of(act_values: tuple[Any, ...]) -> tuple[Any, list[Any]]:
        full = list(vals)
        for i, v in zip(act, act_values):
            full[i] = v
        with watching(numpy_semantics, [full[i] for i in arrays_at]), record() as rebuilt:
            loss, outs = fn(full)
        refuse_lost_writes(rebuilt, outs)
        return as_loss(loss), list(outs)

    (_, outs), grads = jax.value_and_grad(loss_of, has_aux=True)(tuple(vals[i] for i in act))
    return outs, grads


def _to_numpy(value: Any) -> Any:
    # A writable copy: numpy views of jax buffers are read-only.
    return np.array(value) if type(value) is ArrayImpl else value


def finish(
    out_leaves: list[Any],
    grads: Sequence[Any],
    leaves: Sequence[Any],
    active: Sequence[bool],
    jax_kind: bool,
) -> tuple[list[Any], list[Any | None]]:
    """Results in the caller's kinds: outputs as numpy unless a leaf was a jax array;
    each gradient like its leaf (numpy array, jax array, Python float). Traced values of
    an enclosing transformation are left as they are."""
    if not jax_kind:
        out_leaves = [_to_numpy(out) for out in out_leaves]
    result: list[Any | None] = [None] * len(leaves)
    k = 0
    for i, is_active in enumerate(active):
        if not is_active:
            continue
        grad = grads[k]
        k += 1
        if type(grad) is ArrayImpl:  # concrete: match the leaf's kind
            leaf = leaves[i]
            if type(leaf) is ArrayImpl:
                if grad.dtype != leaf.dtype:
                    grad = grad.astype(leaf.dtype)
            elif isinstance(leaf, np.ndarray):
                grad = np.array(grad, dtype=leaf.dtype)
            elif not isinstance(leaf, jax.Array):
                grad = type(leaf)(grad)  # a Python float (or numpy scalar)
        result[i] = grad
    return out_leaves, result
