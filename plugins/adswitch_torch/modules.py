"""``torch.nn.Module`` arguments: parameters as leaves, a functional view inside ``f``.

adswitch's tree walker flattens a module into its trainable parameters, keyed by their
``named_parameters()`` names (key paths like ``args[0].fc.weight``); a parameter tied
at several places is listed once, under its first name. Buffers (running statistics,
masks) and parameters with ``requires_grad=False`` are not leaves: they stay constant
and are read from the module itself.

Inside ``f`` the module argument is a :class:`FunctionalModule`: calling it runs the
module's ``forward`` on the traced parameter values through
``torch.func.functional_call`` (tied weights stay tied); ``view.fc.weight`` and
``view["fc.weight"]`` give the traced values. The gradient of a plain module argument
is a :class:`FunctionalModule` holding gradients (``g["fc.weight"]``, ``g.fc.weight``).
For a ``torch.optim`` step, pass ``ad.Duplicated(model, grad_shadow(model))``: the
gradients are then added into the parameters' ``.grad``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["FunctionalModule", "grad_shadow", "register_module_trees"]


class FunctionalModule:
    """A ``torch.nn.Module`` seen through a dict of values for its trainable parameters.

    Args:
        module: the module whose ``forward``, buffers and frozen parameters are used.
        params: parameter name (as in ``named_parameters()``) -> value: traced tensors
            inside ``f``, gradients in a result, ``.grad`` tensors in a shadow.

    Example:
        >>> import torch
        >>> lin = torch.nn.Linear(2, 1)
        >>> view = FunctionalModule(lin, {"weight": torch.ones(1, 2), "bias": torch.zeros(1)})
        >>> view(torch.ones(1, 2)).item(), view.weight.shape
        (2.0, torch.Size([1, 2]))
    """

    __slots__ = ("module", "params")

    def __init__(self, module: Any, params: dict[str, Any]) -> None:
        self.module = module
        self.params = params

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from torch.func import functional_call

        return functional_call(self.module, self.params, args, kwargs, tie_weights=True)

    def __getitem__(self, name: str) -> Any:
        return self.params[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.params)

    def __len__(self) -> int:
        return len(self.params)

    def keys(self) -> Any:
        return self.params.keys()

    def values(self) -> Any:
        return self.params.values()

    def items(self) -> Any:
        return self.params.items()

    def __getattr__(self, name: str) -> Any:
        # Only reached for names that are not slots: parameters, submodules, and the
        # module's own attributes (hyper-parameters, other methods).
        params = object.__getattribute__(self, "params")
        module = object.__getattribute__(self, "module")
        if name in params:
            return params[name]
        prefix = name + "."
        sub = {k[len(prefix) :]: v for k, v in params.items() if k.startswith(prefix)}
        attr = getattr(module, name)
        if sub:
            return FunctionalModule(attr, sub)
        if callable(attr) and getattr(attr, "__self__", None) is module:
            return _reparametrized_method(module, params, name)
        return attr

    def __repr__(self) -> str:
        names = ", ".join(self.params)
        return f"FunctionalModule({type(self.module).__name__}, [{names}])"


def _reparametrized_method(module: Any, params: dict[str, Any], name: str) -> Any:
    """A method of ``module`` that runs with ``params`` swapped in (like ``forward`` does
    under ``functional_call``), so that it sees the traced values, not the stored ones."""
    from torch.nn.utils.stateless import _reparametrize_module

    def method(*args: Any, **kwargs: Any) -> Any:
        with _reparametrize_module(module, params, tie_weights=True):
            return getattr(module, name)(*args, **kwargs)

    method.__name__ = name
    return method


def _trainable(module: Any) -> dict[str, Any]:
    return {name: p for name, p in module.named_parameters() if p.requires_grad}


def grad_shadow(module: Any) -> FunctionalModule:
    """A shadow for ``ad.Duplicated(module, ...)`` made of the parameters' ``.grad``.

    Missing ``.grad`` tensors are created as zeros on the parameter's device, so that
    adswitch adds the gradient into the very tensors a ``torch.optim`` optimizer reads.
    Build it again after ``optimizer.zero_grad()`` (which sets ``.grad`` to ``None``).

    Args:
        module: a ``torch.nn.Module``.

    Returns:
        A :class:`FunctionalModule` whose values are the ``.grad`` tensors.

    Example:
        >>> import torch
        >>> lin = torch.nn.Linear(2, 1)
        >>> shadow = grad_shadow(lin)
        >>> shadow["weight"] is lin.weight.grad
        True
    """
    import torch

    params = {}
    for name, p in _trainable(module).items():
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        params[name] = p.grad
    return FunctionalModule(module, params)


def _flatten_module(module: Any) -> tuple[dict[str, Any], Any]:
    params = _trainable(module)
    return params, (module, tuple(params))


def _flatten_view(view: FunctionalModule) -> tuple[dict[str, Any], Any]:
    return dict(view.params), (view.module, tuple(view.params))


def _unflatten(aux: Any, children: dict[str, Any]) -> FunctionalModule:
    return FunctionalModule(aux[0], children)


def register_module_trees(register: Callable[..., None]) -> None:
    """Teach adswitch's tree walker ``torch.nn.Module`` and :class:`FunctionalModule`.

    Both flatten to the same children and the same aux (the module and its parameter
    names), so a module and a shadow built for it have equal structures.
    """
    import torch

    register(torch.nn.Module, _flatten_module, _unflatten)
    register(FunctionalModule, _flatten_view, _unflatten)
