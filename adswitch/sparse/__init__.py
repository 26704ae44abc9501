"""Sparse Jacobians: detection (:func:`sparsity`), coloring and compressed evaluation.

Front end only: numpy and (imported lazily, where a result is built) scipy; no engine.
"""

from __future__ import annotations

from adswitch.sparse.detect import sparsity

__all__ = ["sparsity"]
