"""Sparse results as torch's own sparse matrices (the ``sparse_result`` hook of
``adswitch.spec.Backend``): ``ad.jacobian(..., sparsity=...)`` and ``ad.hessian(...,
sparsity=...)`` of torch inputs give a ``torch.sparse_csr_tensor`` per block, on the
input's device, instead of a ``scipy.sparse.csr_array``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = ["sparse_gather", "sparse_result"]


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


def sparse_gather(
    torch: Any,
    part: Any,
    take: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    shape: tuple[int, int],
    like: Any,
) -> Any:
    """The compressed pullbacks (pushforwards) decompressed on their device into a
    ``torch.sparse_csr_tensor``: the ``sparse_gather`` hook (``adswitch.spec.Backend``).

    The stored values are one ``index_select`` of ``part`` (no trip through numpy); the
    index tensors are sent to the device once per pattern and cloned into each result
    (torch tensors are mutable: results never share memory).

    Args:
        torch: the ``torch`` module.
        part: the engine's batched result, a tensor ``(colors, *shape)``.
        take: per stored entry (CSR order), its place in ``part`` flattened.
        indptr: the pattern's row pointers.
        indices: its columns (sorted, unique within each row).
        shape: ``(rows, columns)``.
        like: the block's input tensor.

    Returns:
        The matrix (as :func:`sparse_result` makes it), or ``None`` (not a plain tensor on
        ``like``'s device, or one that needs grad: the front end's host path).

    Example:
        >>> import numpy as np, torch
        >>> part = torch.tensor([[1.0, 2.0], [3.0, 4.0]])   # (colors, rows)
        >>> m = sparse_gather(torch, part, np.array([0, 3]), np.array([0, 1, 2]),
        ...                   np.array([0, 1]), (2, 2), torch.ones(2))
        >>> m.to_dense().tolist()
        [[1.0, 0.0], [0.0, 4.0]]
    """
    if type(part) is not torch.Tensor or part.requires_grad or part.device != like.device:
        return None
    take_t, crow, col = _on_device(torch, take, indptr, indices, like.device)
    values = part.reshape(-1).index_select(0, take_t)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(
            crow.clone(),
            col.clone(),
            values,
            size=tuple(shape),
            device=like.device,
            check_invariants=False,
        )


# per prepared pattern (the ``take`` array's id): (that array, the device, its index
# tensors there); the entry holds the array, so its id is not reused. The last few only.
_ON_DEVICE: dict[int, tuple[np.ndarray, Any, tuple[Any, Any, Any]]] = {}
_KEEP = 8


def _on_device(
    torch: Any, take: np.ndarray, indptr: np.ndarray, indices: np.ndarray, device: Any
) -> tuple[Any, Any, Any]:
    """``take``, ``indptr`` and ``indices`` as int64 tensors on ``device``, made once per
    prepared pattern (a prepared call passes its own ``take`` every time: looked up by
    identity; another call makes them afresh)."""
    found = _ON_DEVICE.get(id(take))
    if found is not None and found[0] is take and found[1] == device:
        return found[2]
    take_t, crow, col = (
        torch.from_numpy(np.array(a, dtype=np.int64)).to(device) for a in (take, indptr, indices)
    )
    made = (take_t, crow, col)
    if len(_ON_DEVICE) >= _KEEP:  # (the oldest goes: dicts keep insertion order)
        del _ON_DEVICE[next(iter(_ON_DEVICE))]
    _ON_DEVICE[id(take)] = (take, device, made)
    return made
