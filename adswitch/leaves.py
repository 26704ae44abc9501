"""What kind of leaf a value is: differentiable or not, and where its memory comes from."""

from __future__ import annotations

import contextlib
import types
from typing import Any

import numpy as np

__all__ = [
    "ARRAY_TYPES",
    "PYTHON_FLOAT",
    "ROLES",
    "SCALAR",
    "SCALAR_RESULT",
    "SCALAR_TYPES",
    "describe",
    "dtype_kind",
    "is_array",
    "is_differentiable",
    "is_float_dtype",
    "is_view",
    "leaf_kind",
    "memory_root",
    "roles_of",
]

SCALAR_TYPES = (float, int, bool, str, bytes, complex, type(None))


def is_float_dtype(dtype: Any) -> bool:
    """Real floating dtypes of numpy, torch, jax (and tracers that carry one)."""
    kind = getattr(dtype, "kind", None)
    if kind is not None:
        return kind == "f" or getattr(dtype, "name", "") == "bfloat16"
    return bool(getattr(dtype, "is_floating_point", False)) and not bool(
        getattr(dtype, "is_complex", False)
    )


_KIND_OF_DTYPE: dict[Any, str] = {}


def dtype_kind(dtype: Any) -> str:
    """``"f"`` (real floating), ``"c"`` (complex) or ``"o"`` (other), cached per dtype."""
    kind = _KIND_OF_DTYPE.get(dtype)
    if kind is None:
        kind = "f" if is_float_dtype(dtype) else "c" if is_complex_dtype(dtype) else "o"
        with contextlib.suppress(TypeError):  # an unhashable dtype: just not cached
            _KIND_OF_DTYPE[dtype] = kind
    return kind


def is_complex_dtype(dtype: Any) -> bool:
    kind = getattr(dtype, "kind", None)
    if kind is not None:
        return bool(kind == "c")
    return bool(getattr(dtype, "is_complex", False))


def is_array(x: Any) -> bool:
    """An array of any kind (numpy, engine arrays, traced values), not a Python scalar."""
    if type(x) in ARRAY_TYPES:
        return True
    return hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, (float, int))


# Leaf types whose kind never depends on the value (Python scalars and their subclasses,
# such as np.float64), and array types seen before (their kind is their dtype's): one
# dict or set lookup instead of isinstance chains.
_KIND_OF_SCALAR_TYPE: dict[type, str] = {}
ARRAY_TYPES: set[type] = {np.ndarray}


def leaf_kind(x: Any) -> str:
    """``"f"`` differentiable (a floating array or a Python float, numpy float scalars
    included), ``"c"`` complex, ``"o"`` anything else."""
    cls = type(x)
    if cls in ARRAY_TYPES:
        dtype = x.dtype
        kind = _KIND_OF_DTYPE.get(dtype)
        return kind if kind is not None else dtype_kind(dtype)
    kind = _KIND_OF_SCALAR_TYPE.get(cls)
    if kind is not None:
        return kind
    if issubclass(cls, SCALAR_TYPES):
        kind = "f" if issubclass(cls, float) else "c" if issubclass(cls, complex) else "o"
        _KIND_OF_SCALAR_TYPE[cls] = kind
        return kind
    dtype = getattr(x, "dtype", None)
    if dtype is None or not hasattr(x, "shape"):
        return "o"
    if _is_engine_array(cls):
        ARRAY_TYPES.add(cls)  # every instance has a dtype: skip the probing next time
    return dtype_kind(dtype)


def _is_engine_array(cls: type) -> bool:
    # Array types (torch.Tensor, jax's ArrayImpl and tracers, the tape's tracer) define
    # dtype on the class, as a property or a C getter: every instance has one. An object
    # with a dtype attribute of its own is probed each time instead.
    return isinstance(getattr(cls, "dtype", None), (property, types.GetSetDescriptorType))


def is_differentiable(x: Any) -> bool:
    """Floating arrays and Python floats (including numpy float scalars)."""
    return leaf_kind(x) == "f"


# Types whose class has no ``_base`` (jax arrays, tracers): their arrays never view
# another's memory. Looking ``_base`` up on them fails, which costs more than this set.
_VIEWLESS: set[type] = set()


def is_view(x: Any) -> bool:
    """Whether ``x`` views another array's memory (numpy ``.base``, torch ``._base``)."""
    if isinstance(x, np.ndarray):
        return x.base is not None
    cls = type(x)
    if cls in _VIEWLESS:
        return False
    if not hasattr(cls, "_base"):
        _VIEWLESS.add(cls)
        return False
    return getattr(x, "_base", None) is not None


def memory_root(x: Any) -> Any:
    """The array owning ``x``'s memory (numpy ``.base`` / torch ``._base`` chains)."""
    if isinstance(x, np.ndarray):
        while isinstance(x.base, np.ndarray):
            x = x.base
        return x
    base = getattr(x, "_base", None)
    while base is not None:
        x, base = base, getattr(base, "_base", None)
    return x


# What a leaf's type says about it, looked up once per type (isinstance against tuples is
# slow on engine array types with metaclasses).
SCALAR = 1  # a Python scalar: a value, never a tied parameter
SCALAR_RESULT = 2  # a float or numpy scalar: its gradient is given back as its own type
PYTHON_FLOAT = 4  # float or a subclass: no memory to overlap with
ROLES: dict[type, int] = {}


def roles_of(cls: type) -> int:
    """The role bits of leaves of type ``cls`` (cached in ``ROLES``)."""
    roles = (
        (SCALAR if issubclass(cls, SCALAR_TYPES) else 0)
        | (SCALAR_RESULT if issubclass(cls, (float, np.generic)) else 0)
        | (PYTHON_FLOAT if issubclass(cls, float) else 0)
    )
    ROLES[cls] = roles
    return roles


def describe(x: Any) -> str:
    """A short description of a value for error messages."""
    shape = getattr(x, "shape", None)
    dtype = getattr(x, "dtype", None)
    name = f"{type(x).__module__.partition('.')[0]}.{type(x).__qualname__}"
    if shape is not None and dtype is not None:
        return f"{name} of shape {tuple(shape)} and dtype {dtype}"
    if isinstance(x, (int, float, complex, bool, str)) or x is None:
        return f"{type(x).__name__} {x!r}"
    return name
