"""The primitives: every differentiable operation the tape records, with its numpy code.

Everything else in the namespace is composed of these. Their gradient rules are in the
tables beside this module (``elementwise``, ``shapes``, ``reductions``, ``linalg/``); their
Array API signatures (defaults, validation) in the namespace (``adswitch_tape.xp``).
Each primitive's ``keep_*`` flags say what its rules read; ``tests/engines/tape/test_tape_rules.py``
checks them against the rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import IN_PLACE_FROM
from ..recording import binary, nary, unary
from . import indexing as K
from .indexing import explicit_key as explicit_key  # (re-exported: P.is_basic_key...)
from .indexing import indexed_shape as indexed_shape
from .indexing import is_basic_key as is_basic_key

# -- elementwise, one argument ---------------------------------------------------------
# ``keep_x=False``/``keep_ans=False``/``keep_args="shapes"``: the rules never read that
# value, so the tape does not keep it alive (``tests/engines/tape/test_tape_rules.py`` checks them).
negative = unary("negative", np.negative, saves=False, keep_x=False, keep_ans=False)
positive = unary("positive", np.positive, saves=False, keep_x=False, keep_ans=False)
abs = unary("abs", np.abs, keep_ans=False)
exp = unary("exp", np.exp, keep_x=False)
expm1 = unary("expm1", np.expm1, keep_x=False)
log = unary("log", np.log, keep_ans=False)
log1p = unary("log1p", np.log1p, keep_ans=False)
log2 = unary("log2", np.log2, keep_ans=False)
log10 = unary("log10", np.log10, keep_ans=False)
sqrt = unary("sqrt", np.sqrt, keep_x=False)
square = unary("square", np.square, keep_ans=False)
sin = unary("sin", np.sin, keep_ans=False)
cos = unary("cos", np.cos, keep_ans=False)
tan = unary("tan", np.tan, keep_x=False)
sinh = unary("sinh", np.sinh, keep_ans=False)
cosh = unary("cosh", np.cosh, keep_ans=False)
tanh = unary("tanh", np.tanh, keep_x=False)
asin = unary("asin", np.arcsin, keep_ans=False)
acos = unary("acos", np.arccos, keep_ans=False)
atan = unary("atan", np.arctan, keep_ans=False)
asinh = unary("asinh", np.arcsinh, keep_ans=False)
acosh = unary("acosh", np.arccosh, keep_ans=False)
atanh = unary("atanh", np.arctanh, keep_ans=False)

# -- elementwise, two arguments (numpy broadcasting) -----------------------------------
add = binary("add", np.add, saves=False, keep_ans=False, keep_args="shapes")
subtract = binary("subtract", np.subtract, saves=False, keep_ans=False, keep_args="shapes")
multiply = binary("multiply", np.multiply, keep_ans=False)
divide = binary("divide", np.divide)
pow = binary("pow", np.power)
maximum = binary("maximum", np.maximum, keep_ans=False)
minimum = binary("minimum", np.minimum, keep_ans=False)
atan2 = binary("atan2", np.arctan2, keep_ans=False)
hypot = binary("hypot", np.hypot, saves=False)
logaddexp = binary("logaddexp", np.logaddexp, saves=False)
copysign = binary("copysign", np.copysign, keep_ans=False)
remainder = binary("remainder", np.remainder, keep_ans=False)


def _stacked(a: Any, b: Any) -> bool:
    """Whether ``a @ b`` is a stack of matrices times one matrix that can be one product:
    numpy multiplies a stack one matrix at a time (measured 1.5-3.5x slower for the
    batches of cotangents and tangents the sweeps make, a few rows each)."""
    return (
        type(a) is np.ndarray
        and type(b) is np.ndarray
        and a.ndim > 2
        and b.ndim == 2
        and a.shape[-1] == b.shape[0]
        and a.flags.c_contiguous
    )


def _flat_product(a: Any, b: Any) -> Any:
    """``a @ b`` for a stack ``a`` and a matrix ``b`` (see ``_stacked``), as one product."""
    return np.matmul(a.reshape(-1, a.shape[-1]), b).reshape(*a.shape[:-1], b.shape[1])


def _matmul(a: Any, b: Any) -> Any:
    return _flat_product(a, b) if _stacked(a, b) else np.matmul(a, b)


matmul = binary("matmul", _matmul, keep_ans=False)


def _matmul_nt(a: Any, b: Any) -> Any:
    """``a @ matrix_transpose(b)`` (both at least 2-D)."""
    if a.shape[-1] == 1:  # an outer product: a broadcast multiply is twice as fast as
        return np.multiply(a, np.swapaxes(b, -1, -2))  # BLAS, the same products exactly
    bt = np.swapaxes(b, -1, -2)
    return _flat_product(a, bt) if _stacked(a, bt) else np.matmul(a, bt)


def _matmul_tn(a: Any, b: Any) -> Any:
    """``matrix_transpose(a) @ b`` (both at least 2-D)."""
    if a.shape[-2] == 1:  # an outer product (see ``_matmul_nt``)
        return np.multiply(np.swapaxes(a, -1, -2), b)
    return np.matmul(np.swapaxes(a, -1, -2), b)


# The products by a transpose in matmul's gradient rules, one primitive each: recorded
# by an enclosing call, their own gradients come out in the arguments' layout (BLAS
# transposes for free), where a recorded ``matrix_transpose`` would hand back a
# transposed view that the sweep then adds strided (10x slower than contiguous).
matmul_nt = binary("matmul_nt", _matmul_nt, keep_ans=False)
matmul_tn = binary("matmul_tn", _matmul_tn, keep_ans=False)


def _tanh_grad(g: Any, ans: Any) -> Any:
    """``g * (1 - ans**2)``, the gradient of ``tanh`` -- one primitive rather than three,
    so a nested call records one operation and large arrays need one temporary."""
    if (
        type(ans) is np.ndarray
        and ans.size >= IN_PLACE_FROM
        and np.result_type(g, ans) == ans.dtype
    ):
        t = np.multiply(ans, ans)
        np.subtract(1.0, t, out=t)
        if getattr(g, "shape", None) != t.shape:  # a batch of cotangents: broadcast
            return np.multiply(g, t)
        return np.multiply(t, g, out=t)
    one = _ONES.get(getattr(ans, "dtype", None), 1.0)
    return g * (one - ans * ans)


# ``1`` as a 0-d array per floating dtype: numpy converts a Python float operand on every
# call (about 0.2 us on small arrays); a 0-d array of the operand's own dtype gives the
# same result type and the same numbers without that.
def _one(dtype: Any) -> np.ndarray:
    one = np.ones((), dtype=dtype)
    one.flags.writeable = False
    return one


_ONES: dict[Any, Any] = {np.dtype(t): _one(t) for t in (np.float32, np.float64)}


tanh_grad = binary("tanh_grad", _tanh_grad, keep_ans=False)
where = nary("where", np.where, keep_ans=False)


# -- reductions and scans --------------------------------------------------------------
_add_reduce: Any = np.add.reduce  # np.sum without its Python-level wrapper (~1 µs less)


def _sum(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return _add_reduce(x, axis=axis, keepdims=keepdims)


def _prod(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return np.prod(x, axis=axis, keepdims=keepdims)


def _max(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return np.max(x, axis=axis, keepdims=keepdims)


def _min(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return np.min(x, axis=axis, keepdims=keepdims)


def _cumsum(x: Any, axis: int, include_initial: bool = False) -> Any:
    out = np.cumsum(x, axis=axis)
    if include_initial:
        shape = list(np.shape(out))
        shape[axis] = 1
        out = np.concatenate([np.zeros(shape, dtype=out.dtype), out], axis=axis)
    return out


sum = unary("sum", _sum, saves=False, params=True, keep_ans=False)
prod = unary("prod", _prod, params=True)
max = unary("max", _max, params=True)
min = unary("min", _min, params=True)
cumulative_sum = unary(
    "cumulative_sum", _cumsum, saves=False, params=True, keep_x=False, keep_ans=False
)


# -- shapes, copies and indexing -------------------------------------------------------
# None of these rules reads the output; those that read the argument read only its shape
# or dtype (hence ``saves=False``), and the ``keep_x=False`` ones do not read it at all.
reshape = unary(
    "reshape", lambda x, shape: np.reshape(x, shape), saves=False, params=True, keep_ans=False
)
permute_dims = unary(
    "permute_dims",
    lambda x, axes: np.transpose(x, axes),
    saves=False,
    params=True,
    keep_x=False,
    keep_ans=False,
)
matrix_transpose = unary(
    "matrix_transpose", lambda x: np.swapaxes(x, -1, -2), saves=False, keep_x=False, keep_ans=False
)
broadcast_to = unary(
    "broadcast_to",
    lambda x, shape: np.broadcast_to(x, shape),
    saves=False,
    params=True,
    keep_ans=False,
)
flip = unary(
    "flip",
    lambda x, axis=None: np.flip(x, axis),
    saves=False,
    params=True,
    keep_x=False,
    keep_ans=False,
)
astype = unary(
    "astype",
    lambda x, dtype: np.asarray(x).astype(dtype),
    saves=False,
    params=True,
    keep_ans=False,
)
# the indexing primitives take ``lead=`` too (see ``indexing``)
getitem = unary("getitem", K.getitem, saves=False, params=True, keep_ans=False)
scatter = unary("scatter", K.scatter, saves=False, params=True, keep_x=False, keep_ans=False)
index_update = nary("index_update", K.index_update, saves=False, keep_ans=False)
concat = nary(
    "concat", lambda *xs, axis: np.concatenate(xs, axis=axis), saves=False, keep_ans=False
)
stack = nary(
    "stack",
    lambda *xs, axis: np.stack(xs, axis=axis),
    saves=False,
    keep_ans=False,
    keep_args="none",
)
