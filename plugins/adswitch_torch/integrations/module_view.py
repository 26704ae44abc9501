"""The ``FunctionalModule`` class: a module seen through values for its trainable parameters.

One class serves three roles (``modules`` module doc): the argument ``f`` receives (traced
values), a gradient, and a ``Duplicated`` shadow (``.grad`` tensors). Every way torch reads
a module's tensors reads the view's values instead of the module's stored ones:
``parameters()``, ``named_parameters()``, ``state_dict()``, ``get_parameter()``,
attributes (``v.fc.weight``), string keys (``v["fc.weight"]``) and children
(``children()``, ``named_modules()``, ``v.fc``, ``v[0]``, each a view), in the order of the
module's own ``named_parameters()``.

What is not a leaf -- frozen parameters (``requires_grad=False``) and buffers -- is a
constant of ``f``: the argument view (``constants=True``) reads those from the module, as
torch would; a gradient or a shadow (``constants=False``) has no entry for them, as torch
leaves their ``.grad`` ``None``: its ``parameters()`` are the trainable parameters'
gradients only, its ``buffers()`` are empty, its ``state_dict()`` holds the parameters'
gradients, and reading a frozen parameter or a buffer by name is an ``AttributeError``
saying so (reading the module's value there would hand back a weight as a gradient).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

__all__ = ["build_view_class"]


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix and name else prefix or name


def _values_by_id(module: Any, params: dict[str, Any]) -> dict[int, Any]:
    # id(parameter) -> its value, whichever of a tied parameter's names the dict uses.
    return {
        id(p): params[name]
        for name, p in module.named_parameters(remove_duplicate=False)
        if name in params
    }


def _submodule_params(module: Any, params: dict[str, Any], name: str) -> dict[str, Any]:
    # The child's parameters by its own names, each tied one included: the view's dict
    # names a tied parameter once, perhaps under another child's name.
    value_of = _values_by_id(module, params)
    prefix = name + "."
    return {
        full[len(prefix) :]: value_of[id(p)]
        for full, p in module.named_parameters(remove_duplicate=False)
        if full.startswith(prefix) and id(p) in value_of
    }


def _not_differentiated(module: Any, name: str) -> str:
    what = "buffer" if name in dict(module.named_buffers()) else "frozen parameter"
    return (
        f"{name!r} is a {what} of the {type(module).__name__}: it is not differentiated "
        "(a constant of f), so a module's gradient has no entry for it, as torch leaves its "
        ".grad None. The gradient holds the trainable parameters only: g.named_parameters()."
    )


def build_view_class(torch: Any, ddp_type: Any) -> Any:
    """The ``FunctionalModule`` class (``torch.nn.Module`` subclass) for this torch."""
    from torch.func import functional_call
    from torch.nn.utils.stateless import _reparametrize_module

    from .ddp import ddp_parts, local_forward

    def reparametrized(module: Any, params: dict[str, Any], name: str) -> Any:
        # A method other than forward, run with the traced values swapped in (as
        # functional_call does for forward), so that it does not read stored values.
        def method(*args: Any, **kwargs: Any) -> Any:
            with _reparametrize_module(module, params, tie_weights=True):
                return getattr(module, name)(*args, **kwargs)

        method.__name__ = name
        return method

    class FunctionalModule(torch.nn.Module):  # type: ignore[misc]
        """A ``torch.nn.Module`` seen through a dict of values for its trainable
        parameters (see ``adswitch_torch.integrations.modules.functional_module``)."""

        def __init__(self, module: Any, params: dict[str, Any], constants: bool = False) -> None:
            # No nn.Module.__init__: this is a view, it owns no parameters. Its own
            # attribute names must not shadow the module's (a child called "params").
            object.__setattr__(self, "_view_module", module)
            object.__setattr__(self, "_view_params", params)
            object.__setattr__(self, "_view_constants", constants)

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            module, params = self._view_module, self._view_params
            ddps = ddp_parts(ddp_type, module, params)
            if ddps:
                # DDP's reducer left alone (_distributed)
                with local_forward(torch, [ddp for _, ddp in ddps]):
                    return functional_call(module, params, args, kwargs, tie_weights=True)
            return functional_call(module, params, args, kwargs, tie_weights=True)

        @property  # type: ignore[misc]
        def __class__(self) -> Any:
            # isinstance(view, nn.Linear) holds, as it does for the module (a loop over
            # modules() picking Linear layers); type(view) stays FunctionalModule, and
            # isinstance(view, FunctionalModule) holds too (isinstance checks type first).
            return type(object.__getattribute__(self, "_view_module"))

        def _child(self, name: str, child: Any) -> Any:
            params = _submodule_params(self._view_module, self._view_params, name)
            return FunctionalModule(child, params, self._view_constants)

        # -- parameters, buffers, state_dict: the values, in the module's order --------

        def named_parameters(
            self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
        ) -> Iterator[tuple[str, Any]]:
            module, constants = self._view_module, self._view_constants
            value_of = _values_by_id(module, self._view_params)
            seen: set[int] = set()
            for name, p in module.named_parameters(recurse=recurse, remove_duplicate=False):
                if remove_duplicate:
                    if id(p) in seen:
                        continue
                    seen.add(id(p))
                value = value_of.get(id(p), p if constants else None)
                if value is not None:
                    yield _join(prefix, name), value

        def parameters(self, recurse: bool = True) -> Iterator[Any]:
            for _, value in self.named_parameters(recurse=recurse):
                yield value

        def named_buffers(
            self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
        ) -> Iterator[tuple[str, Any]]:
            if self._view_constants:
                yield from self._view_module.named_buffers(prefix, recurse, remove_duplicate)

        def buffers(self, recurse: bool = True) -> Iterator[Any]:
            for _, value in self.named_buffers(recurse=recurse):
                yield value

        def state_dict(
            self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False
        ) -> Any:
            # As torch's: detached unless keep_vars (so inside f, as in plain torch, a
            # function of state_dict() values is a constant; keep_vars=True differentiates).
            out = OrderedDict() if destination is None else destination
            module = self._view_module
            if self._view_constants:
                value_of = _values_by_id(module, self._view_params)
                named = dict(module.named_parameters(remove_duplicate=False))
                items = []
                for key, value in module.state_dict(keep_vars=True).items():
                    p = named.get(key)
                    items.append((key, value_of.get(id(p), value) if p is not None else value))
            else:
                items = list(self.named_parameters(remove_duplicate=False))
            for key, value in items:
                if not keep_vars and isinstance(value, torch.Tensor):
                    value = value.detach()
                out[prefix + key] = value
            return out

        def get_parameter(self, target: str) -> Any:
            value = self._lookup(target)
            if value is not None:
                return value
            module = self._view_module
            if not self._view_constants and _is_constant(module, target):
                raise AttributeError(_not_differentiated(module, target))
            return module.get_parameter(target)  # a frozen one, or torch's own error

        def _lookup(self, key: str) -> Any:
            # A parameter's value by any of its names; None if it has none of them.
            params = self._view_params
            if key in params:
                return params[key]
            for name, value in self.named_parameters(remove_duplicate=False):
                if name == key:
                    return value
            return None

        # -- submodules: views ---------------------------------------------------------

        def named_children(self) -> Iterator[tuple[str, Any]]:
            for name, child in self._view_module.named_children():
                yield name, self._child(name, child)

        def children(self) -> Iterator[Any]:
            for _, child in self.named_children():
                yield child

        def named_modules(
            self, memo: set[Any] | None = None, prefix: str = "", remove_duplicate: bool = True
        ) -> Iterator[tuple[str, Any]]:
            memo = set() if memo is None else memo  # ids of the modules seen
            if remove_duplicate:
                if id(self._view_module) in memo:
                    return
                memo.add(id(self._view_module))
            yield prefix, self
            for name, child in self.named_children():
                yield from child.named_modules(memo, _join(prefix, name), remove_duplicate)

        def modules(self) -> Iterator[Any]:
            for _, module in self.named_modules():
                yield module

        # -- mapping protocol over the entries (trainable parameters) --------------------

        def __getitem__(self, key: Any) -> Any:
            if isinstance(key, str):
                value = self._lookup(key)
                if value is not None:
                    return value
                if not self._view_constants and _is_constant(self._view_module, key):
                    raise KeyError(_not_differentiated(self._view_module, key))
                if self._view_constants and _is_constant(self._view_module, key):
                    return _constant(self._view_module, key)
                try:  # a submodule by its (dotted) name: a view of it
                    sub = self._view_module.get_submodule(key)
                except AttributeError:
                    raise KeyError(key) from None
                return self._child(key, sub)
            # Indexing a container module (Sequential, ModuleList): a view of the child.
            child = self._view_module[key]
            for name, candidate in self._view_module.named_children():
                if candidate is child:
                    return self._child(name, child)
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
            if not vars_["_view_constants"] and _is_constant(module, name):
                raise AttributeError(_not_differentiated(module, name))
            attr = getattr(module, name)
            if isinstance(attr, torch.nn.Module):
                return self._child(name, attr)
            if callable(attr) and getattr(attr, "__self__", None) is module:
                return reparametrized(module, params, name)
            return attr

        def __setattr__(self, name: str, value: Any) -> None:
            raise AttributeError(
                f"a FunctionalModule is a read-only view of a module; set {name!r} on the module"
            )

        def _apply(self, fn: Any, recurse: bool = True) -> Any:
            # .to(), .double(), .cuda() would convert the module's own tensors.
            raise AttributeError(
                "a FunctionalModule is a read-only view of a module; convert its values "
                "instead: {name: fn(value) for name, value in view.named_parameters()}"
            )

        def __repr__(self) -> str:
            names = ", ".join(self._view_params)
            return f"FunctionalModule({type(self._view_module).__name__}, [{names}])"

        __hash__ = object.__hash__

    # Its public name (adswitch_torch.FunctionalModule resolves to it), not build_view_class's
    # <locals>, in type(g) and error messages.
    FunctionalModule.__module__ = "adswitch_torch"
    FunctionalModule.__qualname__ = "FunctionalModule"
    return FunctionalModule


def _is_constant(module: Any, name: str) -> bool:
    """Whether ``name`` (dotted) names a buffer or a frozen parameter of ``module``."""
    owner_name, _, leaf = name.rpartition(".")
    try:
        owner = module.get_submodule(owner_name)
    except AttributeError:
        return False
    p = owner._parameters.get(leaf)
    return (p is not None and not p.requires_grad) or owner._buffers.get(leaf) is not None


def _constant(module: Any, name: str) -> Any:
    owner_name, _, leaf = name.rpartition(".")
    owner = module.get_submodule(owner_name)
    p = owner._parameters.get(leaf)
    return p if p is not None else owner._buffers[leaf]
