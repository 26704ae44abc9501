"""``torch.nn.Module`` arguments: parameters as leaves, a functional view inside ``f``.

adswitch's tree walker flattens a module into its trainable parameters, keyed by their
``named_parameters()`` names (key paths like ``args[0].fc.weight``); a parameter tied
at several places is listed once, under its first name. Buffers (running statistics,
masks) and parameters with ``requires_grad=False`` are not leaves: they stay constant
and are read from the module itself.

Inside ``f`` the module argument is a ``FunctionalModule``: calling it runs the
module's ``forward`` on the traced parameter values through
``torch.func.functional_call`` (tied weights stay tied); ``view.fc.weight`` and
``view["fc.weight"]`` give the traced values; children (``view.fc``, ``view[0]``) are
views too, a tied parameter's traced value included under each child's own names; and
other methods of the module run with the traced values swapped in. The gradient of a
plain module argument is a ``FunctionalModule`` holding gradients (``g["fc.weight"]``,
``g.fc.weight``). ``ad.Duplicated(model)`` writes into the parameters' ``.grad`` (its
default shadow is made of them, see ``_grads``), so a ``torch.optim`` step follows;
``grad_shadow(model)`` builds that shadow explicitly. A ``DistributedDataParallel`` module
gives the gradient DDP's backward gives, averaged over its process group
(``_distributed``); FSDP modules are an ``UnsupportedError``.

``FunctionalModule`` subclasses ``torch.nn.Module`` only so that the tree walker (which
resolves registered types through the MRO) gives a module and its views one node type:
``Duplicated(model, shadow)`` requires the two structures to be equal. It is built on
first use, because this module must not import torch when adswitch loads the plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ._distributed import check_sharded, ddp_parts, local_forward, note
from ._grads import grad_shadow_of

# ``FunctionalModule`` is served by the module ``__getattr__`` below (built on first use).
__all__ = ["functional_module", "grad_shadow", "register_module_trees"]

_CLASS: Any = None


def _view_class() -> Any:
    global _CLASS
    if _CLASS is None:
        _CLASS = _build_view_class()
    return _CLASS


def __getattr__(name: str) -> Any:
    # ``adswitch_torch.modules.FunctionalModule`` resolves (importing torch) on first use.
    if name == "FunctionalModule":
        return _view_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def functional_module(module: Any, params: dict[str, Any]) -> Any:
    """A ``FunctionalModule``: ``module`` seen through values for its trainable parameters.

    Args:
        module: the module whose ``forward``, buffers and frozen parameters are used.
        params: parameter name (as in ``named_parameters()``) -> value: traced tensors
            inside ``f``, gradients in a result, ``.grad`` tensors in a shadow.

    Returns:
        The view; calling it runs ``module.forward`` with ``params``.

    Example:
        >>> import torch
        >>> lin = torch.nn.Linear(2, 1)
        >>> view = functional_module(lin, {"weight": torch.ones(1, 2), "bias": torch.zeros(1)})
        >>> view(torch.ones(1, 2)).item(), view.weight.shape
        (2.0, torch.Size([1, 2]))
    """
    return _view_class()(module, params)


def _build_view_class() -> Any:
    import torch
    from torch.func import functional_call
    from torch.nn.utils.stateless import _reparametrize_module

    ddp_type = _ddp_type(torch)

    def reparametrized(module: Any, params: dict[str, Any], name: str) -> Any:
        # A method other than forward, run with the traced values swapped in (as
        # functional_call does for forward), so that it does not read stored values.
        def method(*args: Any, **kwargs: Any) -> Any:
            with _reparametrize_module(module, params, tie_weights=True):
                return getattr(module, name)(*args, **kwargs)

        method.__name__ = name
        return method

    def submodule_params(module: Any, params: dict[str, Any], name: str) -> dict[str, Any]:
        # The child's parameters by its own names, each tied one included: the view's
        # dict names a tied parameter once, perhaps under another child's name.
        value_of = {}
        every = list(module.named_parameters(remove_duplicate=False))
        for full, p in every:
            if full in params:
                value_of[id(p)] = params[full]
        prefix = name + "."
        return {
            full[len(prefix) :]: value_of[id(p)]
            for full, p in every
            if full.startswith(prefix) and id(p) in value_of
        }

    class FunctionalModule(torch.nn.Module):
        """A ``torch.nn.Module`` seen through a dict of values for its trainable
        parameters (see :func:`functional_module`)."""

        def __init__(self, module: Any, params: dict[str, Any]) -> None:
            # No nn.Module.__init__: this is a view, it owns no parameters. Its own
            # attribute names must not shadow the module's (a child called "params").
            object.__setattr__(self, "_view_module", module)
            object.__setattr__(self, "_view_params", params)

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            module, params = self._view_module, self._view_params
            ddps = ddp_parts(ddp_type, module, params)
            if ddps:
                # DDP's reducer left alone (_distributed)
                with local_forward(torch, [ddp for _, ddp in ddps]):
                    return functional_call(module, params, args, kwargs, tie_weights=True)
            return functional_call(module, params, args, kwargs, tie_weights=True)

        def __getitem__(self, key: Any) -> Any:
            params = self._view_params
            if isinstance(key, str) and key in params:
                return params[key]
            # Indexing a container module (Sequential, ModuleList): a view of the child.
            child = self._view_module[key]
            for name, candidate in self._view_module.named_children():
                if candidate is child:
                    return FunctionalModule(
                        child, submodule_params(self._view_module, params, name)
                    )
            raise KeyError(key)

        def __iter__(self) -> Iterator[str]:
            return iter(self._view_params)

        def __len__(self) -> int:
            return len(self._view_params)

        def keys(self) -> Any:
            return self._view_params.keys()

        def values(self) -> Any:
            return self._view_params.values()

        def items(self) -> Any:
            return self._view_params.items()

        def __getattr__(self, name: str) -> Any:
            # Reached only for names not found normally: parameters, submodules, and
            # the module's own attributes (hyper-parameters, other methods).
            vars_ = object.__getattribute__(self, "__dict__")
            if "_view_params" not in vars_:
                raise AttributeError(name)
            params, module = vars_["_view_params"], vars_["_view_module"]
            if name in params:
                return params[name]
            attr = getattr(module, name)
            if isinstance(attr, torch.nn.Module):
                return FunctionalModule(attr, submodule_params(module, params, name))
            if callable(attr) and getattr(attr, "__self__", None) is module:
                return reparametrized(module, params, name)
            return attr

        def __setattr__(self, name: str, value: Any) -> None:
            raise AttributeError(
                f"a FunctionalModule is a read-only view of a module; set {name!r} on the module"
            )

        def __repr__(self) -> str:
            names = ", ".join(self._view_params)
            return f"FunctionalModule({type(self._view_module).__name__}, [{names}])"

        __hash__ = object.__hash__

    return FunctionalModule


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
    return _view_class()(aux[0], children)


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
