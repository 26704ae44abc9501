"""``xp.linalg.svd``, ``svdvals`` and the spectral ``matrix_norm`` orders on jax, with
derivatives right (or refused) at repeated and zero singular values, where jax's own rule
drops every term of a repeated pair (the polar factor ``U Vh`` of an orthogonal matrix).

``jax.custom_jvp`` rules (reverse mode transposes them; higher orders differentiate them
again), jit- and vmap-compatible: the degenerate cases are masks, never Python branches.

* ``svd`` (``full_matrices=False``): ``dU = U (Fm o sym(dP) + Fp o skew(dP)) + (I - U
  U^T) dx V inv(S)``, ``dV = V (Fm o sym(dP) - Fp o skew(dP)) + (I - V V^T) dx^T U
  inv(S)``, ``dP = U^T dx V``, ``Fm_ij = 1 / (s_j - s_i)``, ``Fp_ij = 1 / (s_j + s_i)``.
  At a repeated (or, non-square, a zero) singular value the singular vectors are not
  unique, and their cotangent does not determine a derivative (``sum(U diag(s - 1) Vh)``
  and ``sum(s)`` give the same cotangents at the identity, and different gradients): as
  the autograd engine's rules (``adswitch_autograd.xp.linalg.factors``), any cotangent of
  ``U`` or ``Vh`` there is refused (``UnsupportedError``), and so is forward mode through
  ``svd`` (a ``jvp`` pushes every output, used or not) -- by zero-valued linear terms
  (:func:`.checks.linear_check`), which add 0 elsewhere. ``full_matrices=True``
  of a non-square matrix is an ``UnsupportedError`` when differentiated (its extra
  columns have no derivative; jax raises ``NotImplementedError``).
* ``svdvals`` and ``matrix_norm`` (2, -2, ``'nuc'``): ``ds = diag(U^T dx V)``, slope 0 on
  a zero singular value (a kink, as ``abs`` at 0). At repeated ones, reverse mode needs
  equal cotangents for them (symmetric functions); different ones are refused, and so is
  forward mode in a direction that splits a repeated one or moves a zero one (linear
  checks, as ``svd``'s). ``matrix_norm`` ord 2/-2 spreads its slope equally over the
  singular values tied with the largest (smallest): ``U_k V_k^T / k``, independent of
  the basis. ``matrix_norm('fro')`` goes through ``vector_norm`` (its subgradient 0 at
  0).
* a second derivative at a repeated (or, non-square, zero) singular value is an
  ``UnsupportedError`` (:func:`.checks.guard` on the rules' coefficients).

Imported only once jax is in use (it imports jax).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from adswitch.errors import UnsupportedError
from adswitch.spec import beyond_rounding, spread_extreme
from adswitch_jax.xp.linalg.checks import guard, known_refusal, linear_check
from adswitch_jax.xp.linalg.spectra import (
    differences,
    masks,
    mT,
    real_floating,
    reciprocal,
    repeated,
    spread,
)

__all__ = ["SVDResult", "matrix_norm", "svd", "svdvals"]

_SECOND_SVD = known_refusal("svd.second")
_COMPLETE = known_refusal("svd.complete")


_KINK = known_refusal("svd.kink")
_SPLITS = known_refusal("svd.splits")
_VECTORS = known_refusal("svd.vectors")
_MOVES_VECTORS = known_refusal("svd.moves_vectors")


def _refused_vectors(tangent: Any, degenerate: Any) -> Any:
    """``tangent`` plus zeros that refuse, at a ``degenerate`` matrix, a nonzero tangent
    (forward mode) and any cotangent (reverse mode) of a singular-vector output."""
    flag = degenerate[..., None, None]

    def moved(t: Any) -> Any:
        return flag & (t != 0)

    def used(c: Any) -> Any:
        return jnp.broadcast_to(flag, c.shape)

    return tangent + linear_check(tangent, moved, _MOVES_VECTORS, used, _VECTORS)


class SVDResult(NamedTuple):
    """``svd``'s result, as ``jnp.linalg.svd``'s."""

    U: Any
    S: Any
    Vh: Any


# -- svd -----------------------------------------------------------------------------------
@jax.custom_jvp
def _svd(a: Any) -> tuple[Any, Any, Any]:
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    return u, s, vh


def _svd_degenerate(close: Any, zero: Any, eye: Any, square: bool) -> Any:
    found = repeated(close, eye)
    return found if square else found | jnp.any(zero, axis=-1)


@_svd.defjvp
def _svd_jvp(primals: Any, tangents: Any) -> Any:
    (a,), (da,) = primals, tangents
    u, s, vh = _svd(a)
    m, k, n = u.shape[-2], s.shape[-1], vh.shape[-1]
    close, zero, eye = masks(s)
    degenerate = _svd_degenerate(close, zero, eye, m == n)

    def guarded(x: Any) -> Any:
        return guard(x, degenerate, _SECOND_SVD)

    fm = guarded(reciprocal(s[..., None, :] - s[..., :, None], close))
    both_zero = (zero[..., None, :] & zero[..., :, None]) | eye
    fp = guarded(reciprocal(s[..., None, :] + s[..., :, None], both_zero))
    recip = guarded(reciprocal(s, zero))[..., None, :]
    left, right = guarded(u), guarded(mT(vh))
    dp = mT(left) @ da @ right
    dpt = mT(dp)
    sym = fm * (dp + dpt) * 0.5
    skew = fp * (dp - dpt) * 0.5
    du = left @ (sym + skew)
    dv = right @ (sym - skew)
    if m > k:
        du = du + (da @ right - left @ dp) * recip
    if n > k:
        dv = dv + (mT(da) @ left - right @ dpt) * recip
    du, dvh = _refused_vectors(du, degenerate), _refused_vectors(mT(dv), degenerate)
    return (u, s, vh), (du, jnp.diagonal(dp, axis1=-2, axis2=-1), dvh)


@jax.custom_jvp
def _complete_svd(a: Any) -> tuple[Any, Any, Any]:
    u, s, vh = jnp.linalg.svd(a, full_matrices=True)
    return u, s, vh


@_complete_svd.defjvp
def _complete_svd_jvp(primals: Any, tangents: Any) -> Any:
    raise UnsupportedError(_COMPLETE)


@jax.custom_jvp
def _svdvals(a: Any) -> Any:
    return jnp.linalg.svd(a, compute_uv=False)


@_svdvals.defjvp
def _svdvals_jvp(primals: Any, tangents: Any) -> Any:
    (a,), (da,) = primals, tangents
    u, s, vh = _svd(a)
    close, zero, eye = masks(s)
    degenerate = _svd_degenerate(close, zero, eye, a.shape[-2] == a.shape[-1])
    left = guard(u, degenerate, _SECOND_SVD)
    right = guard(mT(vh), degenerate, _SECOND_SVD)
    live = close & ~eye & ~zero[..., None, :] & ~zero[..., :, None]
    fixed_u, fixed_v = jax.lax.stop_gradient(u), jax.lax.stop_gradient(mT(vh))

    def splits(t: Any) -> Any:  # a repeated nonzero one split, or a zero one moved
        dp = mT(fixed_u) @ t @ fixed_v
        diagonal = jnp.diagonal(dp, axis1=-2, axis2=-1)
        unequal = jnp.broadcast_to(differences(diagonal), dp.shape)
        scale = jnp.max(jnp.abs(t), axis=(-2, -1), keepdims=True)
        # (the kit's one rounding bound, sqrt(eps) times the tangent's magnitude)
        split = live & (
            beyond_rounding(dp + mT(dp), 2 * scale, xp=jnp)
            | beyond_rounding(unequal, scale, xp=jnp)
        )
        moved = jnp.any(beyond_rounding(t @ fixed_v, scale, xp=jnp), axis=-2)
        moved = moved | jnp.any(beyond_rounding(mT(t) @ fixed_u, scale, xp=jnp), axis=-2)
        return jnp.any(split, axis=(-2, -1)) | jnp.any(zero & moved, axis=-1)

    def kinked(c: Any) -> Any:  # (the cotangent of ds, as U diag(g_s) V^T)
        gs = jnp.diagonal(mT(fixed_u) @ c @ fixed_v, axis1=-2, axis2=-1)
        return live & spread(differences(gs), 1, gs)

    checked = da + linear_check(da, splits, _SPLITS, kinked, _KINK)
    slopes = jnp.sum(left * (checked @ right), axis=-2)
    return s, jnp.where(zero, 0.0, slopes)  # a zero one has a kink (as abs at 0): slope 0


def svdvals(native: Any) -> Any:
    """``xp.linalg.svdvals`` from jax's own ``native``."""

    def svdvals(x: Any, /) -> Any:
        """``jnp.linalg.svdvals``; derivatives right (a subgradient) at repeated and zero
        singular values, second ones refused there (``adswitch_jax.xp.linalg.svd``)."""
        if not real_floating(x):
            return native(x)
        return _svdvals(jnp.asarray(x))

    return svdvals


def svd(native: Any) -> Any:
    """``xp.linalg.svd`` from jax's own ``native``."""

    def svd(
        a: Any,
        full_matrices: bool = True,
        compute_uv: bool = True,
        hermitian: bool = False,
        subset_by_index: Any = None,
    ) -> Any:
        """``jnp.linalg.svd``; derivatives right at repeated and zero singular values, or
        refused (``adswitch_jax.xp.linalg.svd``). ``hermitian``, ``subset_by_index``:
        jax's own rule."""
        if hermitian or subset_by_index is not None or not real_floating(a):
            return native(a, full_matrices, compute_uv, hermitian, subset_by_index)
        a = jnp.asarray(a)
        if not compute_uv:
            return _svdvals(a)
        if full_matrices and a.shape[-2] != a.shape[-1]:
            return SVDResult(*_complete_svd(a))
        return SVDResult(*_svd(a))

    return svd


def _spread_extreme(values: Any, largest: bool) -> Any:
    """``max`` (``min``) of the sorted singular values, its slope spread over the ties
    (``adswitch.spec.spread_extreme``; ``jnp.max`` puts it on one of them)."""
    return spread_extreme(values, jax.lax.stop_gradient(values), largest, xp=jnp)


_SPECTRAL: dict[Any, Any] = {
    2: lambda v: _spread_extreme(v, True),
    -2: lambda v: _spread_extreme(v, False),
    "nuc": lambda v: jnp.sum(v, axis=-1),
}


def matrix_norm(native: Any, vector_norm: Any) -> Any:
    """``xp.linalg.matrix_norm`` from jax's own ``native``: ord 2, -2, ``'nuc'`` through
    :func:`svdvals`' rule, ``'fro'`` through ``vector_norm`` (its derivative at 0)."""

    def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
        """``jnp.linalg.matrix_norm``; ord 2, -2, 'nuc': derivatives right (subgradients)
        at repeated and zero singular values, second ones refused there; 'fro': 0 at 0
        (``adswitch_jax.xp.linalg.svd``)."""
        if not real_floating(x):
            return native(x, keepdims=keepdims, ord=ord)
        if isinstance(ord, str) and ord == "fro":
            return vector_norm(x, axis=(-2, -1), keepdims=keepdims, ord=2)
        reduce = _SPECTRAL.get(ord) if isinstance(ord, (int, str)) else None
        if reduce is None:
            return native(x, keepdims=keepdims, ord=ord)
        out = reduce(_svdvals(jnp.asarray(x)))
        return out[..., None, None] if keepdims else out

    return matrix_norm
