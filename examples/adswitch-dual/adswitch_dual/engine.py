"""The engine's one primitive, ``jvp``: seed every active leaf with its tangents, run ``fn``
once on dual numbers, read the outputs' tangents.

A batch of ``B`` tangents per leaf (``CallInfo.batched``) rides in the dual numbers'
trailing axis, so one pass gives ``B`` directional derivatives; with the identity basis
as the batch that is a whole Jacobian, or a gradient. adswitch builds ``ad.gradient``,
``ad.vjp``, ``ad.jacobian`` and the rest from this one function (``adswitch.derive``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError
from adswitch.spec import CallInfo, OutputFn
from adswitch_dual import namespace as _namespace  # noqa: F401  (gives DualArray its methods)
from adswitch_dual.dual import DualArray, tangent_width

__all__ = ["jvp"]


def jvp(
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    tangents: Sequence[Any],
    info: CallInfo,
) -> tuple[list[Any], list[Any]]:
    """Push ``tangents`` through ``fn`` (see ``adswitch.spec.Backend.jvp``).

    Args:
        fn: the front end's closure ``fn(leaves) -> (diff_leaves, out_leaves)``.
        leaves: numpy arrays, Python floats and inactive leaves of any type.
        active: where a tangent is pushed.
        tangents: per leaf, ``None`` where inactive, else shaped like the leaf -- with a
            leading batch axis of ``B`` directions when ``info.batched``.
        info: the call's depth (this engine does not nest) and ``batched``.

    Returns:
        ``(out_leaves, out_tangents)``: outputs as numpy, and per differentiated output a
        numpy tangent in its dtype, shaped like it (with the leading batch axis when
        batched).

    Raises:
        UnsupportedError: for a nested call (an operator called inside ``f``).

    Example:
        >>> import numpy as np
        >>> from adswitch.spec import CallInfo
        >>> from adswitch_dual import namespace as xp
        >>> def fn(leaves):
        ...     y = xp.sin(leaves[0]) * 2.0
        ...     return [y], [y]
        >>> x, basis = np.zeros(2), np.eye(2)  # two directions: the whole Jacobian
        >>> out, (jac,) = jvp(fn, [x], [True], [basis], CallInfo(batched=True))
        >>> jac.tolist()
        [[2.0, 0.0], [0.0, 2.0]]
    """
    if info.depth > 0 or any(isinstance(leaf, DualArray) for leaf in leaves):
        raise UnsupportedError(
            "dual engine: nested differentiation (an adswitch operator called inside a "
            "function being differentiated with backend='dual') is not supported "
            "(capabilities.nested=False). Use backend='tape', 'torch', 'jax' or 'autograd' "
            "for higher-order derivatives."
        )
    batch = _batch_size(tangents) if info.batched else 1
    with tangent_width(batch):
        traced = [
            _seed(leaf, tangent, info.batched) if on else leaf
            for leaf, on, tangent in zip(leaves, active, tangents, strict=True)
        ]
        diffs, out = fn(traced)
    out_tangents = [_tangent_of(y, batch, info.batched) for y in diffs]
    return [o.value if isinstance(o, DualArray) else o for o in out], out_tangents


def _batch_size(tangents: Sequence[Any]) -> int:
    return next((int(np.shape(t)[0]) for t in tangents if t is not None), 0)


def _seed(leaf: Any, tangent: Any, batched: bool) -> DualArray:
    """The active ``leaf`` as a dual number carrying ``tangent`` (batch axis moved last)."""
    # The user's own array is the value (not a copy): a mutating f mutates it, as a plain
    # call would. The tangent is always a copy: in-place writes in f change it.
    value = leaf if isinstance(leaf, np.ndarray) else np.asarray(leaf)
    t = np.asarray(tangent, dtype=value.dtype)
    t = np.moveaxis(t, 0, -1) if batched else t[..., None]
    return DualArray(value, np.array(t, order="C"))


def _tangent_of(y: Any, batch: int, batched: bool) -> Any:
    """The tangent of one differentiated output, in the contract's layout: batch axis
    first (or none), the output's dtype; zeros for an output that is a constant."""
    if isinstance(y, DualArray):
        t = y.tangent.astype(y.dtype, copy=False)
        return np.array(np.moveaxis(t, -1, 0)) if batched else t[..., 0].copy()
    value = np.asarray(y)
    if not batched:
        return 0.0 if isinstance(y, float) else np.zeros(value.shape, value.dtype)
    return np.zeros((batch, *value.shape), value.dtype)
