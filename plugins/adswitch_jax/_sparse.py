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

__all__ = ["sparse_gather", "sparse_result"]


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


def sparse_gather(
    jax: Any,
    part: Any,
    take: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    shape: tuple[int, int],
    like: Any,
) -> Any:
    """The compressed pushforwards (pullbacks) decompressed on their device into a BCOO:
    the ``sparse_gather`` hook (``adswitch.spec.Backend``).

    One small jitted gather (compiled once per size and dtype, the indices an argument)
    reads the stored values out of ``part``; the coordinates are the pattern's, sent to
    the device once (:func:`_coords`), and the BCOO is assembled from its pytree parts
    (its ``__init__`` re-checks what holds by construction: 40 us a call).

    Args:
        jax: the ``jax`` module.
        part: the engine's batched result, a concrete jax array ``(colors, *shape)``.
        take: per stored entry (CSR order), its place in ``part`` flattened.
        indptr: the pattern's row pointers.
        indices: its columns (sorted, unique within each row).
        shape: ``(rows, columns)``.
        like: the block's input leaf.

    A traced ``part`` (the call inside ``jax.jit``, ``vmap`` or ``grad``) is gathered in
    the caller's trace instead (:func:`_traced`): ``take`` and the coordinates enter the
    program as constants.

    Returns:
        The BCOO (as :func:`sparse_result` makes it), or ``None`` (not one device, or too
        many entries for int32 places: the front end's host path).

    Example:
        >>> import jax, numpy as np
        >>> part = jax.numpy.array([[1.0, 2.0], [3.0, 4.0]])   # (colors, rows)
        >>> m = sparse_gather(jax, part, np.array([0, 3]), np.array([0, 1, 2]),
        ...                   np.array([0, 1]), (2, 2), jax.numpy.ones(2))
        >>> np.asarray(m.todense()).tolist()
        [[1.0, 0.0], [0.0, 4.0]]
    """
    if not isinstance(part, (jax.Array, jax.core.Tracer)) or part.size >= 2**31:
        return None  # (int32 places: the host path for a larger one)
    if isinstance(part, jax.core.Tracer):
        return _traced(jax, part, take, indptr, indices, shape)
    devices, here = like.devices(), part.devices()
    if len(devices) != 1 or here != devices:
        return None
    device = next(iter(devices))
    flat_take, coords = _on_device(jax, take, indptr, indices, shape, device)
    data = _gather(jax)(part, flat_take)
    return jax.tree_util.tree_unflatten(_treedef(jax, shape), [data, coords])


def _traced(
    jax: Any,
    part: Any,
    take: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    shape: tuple[int, int],
) -> Any:
    """The gather of :func:`sparse_gather` on a tracer, in the enclosing trace: the places
    and coordinates are numpy, closed over -- constants of the traced program, as the
    seeds are -- so the compiled program holds the whole sparse Jacobian. (Under ``vmap``
    the BCOO's data is batched and jax's BCOO batching gives a batch of matrices.)"""
    flat = part.reshape(-1)
    data = jax.numpy.take(flat, np.asarray(take, dtype=np.int32), mode="clip")
    rows = np.repeat(np.arange(shape[0], dtype=np.int32), np.diff(indptr))
    coords = np.stack([rows, np.asarray(indices, dtype=np.int32)], axis=1)
    return jax.tree_util.tree_unflatten(_treedef(jax, shape), [data, jax.numpy.asarray(coords)])


_GATHER: list[Any] = []
_TREEDEFS: dict[tuple[int, int], Any] = {}
# per prepared pattern (the ``take`` array's id): (that array, (rows, columns, device),
# (take on the device, coordinates on the device)); the last few patterns only
_ON_DEVICE: dict[int, tuple[np.ndarray, tuple[Any, ...], tuple[Any, Any]]] = {}
_KEEP = 8


def _gather(jax: Any) -> Any:
    """``part.reshape(-1)[take]``, jitted (indices in range by construction: ``clip``
    skips the out-of-range handling of jax's default)."""
    if not _GATHER:
        take = jax.numpy.take
        _GATHER.append(jax.jit(lambda part, at: take(part.reshape(-1), at, mode="clip")))
    return _GATHER[0]


def _treedef(jax: Any, shape: tuple[int, int]) -> Any:
    """The pytree structure of a sorted, unique BCOO of ``shape`` (made once)."""
    key = (int(shape[0]), int(shape[1]))
    found = _TREEDEFS.get(key)
    if found is None:
        from jax.experimental import sparse

        jnp = jax.numpy
        empty = sparse.BCOO(
            (jnp.zeros(0), jnp.zeros((0, 2), dtype=jnp.int32)),
            shape=key,
            indices_sorted=True,
            unique_indices=True,
        )
        found = _TREEDEFS[key] = jax.tree_util.tree_structure(empty)
    return found


def _on_device(
    jax: Any,
    take: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    shape: tuple[int, int],
    device: Any,
) -> tuple[Any, Any]:
    """``take`` (int32) and the coordinates on ``device``, sent once per pattern. A
    prepared call passes the same ``take`` every time (the front end's own array, made
    with the pattern and never handed out): looked up by identity (the entry holds the
    array, so its ``id`` is not reused); another call's, by value."""
    key = (int(shape[0]), int(shape[1]), device)
    found = _ON_DEVICE.get(id(take))
    if found is not None and found[0] is take and found[1] == key:
        return found[2]
    same = [on for held, k, on in _ON_DEVICE.values() if k == key and np.array_equal(held, take)]
    # (the coordinates of this call's pattern: checked by value)
    coords = _coords(jax, indptr, indices, shape, device)
    if same:
        on_device = (same[0][0], coords)
    else:
        on_device = (jax.device_put(np.asarray(take, dtype=np.int32), device), coords)
    if len(_ON_DEVICE) >= _KEEP:  # (the oldest goes: dicts keep insertion order)
        del _ON_DEVICE[next(iter(_ON_DEVICE))]
    _ON_DEVICE[id(take)] = (take, key, on_device)
    return on_device


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
