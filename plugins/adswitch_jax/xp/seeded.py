"""The seeded product: ``seed * slope``, but 0 where the seed is 0 and the slope infinite.

A rule whose slope is infinite at a point (``sqrt`` at 0, ``x ** p`` at 0 for ``p < 1``)
multiplies every seed (tangent or cotangent) by it; a zero seed -- e.g. the structurally
zero entries of a Jacobian -- then gives ``0 * inf = nan`` in plain jax. ``seeded`` is a
primitive linear in its seed, so jax can transpose it (reverse mode); its transpose and
its jvp are seeded products again, so every order keeps zero seeds at 0. Where the slope
is finite it is the plain product (its derivatives untouched). Used by ``xp.kinks``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad as _ad
from jax.interpreters import batching, mlir

__all__ = ["seeded"]


def _impl(seed: Any, slope: Any) -> Any:
    out = seed * slope
    return jnp.where((seed == 0) & jnp.isinf(slope), jnp.zeros_like(out), out)


ad: Any = _ad  # (jax's autodiff internals are untyped)
_seeded_p: Any = Primitive("adswitch_seeded_product")
_seeded_p.def_impl(_impl)
_seeded_p.def_abstract_eval(lambda seed, slope: jax.core.ShapedArray(seed.shape, seed.dtype))
mlir.register_lowering(_seeded_p, mlir.lower_fun(_impl, multiple_results=False))


def seeded(seed: Any, slope: Any) -> Any:
    """``seed * slope`` with 0 where ``seed == 0`` and ``slope`` is infinite."""
    seed, slope = jnp.broadcast_arrays(seed, slope)
    dtype = jnp.result_type(seed, slope)
    return _seeded_p.bind(seed.astype(dtype), slope.astype(dtype))


def _jvp(primals: Any, tangents: Any) -> Any:
    seed, slope = primals
    t_seed, t_slope = tangents
    out = _seeded_p.bind(seed, slope)
    parts = []
    if type(t_seed) is not ad.Zero:
        parts.append(_seeded_p.bind(t_seed, slope))
    if type(t_slope) is not ad.Zero:
        parts.append(_seeded_p.bind(t_slope, seed))
    if not parts:  # (jax does not call a rule without a tangent; kept total)
        return out, jnp.zeros_like(out)
    return out, parts[0] if len(parts) == 1 else parts[0] + parts[1]


def _transpose(ct: Any, seed: Any, slope: Any) -> Any:
    # Linear in whichever argument is the tangent (the other is a known primal).
    ct = ad.instantiate_zeros(ct)
    if ad.is_undefined_primal(seed):
        return _seeded_p.bind(ct, slope), None
    return None, _seeded_p.bind(ct, seed)


def _batch(args: Any, dims: Any) -> Any:
    size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
    moved = [
        jnp.broadcast_to(x, (size, *x.shape)) if d is None else jnp.moveaxis(x, d, 0)
        for x, d in zip(args, dims)
    ]
    return _seeded_p.bind(*moved), 0


ad.primitive_jvps[_seeded_p] = _jvp
ad.primitive_transposes[_seeded_p] = _transpose
batching.primitive_batchers[_seeded_p] = _batch
