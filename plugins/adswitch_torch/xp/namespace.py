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

``pow`` with a differentiated exponent: torch's own derivative of ``b ** e`` with respect
to ``b`` is masked to 0 where ``e == 0`` (to avoid ``0 * inf`` at ``b == 0``), so every
derivative of that with respect to ``e`` -- a nested gradient, e.g. a loss on
``ad.gradient(h, e, b)[1]`` differentiated by ``e`` -- is silently 0 at ``e == 0``
(the right value is ``b ** -1``). ``xp.pow(b, e)`` therefore takes its own derivative rule
when ``e`` is a floating tensor that requires grad (a Python or constant exponent keeps
torch's ``pow``): value ``torch.pow(b, e)``; ``d/db = e * pow(b, e - 1)`` and
``d/de = pow(b, e) * log(b)``, each written with this same ``pow``, so every order is
right. The only masks are at ``b == 0``, where ``b ** e`` is not smooth in ``e``; there the
rule keeps torch's first-order conventions: ``d/db = 0`` where ``e == 0`` (``b ** 0`` is
constant), ``d/de = 0`` where ``e >= 0`` (``0 ** e`` is 0 for ``e > 0``), and ``-inf``
for ``e < 0``; their own derivatives at those points are those of the masks (0) and are
not meaningful. For ``b < 0`` the value is nan unless ``e`` is an integer, and every
derivative with respect to ``e`` is nan (as torch's own ``d/de``; ``b ** e`` is real only
at integer ``e``). Complex dtypes keep torch's ``pow``.

Inside adswitch calls the operators ``b ** e``, ``2.0 ** e``, ``b **= e`` and the methods
``b.pow(e)``/``b.pow_(e)`` take this same rule (``exact_pow``, wired in by ``tensor_patches``).
Limitation: the module functions ``torch.pow(b, e)`` and ``torch.float_power`` keep
torch's rule (see the plugin doc): write ``xp.pow(b, e)`` or ``b ** e``.

``xp.clip`` and ``xp.sort`` take adswitch's convention at their kinks and ties (``kinks``).

``xp.linalg`` takes its own rules for ``det``, ``eigh``, ``eigvalsh``, ``svd``,
``svdvals``, the spectral ``matrix_norm`` orders, ``slogdet`` and ``qr``, where torch's
derivatives are silently wrong at singular matrices and repeated eigenvalues or singular
values (``adswitch_torch.xp.linalg``); ``torch.linalg.*`` called directly keeps torch's.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from .. import private_api
from ..primitives.forward_mode import forward, tangent_of

__all__ = ["exact_pow", "float64_namespace"]

_NAMESPACE: types.ModuleType | None = None
_EXACT_POW: Callable[[Any, Any], Any] | None = None


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


def exact_pow() -> Callable[[Any, Any], Any]:
    """The differentiated-exponent ``pow`` (built once, needs only torch; see module doc).

    Returns:
        ``exact(x1, x2)``: ``x1 ** x2`` with the exact rule when ``x2`` is a tensor that
        requires grad (grad mode on) or carries a tangent of a forward-mode jvp
        (``forward_mode``), and the result is real floating, else
        ``NotImplemented`` (the caller then runs torch's own ``pow``). ``x1`` may be a
        tensor, a Python number or a numpy array. ``xp.pow`` and, inside adswitch calls,
        the ``**`` operator (``tensor_patches``) use it.
    """
    global _EXACT_POW
    if _EXACT_POW is None:
        _EXACT_POW = _build_exact_pow()
    return _EXACT_POW


def _build_exact_pow() -> Callable[[Any, Any], Any]:
    import torch

    tensor_type = torch.Tensor
    grad_enabled = torch.is_grad_enabled
    as_tensor = torch.as_tensor
    result_type = torch.result_type
    wrapped = private_api.is_wrapped(torch)

    def base_slope(base: Any, exponent: Any) -> Any:
        # d/db b**e = e b**(e-1); b**0 is constant (also at b == 0, where e b**-1 would be
        # 0 * inf): 0 there, with a safe base so no nan leaks into the derivatives of the
        # unselected branch.
        flat = (base == 0) & (exponent == 0)
        safe = torch.where(flat, 1.0, base)
        powered = _Pow.apply(safe, exponent - 1)  # type: ignore[no-untyped-call]
        return torch.where(flat, 0.0, exponent * powered)

    def exponent_slope(base: Any, exponent: Any, out: Any) -> Any:
        # d/de b**e = b**e log b; 0**e is 0 for e > 0 (1 at e == 0): 0 there, as torch.
        flat = (base == 0) & (exponent >= 0)
        safe = torch.where(flat, 1.0, base)
        return torch.where(flat, 0.0, out * torch.log(safe))

    class _Pow(torch.autograd.Function):
        """``torch.pow`` with a derivative rule that is right at ``e == 0`` to every order,
        in reverse mode (``backward``), forward mode (``jvp``) and under ``torch.func.vmap``
        (the batched pullbacks of ``reverse``)."""

        generate_vmap_rule = True

        @staticmethod
        def forward(base: Any, exponent: Any) -> Any:
            return torch.pow(base, exponent)

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            base, exponent = inputs
            ctx.save_for_backward(base, exponent, output)
            ctx.save_for_forward(base, exponent, output)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            base, exponent, out = ctx.saved_tensors
            grad_base = grad_exponent = None
            if ctx.needs_input_grad[0]:
                grad_base = (grad * base_slope(base, exponent)).sum_to_size(base.shape)
            if ctx.needs_input_grad[1]:
                slope = exponent_slope(base, exponent, out)
                grad_exponent = (grad * slope).sum_to_size(exponent.shape)
            return grad_base, grad_exponent

        @staticmethod
        def jvp(ctx: Any, base_tangent: Any, exponent_tangent: Any) -> Any:
            base, exponent, out = ctx.saved_tensors
            tangent = None
            if base_tangent is not None:
                tangent = base_slope(base, exponent) * base_tangent
            if exponent_tangent is not None:
                part = exponent_slope(base, exponent, out) * exponent_tangent
                tangent = part if tangent is None else tangent + part
            return tangent

    def exact(x1: Any, x2: Any) -> Any:
        if not isinstance(x2, tensor_type):
            return NotImplemented
        if (
            not (x2.requires_grad and grad_enabled())
            and not (forward.depth and tangent_of(torch, x2) is not None)  # a jvp's
            and not wrapped(x2)  # a torch.func transform's (its jvp's tangent, _functorch)
        ):
            return NotImplemented
        base = x1
        if isinstance(base, (bool, int, float)):  # a Python number: no float32 detour
            base = as_tensor(base, dtype=result_type(base, x2), device=x2.device)
        elif not isinstance(base, tensor_type):
            base = as_tensor(base, device=x2.device)  # numpy: dtype kept
        dtype = result_type(base, x2)
        if not dtype.is_floating_point:
            return NotImplemented
        return _Pow.apply(base.to(dtype), x2.to(dtype))  # type: ignore[no-untyped-call]

    return exact


def _build() -> types.ModuleType:
    import array_api_compat.torch as compat
    import array_api_compat.torch.linalg as compat_linalg
    import numpy as np
    import torch

    from .kinks import kink_rules
    from .linalg.namespace import linalg_namespace

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

    exact = exact_pow()

    def pow(x1: Any, x2: Any, /) -> Any:
        """``x1 ** x2``; exact nested derivatives in a differentiated exponent (module doc)."""
        result = exact(x1, x2)
        return compat.pow(x1, x2) if result is NotImplemented else result

    def sign(x: Any, /) -> Any:
        """``xp.sign`` without array-api-compat's write of nan through a boolean mask,
        which ``torch.func.vmap`` cannot batch (a raw ``RuntimeError`` there)."""
        if x.dtype.is_complex:
            return torch.where(x == 0, torch.zeros_like(x), x / torch.abs(x))
        out = torch.sign(x)
        if x.dtype.is_floating_point:
            return torch.where(torch.isnan(x), torch.full_like(out, float("nan")), out)
        return out

    ns = types.ModuleType("adswitch_torch.xp", __doc__)
    ns.__dict__.update(
        (k, v) for k, v in vars(compat).items() if not k.startswith("__") or k == "__all__"
    )
    overrides: dict[str, Any] = {
        "asarray": asarray,
        "full": full,
        "arange": arange,
        "pow": pow,
        "sign": sign,
        "linalg": linalg_namespace(compat_linalg),
    }
    for name in ("zeros", "ones", "empty", "eye", "linspace"):
        overrides[name] = _float_default(name)
    overrides.update(kink_rules(compat, pow))  # clip, sort, sqrt, pow at kinks (_kinks)
    ns.__dict__.update(overrides)
    return ns
