"""Forward mode: ``jvp``, one run of ``f`` carrying every tangent of the batch.

Which: autograd's own forward mode (its ``JVPNode`` and ``defjvp`` rules), not the
double-vjp transposition of reverse mode. The active leaves' roots hold their tangents
(:mod:`.pushforward`), and every primitive ``f`` runs pushes them through its JVP rule:

* one tangent: as ``f`` runs (:class:`~.pushforward.TangentNode`, ``make_jvp``'s cost);
* a batch (a Jacobian's columns, a Hessian): all tangents per node, pushed after the
  run through the nodes the outputs depend on only
  (:class:`~.pushforward.DeferredTangentNode`) -- one run of ``f`` for the whole batch,
  and no tangents for values nothing differentiated reads (a Hessian's inner loss).

Why: it is a true forward mode (``Capabilities.forward``) -- one pass with the tangents,
where the transposition records a reverse pass and sweeps it back again -- and it is
correct wherever reverse mode is. Every primitive the namespace and the write machinery
define has a JVP rule (``buffer_write`` and ``copy_of`` in :mod:`.writes`, the exact
``pow`` in :mod:`.power`, ``hypot`` and ``astype`` in :mod:`.pushforward`), so writes
inside ``f`` -- recorded as the same primitives as in reverse mode -- are followed with
numpy's semantics; and any other primitive that has a VJP but no JVP rule (``linalg``,
``fft``) is pushed by the exact transposition of *its own* VJP, locally. Nested calls
work in every order: an inner gradient's backward pass, run on this trace's boxes, is
pushed forward like any computation (forward-over-reverse, how ``hvp``/``hessian`` run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from autograd.tracer import Box

from adswitch.spec import CallInfo, OutputFn

from ..tracing import levels
from ..tracing.boxes import raw_value
from ..tracing.run import run, write_back
from ..xp.manipulation import broadcast_to
from .pushforward import DeferredTangentNode, TangentNode, push_deferred
from .results import concrete, owned, stack

__all__ = ["jvp"]

_BOX_TYPES = Box.types


def jvp(
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    tangents: Sequence[Any],
    info: CallInfo,
) -> tuple[list[Any], list[Any]]:
    """Push ``tangents`` (one per leaf, ``None`` where inactive; batched when
    ``info.batched``) through ``fn``; returns the concrete outputs and one tangent per
    differentiated output.

    Example:
        >>> fn = lambda leaves: ([leaves[0] ** 3], [leaves[0] ** 3])
        >>> x, t = np.array([1.0, 2.0]), np.array([1.0, 0.5])
        >>> jvp(fn, [x], [True], [t], CallInfo())[1][0]
        array([3., 6.])
    """
    with levels.LOCK:
        return _jvp(fn, leaves, active, tangents, info.batched, info.depth == 0)


def _jvp(
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    tangents: Sequence[Any],
    batched: bool,
    outermost: bool,
) -> tuple[list[Any], list[Any]]:
    if batched:
        size = next((len(t) for t in tangents if t is not None), 0)
        columns = [None if t is None else [t[b] for b in range(size)] for t in tangents]
    else:
        size = 1
        columns = [None if t is None else [t] for t in tangents]

    # One tangent: pushed as f runs (cache-hot, as autograd's make_jvp). A batch: pushed
    # after the run, through what the outputs depend on only -- no tangents for values
    # nothing differentiated reads (a Hessian's inner loss), one pass per node.
    new_root = DeferredTangentNode.new_root if batched else TangentNode.new_root

    def root(i: int) -> Any:
        return new_root(columns[i])

    level, values, roots, (diffs, out_leaves) = run(fn, leaves, active, root, new_root, outermost)
    if batched:
        push_deferred([d._node for d in diffs if type(d) in _BOX_TYPES and d._trace == level])
    out_tangents = []
    for d in diffs:
        pushed = d._node.tangents if type(d) in _BOX_TYPES and d._trace == level else None
        out_tangents.append(_output_tangent(pushed, concrete(d, level), size, batched, outermost))
    if outermost:
        write_back(leaves, leaves, values, roots)
    return [concrete(value, level) for value in out_leaves], owned(out_tangents, tangents)


def _output_tangent(
    pushed: list[Any] | None, value: Any, size: int, batched: bool, outermost: bool
) -> Any:
    """One output's tangent(s) in the output's shape and dtype (zeros when it does not
    depend on the tangents), stacked along a leading axis when ``batched``."""
    if batched:
        return stack([None] * size if pushed is None else pushed, value)
    raw = raw_value(value)
    if pushed is None:
        return 0.0 if isinstance(raw, float) else np.zeros(np.shape(raw), np.result_type(raw))
    tangent = pushed[0]
    if isinstance(raw, float):
        return float(tangent) if outermost and type(tangent) not in _BOX_TYPES else tangent
    shape, dtype = np.shape(raw), np.result_type(raw)
    if type(tangent) in _BOX_TYPES:
        if tangent.shape != shape:  # a rule may leave it broadcastable
            tangent = broadcast_to(tangent, shape) * 1.0
        return tangent if tangent.dtype == dtype else tangent.astype(dtype)
    if type(tangent) is not np.ndarray or tangent.shape != shape or tangent.dtype != dtype:
        # numpy scalars too: the output's kind; broadcast views become arrays
        tangent = np.array(np.broadcast_to(np.asarray(tangent, dtype), shape))
    return tangent
