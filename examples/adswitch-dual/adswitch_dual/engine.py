"""One forward pass computes the whole gradient: seed each active scalar with its own
tangent column, run ``fn`` on dual numbers, read the loss's tangent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError
from adswitch.spec import CallInfo, LossFn
from adswitch_dual.dual import _WIDTH, DualArray

__all__ = ["value_and_grad"]


def value_and_grad(
    fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], list[Any | None]]:
    """The engine's whole job (see ``adswitch.spec.Backend.value_and_grad``).

    Args:
        fn: the front end's closure ``fn(leaves) -> (loss, out_leaves)``.
        leaves: numpy arrays, Python floats and inactive leaves of any type.
        active: where a gradient is wanted.
        info: the call's depth (this engine does not nest) and cache key (unused).

    Returns:
        ``(out_leaves, grads)``: outputs as numpy, one gradient per active leaf with the
        leaf's type, shape and dtype, ``None`` elsewhere.

    Raises:
        UnsupportedError: for a nested call (``ad.gradient`` inside ``f``).

    Example:
        >>> import numpy as np
        >>> from adswitch.spec import CallInfo
        >>> from adswitch_dual import namespace as xp
        >>> def fn(leaves):
        ...     loss = xp.sum(leaves[0] * leaves[0])
        ...     return loss, [loss]
        >>> out, grads = value_and_grad(fn, [np.array([1.0, 2.0])], [True], CallInfo())
        >>> grads[0].tolist()
        [2.0, 4.0]
    """
    if info.depth > 0 or any(isinstance(leaf, DualArray) for leaf in leaves):
        raise UnsupportedError(
            "dual engine: nested differentiation (ad.gradient called inside a function "
            "being differentiated with backend='dual') is not supported "
            "(capabilities.nested=False). Use backend='tape', 'torch', 'jax' or 'autograd' "
            "for higher-order derivatives."
        )
    values = [np.asarray(leaf) if on else None for leaf, on in zip(leaves, active, strict=True)]
    width = sum(v.size for v in values if v is not None)
    token = _WIDTH.set(width)
    try:
        traced: list[Any] = []
        offset = 0
        for leaf, value in zip(leaves, values, strict=True):
            if value is None:
                traced.append(leaf)
                continue
            seed = np.zeros((value.size, width), dtype=value.dtype)
            seed[np.arange(value.size), offset + np.arange(value.size)] = 1.0
            offset += value.size
            # The user's own array is the value (not a copy): a mutating f mutates it,
            # as a plain call would.
            base = leaf if isinstance(leaf, np.ndarray) else value
            traced.append(DualArray(base, seed.reshape((*value.shape, width))))
        loss, out = fn(traced)
    finally:
        _WIDTH.reset(token)
    flat = loss.tangent.reshape(width) if isinstance(loss, DualArray) else np.zeros(width)
    grads: list[Any | None] = []
    offset = 0
    for leaf, value in zip(leaves, values, strict=True):
        if value is None:
            grads.append(None)
            continue
        grad = flat[offset : offset + value.size].reshape(value.shape).astype(value.dtype)
        offset += value.size
        grads.append(float(grad) if isinstance(leaf, float) else grad)
    outs = [o.value if isinstance(o, DualArray) else o for o in out]
    return outs, grads
