"""The primitives without ``jit``: for functions ``jit`` cannot trace or key, and inside
enclosing differentiations (the leaves are then traced values and the results stay
traced, so the enclosing call differentiates through them).

``numpy_semantics`` as for :class:`~adswitch_jax.primitives.calls.Layout`; ``None`` inherits the
enclosing call's. Imported only once jax is in use (it imports jax at the top).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from adswitch_jax.integrations.custom import FORWARD
from adswitch_jax.primitives.calls import as_array, as_loss, jax_values, run_f
from adswitch_jax.programs.basis import identity_basis
from adswitch_jax.programs.program import identity
from adswitch_jax.refusals.conversions import refusing

__all__ = ["EagerPullback", "value_and_grad", "vjp", "vjp_apply", "jvp"]


class _Run:
    """``f`` on the leaves with the active ones replaced, its output split: jax values
    leave through jax's ``has_aux`` (so traced ones come out as their primal values),
    the rest (strings, numbers) beside it."""

    __slots__ = ("act", "arrays_at", "fn", "forward", "others", "semantics", "slots", "vals")

    def __init__(
        self,
        fn: Any,
        leaves: Sequence[Any],
        active: Sequence[bool],
        semantics: bool | None,
        forward: bool = False,
    ) -> None:
        self.fn = fn
        self.forward = forward  # (inside jax.jvp: a custom_vjp is refused at once)
        self.vals = jax_values(leaves, active)
        self.act = [i for i, a in enumerate(active) if a]
        self.arrays_at = [
            i for i, leaf in enumerate(leaves) if isinstance(leaf, (np.ndarray, jax.Array))
        ]
        self.semantics = semantics
        self.others: list[Any] = []
        self.slots: list[int] = []

    def primals(self) -> tuple[Any, ...]:
        return tuple(self.vals[i] for i in self.act)

    def __call__(self, act_values: Sequence[Any]) -> tuple[Any, tuple[Any, ...]]:
        full = list(self.vals)
        for i, v in zip(self.act, act_values):
            full[i] = v
        token = FORWARD.set(self.forward)
        try:
            with refusing():  # the tracers hold values here: x.item() would hand one out
                first, outs = run_f(self.fn, full, (), [], self.semantics, self.arrays_at)
        finally:
            FORWARD.reset(token)
        self.others = list(outs)
        self.slots = []
        arrays = []
        for pos, out in enumerate(outs):
            if isinstance(out, jax.Array):
                self.slots.append(pos)
                arrays.append(out)
                self.others[pos] = None
        return first, tuple(arrays)

    def outputs(self, arrays: Sequence[Any]) -> list[Any]:
        out = list(self.others)
        for pos, array in zip(self.slots, arrays):
            out[pos] = array
        return out

    def differentiable(self) -> Callable[..., tuple[tuple[Any, ...], tuple[Any, ...]]]:
        def outputs(*act_values: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
            diffs, arrays = self(act_values)
            return tuple(as_array(d) for d in diffs), arrays

        return outputs


def value_and_grad(
    fn: Any, leaves: Sequence[Any], active: Sequence[bool], semantics: bool | None
) -> tuple[list[Any], tuple[Any, ...]]:
    """``(output leaves, gradients of the active leaves)`` with ``jax.value_and_grad``."""
    run = _Run(fn, leaves, active, semantics)

    def loss_of(act_values: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
        loss, arrays = run(act_values)
        return as_loss(loss), arrays

    (_, arrays), grads = jax.value_and_grad(loss_of, has_aux=True)(run.primals())
    return run.outputs(arrays), grads


class EagerPullback:
    """How an eager ``jax.vjp``'s pullback is applied: ``(jax's pullback, cotangents,
    batched) -> gradients``. Holds only dtypes: jax's pullback (which holds the
    residuals) is passed in, so that it can be a pytree leaf of adswitch's pullback."""

    __slots__ = ("dtypes",)

    def __init__(self, dtypes: Sequence[Any]) -> None:
        self.dtypes = tuple(dtypes)

    def __call__(self, pullback: Any, cotangents: Sequence[Any], batched: bool) -> tuple[Any, ...]:
        cast = _as_jax(cotangents, self.dtypes, batched)
        if batched:
            return jax.vmap(pullback)(cast)  # type: ignore[no-any-return]
        return pullback(cast)  # type: ignore[no-any-return]


def _as_jax(values: Sequence[Any], dtypes: Sequence[Any], batched: bool) -> tuple[Any, ...]:
    """Tangents or cotangents as jax arrays of ``dtypes``. A batch that is exactly the
    identity basis (a Jacobian's or Hessian's seeds, made by the front end in numpy) is
    built with ``jnp.eye`` instead: inside an enclosing ``jax.jit`` it is then made in the
    program, as ``jax.jacfwd`` / ``jacrev`` make theirs, not carried as a constant."""
    basis = identity_basis(values) if batched else None
    if basis is not None:
        values = identity(basis)
    return tuple(jnp.asarray(v, dtype=d) for v, d in zip(values, dtypes))


def _primal_dtype(primal: Any) -> Any:
    """The dtype ``jax.jvp`` wants for ``primal``'s tangent: an array's own dtype (a
    weakly typed float32 stays float32 with ``jax_enable_x64`` on, where
    ``jnp.result_type`` would widen it), jax's default for a Python number."""
    dtype = getattr(primal, "dtype", None)
    return dtype if dtype is not None else jnp.result_type(primal)


def vjp(
    fn: Any, leaves: Sequence[Any], active: Sequence[bool], semantics: bool | None
) -> tuple[list[Any], Any, EagerPullback]:
    """``(output leaves, jax's pullback, how to apply it)`` with ``jax.vjp``."""
    run = _Run(fn, leaves, active, semantics)
    diffs, pullback, arrays = jax.vjp(run.differentiable(), *run.primals(), has_aux=True)
    return run.outputs(arrays), pullback, EagerPullback([d.dtype for d in diffs])


def vjp_apply(
    fn: Any,
    leaves: Sequence[Any],
    active: Sequence[bool],
    semantics: bool | None,
    seed: Callable[[Sequence[Any]], list[Any]],
    batched: bool,
) -> tuple[list[Any], tuple[Any, ...]]:
    """``(output leaves, gradients)`` of ``jax.vjp`` pulled back at ``seed(outputs)``."""
    run = _Run(fn, leaves, active, semantics)
    diffs, pullback, arrays = jax.vjp(run.differentiable(), *run.primals(), has_aux=True)
    grads = EagerPullback([d.dtype for d in diffs])(pullback, seed(list(diffs)), batched)
    return run.outputs(arrays), grads


def jvp(
    fn: Any,
    leaves: Sequence[Any],
    active: Sequence[bool],
    semantics: bool | None,
    tangents: Sequence[Any],
    batched: bool,
) -> tuple[list[Any], tuple[Any, ...]]:
    """``(output leaves, output tangents)`` with ``jax.jvp`` (``jax.vmap`` for batches)."""
    run = _Run(fn, leaves, active, semantics, forward=True)
    primals = run.primals()
    cast = _as_jax(tangents, [_primal_dtype(p) for p in primals], batched)
    outputs = run.differentiable()
    if not batched:
        _, out_tangents, arrays = jax.jvp(outputs, primals, cast, has_aux=True)
        return run.outputs(arrays), out_tangents

    def column(ts: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        _, out_tangents, arrays = jax.jvp(outputs, primals, ts, has_aux=True)
        return arrays, out_tangents

    arrays, out_tangents = jax.vmap(column, out_axes=(None, 0))(cast)
    return run.outputs(arrays), out_tangents
