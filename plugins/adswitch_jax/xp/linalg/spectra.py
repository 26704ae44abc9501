"""What the jax ``linalg`` rules share: the tolerance that tells repeated eigenvalues and
singular values from distinct ones, the masks made from it, and masked reciprocals.

Imported only once jax is in use (it imports jax).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from adswitch.spec import beyond_rounding, equal_pairs, negligible
from adswitch.spec import tolerance as kit_tolerance

__all__ = [
    "differences", "in_cluster", "mT", "masks", "real_floating", "reciprocal", "repeated",
    "spread", "tolerance",
]  # fmt: skip


def mT(x: Any) -> Any:
    """The transpose of each matrix of a stack."""
    return jnp.swapaxes(x, -1, -2)


def tolerance(values: Any) -> Any:
    """``(..., 1)``: the magnitude below which differences of ``values`` are roundoff
    (every engine's one tolerance, ``adswitch.spec.tolerance``)."""
    return kit_tolerance(values, xp=jnp)


def masks(values: Any) -> tuple[Any, Any, Any]:
    """``(close, zero, eye)``: pairs equal to within roundoff (the diagonal included),
    values within roundoff of 0, the diagonal."""
    values = jax.lax.stop_gradient(values)
    eye = jnp.eye(values.shape[-1], dtype=bool)
    return equal_pairs(values, xp=jnp), negligible(values, xp=jnp), eye


def reciprocal(x: Any, skip: Any) -> Any:
    """``1 / x``, 0 where ``skip`` (never ``inf``, so no ``0 * inf`` in a derivative)."""
    return jnp.where(skip, 0.0, 1.0 / jnp.where(skip, 1.0, x))


def repeated(close: Any, eye: Any) -> Any:
    """Per matrix: whether two different values are equal."""
    return jnp.any(close & ~eye, axis=(-2, -1))


def real_floating(x: Any) -> bool:
    """Whether ``x`` is a real floating array (the rules' domain; others take jax's)."""
    return bool(jnp.issubdtype(jnp.result_type(x), jnp.floating))


def in_cluster(close: Any, eye: Any) -> Any:
    """``(..., n)``: which values are equal to another one (a repeated value's members)."""
    return jnp.any(close & ~eye, axis=-2)


def differences(values: Any) -> Any:
    """``[..., i, j] = values_j - values_i``."""
    return values[..., None, :] - values[..., :, None]


def spread(x: Any, axes: int, like: Any = None) -> Any:
    """Which entries of ``x`` are not zero to within ``sqrt(eps)`` times the largest
    magnitude of ``like`` (``None``: ``x``) over its last ``axes`` axes (per matrix): a
    generous rounding, as what is tested is whether a derivative exists, not a value."""
    scale = jnp.max(
        jnp.abs(x if like is None else like), axis=tuple(range(-axes, 0)), keepdims=True
    )
    scale = jnp.reshape(scale, scale.shape + (1,) * (jnp.ndim(x) - scale.ndim))
    return beyond_rounding(x, scale, xp=jnp)
