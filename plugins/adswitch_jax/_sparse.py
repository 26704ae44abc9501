"""Sparse results as jax's own sparse matrices (the ``sparse_result`` hook of
``adswitch.spec.Backend``): ``ad.jacobian(..., sparsity=...)`` and ``ad.hessian(...,
sparsity=...)`` of jax inputs give a ``jax.experimental.sparse.BCOO`` per block, on the
input's device, instead of a ``scipy.sparse.csr_array``.

BCOO rather than BCSR: BCOO is the format the rest of ``jax.experimental.sparse`` is
built on -- ``@`` against dense arrays and other BCOO matrices, ``transpose``,
``reshape``, slicing, ``sparsify``, and ``jit``/``vmap``/``grad`` through its ``data`` --
while BCSR has matmul and conversions only; a BCSR is one ``BCSR.from_bcoo`` away.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["sparse_result"]


def sparse_result(
    jax: Any,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    shape: tuple[int, int],
    like: Any,
) -> Any:
    """A CSR matrix as a ``jax.experimental.sparse.BCOO`` placed like ``like``.

    Args:
        jax: the ``jax`` module.
        indptr: the row pointers (numpy, ``shape[0] + 1`` entries).
        indices: the column of each stored entry (numpy, sorted within each row, unique).
        data: the stored values (numpy, in the result's dtype).
        shape: ``(rows, columns)``.
        like: the input array of the block: the result goes to its device.

    Returns:
        A ``BCOO`` of ``shape`` with ``data``'s dtype, entries in row-major order
        (``indices_sorted`` and ``unique_indices`` set, so jax skips re-sorting).

    Example:
        >>> import jax, numpy as np
        >>> m = sparse_result(jax, np.array([0, 1, 2]), np.array([1, 0]),
        ...                   np.array([2.0, 3.0]), (2, 2), jax.numpy.ones(2))
        >>> np.asarray(m.todense()).tolist()
        [[0.0, 2.0], [3.0, 0.0]]
    """
    from jax.experimental import sparse

    devices = like.devices()
    # (one device: the input's; a sharded input: jax's default placement)
    device = next(iter(devices)) if len(devices) == 1 else None
    values = jax.device_put(np.asarray(data), device)
    return sparse.BCOO(
        (values, _coords(jax, indptr, indices, shape, device)),
        shape=tuple(shape),
        indices_sorted=True,
        unique_indices=True,
    )


# The last pattern's coordinates on its device: a prepared call decompresses into the same
# pattern every time, so its (nnz, 2) indices are sent to the device once, not per call
# (jax arrays are immutable: sharing them between results is safe).
_LAST: list[Any] = []


def _coords(
    jax: Any, indptr: np.ndarray, indices: np.ndarray, shape: tuple[int, int], device: Any
) -> Any:
    """The BCOO ``(nnz, 2)`` int32 row-major coordinates of a CSR structure, on ``device``."""
    if _LAST:
        key, last_indptr, last_indices, coords = _LAST
        if (
            key == (tuple(shape), device)
            and np.array_equal(last_indptr, indptr)
            and np.array_equal(last_indices, indices)
        ):
            return coords
    rows = np.repeat(np.arange(shape[0], dtype=np.int32), np.diff(indptr))
    host = np.stack([rows, np.asarray(indices, dtype=np.int32)], axis=1)
    coords = jax.device_put(host, device)
    _LAST[:] = [(tuple(shape), device), np.array(indptr), np.array(indices), coords]
    return coords
