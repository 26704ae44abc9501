"""``xp.linalg.eigh`` and ``eigvalsh`` on jax, with derivatives right -- or refused -- at
repeated eigenvalues, where jax's own rule divides roundoff by roundoff (NaN at an exactly
repeated eigenvalue).

``jax.custom_jvp`` rules (reverse mode transposes them; their derivative is written in jax
operations, so higher orders differentiate them again), jit- and vmap-compatible: the
degenerate cases are masks (``jnp.where``), never Python branches on values. Of ``(x +
x^T) / 2``, as ``jnp.linalg.eigh`` symmetrizes: ``dw = diag(K)``, ``dV = V (F o K)`` for
``K = V^T dx V``, ``F_ij = 1 / (w_j - w_i)``. At eigenvalues equal to within ``16 n eps
|w|_max`` (as the autograd engine's rules, ``adswitch_autograd.xp.linalg.spectral``):

* functions of the eigenvalues: the first derivative in reverse mode of functions
  symmetric in the repeated ones (equal cotangents: ``V_c V_c^T`` spread equally) is
  computed; different cotangents for equal eigenvalues (a kink), and forward mode in a
  direction that splits a repeated eigenvalue, are refused (``UnsupportedError``);
* functions of the eigenvectors of a repeated eigenvalue: refused, in both modes. They
  are any rotation of one another there, and their cotangent does not determine a
  derivative: ``sum(V diag(w - 1) V^T)`` and ``sum(w)`` give the same cotangents at the
  identity and have the gradients ``ones`` and ``I``. Reverse mode refuses any cotangent
  of ``V`` at a repeated eigenvalue (a zero one too: ``V diag(w) V^T`` at ``w = 0, 0,
  1``); forward mode a tangent that moves those eigenvectors (so a ``jvp`` through
  ``eigh`` there is refused even if only its eigenvalues are used -- ``eigvalsh`` is not);
* second derivatives are refused (:func:`.checks.guard` on the rule's
  coefficients).

The refusals by value of a tangent or cotangent are zero-valued linear terms of the
tangent (:func:`.checks.linear_check`); where the eigenvalues are distinct they
add 0, and the derivatives are the formulas above.

Imported only once jax is in use (it imports jax).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from adswitch_jax.xp.linalg.checks import guard, known_refusal, linear_check, refusal
from adswitch_jax.xp.linalg.spectra import (
    differences,
    in_cluster,
    masks,
    mT,
    real_floating,
    reciprocal,
    repeated,
    spread,
)

__all__ = ["EighResult", "eigh", "eigvalsh"]

_SECOND_EIGH = known_refusal("eigh.second")


_VECTORS = known_refusal("eigh.vectors")
_MOVES_VECTORS = known_refusal("eigh.moves_vectors")
_KINK = known_refusal("eigh.kink")
_SPLITS = refusal(
    "eigvalsh (or eigh)",
    "forward mode at a repeated eigenvalue, in a direction that splits it (the sorted "
    "eigenvalues have a kink there)",
    "use reverse mode (ad.gradient) for a symmetric function of the eigenvalues, or move "
    "away from the repeated eigenvalue",
)


class EighResult(NamedTuple):
    """``eigh``'s result, as ``jnp.linalg.eigh``'s."""

    eigenvalues: Any
    eigenvectors: Any


@jax.custom_jvp
def _eigh(a: Any) -> tuple[Any, Any]:
    v, w = jax.lax.linalg.eigh(a, symmetrize_input=False)
    return w, v


@jax.custom_jvp
def _eigvalsh(a: Any) -> Any:
    return _eigh(a)[0]


def _values_tangent(k: Any, close: Any, eye: Any) -> Any:
    """``dw = diag(K)``, with the checks of a repeated eigenvalue's tangent (it must not
    split it) and cotangent (equal ones get equal cotangents)."""
    pairs = close & ~eye

    def splits(t: Any) -> Any:  # off the diagonal, or along it unequally, on a pair
        diagonal = jnp.diagonal(t, axis1=-2, axis2=-1)
        unequal = jnp.broadcast_to(differences(diagonal), t.shape)
        return pairs & (spread(t, 2) | spread(unequal, 2, t))

    def kinked(c: Any) -> Any:  # (the cotangent of dw on the diagonal)
        unequal = differences(jnp.diagonal(c, axis1=-2, axis2=-1))
        return pairs & spread(unequal, 2, c)

    checked = k + linear_check(k, splits, _SPLITS, kinked, _KINK)
    return jnp.diagonal(checked, axis1=-2, axis2=-1)


def _vectors_tangent(basis: Any, f: Any, k: Any, close: Any, eye: Any) -> Any:
    """``dV = V (F o K)``, with the checks that refuse a tangent that moves the
    eigenvectors of a repeated eigenvalue, and any cotangent of ``V`` at one (whatever its
    value: ``V diag(w - 1) V^T`` at the identity gives the eigenvectors a zero cotangent,
    and a gradient the rule cannot see)."""
    columns = in_cluster(close, eye)[..., None, :]

    def moved(t: Any) -> Any:
        return columns & spread(t, 2)

    def used(c: Any) -> Any:
        return jnp.broadcast_to(columns, c.shape)

    return basis @ (f * k) + linear_check(basis @ k, moved, _MOVES_VECTORS, used, _VECTORS)


def _rule_parts(a: Any, da: Any) -> tuple[Any, Any, Any, Any, Any, Any, Any]:
    w, v = _eigh(a)
    close, _, eye = masks(w)
    degenerate = repeated(close, eye)
    f = guard(reciprocal(differences(w), close), degenerate, _SECOND_EIGH)
    basis = guard(v, degenerate, _SECOND_EIGH)
    k = mT(basis) @ da @ basis
    return w, v, close, eye, f, basis, k


@_eigh.defjvp
def _eigh_jvp(primals: Any, tangents: Any) -> Any:
    w, v, close, eye, f, basis, k = _rule_parts(primals[0], tangents[0])
    dw = _values_tangent(k, close, eye)
    return (w, v), (dw, _vectors_tangent(basis, f, k, close, eye))


@_eigvalsh.defjvp
def _eigvalsh_jvp(primals: Any, tangents: Any) -> Any:
    w, _, close, eye, _, _, k = _rule_parts(primals[0], tangents[0])
    return w, _values_tangent(k, close, eye)


def _symmetric_eigh(a: Any) -> EighResult:
    a = jnp.asarray(a)
    return EighResult(*_eigh((a + mT(a)) * 0.5))  # what jnp.linalg.eigh decomposes


def eigh(native: Any) -> Any:
    """``xp.linalg.eigh`` from jax's own ``native``."""

    def eigh(a: Any, UPLO: Any = None, symmetrize_input: bool = True) -> Any:
        """``jnp.linalg.eigh``; derivatives right at repeated eigenvalues, or refused
        (``adswitch_jax.xp.linalg.eigh``). ``symmetrize_input=False``: jax's own rule."""
        if not symmetrize_input or not real_floating(a):
            return native(a, UPLO=UPLO, symmetrize_input=symmetrize_input)
        return _symmetric_eigh(a)

    return eigh


def eigvalsh(native: Any) -> Any:
    """``xp.linalg.eigvalsh`` from jax's own ``native``."""

    def eigvalsh(a: Any, UPLO: Any = "L", *, symmetrize_input: bool = True) -> Any:
        """``jnp.linalg.eigvalsh``; derivatives right at repeated eigenvalues, or refused
        (``adswitch_jax.xp.linalg.eigh``). ``symmetrize_input=False``: jax's own rule."""
        if not symmetrize_input or not real_floating(a):
            return native(a, UPLO=UPLO, symmetrize_input=symmetrize_input)
        a = jnp.asarray(a)
        return _eigvalsh((a + mT(a)) * 0.5)

    return eigvalsh
