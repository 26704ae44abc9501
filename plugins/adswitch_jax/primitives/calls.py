"""Running the front end's function inside a jax transformation: the values ``f`` sees,
the checks around it (in-place writes, nnx Variables), and what its outputs were.

Imported only once jax is in use (it imports jax at the top).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from adswitch_jax.closures.swaps import substituted
from adswitch_jax.integrations.nnx import record, refuse_lost_writes
from adswitch_jax.programs.keys import NUMERIC
from adswitch_jax.refusals.inplace import watching

__all__ = [
    "Body",
    "Holder",
    "Layout",
    "Retrace",
    "Trace",
    "as_array",
    "as_loss",
    "forward",
    "jax_values",
    "run_f",
]


_stand_in: Any = jax.ShapeDtypeStruct  # (untyped in jax)


class Trace:
    """What tracing ``f`` once found out about its outputs, shared by all later calls.

    Attributes:
        n_out: how many output leaves ``f`` returns.
        slots: positions of the array leaves among them (the program returns these).
        aux_types: type names of the other leaves that are not ``None`` (these cannot
            leave a compiled program).
        diff_dtypes: dtypes of the differentiated outputs (a pullback's cotangents are
            cast to them).
        stand_ins: per output leaf, a ``jax.ShapeDtypeStruct`` for an array, the value
            itself for a Python or numpy scalar (a constant of the program), ``None`` else: the
            outputs of a program that does not return them (the caller wants only their
            shapes, dtypes and types: ``CallInfo.wants_outputs``).
        count: how many times the program was traced (tests count compiles with it).
    """

    __slots__ = ("aux_types", "count", "diff_dtypes", "n_out", "slots", "stand_ins")

    def __init__(self) -> None:
        self.n_out = 0
        self.slots: tuple[int, ...] = ()
        self.stand_ins: tuple[Any, ...] = ()
        self.aux_types: tuple[str, ...] = ()
        self.diff_dtypes: tuple[Any, ...] = ()
        self.count = 0

    def note(self, outs: Sequence[Any]) -> tuple[Any, ...]:
        """Record the layout of ``outs``; return its jax arrays (what can leave a program)."""
        slots: list[int] = []
        arrays: list[Any] = []
        aux_types: list[str] = []
        stand_ins: list[Any] = [None] * len(outs)
        for pos, out in enumerate(outs):
            if isinstance(out, jax.Array):
                slots.append(pos)
                arrays.append(out)
                stand_ins[pos] = _stand_in(out.shape, out.dtype)
            elif out is not None:
                aux_types.append(type(out).__name__)
                if isinstance(out, (int, float, complex, np.generic)):
                    stand_ins[pos] = out  # (a float output's derivative is a float)
        self.n_out, self.slots, self.aux_types = len(outs), tuple(slots), tuple(aux_types)
        self.stand_ins = tuple(stand_ins)
        return tuple(arrays)


class Retrace(Exception):
    """jax traced a cached program again after its compile, when what its body needs is
    gone (see :class:`Holder`): the caller compiles a new program."""


class Body:
    """What a program's body needs while jax traces it: the front end's function, the
    leaves baked in, where ``f``'s lifted arrays sit, the seed of a ``vjp_apply``, the
    identity basis a ``jvp`` bakes in instead of taking tangents
    (:func:`adswitch_jax.programs.basis.identity_basis`)."""

    __slots__ = ("base", "basis", "fn", "seed", "slots")

    def __init__(
        self,
        fn: Any,
        base: list[Any],
        slots: list[tuple[Any, ...]],
        seed: Any = None,
        basis: Any = None,
    ) -> None:
        self.fn = fn
        self.base = base
        self.slots = slots
        self.seed = seed
        self.basis = basis


class Holder:
    """The :class:`Body` of a program until its compile is over, then nothing: a cached
    program must not keep the compiling call's function, arguments or closure alive."""

    __slots__ = ("body",)

    def __init__(self, body: Body) -> None:
        self.body: Body | None = body

    def take(self) -> Body:
        body = self.body
        if body is None:
            raise Retrace("a cached jax program was traced again after its compile")
        return body

    def clear(self) -> None:
        self.body = None


class Layout:
    """Where a program's arguments go, fixed for all calls of one cache entry.

    Attributes:
        dyn: positions of the leaves passed as arguments (arrays, active floats).
        act: positions of the active leaves; ``act_in_dyn`` their places among ``dyn``.
        arrays_at: positions of the array leaves (watched for in-place writes).
        constraints: ``(k, sharding)`` for active leaves sharded over several devices
            (their gradients get the same sharding).
        n_lifted: how many lifted arrays of ``f`` follow the leaves.
        numpy_semantics: the arrays came as numpy arrays (see :mod:`adswitch_jax.refusals.inplace`).
        with_outputs: return ``f``'s output arrays too.
        batched: the tangents or seeded cotangents carry a leading batch axis.
    """

    __slots__ = (
        "act",
        "act_in_dyn",
        "arrays_at",
        "batched",
        "constraints",
        "dyn",
        "n_lifted",
        "numpy_semantics",
        "with_outputs",
    )

    def __init__(
        self,
        leaves: Sequence[Any],
        active: Sequence[bool],
        dyn: Sequence[int],
        n_lifted: int,
        numpy_semantics: bool,
        with_outputs: bool,
        batched: bool,
    ) -> None:
        self.dyn = tuple(dyn)
        self.act = tuple(i for i in dyn if active[i])
        self.act_in_dyn = tuple(k for k, i in enumerate(dyn) if active[i])
        self.arrays_at = tuple(
            i for i, leaf in enumerate(leaves) if isinstance(leaf, (np.ndarray, jax.Array))
        )
        array_type = type(jnp.zeros(()))
        self.constraints = tuple(
            (k, leaves[i].sharding)
            for k, i in enumerate(self.act)
            if type(leaves[i]) is array_type and len(leaves[i].sharding.device_set) > 1
        )
        self.n_lifted = n_lifted
        self.numpy_semantics = numpy_semantics
        self.with_outputs = with_outputs
        self.batched = batched


def run_f(
    fn: Callable[[Sequence[Any]], tuple[Any, list[Any]]],
    vals: list[Any],
    lifted: Sequence[Any],
    slots: list[tuple[Any, ...]],
    numpy_semantics: bool | None,
    arrays_at: Sequence[int],
) -> tuple[Any, list[Any]]:
    """``fn(vals)`` with ``f``'s lifted arrays replaced by ``lifted``, in-place writes
    watched and writes into rebuilt nnx Variables refused."""
    with (
        substituted(slots, lifted),
        watching(numpy_semantics, [vals[i] for i in arrays_at]),
        record() as rebuilt,
    ):
        first, outs = fn(vals)
    refuse_lost_writes(rebuilt, outs)
    return first, outs


def as_loss(loss: Any) -> Any:
    """``loss`` as a floating jax scalar (a Python int or integer loss becomes float)."""
    loss = jnp.asarray(loss)
    if not jnp.issubdtype(loss.dtype, jnp.inexact):
        loss = loss.astype(jnp.result_type(float))
    return loss


def as_array(value: Any) -> Any:
    """A differentiated output (a traced value or a Python float) as a jax value."""
    return value if isinstance(value, jax.Array) else jnp.asarray(value)


def jax_values(leaves: Sequence[Any], active: Sequence[bool]) -> list[Any]:
    """The leaves as ``f`` sees them under a transformation: numeric numpy arrays and
    active Python floats as jax values, everything else unchanged."""
    return [
        jnp.asarray(leaf)
        if (type(leaf) is np.ndarray and leaf.dtype.kind in NUMERIC)
        or (active[i] and not isinstance(leaf, jax.Array))
        else leaf
        for i, leaf in enumerate(leaves)
    ]


def forward(fn: Any, leaves: Sequence[Any], active: Sequence[bool]) -> list[Any]:
    """``f``'s output leaves from one plain eager call (no differentiation)."""
    with record() as rebuilt:
        _, outs = fn(jax_values(leaves, active))
    refuse_lost_writes(rebuilt, outs)
    return list(outs)
