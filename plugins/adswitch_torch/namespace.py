"""The Array API namespace adswitch hands out for torch tensors.

It is ``array_api_compat.torch`` (the ecosystem's Array API layer over torch) with one
change: creation functions called without ``dtype`` make float64 (and complex128)
where torch would make its default float32 (complex64). adswitch users write their
functions once for every engine; numpy and the tape engine compute in float64, so a
``xp.zeros(n)`` or ``xp.asarray(0.1)`` inside ``f`` must not silently drop to single
precision on torch. Explicit ``dtype=`` arguments and arrays (numpy or torch) passed to
``asarray`` keep their own dtype; numpy arrays are wrapped without a copy.

Mixing numpy constants into traced expressions: torch refuses ``tensor * ndarray`` when
the tensor requires grad, so wrap constants with ``xp.asarray(c)`` (no copy, dtype kept)
or pass them to ``ad.gradient`` as ``ad.Const(c)`` (they then reach ``f`` as tensors).
"""

from __future__ import annotations

import types
from typing import Any

__all__ = ["float64_namespace"]

_NAMESPACE: types.ModuleType | None = None


def float64_namespace() -> types.ModuleType:
    """The float64-defaulting Array API namespace for torch (built once, then cached).

    Returns:
        A module object exposing every name of ``array_api_compat.torch``.

    Example:
        >>> xp = float64_namespace()
        >>> xp.zeros(2).dtype, xp.asarray(0.5).dtype
        (torch.float64, torch.float64)
    """
    global _NAMESPACE
    if _NAMESPACE is None:
        _NAMESPACE = _build()
    return _NAMESPACE


def _build() -> types.ModuleType:
    import array_api_compat.torch as compat
    import numpy as np
    import torch

    float_defaults = {torch.float32: torch.float64, torch.complex64: torch.complex128}
    native = (torch.Tensor, np.ndarray, np.generic)
    f64 = torch.float64

    def asarray(
        obj: Any, /, *, dtype: Any = None, device: Any = None, copy: Any = None, **kwargs: Any
    ) -> Any:
        if isinstance(obj, torch.Tensor) and "requires_grad" not in kwargs:
            # Keep a copy of a traced tensor differentiable (torch >= 2.13 warns when
            # this is left implicit; older versions would silently detach).
            kwargs["requires_grad"] = obj.requires_grad
        result = compat.asarray(obj, dtype=dtype, device=device, copy=copy, **kwargs)
        if dtype is None and not isinstance(obj, native):
            wide = float_defaults.get(result.dtype)
            if wide is not None:
                # Rebuild from the Python data: widening the float32 result would keep
                # its rounding error.
                result = compat.asarray(obj, dtype=wide, device=device, copy=copy, **kwargs)
        return result

    def _float_default(name: str) -> Any:
        base = getattr(compat, name)

        def create(*args: Any, dtype: Any = None, **kwargs: Any) -> Any:
            return base(*args, dtype=f64 if dtype is None else dtype, **kwargs)

        create.__name__ = name
        create.__doc__ = f"``array_api_compat.torch.{name}`` with float64 as default dtype."
        return create

    def full(shape: Any, fill_value: Any, *, dtype: Any = None, **kwargs: Any) -> Any:
        if dtype is None and isinstance(fill_value, float):
            dtype = f64
        elif dtype is None and isinstance(fill_value, complex):
            dtype = torch.complex128
        return compat.full(shape, fill_value, dtype=dtype, **kwargs)

    def arange(
        start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None, **kwargs: Any
    ) -> Any:
        if dtype is None and any(isinstance(v, float) for v in (start, stop, step)):
            dtype = f64
        return compat.arange(start, stop, step, dtype=dtype, **kwargs)

    ns = types.ModuleType("adswitch_torch.xp", __doc__)
    ns.__dict__.update(
        (k, v) for k, v in vars(compat).items() if not k.startswith("__") or k == "__all__"
    )
    overrides: dict[str, Any] = {"asarray": asarray, "full": full, "arange": arange}
    for name in ("zeros", "ones", "empty", "eye", "linspace"):
        overrides[name] = _float_default(name)
    ns.__dict__.update(overrides)
    return ns
