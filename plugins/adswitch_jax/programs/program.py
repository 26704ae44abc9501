"""The compiled programs: one ``jax.jit`` function per primitive, and the pullback of vjp.

Every program takes ``(*leaves[dyn], *lifted, *tangents)`` -- the leaves that are arrays
or active floats, then the arrays ``f`` captures (:mod:`adswitch_jax.closures.captures`), then (jvp
only) one tangent per active leaf -- and returns ``(output arrays, result)``. What its
body needs besides (the front end's function, the leaves baked in) is in a
:class:`~adswitch_jax.primitives.calls.Holder`, emptied once the program compiled.

Imported only once jax is in use (it imports jax at the top).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from adswitch_jax.primitives.calls import Body, Holder, Layout, Trace, as_array, as_loss, run_f
from adswitch_jax.programs.basis import Basis

__all__ = ["Program", "appliers", "build", "identity"]

Program = Callable[..., tuple[tuple[Any, ...], Any]]
_constrain: Any = jax.lax.with_sharding_constraint  # untyped in jax


def _constrained(grads: Sequence[Any], layout: Layout) -> tuple[Any, ...]:
    # Sharded inputs get gradients with the same sharding, whatever XLA would prefer.
    out = list(grads)
    for k, sharding in layout.constraints:
        out[k] = _constrain(out[k], sharding)
    return tuple(out)


class _Frame:
    """One trace of a program: the body, the leaves with the traced arguments in place,
    the traced lifted arrays and tangents."""

    __slots__ = ("body", "full", "layout", "lifted", "rest", "trace")

    def __init__(self, layout: Layout, trace: Trace, holder: Holder, values: Sequence[Any]):
        body: Body = holder.take()
        trace.count += 1
        n = len(layout.dyn)
        full = list(body.base)
        for i, v in zip(layout.dyn, values[:n]):
            full[i] = v
        self.body, self.full, self.layout, self.trace = body, full, layout, trace
        self.lifted = values[n : n + layout.n_lifted]
        self.rest = values[n + layout.n_lifted :]

    def primals(self) -> tuple[Any, ...]:
        full = self.full
        return tuple(full[i] for i in self.layout.act)

    def call(self, act_values: Sequence[Any]) -> tuple[Any, tuple[Any, ...]]:
        """``f`` at the traced active values: ``(loss or diffs, output arrays)``."""
        layout = self.layout
        vals = list(self.full)
        for i, v in zip(layout.act, act_values):
            vals[i] = v
        first, outs = run_f(
            self.body.fn,
            vals,
            self.lifted,
            self.body.slots,
            layout.numpy_semantics,
            layout.arrays_at,
        )
        arrays = self.trace.note(outs)
        return first, arrays if layout.with_outputs else ()

    def outputs_of(self) -> Callable[..., tuple[tuple[Any, ...], tuple[Any, ...]]]:
        """``f`` as jax differentiates it: ``(*active values) -> (diffs, output arrays)``."""

        def outputs(*act_values: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
            diffs, arrays = self.call(act_values)
            diffs = tuple(as_array(d) for d in diffs)
            self.trace.diff_dtypes = tuple(d.dtype for d in diffs)
            return diffs, arrays

        return outputs


def build(primitive: str, layout: Layout, trace: Trace, holder: Holder) -> Program:
    """The ``jax.jit`` program of ``primitive`` for calls of one cache entry.

    Args:
        primitive: ``"value_and_grad"``, ``"vjp"`` (returns the pullback's residuals as a
            ``jax.vjp`` function), ``"vjp_apply"`` or ``"jvp"``.
        layout: where the arguments go.
        trace: filled in while jax traces the program.
        holder: the body, until the compile is over.

    Returns:
        The jitted program ``(*arguments) -> (output arrays, result)``; the result is the
        gradients of the active leaves (``value_and_grad``, ``vjp_apply``), the ``jax.vjp``
        pullback (``vjp``), or the output tangents (``jvp``).
    """
    makers = {
        "value_and_grad": _value_and_grad,
        "vjp": _vjp,
        "vjp_apply": _vjp_apply,
        "jvp": _jvp,
    }
    return jax.jit(makers[primitive](layout, trace, holder))


def _value_and_grad(layout: Layout, trace: Trace, holder: Holder) -> Program:
    def program(*values: Any) -> tuple[tuple[Any, ...], Any]:
        frame = _Frame(layout, trace, holder, values)

        def loss_of(act_values: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
            loss, arrays = frame.call(act_values)
            return as_loss(loss), arrays

        (_, arrays), grads = jax.value_and_grad(loss_of, has_aux=True)(frame.primals())
        return arrays, _constrained(grads, layout)

    return program


def _vjp(layout: Layout, trace: Trace, holder: Holder) -> Program:
    def program(*values: Any) -> tuple[tuple[Any, ...], Any]:
        frame = _Frame(layout, trace, holder, values)
        _, pullback, arrays = jax.vjp(frame.outputs_of(), *frame.primals(), has_aux=True)
        return arrays, pullback

    return program


def _vjp_apply(layout: Layout, trace: Trace, holder: Holder) -> Program:
    def program(*values: Any) -> tuple[tuple[Any, ...], Any]:
        frame = _Frame(layout, trace, holder, values)
        diffs, pullback, arrays = jax.vjp(frame.outputs_of(), *frame.primals(), has_aux=True)
        # The seed depends on the outputs' shapes and dtypes only: baked into the program.
        seeds = frame.body.seed(list(diffs))
        cotangents = tuple(jnp.asarray(c, dtype=d.dtype) for c, d in zip(seeds, diffs))
        if layout.batched:
            return arrays, jax.vmap(pullback)(cotangents)
        return arrays, _constrained(pullback(cotangents), layout)

    return program


def identity(basis: Basis) -> tuple[Any, ...]:
    # leaf k's block: ones at (offset_k + i, i), shaped (total, *shape_k)
    total, parts = basis
    return tuple(
        jnp.eye(total, size, k=-offset, dtype=dtype).reshape((total, *shape))
        for offset, size, shape, dtype in parts
    )


def _jvp(layout: Layout, trace: Trace, holder: Holder) -> Program:
    def program(*values: Any) -> tuple[tuple[Any, ...], Any]:
        frame = _Frame(layout, trace, holder, values)
        primals = frame.primals()
        basis = frame.body.basis
        given = frame.rest if basis is None else identity(basis)  # baked in: XLA folds it
        tangents = tuple(jnp.asarray(t, dtype=p.dtype) for t, p in zip(given, primals))
        outputs = frame.outputs_of()
        if not layout.batched:
            _, out_tangents, arrays = jax.jvp(outputs, primals, tangents, has_aux=True)
            return arrays, out_tangents

        def column(ts: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
            _, out_tangents, arrays = jax.jvp(outputs, primals, ts, has_aux=True)
            return arrays, out_tangents

        # The outputs do not depend on the tangents: computed once, not per column.
        return jax.vmap(column, out_axes=(None, 0))(tangents)

    return program


def appliers(trace: Trace, layout: Layout) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``(apply, apply_batched)``: jitted ``(jax pullback, cotangents) -> gradients``, one
    per cotangent layout; the pullback is what the ``"vjp"`` program returned."""
    dtypes = trace.diff_dtypes

    def cast(cotangents: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(jnp.asarray(c, dtype=d) for c, d in zip(cotangents, dtypes))

    def apply(pullback: Any, cotangents: tuple[Any, ...]) -> Any:
        return _constrained(pullback(cast(cotangents)), layout)

    def apply_batched(pullback: Any, cotangents: tuple[Any, ...]) -> Any:
        return jax.vmap(pullback)(cast(cotangents))

    return jax.jit(apply), jax.jit(apply_batched)
