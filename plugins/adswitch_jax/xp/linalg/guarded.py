"""``xp.linalg.slogdet``, ``qr`` and ``vector_norm`` on jax: jax's own values and rules,
an ``UnsupportedError`` where the derivative does not exist -- instead of the
``inf``/NaN (``slogdet`` at a singular matrix) or the numbers of size ``1/eps`` (``qr`` of
dependent columns) jax's rules give there -- and ``vector_norm``'s subgradient 0 at 0
(jax's rule gives ``0 / 0``, NaN).

The refusals wrap the outputs in :func:`.checks.guard`: the check costs a
comparison per matrix and a conditional, and only in a program that differentiates.

Imported only once jax is in use (it imports jax).
"""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp

from adswitch.spec import negligible
from adswitch_jax.xp.linalg.checks import guard, known_refusal
from adswitch_jax.xp.linalg.spectra import real_floating

__all__ = ["qr", "slogdet", "vector_norm"]

_SLOGDET = known_refusal("slogdet.singular")
_QR = known_refusal("qr.dependent")


def slogdet(native: Any) -> Any:
    """``xp.linalg.slogdet`` from jax's own ``native``."""

    def slogdet(a: Any, *, method: Any = None) -> Any:
        """``jnp.linalg.slogdet``; the derivative of ``log|det|`` at a singular matrix is
        an ``UnsupportedError`` (``adswitch_jax.xp.linalg.guarded``)."""
        result = native(a, method=method)
        if not real_floating(a):
            return result
        sign, logabs = result
        return type(result)(sign, guard(logabs, ~jnp.isfinite(logabs), _SLOGDET))

    return slogdet


def _dependent(r: Any) -> Any:
    """Per matrix: whether ``R`` has a diagonal entry within roundoff of 0."""
    size = jnp.abs(jnp.diagonal(r, axis1=-2, axis2=-1))
    return jnp.any(negligible(size, xp=jnp), axis=-1)


def qr(native: Any) -> Any:
    """``xp.linalg.qr`` from jax's own ``native``."""

    def qr(a: Any, mode: str = "reduced") -> Any:
        """``jnp.linalg.qr``; the derivative at dependent columns is an
        ``UnsupportedError`` (``adswitch_jax.xp.linalg.guarded``)."""
        result = native(a, mode=mode)
        if not real_floating(a) or mode not in ("reduced", "complete", "r"):
            return result
        if mode == "r":
            return guard(result, _dependent(result), _QR)
        q, r = result
        bad = _dependent(r)
        return type(result)(guard(q, bad, _QR), guard(r, bad, _QR))

    return qr


def _root(total: Any, order: float) -> Any:
    """``total ** (1 / order)``, whose derivative at ``total == 0`` is 0 (a subgradient of
    the norm at 0), not ``inf * 0``."""
    zero = total == 0
    safe = jnp.where(zero, 1.0, total)
    root = jnp.sqrt(safe) if order == 2 else safe ** (1.0 / order)
    return jnp.where(zero, 0.0, root)


def vector_norm(native: Any) -> Any:
    """``xp.linalg.vector_norm`` from jax's own ``native``: the ``p``-norms with ``p > 1``
    take the subgradient 0 at 0 (jax's rule gives NaN); the others are jax's."""

    def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
        """``jnp.linalg.vector_norm``; its derivative at 0 is 0 (a subgradient) instead of
        NaN (``adswitch_jax.xp.linalg.guarded``)."""
        smooth = isinstance(ord, (int, float)) and not isinstance(ord, bool)
        if not smooth or not math.isfinite(ord) or ord <= 1 or not real_floating(x):
            return native(x, axis=axis, keepdims=keepdims, ord=ord)
        x = jnp.asarray(x)
        powers = x * x if ord == 2 else jnp.abs(x) ** ord
        return _root(jnp.sum(powers, axis=axis, keepdims=keepdims), float(ord))

    return vector_norm
