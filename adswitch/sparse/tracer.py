"""The sparsity tracer: an array whose elements carry the set of input elements they
depend on, and no numbers (``ad.sparsity``).

A traced value of shape ``s`` holds ``deps``, a boolean ``scipy.sparse.csr_array`` of shape
``(prod(s), n)``: row ``e`` (element ``e`` in C order) lists the input elements that
element depends on. Every rule is a row operation -- gathering rows (indexing, reshape,
roll...), OR-ing gathered rows (elementwise ops, with broadcasting), or aggregating rows
by a sparse 0/1 matrix (reductions, matmul) -- so one call of ``f`` costs a few sparse
products per operation, whatever the size. For Hessians the trace also accumulates, in
one ``(n, n)`` matrix, ``g x g`` for every nonlinear operation (the first-order sets of
its operands): a conservative superset of the Hessian's nonzeros.

With ``local=True`` the values ride along (numpy), so ``if x[0] > 0`` takes the branch
taken at the given point.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adswitch.errors import AdswitchError, UnsupportedError

__all__ = ["Trace", "Tracer", "ValueDependentError"]


class ValueDependentError(AdswitchError, TypeError):
    """Global sparsity detection met a branch on a value (a Python bool of a traced array)."""


def _sp() -> Any:
    from adswitch.sparse.scipy_import import sparse

    return sparse()


class Trace:
    """One detection run: the input size, whether values ride along, the Hessian sets."""

    __slots__ = ("hess", "local", "n", "want_hessian")

    def __init__(self, n: int, local: bool, want_hessian: bool) -> None:
        self.n = n
        self.local = local
        self.want_hessian = want_hessian
        self.hess: Any = None

    def empty(self, rows: int) -> Any:
        return _sp().csr_array((rows, self.n), dtype=bool)

    def interact(self, a: Any, b: Any | None = None) -> None:
        """Record the pairs ``g_a x g_b`` (and transposed) of a nonlinear operation,
        element by element: ``a``, ``b`` are row-aligned dependency matrices."""
        if not self.want_hessian:
            return
        b = a if b is None else b
        if a.nnz == 0 or b.nnz == 0:
            return
        pairs = a.T.astype(np.float32) @ b.astype(np.float32)
        pairs = (pairs + pairs.T).astype(bool)
        self.hess = pairs if self.hess is None else (self.hess + pairs).astype(bool)


class Tracer:
    """A traced array: ``shape``, ``deps`` (see the module doc), ``value`` when local."""

    __slots__ = ("deps", "shape", "trace", "value")
    __array_priority__ = 1000.0  # numpy's operators defer to ours
    __array_ufunc__ = None

    def __init__(self, trace: Trace, shape: tuple[int, ...], deps: Any, value: Any = None):
        self.trace = trace
        self.shape = tuple(int(s) for s in shape)
        self.deps = deps
        self.value = value

    # -- array attributes -------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype(self) -> Any:
        return np.float64 if self.value is None else self.value.dtype

    @property
    def device(self) -> str:
        return "cpu"

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<adswitch sparsity tracer shape={self.shape} nnz={self.deps.nnz}>"

    # -- concrete values: only where they ride along ----------------------------------------
    def _concrete(self, what: str) -> Any:
        if self.value is None:
            raise ValueDependentError(
                f"f asks for {what} of a traced array during sparsity detection (a branch or "
                "a number that depends on the input's values): a global pattern, valid at "
                "every point, cannot be found this way. Pass local=True (ad.sparsity(..., "
                "local=True), the pattern at the given point), or pass the pattern yourself "
                "(sparsity=pattern), or write the branch with xp.where."
            )
        return self.value

    def __bool__(self) -> bool:
        return bool(self._concrete("the truth value"))

    def __float__(self) -> float:
        return float(self._concrete("the float value"))

    def __int__(self) -> int:
        return int(self._concrete("the int value"))

    def __index__(self) -> int:
        return int(self._concrete("the int value"))

    def __iter__(self) -> Any:
        return (self[i] for i in range(self.shape[0]))  # type: ignore[index]

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise UnsupportedError(
            "a sparsity tracer was converted to a numpy array (np.asarray, or a numpy or "
            "engine function called directly on it): its dependencies cannot be followed "
            "through that code. Write f with xp = ad.array_namespace(x), or pass the "
            "pattern yourself (sparsity=pattern)."
        )
