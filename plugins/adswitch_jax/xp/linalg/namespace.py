"""``xp.linalg`` for jax arrays: ``jax.numpy.linalg`` with derivative rules that are right
-- or an ``UnsupportedError`` that says the fix -- where jax's own are silently wrong.

What changes (real floating arrays; every other function, and the options named in each
function's doc, is jax's own):

* ``eigh``, ``eigvalsh`` (``xp.linalg.eigh``), ``svd``, ``svdvals``, ``matrix_norm``
  2/-2/``'nuc'`` (``xp.linalg.svd``): at repeated eigenvalues and repeated (or, non-square,
  zero) singular values, the autograd engine's convention instead of jax's NaN or zeroed
  pair: functions of the values get their first derivative in reverse mode where it
  exists (symmetric in the repeated values; a zero singular value has slope 0; the
  spectral norms spread their slope over tied singular values, independent of the
  basis); a different cotangent for equal values or a forward tangent that splits one is
  an ``UnsupportedError``, and so is any derivative through the eigen- or singular
  vectors there (reverse mode: a check on the cotangent, in the transpose of a
  zero-valued linear term of the rule); second derivatives there are refused;
  ``svd(full_matrices=True)`` of a non-square matrix is refused when differentiated
  (jax: ``NotImplementedError``).
* ``slogdet`` at a singular matrix, ``qr`` of dependent columns (``xp.linalg.guarded``): an
  ``UnsupportedError`` instead of ``inf``/NaN or ``1/eps``.
* ``vector_norm`` (``p > 1``) and ``matrix_norm('fro')`` at 0: the subgradient 0
  instead of NaN.

``det`` keeps jax's rule, which is right at singular matrices (first and second order).
Every rule is jit- and vmap-compatible: refusals are decided in the compiled program
(``xp.linalg.checks``) and raised on the host; the engine reports them as the
``UnsupportedError`` they are (``refusals.errors``). Functions called as ``jnp.linalg.*`` directly
keep jax's rules: write ``xp.linalg.*`` (``xp = ad.array_namespace(x)``).

Imported only once jax is in use (it imports jax).
"""

from __future__ import annotations

import types
from typing import Any

from adswitch_jax.xp.linalg import eigh, guarded, svd

__all__ = ["linalg_namespace"]

_RULES = {
    "eigh": eigh.eigh,
    "eigvalsh": eigh.eigvalsh,
    "qr": guarded.qr,
    "slogdet": guarded.slogdet,
    "svd": svd.svd,
    "svdvals": svd.svdvals,
    "vector_norm": guarded.vector_norm,
}


def linalg_namespace(native: types.ModuleType) -> types.ModuleType:
    """``native`` (``jax.numpy.linalg``) with the rules of the module doc.

    Args:
        native: the linalg namespace whose functions are wrapped.

    Returns:
        A module exposing every name of ``native``.

    Example:
        >>> import jax.numpy as jnp
        >>> linalg_namespace(jnp.linalg).eigh.__module__
        'adswitch_jax.xp.linalg.eigh'
    """
    ns = types.ModuleType("jax.numpy.linalg", __doc__)
    ns.__dict__.update(
        (k, v) for k, v in vars(native).items() if not k.startswith("__") or k == "__all__"
    )
    overrides: dict[str, Any] = {name: wrap(getattr(native, name)) for name, wrap in _RULES.items()}
    overrides["matrix_norm"] = svd.matrix_norm(native.matrix_norm, overrides["vector_norm"])
    ns.__dict__.update(overrides)
    return ns
