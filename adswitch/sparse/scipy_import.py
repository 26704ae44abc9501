"""scipy, imported where a sparse result is built (not a dependency of ``import adswitch``)."""

from __future__ import annotations

from typing import Any

from adswitch.errors import BackendUnavailableError

__all__ = ["sparse"]


def sparse() -> Any:
    """``scipy.sparse``, or an error naming the install command."""
    try:
        import scipy.sparse
    except ImportError as exc:
        raise BackendUnavailableError(
            "sparse Jacobians (ad.sparsity, ad.jacobian(..., sparsity=...)) return "
            "scipy.sparse matrices and need scipy: pip install scipy"
        ) from exc
    return scipy.sparse
