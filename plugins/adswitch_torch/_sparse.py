"""Sparse results as torch's own sparse matrices (the ``sparse_result`` hook of
``adswitch.spec.Backend``): ``ad.jacobian(..., sparsity=...)`` and ``ad.hessian(...,
sparsity=...)`` of torch inputs give a ``torch.sparse_csr_tensor`` per block, on the
input's device, instead of a ``scipy.sparse.csr_array``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = ["sparse_result"]


def sparse_result(
    torch: Any,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    shape: tuple[int, int],
    like: Any,
) -> Any:
    """A CSR matrix as a ``torch.sparse_csr_tensor`` placed like ``like``.

    Args:
        torch: the ``torch`` module.
        indptr: the row pointers (numpy, ``shape[0] + 1`` entries).
        indices: the column of each stored entry (numpy, sorted within each row).
        data: the stored values (numpy, in the result's dtype).
        shape: ``(rows, columns)``.
        like: the input tensor of the block: the result goes to its device.

    Returns:
        A ``torch.sparse_csr_tensor`` of ``shape`` and ``data``'s dtype, on ``like``'s device.

    Example:
        >>> import numpy as np, torch
        >>> m = sparse_result(torch, np.array([0, 1, 2]), np.array([1, 0]),
        ...                   np.array([2.0, 3.0]), (2, 2), torch.ones(2))
        >>> m.to_dense().tolist()
        [[0.0, 2.0], [3.0, 0.0]]
    """
    device = like.device
    # (int64 for both index arrays: torch requires one index dtype, and int64 is its default;
    # copies, so the tensors never share memory with the front end's scipy matrix)
    crow = torch.from_numpy(np.array(indptr, dtype=np.int64)).to(device)
    col = torch.from_numpy(np.array(indices, dtype=np.int64)).to(device)
    values = torch.from_numpy(np.array(data)).to(device)
    with warnings.catch_warnings():
        # (torch warns once per process that CSR is "beta": the result is the documented
        # type the caller asked for, the warning would only be noise in their output)
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        # (the invariants hold by construction -- the front end's canonical CSR -- so
        # torch's O(nnz) check is skipped, and said so: else torch warns it is implicit)
        return torch.sparse_csr_tensor(
            crow, col, values, size=tuple(shape), device=device, check_invariants=False
        )
