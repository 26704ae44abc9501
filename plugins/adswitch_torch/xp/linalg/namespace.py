"""``xp.linalg`` for torch tensors: ``array_api_compat.torch.linalg`` with derivative rules
that are right -- or an ``UnsupportedError`` that says the fix -- where torch's own are
silently wrong, at singular matrices and repeated eigenvalues and singular values.

What changes (only while a floating tensor is being differentiated; otherwise, and for
every other function and argument, the call is torch's own):

* ``det`` (``det``): the gradient is the cofactor matrix at every rank (torch's
  is 0 where LU meets an exact zero pivot), from the SVD where LU's pivots say the
  matrix is ill-conditioned; second derivatives exact there too, third ones refused.
* ``eigh``, ``eigvalsh`` (``eigh``), ``svd``, ``svdvals``, ``matrix_norm`` with
  ``ord`` 2, -2, ``'nuc'`` (``svd``), at repeated eigenvalues and repeated (or,
  non-square, zero) singular values -- the autograd engine's convention: functions of the
  values get their first derivative in reverse mode where it exists (symmetric in the
  repeated values; a zero singular value has slope 0; the spectral norms spread their
  slope over tied singular values, independent of the basis); a different cotangent for
  equal values, or a forward tangent that splits one, is refused; any derivative
  through the eigen- or singular vectors there is refused (their cotangent does not
  determine one; torch divides roundoff by roundoff, or gives NaN); second derivatives
  there are refused; so is a cotangent on the extra columns of
  ``svd(full_matrices=True)``.
* ``slogdet`` at a singular matrix, ``qr`` of dependent columns (``guarded``): an
  ``UnsupportedError`` instead of torch's ``inf``/NaN or ``1/eps``; ``qr`` with
  ``mode='r'`` or (tall) ``mode='complete'``: an ``UnsupportedError`` with the fix instead
  of torch's ``RuntimeError``.

Each wrapper first runs torch's own function; where a cheap check of its result says
the point is regular -- eigen- or singular values apart by more than roundoff (and none
zero, non-square), ``det != 0``, ``log|det|`` finite, no zero on ``R``'s diagonal -- that
result, with torch's rule, is returned (overhead measured at 1-10%: Python floats for
one small matrix, numpy for CPU stacks, torch on other devices). Only the degenerate
points (and values that cannot be read, inside ``torch.func.vmap``) take the rules here:
each an ``autograd.Function`` with a forward-mode (``jvp``) and a ``vmap`` rule, its
derivatives written in differentiable operations, so nested gradients, Hessians and
batched Jacobians go through them.

Known limits: forward-over-forward through a torch ``autograd.Function``
(``torch.func.jacfwd(jacfwd(f))``) gives 0 at the degenerate points (torch's limitation;
adswitch never nests forward mode on torch, it takes the derivative of the pullback);
``eigh``'s, ``eigvalsh``'s and ``cholesky``'s derivatives are symmetric in both modes (torch's
convention: the derivative of ``eigh((x + x^T) / 2)``), although torch reads only the lower
triangle; torch's own forward rules took a tangent that is not symmetric as if it were.
Functions called as ``torch.linalg.*`` directly keep torch's own rules: write
``xp.linalg.*`` (``xp = ad.array_namespace(x)``).
"""

from __future__ import annotations

import types
from typing import Any

from . import det, eigh, guarded, svd

__all__ = ["linalg_namespace"]

_RULES = {
    "cholesky": guarded.cholesky,
    "det": det.det,
    "eigh": eigh.eigh,
    "eigvalsh": eigh.eigvalsh,
    "matrix_norm": svd.matrix_norm,
    "qr": guarded.qr,
    "slogdet": guarded.slogdet,
    "svd": svd.svd,
    "svdvals": svd.svdvals,
}


def linalg_namespace(native: types.ModuleType) -> types.ModuleType:
    """``native`` (``array_api_compat.torch.linalg``) with the rules of the module doc.

    Args:
        native: the linalg namespace whose functions are wrapped.

    Returns:
        A module exposing every name of ``native``.

    Example:
        >>> import array_api_compat.torch.linalg as compat
        >>> linalg_namespace(compat).det.__module__
        'adswitch_torch.xp.linalg.det'
    """
    ns = types.ModuleType("adswitch_torch.xp.linalg", __doc__)
    ns.__dict__.update(
        (k, v) for k, v in vars(native).items() if not k.startswith("__") or k == "__all__"
    )
    overrides: dict[str, Any] = {name: wrap(getattr(native, name)) for name, wrap in _RULES.items()}
    ns.__dict__.update(overrides)
    return ns
