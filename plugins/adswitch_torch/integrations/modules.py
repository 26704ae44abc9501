"""``torch.nn.Module`` arguments: parameters as leaves, a functional view inside ``f``.

adswitch's tree walker flattens a module into its trainable parameters, keyed by their
``named_parameters()`` names (key paths like ``args[0].fc.weight``); a parameter tied
at several places is listed once, under its first name. Buffers (running statistics,
masks) and parameters with ``requires_grad=False`` are not leaves: they stay constant
and are read from the module itself.

Inside ``f`` the module argument is a ``FunctionalModule``: calling it runs the
module's ``forward`` on the traced parameter values through
``torch.func.functional_call`` (tied weights stay tied); ``view.fc.weight``,
``view["fc.weight"]``, ``parameters()``, ``named_parameters()`` and ``state_dict()`` give
the traced values (frozen parameters and buffers: the module's own); children
(``view.fc``, ``view[0]``, ``children()``, ``named_modules()``) are views too, a tied
parameter's traced value included under each child's own names; and other methods of
the module run with the traced values swapped in.

What a module's gradient is: the gradient of a plain module argument is a
``FunctionalModule`` -- module-shaped, like the model -- whose parameters ARE the
gradients: ``g.fc.weight``, ``g["fc.weight"]``, ``g.get_parameter("fc.weight")``,
``g.parameters()``, ``g.named_parameters()``, ``g.state_dict()``, its children's and
``parameters_to_vector(g.parameters())`` all give the gradient tensors, named and ordered
as the model's ``named_parameters()``, and the gradient is also a read-only mapping
(``dict(g)``, ``g.items()``) of those names to gradients -- what ``torch.func.grad`` over
``functional_call`` returns. Only the trainable parameters have an entry: frozen
parameters and buffers are not differentiated (torch leaves their ``.grad`` ``None``),
so ``g.buffers()`` is empty and ``g.running_mean`` is an ``AttributeError`` saying why
(``module_view``). The same holds for ``ad.Duplicated(model).dval`` (its values are the
parameters' ``.grad``) and for prepared calls and ``ad.withgradient``.
``ad.Duplicated(model)`` writes into the parameters' ``.grad`` (its
default shadow is made of them, see ``grad_shadows``), so a ``torch.optim`` step follows;
``grad_shadow(model)`` builds that shadow explicitly. A ``DistributedDataParallel`` module
gives the gradient DDP's backward gives, averaged over its process group
(``ddp``); FSDP modules are an ``UnsupportedError``.

``FunctionalModule`` subclasses ``torch.nn.Module`` only so that the tree walker (which
resolves registered types through the MRO) gives a module and its views one node type:
``Duplicated(model, shadow)`` requires the two structures to be equal. It is built on
first use, because this module must not import torch when adswitch loads the plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .ddp import calls, check_sharded, note
from .grad_shadows import grad_shadow_of
from .module_view import build_view_class

# ``FunctionalModule`` is served by the module ``__getattr__`` below (built on first use).
__all__ = ["functional_module", "grad_shadow", "register_module_trees"]

_CLASS: Any = None


def _view_class() -> Any:
    global _CLASS
    if _CLASS is None:
        _CLASS = _build_view_class()
    return _CLASS


def __getattr__(name: str) -> Any:
    # ``adswitch_torch.integrations.modules.FunctionalModule`` resolves (importing torch)
    # on first use.
    if name == "FunctionalModule":
        return _view_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def functional_module(module: Any, params: dict[str, Any], constants: bool = False) -> Any:
    """A ``FunctionalModule``: ``module`` seen through values for its trainable parameters.

    Args:
        module: the module whose ``forward``, buffers and frozen parameters are used.
        params: parameter name (as in ``named_parameters()``) -> value: traced tensors
            inside ``f``, gradients in a result, ``.grad`` tensors in a shadow.
        constants: whether ``parameters()``, ``buffers()``, ``state_dict()`` and names
            also give the module's frozen parameters and buffers (the argument inside
            ``f``), or only ``params`` (a gradient, a shadow).

    Returns:
        The view; calling it runs ``module.forward`` with ``params``.

    Example:
        >>> import torch
        >>> lin = torch.nn.Linear(2, 1)
        >>> view = functional_module(lin, {"weight": torch.ones(1, 2), "bias": torch.zeros(1)})
        >>> view(torch.ones(1, 2)).item(), view.weight.shape
        (2.0, torch.Size([1, 2]))
    """
    return _view_class()(module, params, constants)


def _build_view_class() -> Any:
    import torch

    return build_view_class(torch, _ddp_type(torch))


def _trainable(module: Any) -> dict[str, Any]:
    return {name: p for name, p in module.named_parameters() if p.requires_grad}


def grad_shadow(module: Any) -> Any:
    """A shadow for ``ad.Duplicated(module, ...)`` made of the parameters' ``.grad``.

    Missing ``.grad`` tensors are created as zeros on the parameter's device, so that
    adswitch adds the gradient into the very tensors a ``torch.optim`` optimizer reads.
    ``ad.Duplicated(module)`` makes the same shadow, except that a missing ``.grad`` is
    set only once a gradient is written. A shadow whose ``.grad`` was replaced since
    (``loss.backward()`` after ``optimizer.zero_grad()``) is refused before ``f`` runs.

    Args:
        module: a ``torch.nn.Module``.

    Returns:
        A ``FunctionalModule`` whose values are the ``.grad`` tensors.

    Example:
        >>> import torch
        >>> lin = torch.nn.Linear(2, 1)
        >>> shadow = grad_shadow(lin)
        >>> shadow["weight"] is lin.weight.grad
        True
    """
    import torch

    params = {name: grad_shadow_of(torch, p) for name, p in _trainable(module).items()}
    return functional_module(module, params)


class _NoSuchType:
    """Stands for ``DistributedDataParallel`` in a torch built without distributed."""


def _ddp_type(torch: Any) -> Any:
    return getattr(torch.nn.parallel, "DistributedDataParallel", _NoSuchType)


def _flatten(obj: Any) -> tuple[dict[str, Any], Any]:
    if isinstance(obj, _view_class()):
        params = dict(obj._view_params)
        module = obj._view_module
    else:
        check_sharded(obj)
        module, params = obj, _trainable(obj)
    return params, (module, tuple(params))


def _unflatten(aux: Any, children: dict[str, Any]) -> Any:
    # DDP modules of a running call's argument are noted: their gradients are averaged.
    note(_DDP[0], aux[0], children)
    return _view_class()(aux[0], children, _is_argument(children))


def _is_argument(children: dict[str, Any]) -> bool:
    """Whether the module being rebuilt is an argument of ``f`` (its values are the running
    call's traced leaves, by identity), not a gradient or a shadow -- also a gradient made
    by a call nested inside ``f``. A module without trainable parameters is an argument
    exactly inside a call: it has only constants then, and a gradient of it is empty."""
    values = calls.values
    if values is None:
        return False
    first = next(iter(children.values()), None)
    return first is None or any(first is v for v in values)


def register_module_trees(register: Callable[..., None]) -> None:
    """Teach adswitch's tree walker ``torch.nn.Module`` (views included).

    A module and a view of it flatten to the same children and aux (the module and
    its trainable parameter names), so a module and a shadow built for it have equal
    structures.
    """
    import torch

    _DDP[0] = _ddp_type(torch)
    register(torch.nn.Module, _flatten, _unflatten)


_DDP: list[Any] = [_NoSuchType]  # the DDP class, once torch is loaded
