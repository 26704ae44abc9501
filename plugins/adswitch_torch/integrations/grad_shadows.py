"""The parameters' ``.grad`` as ``Duplicated`` shadows, so that a ``torch.optim`` step follows.

A ``Duplicated`` argument's default shadow is ``ad.make_zero(val)``, which asks the engine's
``zeros_like`` for each leaf. For a trainable ``torch.nn.Parameter`` the torch engine
answers with the parameter's own ``.grad``, so ``ad.Duplicated(model)`` writes gradients
where an optimizer reads them, as ``loss.backward()`` does: ``zero=True`` (the default)
overwrites ``.grad``, ``zero=False`` accumulates into it. A parameter without ``.grad``
gets a zero tensor that becomes its ``.grad`` once a gradient is written into it (so a call
that fails leaves ``.grad`` as it was: ``None``).

Such a shadow remembers its parameter, and before ``f`` runs (the front end asks
``writable`` of every shadow) it is checked to still be that parameter's ``.grad``: if
``.grad`` was replaced by another tensor since the shadow was made (``loss.backward()``
after ``optimizer.zero_grad()``, an assignment), the gradient would not reach the
optimizer, and the call is an ``ActivityError`` with the fix. ``.grad`` set to ``None``
(``optimizer.zero_grad()``) is fine: the shadow becomes ``.grad`` again when written.
"""

from __future__ import annotations

import weakref
from typing import Any

from adswitch.errors import ActivityError

__all__ = ["attach", "check_still_grad", "grad_of", "grad_shadow_of"]

_PARAMETER = "_adswitch_grad_of"  # attribute of a shadow: a weak reference to its parameter


def grad_of(torch: Any, parameter: Any) -> Any:
    """The shadow of a trainable parameter: its ``.grad``, or a zero tensor that becomes
    its ``.grad`` when written (:func:`attach`)."""
    grad = parameter.grad
    if grad is None:
        grad = torch.zeros_like(parameter, requires_grad=False)
    elif grad.layout is not torch.strided:
        raise ActivityError(
            f"the .grad of a parameter of shape {tuple(parameter.shape)} is a {grad.layout} "
            f"tensor (left by loss.backward() through a sparse embedding); adswitch writes "
            f"dense gradients. Fix: optimizer.zero_grad() (or model.zero_grad()) before "
            f"ad.Duplicated(model)."
        )
    setattr(grad, _PARAMETER, weakref.ref(parameter))
    return grad


def grad_shadow_of(torch: Any, parameter: Any) -> Any:
    """Like :func:`grad_of`, but a missing ``.grad`` is created now (``grad_shadow``)."""
    if parameter.grad is None:
        parameter.grad = torch.zeros_like(parameter, requires_grad=False)
    return grad_of(torch, parameter)


def _parameter(shadow: Any) -> Any:
    ref = getattr(shadow, _PARAMETER, None)
    return None if ref is None else ref()


def check_still_grad(shadow: Any) -> None:
    """``ActivityError`` when ``shadow`` was made from a parameter's ``.grad`` that has
    since been replaced by another tensor."""
    parameter = _parameter(shadow)
    if parameter is None or parameter.grad is None or parameter.grad is shadow:
        return
    raise ActivityError(
        f"a Duplicated shadow made from the .grad of a parameter of shape "
        f"{tuple(parameter.shape)} and dtype {parameter.dtype} is no longer that .grad: "
        f".grad was replaced after the shadow was made (by loss.backward() after "
        f"optimizer.zero_grad(), or an assignment), so the optimizer would not see this "
        f"gradient. Fix: make ad.Duplicated(model) (or grad_shadow(model)) right before "
        f"the call, after zero_grad()."
    )


def attach(shadow: Any) -> None:
    """Make a written shadow its parameter's ``.grad`` if the parameter has none."""
    parameter = _parameter(shadow)
    if parameter is not None and parameter.grad is None:
        parameter.grad = shadow
