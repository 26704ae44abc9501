"""The backward pass: ``torch.autograd.grad`` without its per-call Python overhead.

``torch.autograd.grad`` spends most of a small function's gradient time in Python
(argument normalisation, ``__torch_function__`` checks, building ``grad_outputs``):
measured here, ~12 µs of a 45 µs gradient of a 10-element function. For the case
adswitch always has -- one 0-d real loss, plain ``torch.Tensor`` inputs -- it calls the
function ``torch.autograd.grad`` itself ends in, ``torch.autograd.graph.
_engine_run_backward``, with the same arguments. Tensor subclasses (which may override
``__torch_function__``), a torch without that function, or the private API switched off
(:mod:`adswitch_torch.private_api`), take the public API.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .. import private_api

__all__ = [
    "SEED_POINTERS",
    "BatchFn",
    "Passes",
    "PullFn",
    "make_batched",
    "make_grad",
    "make_passes",
    "make_pull",
]

# The seed ``1`` of each (dtype, device), made once (``ones_like`` costs a microsecond of a
# 45 µs call). torch never writes into grad_outputs, but it may hand a seed back as a
# gradient (when the loss is an input, or a view of one): ``call`` copies any gradient
# whose memory is a seed's (their addresses are here) before anyone can write into it.
_SEEDS: dict[tuple[Any, Any], Any] = {}
SEED_POINTERS: set[int] = set()

GradFn = Callable[[Any, Sequence[Any], bool, bool], Sequence[Any]]
PullFn = Callable[[Sequence[Any], Sequence[Any], Sequence[Any], bool, bool, bool], Sequence[Any]]
BatchFn = Callable[[Callable[..., Sequence[Any]], Sequence[Any], int], list[Any]]


def make_grad(torch: Any) -> GradFn:
    """``grad(loss, inputs, create_graph, plain) -> gradients`` (``None`` where unused).

    Args:
        torch: the imported torch module.

    Returns:
        The function; equivalent to ``torch.autograd.grad(loss, inputs,
        create_graph=create_graph, allow_unused=True)``. ``plain`` says that every input
        is a plain ``torch.Tensor`` (the caller knows it already; checking costs time).
    """
    fast: list[Any] = [private_api.engine_run_backward()]
    public = torch.autograd.grad
    tensor = torch.Tensor
    ones_like = torch.ones_like

    def grad(loss: Any, inputs: Sequence[Any], create_graph: bool, plain: bool) -> Sequence[Any]:
        run = fast[0]
        if run is not None and plain and type(loss) is tensor:
            key = (loss.dtype, loss.device)
            seed = _SEEDS.get(key)
            if seed is None:
                seed = ones_like(loss, requires_grad=False)
                SEED_POINTERS.add(seed.data_ptr())
                _SEEDS[key] = seed
            try:
                return run(  # type: ignore[no-any-return]
                    (loss,),
                    (seed,),
                    create_graph,  # keep the graph exactly when building a second order
                    create_graph,
                    tuple(inputs),
                    True,  # allow inputs the loss does not depend on
                    accumulate_grad=False,
                )
            except TypeError:
                # A torch whose private signature changed: argument parsing failed
                # before the backward pass ran, so the public API can still run it.
                fast[0] = None
        return public(loss, inputs, create_graph=create_graph, allow_unused=True)  # type: ignore[no-any-return]

    return grad


def make_pull(torch: Any) -> PullFn:
    """``pull(outputs, cotangents, inputs, retain, create_graph, plain) -> gradients``.

    Args:
        torch: the imported torch module.

    Returns:
        The function; equivalent to ``torch.autograd.grad(outputs, inputs, cotangents,
        retain_graph=retain, create_graph=create_graph, allow_unused=True)`` for
        cotangents already shaped, typed and placed like their outputs (``reverse``
        makes them so), through ``_engine_run_backward`` when every tensor is a plain
        ``torch.Tensor`` (``plain`` says so for the inputs). It may run under
        ``torch.func.vmap`` (batched cotangents).
    """
    fast: list[Any] = [private_api.engine_run_backward()]
    public = torch.autograd.grad

    def pull(
        outputs: Sequence[Any],
        cotangents: Sequence[Any],
        inputs: Sequence[Any],
        retain: bool,
        create_graph: bool,
        plain: bool,
    ) -> Sequence[Any]:
        run = fast[0]
        if run is not None and plain:
            try:
                return run(  # type: ignore[no-any-return]
                    tuple(outputs),
                    tuple(cotangents),
                    retain,
                    create_graph,
                    tuple(inputs),
                    True,
                    accumulate_grad=False,
                )
            except TypeError:
                fast[0] = None  # a changed private signature: parsing failed, nothing ran
        return public(  # type: ignore[no-any-return]
            outputs,
            inputs,
            cotangents,
            retain_graph=retain,
            create_graph=create_graph,
            allow_unused=True,
        )

    return pull


def make_batched(torch: Any) -> BatchFn:
    """``batched(fn, args, size) -> outputs``: ``torch.func.vmap(fn)(*args)`` over the
    leading axis (of length ``size``) of every argument, for ``fn`` returning a sequence of
    tensors (or ``None``).

    ``torch.func.vmap`` spends most of a small Jacobian's time in Python (checking and
    flattening its arguments and outputs as trees): measured, 60 of a 250 µs 64 x 64
    Jacobian. For flat tensor arguments this calls the functions it ends in
    (``torch._C._functorch``, through :mod:`adswitch_torch.private_api`) directly; a torch
    without them, or the private API switched off, takes ``torch.func.vmap``.
    """
    levels = private_api.vmap_levels()
    if levels is None:
        vmap = torch.func.vmap

        def public(fn: Callable[..., Sequence[Any]], args: Sequence[Any], size: int) -> list[Any]:
            return list(vmap(fn)(*args))

        return public
    _vmap_increment_nesting, _add_batch_dim, _remove_batch_dim, _vmap_decrement_nesting = levels

    def batched(fn: Callable[..., Sequence[Any]], args: Sequence[Any], size: int) -> list[Any]:
        level = _vmap_increment_nesting(size, "error")
        try:
            outs = fn(*[_add_batch_dim(a, 0, level) for a in args])
            return [None if o is None else _remove_batch_dim(o, level, size, 0) for o in outs]
        finally:
            _vmap_decrement_nesting()

    return batched


class Passes(NamedTuple):
    """The backward passes of one torch module (made once, by :func:`make_passes`)."""

    grad: GradFn
    pull: PullFn
    batched: BatchFn


def make_passes(torch: Any) -> Passes:
    """:func:`make_grad`, :func:`make_pull` and :func:`make_batched` for ``torch``."""
    return Passes(make_grad(torch), make_pull(torch), make_batched(torch))
