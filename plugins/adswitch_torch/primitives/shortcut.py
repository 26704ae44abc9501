"""A prepared gradient's shortcut on torch (the ``prepared_shortcut`` hook, see
``adswitch.shortcut``): what the full path does for a top-level gradient of plain
``torch.Tensor`` arguments (bare, ``Const`` or flat dicts of them), with none of the
layers in between.

torch runs ``f`` on every call, so the shortcut is no compiled program: it is the full
path's own steps, made once for the call's structure and run in a row -- the leaves
checked against the prepared signatures (shape, dtype, device), each differentiated leaf
made a fresh ``leaf.detach().requires_grad_()`` (``trace``), ``f`` run under the same
guard (``tensor_patches``: float conversions refused, exact powers) with its errors translated
and its writes into differentiated arguments refused (``trace.run``), its loss checked
by the front end (``loss``: the ``LossFunction`` check), one backward pass
(``backward``), unused leaves' gradients zeros and every gradient in memory of its own
(``results.own_memory``), as ``call.differentiate`` gives them.

Whatever the full path would do differently returns ``None`` before ``f`` runs, and the
full path runs: a ``torch.func`` transform active (``transforms``), grad mode off or
inference mode on (``grad_mode`` switches them), a leaf of another shape, dtype or
device (the full path's ``PreparationError``), an inference tensor, a view among several
differentiated leaves (the front end's overlap check), ``torch.compile`` compiling. After
``f`` ran, a loss that is not a plain ``torch.Tensor`` (a Python float: zeros, as the full
path) or a DDP argument noted (``ddp``) is handled as the full path handles it.
The ``copy_saved`` engine, tensor subclasses (``nn.Parameter`` included) and leaves of
other kinds have no shortcut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import private_api
from ..integrations import ddp
from ..refusals.errors import mutated_argument, translate_backward, translate_forward
from ..refusals.tensor_patches import CallGuard
from .backward import SEED_POINTERS, GradFn
from .results import own_memory

__all__ = ["shortcut"]

Run = Callable[[list[Any]], Sequence[Any] | None]


def shortcut(
    torch: Any,
    grad: GradFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    operator: str,
    loss: Callable[[Sequence[Any]], Any] | None,
    strict: bool,
) -> Run | None:
    """``run(leaves) -> the active leaves' gradients`` (or ``None``: take the full path)
    for a prepared ``ad.gradient`` whose full call had these ``leaves``, or ``None`` where
    this engine has no shortcut for it (module docstring).

    Args:
        torch: the imported torch module.
        grad: the backward pass (``backward.make_grad``).
        leaves, active, operator, loss: as in the hook (``adswitch.spec``).
        strict: the engine's ``strict`` (``tensor_patches``).
    """
    tensor = torch.Tensor
    if operator != "gradient" or loss is None or not any(active):
        return None
    if any(type(leaf) is not tensor for leaf in leaves):
        return None
    signatures = [(leaf.shape, leaf.dtype, leaf.device) for leaf in leaves]
    positions = tuple(i for i, on in enumerate(active) if on)
    several = len(positions) > 1
    peek = private_api.functorch_stack(torch)
    grad_enabled = torch.is_grad_enabled
    inference = torch.is_inference_mode_enabled
    compiling = torch.compiler.is_compiling
    zeros_like = torch.zeros_like
    guard = CallGuard(torch, strict)
    calls = ddp.calls

    def run(leaves: list[Any]) -> Sequence[Any] | None:
        if peek() is not None or not grad_enabled() or inference() or compiling():
            return None
        for leaf, (shape, dtype, device) in zip(leaves, signatures):
            if leaf.shape != shape or leaf.dtype != dtype or leaf.device != device:
                return None  # the full path says what changed (PreparationError)
        values = list(leaves)
        inputs: list[Any] = []
        versions: list[int] = []
        for i in positions:
            leaf = leaves[i]
            if leaf.is_inference() or (several and leaf._is_view()):
                return None  # the full path refuses (or checks overlap)
            value = leaf.detach().requires_grad_()
            values[i] = value
            inputs.append(value)
            versions.append(value._version)  # (shared with the leaf's: not always 0)

        # As ``trace.run``: f under the guard, its errors translated, DDP noted.
        records: list[ddp.DDPArgument] = []
        outer_records, outer_values = calls.records, calls.values
        calls.records, calls.values = records, values
        try:
            with guard:
                out = loss(values)
        except (RuntimeError, TypeError, ValueError) as exc:
            translated = translate_forward(exc)
            if translated is None:
                raise
            raise translated from exc
        finally:
            calls.records, calls.values = outer_records, outer_values
        for k in range(len(inputs)):
            if inputs[k]._version != versions[k]:
                raise mutated_argument(positions[k], after=not inputs[k].requires_grad)

        # As ``call.differentiate``: one backward pass, zeros where unused.
        grads: Sequence[Any] = ()
        if isinstance(out, tensor) and out.requires_grad:
            try:
                grads = grad(out, inputs, False, True)
            except RuntimeError as exc:
                translated = translate_backward(exc)
                if translated is None:
                    raise
                raise translated from exc
        if records:
            grads = [
                zeros_like(x, requires_grad=False) if g is None else g
                for x, g in zip(inputs, grads or [None] * len(inputs), strict=True)
            ]
            ddp.average(torch, records, values, list(positions), grads, False)
        result: list[Any] = []
        unique: set[int] | None = set() if several else None
        for k in range(len(inputs)):
            g = grads[k] if grads else None
            if g is None:
                g = zeros_like(inputs[k], requires_grad=False)
            result.append(own_memory(torch, g, False, SEED_POINTERS, unique))
        return result

    return run
