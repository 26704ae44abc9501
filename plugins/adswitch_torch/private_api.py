"""Every private torch API the engine uses, in one place, with an off switch.

torch's private functions give two things adswitch needs: speed, where the public API
spends a small call's time in Python, and answers the public API has no question for.

The speed paths, which the switch turns off (each has a public twin with the same
results):

* ``torch.autograd.graph._engine_run_backward``: what ``torch.autograd.grad`` ends in,
  called without its argument normalisation (``primitives.backward``); off:
  ``torch.autograd.grad``.
* ``torch._C._functorch._vmap_increment_nesting`` / ``_add_batch_dim`` /
  ``_remove_batch_dim`` / ``_vmap_decrement_nesting`` and
  ``torch._functorch.predispatch.lazy_load_decompositions``: ``torch.func.vmap`` without
  its tree flattening, for a batch of backward passes; off: ``torch.func.vmap``.
* ``torch._C._FunctionBase.apply`` (the C++ ``apply`` under ``torch.autograd.Function``)
  with ``torch._C._functorch.unwrap_if_dead`` / ``torch._functorch.utils.
  unwrap_dead_wrappers``: a custom rule's Function applied without
  ``Function.apply``'s Python layer (``integrations.custom``, ``custom_eager``); off:
  ``Function.apply``.
* ``torch.autograd.forward_ad._maybe_load_decompositions``: forward AD's decompositions
  imported once with torch's ``torch.jit.script`` deprecation warning silenced
  (``primitives.forward``); off: torch imports them itself on the first ``make_dual``
  (and may warn).

The questions with no public API, asked whatever the switch says (a torch without them
cannot run adswitch inside ``torch.func``, and nothing can stand in for them):
whether a ``torch.func`` transform is running (``torch._C._functorch.
peek_interpreter_stack``, ``torch._C._are_functorch_transforms_active``) and whether a
tensor is one of its wrapped values (``torch._C._functorch.is_functorch_wrapped_tensor``,
``is_gradtrackingtensor``), and a custom rule's residuals of any structure flattened the
way torch's Functions take them (``torch.utils._pytree``: torch has no public pytree
module).

Not routed here: attribute reads torch documents nowhere but has kept for years and
offers no function for -- a tensor's version counter ``t._version`` (how in-place writes
into the caller's values are detected: ``primitives.trace``, ``shortcut``,
``compose.inner_call``), a module's ``_parameters``/``_buffers`` (``integrations.
module_view``) and ``DistributedDataParallel``'s private fields (``integrations.ddp``,
read with ``getattr`` defaults, so that a torch without them is handled).

The switch: ``ADSWITCH_TORCH_PRIVATE_API=0`` in the environment when this module is first
imported turns the speed paths off (any other value, or none, leaves them on). Results
are the same; small calls are slower (measured on the 10-element gradient: ~12 of 45 µs
is the Python ``torch.autograd.grad`` skips).

Example:
    >>> from adswitch_torch import private_api
    >>> isinstance(private_api.ENABLED, bool)
    True
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = [
    "ENABLED",
    "SWITCH",
    "are_transforms_active",
    "transforms_active",
    "engine_run_backward",
    "function_apply",
    "functorch_stack",
    "is_gradtracking",
    "is_wrapped",
    "load_forward_decompositions",
    "pytree",
    "unwrap_dead_wrappers",
    "unwrap_if_dead",
    "vmap_levels",
]

SWITCH = "ADSWITCH_TORCH_PRIVATE_API"
ENABLED: bool = os.environ.get(SWITCH, "1").strip() != "0"


# -- speed paths: None (or the public route) when the switch is off ------------------------
def engine_run_backward() -> Callable[..., Any] | None:
    """``torch.autograd.graph._engine_run_backward``, or ``None`` (switch off, or a torch
    without it): the caller then takes ``torch.autograd.grad``."""
    if not ENABLED:
        return None
    try:
        from torch.autograd.graph import _engine_run_backward
    except ImportError:
        return None
    return _engine_run_backward


def vmap_levels() -> tuple[Any, Any, Any, Any] | None:
    """``(increment_nesting, add_batch_dim, remove_batch_dim, decrement_nesting)`` of
    ``torch._C._functorch``, with torch.func.vmap's decompositions loaded, or ``None``
    (switch off, or a torch without them): the caller then takes ``torch.func.vmap``."""
    if not ENABLED:
        return None
    try:
        from torch._C._functorch import (
            _add_batch_dim,
            _remove_batch_dim,
            _vmap_decrement_nesting,
            _vmap_increment_nesting,
        )
        from torch._functorch.predispatch import lazy_load_decompositions
    except ImportError:
        return None
    lazy_load_decompositions()  # torch.func.vmap's first step, once
    return _vmap_increment_nesting, _add_batch_dim, _remove_batch_dim, _vmap_decrement_nesting


def function_apply(torch: Any, function: Any) -> Callable[..., Any] | None:
    """The C++ ``apply`` under ``function`` (a ``torch.autograd.Function`` subclass), or
    ``None`` with the switch off: the caller then takes ``function.apply``."""
    if not ENABLED:
        return None
    return super(torch.autograd.Function, function).apply  # type: ignore[no-any-return]


def unwrap_if_dead(torch: Any) -> Callable[[Any], Any]:
    """``torch._C._functorch.unwrap_if_dead`` (what ``Function.apply`` does per tensor
    before the C++ ``apply``); used only with :func:`function_apply`."""
    return torch._C._functorch.unwrap_if_dead  # type: ignore[no-any-return]


def unwrap_dead_wrappers() -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """``torch._functorch.utils.unwrap_dead_wrappers``; used only with
    :func:`function_apply`."""
    from torch._functorch.utils import unwrap_dead_wrappers as unwrap

    return unwrap


def load_forward_decompositions(torch: Any) -> None:
    """Import forward AD's decompositions now (``_maybe_load_decompositions``); with the
    switch off, nothing: torch imports them on the first ``make_dual``."""
    if not ENABLED:
        return
    load = getattr(torch.autograd.forward_ad, "_maybe_load_decompositions", None)
    if load is not None:
        load()


# -- questions with no public API: asked whatever the switch says --------------------------
def pytree() -> Any:
    """``torch.utils._pytree`` (torch's tree flattening; no public module has it)."""
    from torch.utils import _pytree

    return _pytree


def functorch_stack(torch: Any) -> Callable[[], Any]:
    """``torch._C._functorch.peek_interpreter_stack``: ``None`` outside every ``torch.func``
    transform, the innermost one's interpreter inside."""
    return torch._C._functorch.peek_interpreter_stack  # type: ignore[no-any-return]


def are_transforms_active(torch: Any) -> bool:
    """Whether any ``torch.func`` transform is active (``torch._C.
    _are_functorch_transforms_active``)."""
    return bool(torch._C._are_functorch_transforms_active())


def transforms_active(torch: Any) -> Callable[[], bool]:
    """:func:`are_transforms_active` as the C function itself, for a caller to keep (a
    rule call asks on every call: one Python frame less)."""
    return torch._C._are_functorch_transforms_active  # type: ignore[no-any-return]


def is_wrapped(torch: Any) -> Callable[[Any], bool]:
    """``torch._C._functorch.is_functorch_wrapped_tensor``: whether a tensor is a value of
    a ``torch.func`` transform (vmap's batch, a jvp's dual, grad's tracked value)."""
    return torch._C._functorch.is_functorch_wrapped_tensor  # type: ignore[no-any-return]


def is_gradtracking(torch: Any) -> Callable[[Any], bool]:
    """``torch._C._functorch.is_gradtrackingtensor``: whether a tensor is a value a
    ``torch.func.grad``/``vjp`` level differentiates."""
    return torch._C._functorch.is_gradtrackingtensor  # type: ignore[no-any-return]
