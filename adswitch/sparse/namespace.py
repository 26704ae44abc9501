"""The Array API namespace of the sparsity tracer (what ``ad.array_namespace`` gives ``f``
during ``ad.sparsity``): every function has its rule in :mod:`adswitch.sparse.rules`
(elementwise), :mod:`~adswitch.sparse.rules_structure` or
:mod:`~adswitch.sparse.rules_reduce`; creation functions give numpy constants (they
depend on no input). A name without a rule is an error naming ``sparsity=`` (pass the
pattern yourself)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError
from adswitch.namespace import OWN_NAMESPACES
from adswitch.sparse import rules, rules_reduce, rules_structure
from adswitch.sparse.tracer import Tracer

__all__ = ["NAMESPACE"]

_CONSTANTS = (
    "float32",
    "float64",
    "float16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "complex64",
    "complex128",
    "pi",
    "e",
    "inf",
    "nan",
    "newaxis",
    "finfo",
    "iinfo",
    "result_type",
    "can_cast",
    "isdtype",
    "zeros",
    "ones",
    "full",
    "empty",
    "arange",
    "linspace",
    "eye",
    "meshgrid",
    "tril_indices",
    "triu_indices",
)


def _unsupported(name: str) -> UnsupportedError:
    return UnsupportedError(
        f"xp.{name} has no sparsity rule yet, so ad.sparsity cannot follow f through it. Pass "
        "the pattern yourself (ad.jacobian(..., sparsity=pattern), a scipy.sparse matrix or "
        "boolean array of shape (out.size, in.size)), or write f with other xp functions."
    )


def _like(fill: Any) -> Any:
    def rule(x: Any, /, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        shape = x.shape if isinstance(x, Tracer) else np.shape(x)
        if fill is None:
            return np.full(shape, args[0] if args else kwargs.get("fill_value"), dtype=dtype)
        return np.full(shape, fill, dtype=dtype or np.float64)

    return rule


class _Linalg:
    """``xp.linalg``: dense coupling (each result element may depend on every operand's)."""

    def __init__(self) -> None:
        for name in (
            "inv",
            "solve",
            "det",
            "slogdet",
            "cholesky",
            "eigh",
            "eigvalsh",
            "svd",
            "svdvals",
            "qr",
            "pinv",
            "matrix_power",
            "matrix_norm",
            "lstsq",
        ):
            setattr(self, name, rules_reduce.dense(getattr(np.linalg, name, np.linalg.inv)))
        self.matmul = rules_reduce.matmul
        self.matrix_transpose = rules_structure.matrix_transpose

    def vector_norm(
        self, x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2
    ) -> Any:
        return _nonlinear_sum(
            x,
            axis,
            keepdims,
            lambda v, **k: np.linalg.norm(
                v if axis is not None else v.reshape(-1),
                ord=ord,
                axis=axis if axis is not None else None,
                keepdims=keepdims,
            ),
        )

    def vecdot(self, x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
        return Namespace.vecdot(NAMESPACE, x1, x2, axis=axis)

    def __getattr__(self, name: str) -> Any:
        raise _unsupported(f"linalg.{name}")


def _nonlinear_sum(x: Any, axis: Any, keepdims: bool, value_fn: Any) -> Any:
    out = rules_reduce.reduction(np.sum, "nonlinear")(x, axis=axis, keepdims=keepdims)
    if isinstance(x, Tracer) and x.value is not None:
        out.value = np.asarray(value_fn(x.value))
    return out


class Namespace:
    """The namespace object (one instance, :data:`NAMESPACE`)."""

    __name__ = "adswitch.sparse.namespace"

    def __init__(self) -> None:
        for name in _CONSTANTS:
            if hasattr(np, name):
                setattr(self, name, getattr(np, name))
        for name, fn in {**rules.UNARY, **rules.BINARY}.items():
            setattr(self, name, fn)
        self.pow = rules.BINARY["pow"]
        self.where = rules.where
        self.reshape = rules_structure.reshape
        self.permute_dims = rules_structure.permute_dims
        self.matrix_transpose = rules_structure.matrix_transpose
        self.matmul = rules_reduce.matmul
        self.linalg = _Linalg()
        for name in (
            "roll",
            "flip",
            "broadcast_to",
            "squeeze",
            "expand_dims",
            "moveaxis",
            "tile",
            "repeat",
            "diagonal",
            "tril",
            "triu",
            "swapaxes",
        ):
            setattr(self, name, rules_structure._structural(getattr(np, name)))
        self.sum = rules_reduce.reduction(np.sum, "linear")
        self.mean = rules_reduce.reduction(np.mean, "linear")
        self.max = rules_reduce.reduction(np.max, "linear")
        self.min = rules_reduce.reduction(np.min, "linear")
        self.prod = rules_reduce.reduction(np.prod, "nonlinear")
        self.var = rules_reduce.reduction(np.var, "nonlinear")
        self.std = rules_reduce.reduction(np.std, "nonlinear")
        self.logsumexp = rules_reduce.reduction(
            lambda v, **k: np.log(np.sum(np.exp(v), **k)), "nonlinear"
        )
        self.zeros_like = _like(0.0)
        self.ones_like = _like(1.0)
        self.empty_like = _like(0.0)
        self.full_like = _like(None)

    def asarray(self, x: Any, /, *, dtype: Any = None, device: Any = None, copy: Any = None) -> Any:
        if isinstance(x, Tracer):
            return x
        if isinstance(x, (list, tuple)) and any(isinstance(v, Tracer) for v in x):
            return self.stack([self.asarray(v) for v in x])
        return np.asarray(x, dtype=dtype)

    def astype(self, x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
        if not isinstance(x, Tracer):
            return np.asarray(x).astype(dtype)
        if x.value is not None:
            return Tracer(x.trace, x.shape, x.deps, x.value.astype(dtype))
        return x

    def concat(self, arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
        if axis is None:
            return rules_structure.join(
                np.concatenate, [self.reshape(a, (-1,)) for a in arrays], axis=0
            )
        return rules_structure.join(np.concatenate, list(arrays), axis=axis)

    def stack(self, arrays: Sequence[Any], /, *, axis: int = 0) -> Any:
        return rules_structure.join(np.stack, list(arrays), axis=axis)

    def take(self, x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
        if not isinstance(x, Tracer):
            return np.take(x, np.asarray(rules_structure._key_values(indices)), axis=axis)
        return rules_structure._structural(np.take)(
            x, np.asarray(rules_structure._key_values(indices)), axis=axis
        )

    def clip(self, x: Any, /, min: Any = None, max: Any = None) -> Any:
        return rules.elementwise((x,), lambda v: np.clip(v, _v(min), _v(max)), "linear")

    def vecdot(self, x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
        return self.sum(x1 * x2, axis=axis)

    def tensordot(self, x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
        if isinstance(axes, int):
            a1 = list(range(np.ndim(_v(x1)) if not isinstance(x1, Tracer) else x1.ndim))[-axes:]
            a2 = list(range(axes))
        else:
            a1, a2 = list(axes[0]), list(axes[1])
        n1 = x1.ndim if isinstance(x1, Tracer) else np.ndim(x1)
        n2 = x2.ndim if isinstance(x2, Tracer) else np.ndim(x2)
        f1 = [d for d in range(n1) if d not in a1]
        f2 = [d for d in range(n2) if d not in a2]
        s1 = x1.shape if isinstance(x1, Tracer) else np.shape(x1)
        s2 = x2.shape if isinstance(x2, Tracer) else np.shape(x2)
        k = int(np.prod([s1[d] for d in a1]))
        m1 = self.reshape(self.permute_dims(x1, (*f1, *a1)), (-1, k))
        m2 = self.reshape(self.permute_dims(x2, (*a2, *f2)), (k, -1))
        out = rules_reduce.matmul(m1, m2)
        return self.reshape(out, (*[s1[d] for d in f1], *[s2[d] for d in f2]))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise _unsupported(name)


def _v(x: Any) -> Any:
    return x.value if isinstance(x, Tracer) else x


NAMESPACE = Namespace()
OWN_NAMESPACES[Tracer] = NAMESPACE
