"""The tensors one call differentiates, ``f`` run on them, and its results handed back.

Every primitive (``value_and_grad``, ``vjp``, ``vjp_apply``, ``jvp``) starts the same way:
:func:`trace` makes a fresh tensor for each active leaf (``leaf.detach().requires_grad_()``
at top level, a view ``leaf.view_as(leaf)`` attached to the enclosing graph in a nested
call), wraps numpy leaves as tensors, copies jax arrays in; :func:`run` calls ``f`` under
the guard (``tensor_patches``), with torch's errors translated (``errors``) and DDP arguments noted
(``ddp``); :func:`write_back` hands ``f``'s writes to the caller's arrays once
nothing can fail; ``results`` gives results in the caller's kinds. See ``plugin`` for
the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from ..integrations import ddp
from ..integrations.jax_arrays import foreign_kind, from_jax, refuse
from ..refusals.errors import mutated_argument, translate_forward
from ..refusals.tensor_patches import CallGuard
from .convert import tensor_from_numpy
from .forward_mode import forward as forward_mode
from .forward_mode import tangent_of

__all__ = ["Trace", "run", "trace", "write_back"]


class Trace:
    """What one call runs ``f`` on.

    Attributes:
        values: per leaf, what ``f`` receives (a tensor for every array leaf torch can
            hold; the leaf itself otherwise).
        inputs: the tensors differentiated, one per active leaf, in leaf order.
        positions: the leaf index of each input.
        versions: each input's version counter before ``f`` ran.
        copies: ``(numpy leaf, the tensor f received)`` for numpy leaves not shared.
        written: ``(input, the copy f received)`` in ``copy_saved`` mode.
        plain: every input is a plain ``torch.Tensor`` (the backward's fast path applies).
        kind: the caller's array kind for outputs: ``"torch"``, ``"jax"`` or ``"numpy"``.
    """

    __slots__ = ("copies", "inputs", "kind", "plain", "positions", "values", "versions", "written")

    def __init__(
        self,
        values: list[Any],
        inputs: list[Any],
        positions: list[int],
        versions: list[int],
        copies: list[tuple[np.ndarray, Any]],
        written: list[tuple[Any, Any]],
        plain: bool,
        kind: str,
    ) -> None:
        self.values = values
        self.inputs = inputs
        self.positions = positions
        self.versions = versions
        self.copies = copies
        self.written = written
        self.plain = plain
        self.kind = kind


def trace(
    torch: Any,
    leaves: Sequence[Any],
    active: Sequence[bool],
    nested: bool,
    copy_saved: bool,
    own: bool = False,
    forward: bool = False,
) -> Trace:
    """Make the tensors ``f`` runs on.

    Args:
        torch: the imported torch module.
        leaves, active: as in ``Backend.value_and_grad``.
        nested: an enclosing call differentiates this one (``depth > 0``).
        copy_saved: hand ``f`` copies of the differentiated arguments (written back to
            the caller by :func:`write_back`).
        own: copy numpy leaves instead of sharing their memory: the graph outlives the
            call (a ``vjp``'s pullback), and a later write into a numpy array, which no
            version counter sees, must not change what it computes.
        forward: a top-level forward-mode jvp: the active leaves' tensors do not require
            grad (no reverse graph is recorded: a tenth of an mlp's jvp). torch then lets
            ``f`` write into them; :func:`run` refuses such a write after ``f``.

    Returns:
        The :class:`Trace`.
    """
    tensor_type = torch.Tensor
    values = list(leaves)
    inputs: list[Any] = []
    positions: list[int] = []
    copies: list[tuple[np.ndarray, Any]] = []
    written: list[tuple[Any, Any]] = []
    versions: list[int] = []
    any_tensor = any_numpy = any_jax = False
    plain = True
    grad = not forward
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, tensor_type):
            any_tensor = True
            if not active[i]:
                continue
            if type(leaf) is not tensor_type and ddp.is_dtensor(leaf):
                raise UnsupportedError(
                    f"torch: differentiated leaf #{i} is a DTensor (a sharded or replicated "
                    f"parameter of torch.distributed); adswitch's torch engine does not "
                    f"differentiate DTensors. Fix: compute this gradient with torch's own "
                    f"loss.backward(), or pass local tensors (x.to_local())."
                )
            if nested and leaf.requires_grad:
                # A fresh view: attached to the outer graph, but only uses through it
                # count for this call (no confusion with the outer value in closures).
                value = leaf.view_as(leaf)
            elif forward:
                value = leaf.detach()
            elif nested and forward_mode.depth:
                value = _traced_dual(torch, leaf)
            else:
                value = leaf.detach().requires_grad_()
        elif isinstance(leaf, np.ndarray):
            any_numpy = True
            if own and leaf.dtype.kind not in "OSUV":
                value, shared = _owned_numpy(torch, leaf)
            else:
                value, shared = tensor_from_numpy(torch, leaf)
            if value is None:
                if active[i]:
                    raise UnsupportedError(
                        f"torch: cannot differentiate a numpy array of dtype {leaf.dtype} "
                        f"(torch has no such dtype). Fix: convert it, e.g. "
                        f"x.astype(np.float64)."
                    )
                continue
            if not shared:
                copies.append((leaf, value))
            if active[i] and grad:
                value.requires_grad_()
        elif isinstance(leaf, (float, np.generic)):
            if not active[i]:
                continue
            if isinstance(leaf, np.generic):
                value = torch.from_numpy(np.array(leaf)).requires_grad_(grad)
            else:
                value = torch.tensor(leaf, dtype=torch.float64, requires_grad=grad)
        else:
            kind = foreign_kind(leaf)
            if kind is None:
                continue  # not an array: ints, strings, callables reach f as they are
            if kind != "jax":
                raise refuse(kind, i)
            any_jax = True
            value = from_jax(torch, leaf, i)
            if active[i] and grad:
                value.requires_grad_()
        if active[i]:
            inputs.append(value)
            positions.append(i)
            versions.append(value._version)
            plain = plain and type(value) is tensor_type
            if copy_saved and not nested:
                seen_by_f = value.clone()
                written.append((value, seen_by_f))
                value = seen_by_f
        values[i] = value
    # Outputs in the caller's kind: torch when any leaf was a tensor, jax when every
    # array leaf was a jax array, else numpy.
    kind = "torch" if any_tensor else "jax" if any_jax and not any_numpy else "numpy"
    return Trace(values, inputs, positions, versions, copies, written, plain, kind)


def _traced_dual(torch: Any, leaf: Any) -> Any:
    """The fresh tensor for a leaf of a call nested in a forward-mode jvp, where the leaf
    may carry a tangent without requiring grad: ``detach()`` would drop the tangent, so
    the primal is detached and the tangent attached again."""
    tangent = tangent_of(torch, leaf)
    if tangent is None:
        return leaf.detach().requires_grad_()
    forward_ad = torch.autograd.forward_ad
    primal = forward_ad.unpack_dual(leaf).primal.detach().requires_grad_()
    return forward_ad.make_dual(primal, tangent)


def _owned_numpy(torch: Any, array: np.ndarray) -> tuple[Any, bool]:
    copy = np.array(array, dtype=array.dtype.newbyteorder("="), order="C", copy=True)
    value, _ = tensor_from_numpy(torch, copy)
    return value, False


def _snapshot(t: Any) -> Any:
    # A saved value is copied when saved, so later in-place writes cannot change it;
    # torch re-attaches the copy to the original's place in the graph when unpacking.
    return t.detach().clone()


def _same(t: Any) -> Any:
    return t


def run(
    torch: Any,
    fn: Callable[[Sequence[Any]], Any],
    t: Trace,
    copy_saved: bool,
    strict: bool,
    records: list[ddp.DDPArgument],
) -> Any:
    """``fn(t.values)`` under the guard, its errors translated; DDP arguments rebuilt for
    ``f`` are noted in ``records``. Raises ``MutationError`` when ``f`` wrote into a
    differentiated argument behind torch's back (``.data``, ``no_grad``)."""
    guard = CallGuard(torch, strict)
    calls = ddp.calls  # DDP arguments rebuilt for f note themselves here
    outer_records, outer_values = calls.records, calls.values
    calls.records, calls.values = records, t.values
    try:
        if copy_saved:
            with torch.autograd.graph.saved_tensors_hooks(_snapshot, _same), guard:
                result = fn(t.values)
        else:
            with guard:  # (an ExitStack for both cases costs 2 µs of a 45 µs call)
                result = fn(t.values)
    except (RuntimeError, TypeError, ValueError) as exc:
        translated = translate_forward(exc)
        if translated is None:
            raise
        raise translated from exc
    finally:
        calls.records, calls.values = outer_records, outer_values
    inputs, versions = t.inputs, t.versions
    for k in range(len(inputs)):
        if inputs[k]._version != versions[k]:
            # an input that does not require grad: a forward-mode jvp's, written through
            raise mutated_argument(t.positions[k], after=not inputs[k].requires_grad)
    return result


def write_back(torch: Any, t: Trace) -> None:
    """Writes ``f`` made reach the caller's arrays, as a plain call would have left them
    (called only once nothing can fail)."""
    for value, seen_by_f in t.written:
        if seen_by_f._version:
            with torch.no_grad():
                value.copy_(seen_by_f)
    for original, copy in t.copies:
        if copy._version and original.flags.writeable:
            np.copyto(original, copy.detach().numpy())
