"""``xp.linalg.eigh`` and ``eigvalsh`` on jax, with derivatives right (or refused) at
repeated eigenvalues, where jax's own rule divides roundoff by roundoff (NaN at an exactly
repeated eigenvalue).

A ``jax.custom_jvp`` (reverse mode transposes it; its derivative is written in jax
operations, so higher orders differentiate it again), jit- and vmap-compatible: the
degenerate cases are masks (``jnp.where``), never Python branches on values. Of ``(x +
x^T) / 2``, as ``jnp.linalg.eigh`` symmetrizes: ``dw = diag(K)``, ``dV = V (F o K)`` for
``K = V^T dx V``, ``F_ij = 1 / (w_j - w_i)`` -- and 0 between eigenvalues equal to within
``16 n eps |w|_max``: exact there for symmetric functions of the eigenvalues and for
projectors onto a repeated eigenvalue's eigenspace (the functions that have a derivative
there), first order, forward and reverse. A second derivative at a repeated eigenvalue is
an ``UnsupportedError`` (:func:`._linalg_checks.guard` on the rule's coefficients): the
dropped terms are exact to first order only.

Known limit: a custom_jvp rule sees tangents, never cotangents, so jax cannot refuse
(as torch's reverse mode does) a function of the eigenvectors of a repeated eigenvalue
other than the ones above -- ``V diag(h(w)) V^T`` with ``h`` not constant on it, one
eigenvector of the eigenspace -- which gets the convention's number.

Imported only once jax is in use (it imports jax).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from adswitch_jax._linalg_checks import guard, refusal
from adswitch_jax._linalg_spectra import masks, mT, real_floating, reciprocal, repeated

__all__ = ["EighResult", "eigh", "eigvalsh"]

_SECOND_EIGH = refusal(
    "eigh (or eigvalsh)",
    "a second derivative at a repeated eigenvalue is not computed: the first-order rule "
    "drops the terms between equal eigenvalues, exact to first order only",
    "take second derivatives away from the repeated eigenvalue, or differentiate once there",
)


class EighResult(NamedTuple):
    """``eigh``'s result, as ``jnp.linalg.eigh``'s."""

    eigenvalues: Any
    eigenvectors: Any


@jax.custom_jvp
def _eigh(a: Any) -> tuple[Any, Any]:
    v, w = jax.lax.linalg.eigh(a, symmetrize_input=False)
    return w, v


@_eigh.defjvp
def _eigh_jvp(primals: Any, tangents: Any) -> Any:
    (a,), (da,) = primals, tangents
    w, v = _eigh(a)
    close, _, eye = masks(w)
    degenerate = repeated(close, eye)
    gaps = w[..., None, :] - w[..., :, None]  # [i, j] = w_j - w_i
    f = guard(reciprocal(gaps, close), degenerate, _SECOND_EIGH)
    basis = guard(v, degenerate, _SECOND_EIGH)
    k = mT(basis) @ da @ basis
    return (w, v), (jnp.diagonal(k, axis1=-2, axis2=-1), basis @ (f * k))


def _symmetric_eigh(a: Any) -> EighResult:
    a = jnp.asarray(a)
    return EighResult(*_eigh((a + mT(a)) * 0.5))  # what jnp.linalg.eigh decomposes


def eigh(native: Any) -> Any:
    """``xp.linalg.eigh`` from jax's own ``native``."""

    def eigh(a: Any, UPLO: Any = None, symmetrize_input: bool = True) -> Any:
        """``jnp.linalg.eigh``; derivatives right at repeated eigenvalues, or refused
        (``adswitch_jax._linalg_eigh``). ``symmetrize_input=False``: jax's own rule."""
        if not symmetrize_input or not real_floating(a):
            return native(a, UPLO=UPLO, symmetrize_input=symmetrize_input)
        return _symmetric_eigh(a)

    return eigh


def eigvalsh(native: Any) -> Any:
    """``xp.linalg.eigvalsh`` from jax's own ``native``."""

    def eigvalsh(a: Any, UPLO: Any = "L", *, symmetrize_input: bool = True) -> Any:
        """``jnp.linalg.eigvalsh``; derivatives right at repeated eigenvalues, or refused
        (``adswitch_jax._linalg_eigh``). ``symmetrize_input=False``: jax's own rule."""
        if not symmetrize_input or not real_floating(a):
            return native(a, UPLO=UPLO, symmetrize_input=symmetrize_input)
        return _symmetric_eigh(a).eigenvalues

    return eigvalsh
