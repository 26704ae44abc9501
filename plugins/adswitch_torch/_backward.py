"""The backward pass: ``torch.autograd.grad`` without its per-call Python overhead.

``torch.autograd.grad`` spends most of a small function's gradient time in Python
(argument normalisation, ``__torch_function__`` checks, building ``grad_outputs``):
measured here, ~12 µs of a 45 µs gradient of a 10-element function. For the case
adswitch always has -- one 0-d real loss, plain ``torch.Tensor`` inputs -- it calls the
function ``torch.autograd.grad`` itself ends in, ``torch.autograd.graph.
_engine_run_backward``, with the same arguments. Tensor subclasses (which may override
``__torch_function__``), or a torch without that function, take the public API.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["SEED_POINTERS", "PullFn", "make_grad", "make_pull"]

# The seed ``1`` of each (dtype, device), made once (``ones_like`` costs a microsecond of a
# 45 µs call). torch never writes into grad_outputs, but it may hand a seed back as a
# gradient (when the loss is an input, or a view of one): ``_call`` copies any gradient
# whose memory is a seed's (their addresses are here) before anyone can write into it.
_SEEDS: dict[tuple[Any, Any], Any] = {}
SEED_POINTERS: set[int] = set()

GradFn = Callable[[Any, Sequence[Any], bool, bool], Sequence[Any]]
PullFn = Callable[[Sequence[Any], Sequence[Any], Sequence[Any], bool, bool, bool], Sequence[Any]]


def make_grad(torch: Any) -> GradFn:
    """``grad(loss, inputs, create_graph, plain) -> gradients`` (``None`` where unused).

    Args:
        torch: the imported torch module.

    Returns:
        The function; equivalent to ``torch.autograd.grad(loss, inputs,
        create_graph=create_graph, allow_unused=True)``. ``plain`` says that every input
        is a plain ``torch.Tensor`` (the caller knows it already; checking costs time).
    """
    fast: list[Any] = [None]
    try:
        from torch.autograd.graph import _engine_run_backward

        fast[0] = _engine_run_backward
    except ImportError:
        pass
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
        cotangents already shaped, typed and placed like their outputs (``_reverse``
        makes them so), through ``_engine_run_backward`` when every tensor is a plain
        ``torch.Tensor`` (``plain`` says so for the inputs). It may run under
        ``torch.func.vmap`` (batched cotangents).
    """
    fast: list[Any] = [None]
    try:
        from torch.autograd.graph import _engine_run_backward

        fast[0] = _engine_run_backward
    except ImportError:
        pass
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
