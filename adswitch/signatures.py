"""What a prepared call fixes about each leaf of its arguments, and how it says so.

A leaf's signature is its type and, for an array, its shape, dtype and placement (the
device, or for jax arrays the sharding): a prepared call compares the signatures of a
call's leaves with those of its example (values may change freely), and names what
changed in its ``PreparationError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch.leaves import ARRAY_TYPES, SCALAR_TYPES, is_array

__all__ = ["describe_signature", "signature", "stands_in"]


def signature(leaf: Any) -> tuple[Any, ...]:
    """What a prepared call fixes about a leaf: its type, and for arrays shape, dtype and
    device (values are free to change)."""
    cls = type(leaf)
    if cls is np.ndarray:
        return (cls, leaf.shape, leaf.dtype, None)
    if cls in ARRAY_TYPES or (cls not in SCALAR_TYPES and is_array(leaf)):
        where = _PLACEMENT.get(cls) or _placement(cls)
        try:  # (inline, not a helper's frame: every prepared call checks every leaf)
            device = getattr(leaf, where, None)
        except Exception:  # jax: an array sharded over several devices has .devices() only
            device = _devices(leaf)
        return (cls, leaf.shape, leaf.dtype, device)
    return (cls,)


# Per array type, the attribute that says where an array's data is: its ``sharding``
# where the type has one (jax: a stored attribute, where ``.device`` derives a device
# from it on each read, and tells sharded arrays apart too), else its ``device``.
_PLACEMENT: dict[type, str] = {}


def _placement(cls: type) -> str:
    sharded = isinstance(getattr(cls, "sharding", None), property)
    _PLACEMENT[cls] = where = "sharding" if sharded else "device"
    return where


def _devices(leaf: Any) -> Any:
    return tuple(sorted(map(str, leaf.devices()))) if hasattr(leaf, "devices") else None


def stands_in(leaf: Any, sig: tuple[Any, ...], engine: Any) -> bool:
    """Whether ``leaf`` is a traced value of ``engine``'s own transform (a jax tracer
    under ``jax.jit``, ``vmap``, ``grad``) standing for an array of signature ``sig``: the
    engine's optional ``stands_in`` hook says so for the two types, and the shape and dtype
    agree (the placement is the transform's to choose)."""
    hook = getattr(engine, "stands_in", None)
    if hook is None or len(sig) != 4 or not hook(leaf, sig[0]):
        return False
    return bool(leaf.shape == sig[1] and leaf.dtype == sig[2])


def describe_signature(sig: tuple[Any, ...]) -> str:
    """A signature in words, e.g. ``numpy.ndarray of shape (3,) and dtype float64``."""
    if len(sig) == 1:
        return f"a {sig[0].__module__.partition('.')[0]}.{sig[0].__qualname__}"
    cls, shape, dtype, device = sig
    devices = getattr(device, "device_set", None)  # a sharding: where it places data
    if devices is not None and len(devices) == 1:
        device = next(iter(devices))
    where = f" on {device}" if str(device) not in ("None", "cpu") else ""
    name = f"{cls.__module__.partition('.')[0]}.{cls.__qualname__}"
    return f"{name} of shape {shape} and dtype {dtype}{where}"
