"""Moving values between the caller's kinds (numpy arrays, Python floats, torch tensors,
jax arrays) and the tensors torch differentiates, without copies where torch allows."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from ..integrations.jax_arrays import foreign_kind, to_jax
from .forward_mode import traced

__all__ = ["byte_range", "numpy_of", "tensor_from_numpy", "to_caller_kind"]


def tensor_from_numpy(torch: Any, array: np.ndarray) -> tuple[Any, bool]:
    """Wrap a numpy array as a tensor of the same dtype.

    Args:
        torch: the imported torch module.
        array: any numpy array.

    Returns:
        ``(tensor, shares_memory)``; ``(None, False)`` when torch has no such dtype
        (strings, objects, datetimes): such leaves reach ``f`` as the numpy arrays they are.
        Read-only arrays are copied (torch tensors are always writable, and a write
        into read-only memory is undefined behaviour); arrays torch cannot view
        (negative strides, foreign byte order) are copied too. numpy's bfloat16 (the
        ``ml_dtypes`` extension type) becomes torch's, through an int16 view.
    """
    if array.dtype.name == "bfloat16" and array.dtype.itemsize == 2:
        bits, shared = tensor_from_numpy(torch, array.view(np.int16))
        return bits.view(torch.bfloat16), shared
    if array.flags.writeable:
        try:
            return torch.from_numpy(array), True
        except TypeError:
            return None, False
        except ValueError:
            pass
    try:
        native = np.array(array, dtype=array.dtype.newbyteorder("="), order="C", copy=True)
        return torch.from_numpy(native), False
    except (TypeError, ValueError):
        return None, False


def to_caller_kind(torch: Any, value: Any, like: Any, numpy_out: bool) -> Any:
    """A concrete copy-free version of tensor ``value`` in the kind of ``like``.

    A tensor still attached to an enclosing differentiation (it requires grad, or carries
    a forward-mode jvp's tangent; only in nested calls) stays a tensor: converting it would
    silently drop the outer derivative.

    Args:
        torch: the imported torch module.
        value: a tensor computed by torch.
        like: the caller's leaf it stands for (numpy array, tensor, Python or numpy
            float), or ``None`` for an output of ``f``.
        numpy_out: for outputs (``like is None``): convert to numpy.

    Returns:
        The value as a numpy array, tensor or float.
    """
    if traced(torch, value):
        return value
    if isinstance(like, torch.Tensor):
        return value
    if isinstance(like, np.ndarray) or (like is None and numpy_out):
        return numpy_of(torch, value)
    if isinstance(like, np.generic):
        return like.dtype.type(value.item())
    if isinstance(like, float):
        return type(like)(value.item())
    if foreign_kind(like) == "jax":
        return to_jax(torch, value, like)
    return value


def numpy_of(torch: Any, value: Any) -> np.ndarray:
    """A concrete tensor as a numpy array of the same dtype (bfloat16: ``ml_dtypes``')."""
    if value.dtype is not torch.bfloat16:
        return value.numpy(force=True)  # type: ignore[no-any-return]
    ml_dtypes = sys.modules.get("ml_dtypes")
    if ml_dtypes is None:
        raise UnsupportedError(
            "torch: a bfloat16 tensor would be returned as a numpy array, and numpy has no "
            "bfloat16 without ml_dtypes. Fix: pip install ml_dtypes (and import it), or "
            "return xp.astype(y, xp.float32)."
        )
    bits = value.view(torch.int16).numpy(force=True)
    return bits.view(ml_dtypes.bfloat16)  # type: ignore[no-any-return]


def byte_range(torch: Any, value: Any) -> tuple[str, int, int] | None:
    """``(address space, first byte, end byte)`` spanned by an array, or ``None``.

    ``None`` for empty arrays and for memory without addresses (meta tensors), which
    cannot overlap anything. CPU tensors and numpy arrays share one address space.
    """
    if isinstance(value, np.ndarray):
        if value.size == 0:
            return None
        low, high = np.lib.array_utils.byte_bounds(value)
        return ("cpu", low, high)
    if isinstance(value, torch.Tensor):
        if value.numel() == 0 or value.device.type == "meta":
            return None
        start = value.data_ptr()
        span = sum((n - 1) * s for n, s in zip(value.shape, value.stride(), strict=True))
        item = value.element_size()
        return (str(value.device), start, start + (span + 1) * item)
    return None
