"""Forward mode on autograd's core: node types that carry a batch of tangents.

:class:`TangentNode` is autograd's ``JVPNode`` widened in three ways (and
:class:`DeferredTangentNode` the same, computing its tangents after the run, for the
nodes the outputs depend on only):

* **a batch**: each node holds a list of ``B`` tangents (or ``None``: the value is a
  constant), each pushed through the primitive's JVP rule while ``f`` runs -- one run of
  ``f`` for a whole batch (a Jacobian's columns, a Hessian). The tangents are never
  stacked into one array: autograd's rules are written for one tangent (``dot(A, g)``,
  ``sum(g, axis)``), and a leading batch axis would silently break them;
* **constants**: arguments without a tangent (fresh buffers, values of other levels)
  are left out of the rule rather than given zeros;
* **transposition** for primitives autograd gives a VJP but no JVP rule (``linalg``,
  ``fft``, container helpers): their tangent is the exact transpose of their VJP,
  ``J g = d/du <J^T u, g>``, computed by autograd's reverse mode over the VJP at a new
  trace level (the VJP is linear in ``u``, so ``u = 0`` will do). The result is exact, and
  traced by every enclosing level like any rule's.

The rules this package's own primitives need are defined next to their VJPs
(``writes.buffer_write``, ``writes.copy_of``, ``power._traced_pow``); here are the two
autograd lacks for primitives the namespace uses, ``hypot`` and ``astype``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.core import Node, VJPNode, primitive_jvps, primitive_vjps
from autograd.extend import defjvp, register_notrace
from autograd.numpy import numpy_wrapper
from autograd.numpy.numpy_vjps import nograd_functions
from autograd.tracer import Box, new_box, trace_stack
from autograd.util import toposort

from adswitch.errors import AdswitchError

from ..tracing.boxes import raw_value
from .sweeps import backward, order

__all__ = ["DeferredTangentNode", "TangentNode", "push", "push_deferred", "transposed"]

_BOX_TYPES = Box.types


def push(
    fun: Any,
    argnums: tuple[int, ...],
    columns: Sequence[Sequence[Any]],
    value: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> list[Any]:
    """The tangents of ``fun``'s ``value``, one per batch entry, from the tangents of its
    moving arguments (``columns[k]``: argument ``argnums[k]``'s, one per entry)."""
    rule = primitive_jvps.get(fun)
    if rule is not None:
        try:
            return [rule(argnums, gs, value, args, kwargs) for gs in zip(*columns)]
        except AdswitchError:
            raise  # a rule's own refusal (a degenerate point...): its message says why
        except (KeyError, NotImplementedError):
            pass  # a rule for some of the arguments only, or some of their forms
    return transposed(fun, argnums, columns, value, args, kwargs)


def _moving(
    parent_argnums: tuple[int, ...], parents: tuple[Any, ...]
) -> tuple[tuple[int, ...], list[Any]]:
    argnums: list[int] = []
    columns: list[Any] = []
    for argnum, parent in zip(parent_argnums, parents):
        tangents = parent.tangents
        if tangents is not None:
            argnums.append(argnum)
            columns.append(tangents)
    return tuple(argnums), columns


class TangentNode(Node):  # type: ignore[misc]
    """A node of a forward-mode trace: the tangents of its value, one per batch entry,
    computed as the value is (cache-hot; for one tangent)."""

    __slots__ = ["tangents"]

    def __init__(
        self,
        value: Any,
        fun: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        parent_argnums: tuple[int, ...],
        parents: tuple[Any, ...],
    ) -> None:
        argnums, columns = _moving(parent_argnums, parents)
        self.tangents: list[Any] | None = (
            push(fun, argnums, columns, value, args, kwargs) if columns else None
        )

    def initialize_root(self, tangents: list[Any] | None = None) -> None:
        self.tangents = tangents


class DeferredTangentNode(Node):  # type: ignore[misc]
    """A node of a forward-mode trace whose tangents are computed after the run, by
    :func:`push_deferred`, and only for what the outputs depend on (for a batch: a
    Hessian's inner loss, for one, is computed but its tangents are not needed).

    Deferring is safe because the values a rule reads are never changed in place after
    the primitive ran: writes inside ``f`` make new arrays (:mod:`.writes`), and
    autograd's only in-place update, ``add_outgrads`` accumulating a cotangent, is done
    before anything reads the accumulated array.
    """

    __slots__ = ["argnums", "args", "fun", "kwargs", "parents", "tangents", "value"]

    def __init__(
        self,
        value: Any,
        fun: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        parent_argnums: tuple[int, ...],
        parents: tuple[Any, ...],
    ) -> None:
        self.value = value
        self.fun = fun
        self.args = args
        self.kwargs = kwargs
        self.argnums = parent_argnums
        self.parents = parents
        self.tangents: list[Any] | None = None

    def initialize_root(self, tangents: list[Any] | None = None) -> None:
        self.fun = None
        self.parents = ()
        self.tangents = tangents


def push_deferred(outputs: Sequence[Any]) -> None:
    """Compute the tangents of the :class:`DeferredTangentNode` s ``outputs`` depend on
    (parents first; roots keep theirs)."""
    for node in reversed(order(outputs)):
        if node.fun is not None:
            argnums, columns = _moving(node.argnums, node.parents)
            if columns:
                node.tangents = push(node.fun, argnums, columns, node.value, node.args, node.kwargs)


# Shape and dtype queries are not traced: the same set as autograd's own node types.
for _fun in nograd_functions:
    register_notrace(TangentNode, _fun)
    register_notrace(DeferredTangentNode, _fun)


def transposed(
    fun: Any,
    argnums: tuple[int, ...],
    columns: Sequence[Sequence[Any]],
    ans: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> list[Any]:
    """The tangents of ``fun``'s value by transposing its VJP (one per batch entry).

    Raises:
        NotImplementedError: ``fun`` has no VJP either (autograd's message, which the
            engine turns into an ``UnsupportedError`` naming ``fun``).
    """
    maker = primitive_vjps.get(fun)
    if maker is None:
        name = getattr(fun, "__name__", fun)
        raise NotImplementedError(f"VJP of {name} wrt argnums {argnums} not defined")
    vjp = maker(argnums, ans, args, kwargs)
    return [_transpose(vjp, gs, ans) for gs in zip(*columns)]


def _transpose(vjp: Any, tangents: Sequence[Any], ans: Any) -> Any:
    raw = raw_value(ans)
    zero = 0.0 if isinstance(raw, float) else np.zeros(np.shape(raw), np.result_type(raw))
    start = VJPNode.new_root()
    with trace_stack.new_trace() as level:
        u = new_box(zero, level, start)
        pairing: Any = 0.0
        for cotangent, tangent in zip(vjp(u), tangents, strict=True):
            pairing = pairing + anp.sum(cotangent * tangent)
    if type(pairing) not in _BOX_TYPES or pairing._trace != level:
        return zero  # the VJP ignores its cotangent: a zero derivative
    end = pairing._node
    found = backward(toposort(end), [(end, np.ones((), np.result_type(raw)))], {start: 0})
    return found.get(start, zero)


defjvp(anp.hypot, lambda g, ans, x, y: g * x / ans, lambda g, ans, x, y: g * y / ans)
defjvp(
    numpy_wrapper._astype,
    lambda g, ans, array, dtype, *args, **kwargs: numpy_wrapper._astype(g, dtype),
)
