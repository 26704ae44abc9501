"""What changes on ``torch.Tensor`` while ``f`` runs in an adswitch call (tracked per thread).

Float conversions: ``float(x)``, ``complex(x)``, ``x.item()`` and ``x.tolist()`` on a
floating (or complex) tensor that
requires grad (or carries a tangent of a forward-mode jvp, ``forward_mode``) return plain Python
numbers; torch then treats them as constants (it only
warns), so the gradient silently misses every path through them. Every other engine
refuses, and so does this one: in a strict call (``TorchBackend(strict=True)``, the
default) those four methods raise ``UnsupportedError`` for such tensors.
Integer and boolean conversions stay allowed: ``int(x)``/``bool(x > 0)`` are piecewise
constant, so treating them as constants is exact. Printing is allowed too: torch's
``Tensor.__repr__`` (which ``str``, ``print`` and f-strings reach) reads the numbers with
``tolist()``/``item()``, and a string cannot carry a value back into the computation, so
while ``__repr__`` runs (``_state.printing``) those reads are not refused; a ``tolist()``
the user calls stays refused.

``x.numpy()`` of a tensor carrying a forward-mode tangent (a jvp's values do not require
grad, see ``forward``) fails while ``f`` runs, as torch fails it for a tensor that
requires grad: numpy would drop the tangent.

Powers: torch's derivative of ``b ** e`` with respect to ``b`` is masked to 0 where
``e == 0``, so nested derivatives with respect to a differentiated ``e`` are silently
wrong there (``namespace`` module doc). In every call (strict or not), ``b ** e``,
``2.0 ** e`` (``__rpow__``), ``b.pow(e)`` and the in-place ``b **= e`` / ``b.pow_(e)``
take the exact rule of ``xp.pow`` (``namespace.exact_pow``) when the exponent is a floating
tensor that requires grad (and grad mode is on); otherwise -- a Python, constant, integer
or complex exponent -- torch's own method runs unchanged. The in-place forms compute the
exact power of a copy of the target (torch's ``pow_`` saves such a copy too) and write it
with ``copy_``, which torch differentiates and version-checks as it does ``pow_``; a case
``pow_`` would refuse (a result dtype it cannot cast to the target's, a shape the target
cannot hold) runs ``pow_`` itself, which raises.
``torch.pow(b, e)``/``torch.float_power`` are module functions, not methods: they keep
torch's rule (see the plugin doc).

How: these methods of ``torch.Tensor`` are wrapped once, when the torch engine is first
used. Outside adswitch calls the wrappers call torch's own methods unchanged, so the only
cost elsewhere is one Python call and a thread-local read on these conversions and powers
(0.2-0.4 µs, against 1-3 µs for the operation itself); inside a call the checks are a
thread-local read and an attribute or two -- unlike a ``TorchFunctionMode``, which would
tax every torch operation in ``f``.

The off switch: ``ADSWITCH_TORCH_TENSOR_PATCHES=0`` in the environment when this module
is first imported leaves ``torch.Tensor`` untouched (any other value, or none, patches it).
What is lost then, silently: the refusal of ``float(x)``, ``complex(x)``, ``x.item()``
and ``x.tolist()`` of a value being differentiated (torch only warns, and the gradient
misses every path through the number); the refusal of ``x.numpy()`` of a value carrying a
forward-mode tangent (the tangent is dropped); and the exact rule of ``b ** e``,
``2.0 ** e``, ``b.pow(e)`` and the in-place ``b **= e`` / ``b.pow_(e)`` in a traced
exponent (nested derivatives with respect to ``e`` are torch's, wrong where ``e == 0``;
``xp.pow`` stays exact). Nothing else: in-place writes into the caller's arrays and
into differentiated or saved values are detected without these patches (version
counters, ``primitives.trace``; torch's own checks, ``refusals.errors``).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from adswitch.errors import UnsupportedError

from .. import private_api
from ..primitives.forward_mode import forward, tangent_of
from .errors import caller_line

__all__ = ["ENABLED", "SWITCH", "CallGuard"]

SWITCH = "ADSWITCH_TORCH_TENSOR_PATCHES"
ENABLED: bool = os.environ.get(SWITCH, "1").strip() != "0"

_state = threading.local()
_installed = False
_install_lock = threading.Lock()


class CallGuard:
    """Context manager marking (in this thread) that ``f`` runs in an adswitch call.

    Args:
        torch: the imported torch module.
        strict: also refuse float conversions of tensors that require grad.
    """

    __slots__ = ("_strict",)

    def __init__(self, torch: Any, strict: bool) -> None:
        if not _installed:
            _install(torch)
        self._strict = strict

    def __enter__(self) -> None:
        state = _state
        state.depth = getattr(state, "depth", 0) + 1
        if self._strict:
            state.strict = getattr(state, "strict", 0) + 1

    def __exit__(self, *exc: object) -> None:
        state = _state
        state.depth -= 1
        if self._strict:
            state.strict -= 1


def _install(torch: Any) -> None:
    global _installed
    with _install_lock:
        if _installed:
            return
        if not ENABLED:  # switched off (module doc): torch.Tensor stays torch's own
            _installed = True
            return
        from ..xp.namespace import exact_pow

        tensor = torch.Tensor
        for name, what in (
            ("__float__", "float(x)"),
            ("__complex__", "complex(x)"),
            ("item", "x.item()"),
            ("tolist", "x.tolist()"),
        ):
            setattr(tensor, name, _guarded(torch, getattr(tensor, name), what))
        tensor.numpy = _numpy_guarded(torch, tensor.numpy)
        tensor.__repr__ = _printing(tensor.__repr__)
        exact = exact_pow()
        tensor.__pow__ = _operator(tensor.__pow__, exact, reflected=False)
        bases = (int, float, tensor)  # bool is an int; numpy's float64 a float
        tensor.__rpow__ = _operator(tensor.__rpow__, exact, reflected=True, bases=bases)
        tensor.pow = _power(tensor.pow, exact, reflected=False)
        tensor.__ipow__ = _inplace_power(tensor.__ipow__, exact, torch.can_cast)
        tensor.pow_ = _inplace_power(tensor.pow_, exact, torch.can_cast)
        _installed = True


def _like(method: Any, original: Any, what: str) -> Any:
    method.__name__ = getattr(original, "__name__", what)
    method.__doc__ = getattr(original, "__doc__", None)
    method.__wrapped__ = original
    return method


def _guarded(torch: Any, original: Any, what: str) -> Any:
    # a value of a torch.func transform (its jvp's tangent, vmap's batch): _functorch
    wrapped = private_api.is_wrapped(torch)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if (
            getattr(_state, "strict", 0)
            and not getattr(_state, "printing", 0)
            and (
                self.requires_grad
                or (forward.depth and tangent_of(torch, self) is not None)
                or wrapped(self)
            )
            and (self.is_floating_point() or self.is_complex())
        ):
            raise UnsupportedError(
                f"torch: {what} turns a value being differentiated into a Python "
                f"number{caller_line()}, which torch treats as a constant: the gradient would "
                "silently miss it. Fix: keep it an array (use xp functions on it, e.g. "
                "xp.where instead of Python branches on its value)."
            )
        return original(self, *args, **kwargs)

    return _like(method, original, what)


def _printing(original: Any) -> Any:
    """``repr(x)`` (so ``str``, ``print``, f-strings): torch's own, with the float
    conversions it makes internally allowed (a debugging print of a traced value)."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        state = _state
        state.printing = getattr(state, "printing", 0) + 1
        try:
            return original(self, *args, **kwargs)
        finally:
            state.printing -= 1

    return _like(method, original, "__repr__")


def _numpy_guarded(torch: Any, original: Any) -> Any:
    """``x.numpy()`` (and so ``np.asarray(x)``, numpy functions on ``x``) of a tensor that
    carries a forward-mode tangent fails as torch fails it for a tensor that requires grad
    (the same words, so ``errors`` names the numpy function and the ``xp`` one to use):
    the tangent would be silently dropped."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if (
            forward.depth
            and getattr(_state, "depth", 0)
            and not self.requires_grad
            and not kwargs.get("force", False)
            and tangent_of(torch, self) is not None
        ):
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad (it carries the "
                "tangent of a forward-mode jvp)."
            )
        return original(self, *args, **kwargs)

    return _like(method, original, "numpy")


def _exponent(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The single operand of a pow method call (``NotImplemented`` for any other form)."""
    if not kwargs:
        return args[0] if len(args) == 1 else NotImplemented
    if not args and len(kwargs) == 1:
        return kwargs.get("exponent", NotImplemented)
    return NotImplemented


def _power(original: Any, exact: Any, reflected: bool) -> Any:
    """``self ** other`` (``other ** self`` when ``reflected``), exact in a traced exponent."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_state, "depth", 0):
            other = _exponent(args, kwargs)
            if other is not NotImplemented:
                try:
                    result = exact(other, self) if reflected else exact(self, other)
                except TypeError:  # an operand torch cannot take: its own method says so
                    result = NotImplemented
                if result is not NotImplemented:
                    return result
        return original(self, *args, **kwargs)

    return _like(method, original, "pow")


def _operator(original: Any, exact: Any, reflected: bool, bases: tuple[type, ...] = ()) -> Any:
    """``_power`` for the operators (always one operand: a leaner signature). A reflected
    ``other ** self`` is taken over only for ``bases`` (Python numbers, tensors): torch
    refuses the rest (``ndarray ** tensor``), and still does."""

    def method(self: Any, other: Any) -> Any:
        if getattr(_state, "depth", 0):
            if reflected:
                result = exact(other, self) if isinstance(other, bases) else NotImplemented
            else:
                result = exact(self, other)
            if result is not NotImplemented:
                return result
        return original(self, other)

    return _like(method, original, "pow")


def _inplace_power(original: Any, exact: Any, can_cast: Any) -> Any:
    """``self **= other``: the exact power written into ``self`` when ``other`` is traced."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_state, "depth", 0):
            other = _exponent(args, kwargs)
            if other is not NotImplemented:
                try:
                    # pow saves its base for the backward pass: a copy, as torch's pow_
                    # saves one, so that writing the result into self leaves it intact.
                    result = exact(self.clone(), other)
                except TypeError:
                    result = NotImplemented
                if (
                    result is not NotImplemented
                    and result.shape == self.shape
                    and can_cast(result.dtype, self.dtype)
                ):
                    return self.copy_(result)
        return original(self, *args, **kwargs)

    return _like(method, original, "pow_")
