"""Sparse results in the caller's kind: a ``scipy.sparse.csr_array`` block becomes the
engine's own sparse matrix (``torch.sparse_csr_tensor``, jax's ``BCOO``...) where the
block's input leaf is that engine's array and the engine has the optional
``sparse_result`` hook (``adswitch.spec.Backend``); numpy inputs keep scipy, whatever the
engine. The front end never imports an engine: the hook builds the matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch.errors import UsageError
from adswitch.sparse.detect import to_numpy

__all__ = ["native", "on_host", "traced"]


def on_host(value: Any, depth: int, operator: str, made: str) -> np.ndarray:
    """``value`` as numpy, or the ``UsageError`` of a sparse result asked for where it
    cannot be one.

    A sparse result is built on the host (a ``scipy.sparse`` matrix, or an engine's sparse
    matrix made from one), which no engine differentiates or traces: refused inside a
    differentiated function (``depth > 0``: it would be a constant to the enclosing
    derivative) and under an engine's own transforms (``jax.jit``...), whose values cannot
    be read (a raw engine error).

    Args:
        value: an array of the call (its differentiated input, or what the engine gave).
        depth: the differentiations on the engine enclosing the call.
        operator: ``"ad.jacobian"`` or ``"ad.hessian"``, for the message.
        made: what the operator builds, for the message (``"sparse matrices"``).
    """
    if not depth:
        try:
            return to_numpy(value)
        except Exception:  # (an engine's tracer: jax's TracerArrayConversionError...)
            pass
    raise UsageError(
        f"a sparse {operator} (sparsity=...) builds its {made} on the host, which no engine "
        "differentiates or traces: call it outside differentiated functions and outside "
        f"jax.jit/vmap/grad, or use the dense {operator} (no sparsity=) there."
    )


def traced(value: Any) -> bool:
    """Whether ``value`` is an engine's traced array, whose values cannot be read (jax's
    tracers under ``jax.jit``/``vmap``/``grad``, torch's under ``torch.func``)."""
    try:
        to_numpy(value)
    except Exception:  # (jax's TracerArrayConversionError, torch's "no storage"...)
        return True
    return False


def native(engine: Any, csr: Any, like: Any) -> Any:
    """``csr`` (a ``scipy.sparse.csr_array``) as the sparse matrix users of ``like``'s kind use.

    Args:
        engine: the engine that computed the block.
        csr: the block, of shape ``(out.size, in.size)``.
        like: the block's differentiated input leaf.

    Returns:
        ``engine.sparse_result(indptr, indices, data, shape, like)`` where ``engine`` owns
        ``like`` and has the hook; else ``csr`` itself.

    Example:
        >>> import numpy as np, scipy.sparse as sp
        >>> from adswitch.registry import default_registry
        >>> m = sp.csr_array(np.eye(2))
        >>> native(default_registry().get("tape"), m, np.ones(2)) is m
        True
    """
    hook = getattr(engine, "sparse_result", None)
    if hook is None or not engine.owns(like):
        return csr
    # (canonical CSR -- sorted columns in each row, no duplicates -- as the hook's contract
    # says; the front end's decompression writes the pattern's order, so this is a no-op
    # there, a sort only for a pattern given unsorted)
    csr.sum_duplicates()
    return hook(csr.indptr, csr.indices, csr.data, (int(csr.shape[0]), int(csr.shape[1])), like)
