"""Arrays of other engines' kinds as torch leaves: jax arrays in, jax gradients out.

A jax array becomes a torch tensor through DLPack (dtype and device kept, bfloat16
included) and is copied, since torch could write into it and jax arrays are immutable.
Its gradient goes back the same way, as a jax array of the leaf's dtype on the leaf's
devices; a float64 gradient is made in a 64-bit scope (jax would otherwise silently
narrow it to float32). Any other array kind, and jax tracers (``ad.gradient`` called
inside a jax transformation), are an ``UnsupportedError`` that names the kind, raised
before ``f`` runs. jax is never imported here: a jax array exists only once jax is loaded.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import Any

from adswitch.errors import UnsupportedError

__all__ = ["KINDS", "foreign_kind", "from_jax", "to_jax"]

KINDS = ("numpy", "torch", "jax")


# The answer of foreign_kind per type (it depends on the type alone). jax types are only
# ever seen once jax is loaded, so a type judged before that is not one of them.
_KIND_OF_TYPE: dict[type, str | None] = {}


def foreign_kind(value: Any) -> str | None:
    """``"jax"`` for a concrete jax array, the kind's name for another array type this
    engine cannot take (``"a jax tracer"`` included), ``None`` for values that are not
    arrays at all (ints, strings, callables)."""
    cls = type(value)
    try:
        return _KIND_OF_TYPE[cls]
    except KeyError:
        pass
    kind: str | None = None
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(value, jax.Array):
        tracer = getattr(sys.modules.get("jax.core"), "Tracer", None)
        kind = "a jax tracer" if tracer is not None and isinstance(value, tracer) else "jax"
    elif hasattr(cls, "__dlpack__") or hasattr(cls, "__array_namespace__"):
        kind = f"{cls.__module__.partition('.')[0]}.{cls.__qualname__}"
    _KIND_OF_TYPE[cls] = kind
    return kind


def refuse(kind: str, index: int) -> UnsupportedError:
    """The error for leaf ``index`` of an array kind the torch engine does not take."""
    hint = (
        "this ad.gradient runs inside a jax transformation (jit, grad, vmap): use "
        "backend='jax' there"
        if kind == "a jax tracer"
        else f"convert it to one of {', '.join(KINDS)} (e.g. np.asarray(x)) or pick the "
        "engine of its kind with backend="
    )
    return UnsupportedError(
        f"torch: leaf #{index} of the arguments is {kind}, an array kind the torch engine "
        f"cannot take (it takes {', '.join(KINDS)}). Fix: {hint}."
    )


def from_jax(torch: Any, array: Any, index: int) -> Any:
    """A torch tensor holding a copy of the jax array ``array`` (same dtype and device)."""
    try:
        tensor = torch.from_dlpack(array)
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        raise UnsupportedError(
            f"torch: leaf #{index} of the arguments is a jax array of dtype {array.dtype} "
            f"that torch cannot take over DLPack ({exc}). Fix: convert it, e.g. "
            f"x.astype(jnp.float32), or use backend='jax'."
        ) from exc
    return tensor.clone()


def to_jax(torch: Any, value: Any, like: Any) -> Any:
    """The tensor ``value`` as a jax array: with ``like``'s dtype on ``like``'s devices
    (a gradient), or with its own dtype on its own device when ``like`` is ``None`` (an
    output of ``f``)."""
    jax = sys.modules["jax"]
    value = value.detach().contiguous()
    wide = value.element_size() >= 8 and not jax.config.jax_enable_x64
    with _x64(jax) if wide else nullcontext():
        out = jax.numpy.from_dlpack(value)
        if like is not None:
            if out.dtype != like.dtype:
                out = out.astype(like.dtype)
            if out.sharding != like.sharding:
                out = jax.device_put(out, like.sharding)
    return out


def _x64(jax: Any) -> Any:
    # jax.enable_x64 (jax >= 0.7); jax.experimental's older spelling before that
    scoped = getattr(jax, "enable_x64", None)
    if scoped is None:
        scoped = jax.experimental.enable_x64
    return scoped(True)
