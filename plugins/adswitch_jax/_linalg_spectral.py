"""``xp.linalg.eigh``, ``eigvalsh``, ``svd``, ``svdvals`` and the spectral
``matrix_norm`` orders on jax, with derivatives right (or refused) at repeated
eigenvalues and singular values, where jax's own rules give NaN (``eigh`` at an exactly
repeated eigenvalue) or drop every term of a repeated pair (the polar factor ``U Vh`` of
an orthogonal matrix).

Each is a ``jax.custom_jvp`` (reverse mode transposes it; every derivative is written in
jax operations, so higher orders differentiate it again), jit- and vmap-compatible: the
degenerate cases are masks (``jnp.where``), never Python branches on values.

* ``eigh`` (of ``(x + x^T) / 2``, as ``jnp.linalg.eigh`` symmetrizes): ``dw = diag(K)``,
  ``dV = V (F o K)`` for ``K = V^T dx V``, ``F_ij = 1 / (w_j - w_i)`` -- and 0 between
  eigenvalues equal to within ``16 n eps |w|_max``: exact there for symmetric functions of
  the eigenvalues and for projectors onto a repeated eigenvalue's eigenspace (the
  functions that have a derivative there), first order, forward and reverse.
* ``svd`` (``full_matrices=False``): ``dU = U (Fm o sym(dP) + Fp o skew(dP)) + (I - U
  U^T) dx V inv(S)``, ``dV = V (Fm o sym(dP) - Fp o skew(dP)) + (I - V V^T) dx^T U
  inv(S)``, ``dP = U^T dx V``, with ``Fm_ij = 1 / (s_j - s_i)`` 0 between equal singular
  values (the rotation their ``U`` and ``V`` columns share) and ``Fp_ij = 1 / (s_j + s_i)``
  kept (0 only between two zero ones), the ``inv(S)`` terms of zero singular values 0:
  exact for the functions through ``U_c V_c^T``, ``U_c U_c^T``, ``V_c V_c^T``, first order.
  ``full_matrices=True`` of a non-square matrix is an ``UnsupportedError`` when
  differentiated (its extra columns have no derivative; jax raises
  ``NotImplementedError``). ``svdvals`` and ``matrix_norm`` (2, -2, ``'nuc'``): ``ds =
  diag(U^T dx V)``, a subgradient where they repeat or vanish.
* a second derivative at a repeated (or, non-square, zero) eigen- or singular value is an
  ``UnsupportedError`` (:func:`._linalg_checks.guard` on the rules' coefficients): the
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

from adswitch.errors import UnsupportedError
from adswitch_jax._linalg_checks import guard, refusal

__all__ = ["EighResult", "SVDResult", "eigh", "eigvalsh", "matrix_norm", "svd", "svdvals"]

# How close two computed eigenvalues (singular values) must be to count as equal, in units
# of n * eps * the largest magnitude (as the tape's and the torch engine's rules).
_GAP_ULPS = 16

_SECOND_EIGH = refusal(
    "eigh (or eigvalsh)",
    "a second derivative at a repeated eigenvalue is not computed: the first-order rule "
    "drops the terms between equal eigenvalues, exact to first order only",
    "take second derivatives away from the repeated eigenvalue, or differentiate once there",
)
_SECOND_SVD = refusal(
    "svd (or svdvals, matrix_norm)",
    "a second derivative at a repeated or zero singular value is not computed: the "
    "first-order rule drops the terms between equal singular values, exact to first "
    "order only",
    "take second derivatives away from the repeated or zero singular value, or "
    "differentiate once there",
)
_COMPLETE = refusal(
    "svd",
    "with full_matrices=True, the columns of U (rows of Vh) beyond min(m, n) are any "
    "basis of a complement of the matrix's range, and have no derivative",
    "call xp.linalg.svd(x, full_matrices=False)",
)


class EighResult(NamedTuple):
    """``eigh``'s result, as ``jnp.linalg.eigh``'s."""

    eigenvalues: Any
    eigenvectors: Any


class SVDResult(NamedTuple):
    """``svd``'s result, as ``jnp.linalg.svd``'s."""

    U: Any
    S: Any
    Vh: Any


def _mT(x: Any) -> Any:
    return jnp.swapaxes(x, -1, -2)


def _tolerance(values: Any) -> Any:
    """``(..., 1)``: the magnitude below which differences of ``values`` are roundoff."""
    n = values.shape[-1]
    scale = jnp.max(jnp.abs(values), axis=-1, keepdims=True)
    eps = jnp.finfo(values.dtype).eps  # type: ignore[no-untyped-call]
    return scale * (_GAP_ULPS * max(n, 1) * eps)


def _masks(values: Any) -> tuple[Any, Any, Any]:
    """``(close, zero, eye)``: pairs equal to within roundoff (the diagonal included),
    values within roundoff of 0, the diagonal."""
    values = jax.lax.stop_gradient(values)
    tol = _tolerance(values)
    close = jnp.abs(values[..., None, :] - values[..., :, None]) <= tol[..., None]
    eye = jnp.eye(values.shape[-1], dtype=bool)
    return close, values <= tol, eye


def _reciprocal(x: Any, skip: Any) -> Any:
    """``1 / x``, 0 where ``skip`` (never ``inf``, so no ``0 * inf`` in a derivative)."""
    return jnp.where(skip, 0.0, 1.0 / jnp.where(skip, 1.0, x))


def _repeated(close: Any, eye: Any) -> Any:
    """Per matrix: whether two different values are equal."""
    return jnp.any(close & ~eye, axis=(-2, -1))


# -- eigh ----------------------------------------------------------------------------------
@jax.custom_jvp
def _eigh(a: Any) -> tuple[Any, Any]:
    v, w = jax.lax.linalg.eigh(a, symmetrize_input=False)
    return w, v


@_eigh.defjvp
def _eigh_jvp(primals: Any, tangents: Any) -> Any:
    (a,), (da,) = primals, tangents
    w, v = _eigh(a)
    close, _, eye = _masks(w)
    degenerate = _repeated(close, eye)
    gaps = w[..., None, :] - w[..., :, None]  # [i, j] = w_j - w_i
    f = guard(_reciprocal(gaps, close), degenerate, _SECOND_EIGH)
    basis = guard(v, degenerate, _SECOND_EIGH)
    k = _mT(basis) @ da @ basis
    return (w, v), (jnp.diagonal(k, axis1=-2, axis2=-1), basis @ (f * k))


def _real_floating(x: Any) -> bool:
    return bool(jnp.issubdtype(jnp.result_type(x), jnp.floating))


def _symmetric_eigh(a: Any) -> EighResult:
    a = jnp.asarray(a)
    return EighResult(*_eigh((a + _mT(a)) * 0.5))  # what jnp.linalg.eigh decomposes


def eigh(native: Any) -> Any:
    """``xp.linalg.eigh`` from jax's own ``native``."""

    def eigh(a: Any, UPLO: Any = None, symmetrize_input: bool = True) -> Any:
        """``jnp.linalg.eigh``; derivatives right at repeated eigenvalues, or refused
        (``adswitch_jax._linalg_spectral``). ``symmetrize_input=False``: jax's own rule."""
        if not symmetrize_input or not _real_floating(a):
            return native(a, UPLO=UPLO, symmetrize_input=symmetrize_input)
        return _symmetric_eigh(a)

    return eigh


def eigvalsh(native: Any) -> Any:
    """``xp.linalg.eigvalsh`` from jax's own ``native``."""

    def eigvalsh(a: Any, UPLO: Any = "L", *, symmetrize_input: bool = True) -> Any:
        """``jnp.linalg.eigvalsh``; derivatives right at repeated eigenvalues, or refused
        (``adswitch_jax._linalg_spectral``). ``symmetrize_input=False``: jax's own rule."""
        if not symmetrize_input or not _real_floating(a):
            return native(a, UPLO=UPLO, symmetrize_input=symmetrize_input)
        return _symmetric_eigh(a).eigenvalues

    return eigvalsh


# -- svd -----------------------------------------------------------------------------------
@jax.custom_jvp
def _svd(a: Any) -> tuple[Any, Any, Any]:
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    return u, s, vh


def _svd_degenerate(close: Any, zero: Any, eye: Any, square: bool) -> Any:
    found = _repeated(close, eye)
    return found if square else found | jnp.any(zero, axis=-1)


@_svd.defjvp
def _svd_jvp(primals: Any, tangents: Any) -> Any:
    (a,), (da,) = primals, tangents
    u, s, vh = _svd(a)
    m, k, n = u.shape[-2], s.shape[-1], vh.shape[-1]
    close, zero, eye = _masks(s)
    degenerate = _svd_degenerate(close, zero, eye, m == n)

    def guarded(x: Any) -> Any:
        return guard(x, degenerate, _SECOND_SVD)

    fm = guarded(_reciprocal(s[..., None, :] - s[..., :, None], close))
    both_zero = (zero[..., None, :] & zero[..., :, None]) | eye
    fp = guarded(_reciprocal(s[..., None, :] + s[..., :, None], both_zero))
    recip = guarded(_reciprocal(s, zero))[..., None, :]
    left, right = guarded(u), guarded(_mT(vh))
    dp = _mT(left) @ da @ right
    dpt = _mT(dp)
    sym = fm * (dp + dpt) * 0.5
    skew = fp * (dp - dpt) * 0.5
    du = left @ (sym + skew)
    dv = right @ (sym - skew)
    if m > k:
        du = du + (da @ right - left @ dp) * recip
    if n > k:
        dv = dv + (_mT(da) @ left - right @ dpt) * recip
    return (u, s, vh), (du, jnp.diagonal(dp, axis1=-2, axis2=-1), _mT(dv))


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
    close, zero, eye = _masks(s)
    degenerate = _svd_degenerate(close, zero, eye, a.shape[-2] == a.shape[-1])
    left = guard(u, degenerate, _SECOND_SVD)
    right = guard(_mT(vh), degenerate, _SECOND_SVD)
    return s, jnp.sum(left * (da @ right), axis=-2)


def svdvals(native: Any) -> Any:
    """``xp.linalg.svdvals`` from jax's own ``native``."""

    def svdvals(x: Any, /) -> Any:
        """``jnp.linalg.svdvals``; derivatives right (a subgradient) at repeated and zero
        singular values, second ones refused there (``adswitch_jax._linalg_spectral``)."""
        if not _real_floating(x):
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
        refused (``adswitch_jax._linalg_spectral``). ``hermitian``, ``subset_by_index``:
        jax's own rule."""
        if hermitian or subset_by_index is not None or not _real_floating(a):
            return native(a, full_matrices, compute_uv, hermitian, subset_by_index)
        a = jnp.asarray(a)
        if not compute_uv:
            return _svdvals(a)
        if full_matrices and a.shape[-2] != a.shape[-1]:
            return SVDResult(*_complete_svd(a))
        return SVDResult(*_svd(a))

    return svd


_SPECTRAL: dict[Any, Any] = {2: jnp.max, -2: jnp.min, "nuc": jnp.sum}


def matrix_norm(native: Any, vector_norm: Any) -> Any:
    """``xp.linalg.matrix_norm`` from jax's own ``native``: ord 2, -2, ``'nuc'`` through
    :func:`svdvals`' rule, ``'fro'`` through ``vector_norm`` (its derivative at 0)."""

    def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
        """``jnp.linalg.matrix_norm``; ord 2, -2, 'nuc': derivatives right (subgradients)
        at repeated and zero singular values, second ones refused there; 'fro': 0 at 0
        (``adswitch_jax._linalg_spectral``)."""
        if not _real_floating(x):
            return native(x, keepdims=keepdims, ord=ord)
        if isinstance(ord, str) and ord == "fro":
            return vector_norm(x, axis=(-2, -1), keepdims=keepdims, ord=2)
        reduce = _SPECTRAL.get(ord) if isinstance(ord, (int, str)) else None
        if reduce is None:
            return native(x, keepdims=keepdims, ord=ord)
        out = reduce(_svdvals(jnp.asarray(x)), axis=-1)
        return out[..., None, None] if keepdims else out

    return matrix_norm
