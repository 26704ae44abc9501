"""Telling an identity basis among a batch of tangents, so a program can bake it in.

A forward-mode Jacobian or Hessian pushes the identity basis over the active leaves'
elements through one batched ``jvp``. Passed as an input, the basis is a dense matrix XLA
must multiply with; baked in as a constant, XLA folds it away (``W @ I`` is ``W``), as
``jax.jacfwd`` does. The check is exact and costs one pass over the tangents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["identity_basis"]

Basis = tuple[int, tuple[tuple[int, int, tuple[int, ...], np.dtype[Any]], ...]]


class _OneBytes(dict[np.dtype[Any], int]):
    """How many nonzero bytes a ``1`` of each dtype has (float64's 1.0 has two)."""

    def __missing__(self, dtype: np.dtype[Any]) -> int:
        count = int(np.count_nonzero(np.ones(1, dtype).view(np.uint8)))
        self[dtype] = count
        return count


_ONE_BYTES = _OneBytes()


def identity_basis(tangents: Sequence[Any]) -> Basis | None:
    """``(total, ((offset, size, shape, dtype), ...))`` when the batched ``tangents`` (one
    per active leaf) are exactly the identity basis over all their elements -- leaf ``k``'s
    tangent has shape ``(total, *shape_k)`` and is one at row ``offset_k + i``, element
    ``i``, zero elsewhere -- else ``None``.

    Example:
        >>> identity_basis([np.eye(3)[:, :2], np.eye(3)[:, 2]])[0]
        3
        >>> identity_basis([2 * np.eye(2)]) is None
        True
    """
    total = -1
    offset = 0
    parts = []
    for t in tangents:
        if type(t) is not np.ndarray or t.ndim < 1 or t.dtype.kind != "f":
            return None
        rows = t.shape[0]
        if total < 0:
            total = rows
        if rows != total:
            return None
        size = t.size // rows if rows else 0
        if offset + size > total:
            return None
        flat = t.reshape(rows, size)
        if not (flat[offset : offset + size].diagonal() == 1).all():
            return None
        # Ones on the block's diagonal and no other nonzero byte: exactly the identity
        # (-0.0 counts as nonzero). Bytes, because counting them is the fastest pass.
        if t.flags.c_contiguous:
            if np.count_nonzero(t.view(np.uint8)) != size * _ONE_BYTES[t.dtype]:
                return None
        elif np.count_nonzero(flat) != size:
            return None
        parts.append((offset, size, tuple(t.shape[1:]), t.dtype))
        offset += size
    if total < 0 or offset != total:
        return None
    return total, tuple(parts)
