"""Mutation inside ``f`` (seed 003): each of the seed's examples in Python, writes into
fresh buffers, in-place operators. The right numbers (each read sees the value at the
time of the read), or -- where the engine declares no such capability -- a
``MutationError``/``UnsupportedError``; never Zygote's silently wrong answers."""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad
from adswitch.errors import MutationError, UnsupportedError

from .case import Case, arr, pos

F = "mutation"
MUT = ("mutation",)
FRESH = ("fresh_buffer_writes",)
REFUSED = (MutationError, UnsupportedError)


def _log_then_fill(x: Any) -> Any:
    xp = ad.array_namespace(x)
    y = xp.log(x)
    x[...] = 0.0
    return xp.sum(y + x)


def _fill_with_parameter(x: Any, s: Any) -> Any:
    xp = ad.array_namespace(x)
    y = xp.log(x)
    x[...] = s
    return xp.sum(y + x)


def _write_duplicated(x: Any) -> Any:
    xp = ad.array_namespace(x)
    y = x * x
    x[0] = 0.0
    return xp.sum(y) + xp.sum(x * 3.0)


def _matmul_then_fill(x: Any, y: Any, z: Any) -> Any:
    xp = ad.array_namespace(x, y)
    xy = x @ y
    y[...] = z
    return xp.sum(xy + y)


def _write_then_read(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x)
    x[0] = y**2
    return xp.sum(x * y)


def _fill_fresh(x: Any, s: Any) -> Any:
    xp = ad.array_namespace(x, s)
    buf = xp.zeros_like(x)
    buf[...] = s
    return xp.sum(buf**2)


def _shift_into_like(x: Any) -> Any:
    xp = ad.array_namespace(x)
    buf = xp.zeros_like(x)
    buf[1:] = x[:-1] ** 2
    buf[0] = x[3] * 2.0
    return xp.sum(xp.exp(buf) * x)


def _assemble_fresh(a: Any, b: Any) -> Any:
    xp = ad.array_namespace(a, b)
    buf = xp.zeros((3,), dtype=a.dtype)
    buf[0] = a * b
    buf[1] = a + b
    buf[2] = buf[0] * buf[1]
    return xp.sum(xp.sin(buf))


def _fresh_slice_write(x: Any) -> Any:
    xp = ad.array_namespace(x)
    buf = xp.ones((2, 4), dtype=x.dtype)
    buf[0, :] = xp.exp(x)
    buf[1, 1:3] = x[:2] ** 2
    return xp.sum(buf**2)


def _inplace_operators(x: Any) -> Any:
    xp = ad.array_namespace(x)
    y = x * 2.0
    y += x
    y *= 3.0
    y -= 1.0
    y /= 2.0
    return xp.sum(y**2)


def _inplace_after_use(x: Any) -> Any:
    xp = ad.array_namespace(x)
    y = xp.sin(x) + 0.0
    z = y * y
    y *= 2.0
    return xp.sum(z + y)


def _inplace_on_argument(x: Any) -> Any:
    xp = ad.array_namespace(x)
    x *= 2.0
    x += 1.0
    return xp.sum(x**2)


def _write_through_view(x: Any) -> Any:
    xp = ad.array_namespace(x)
    head = x[:2]
    head *= 3.0
    return xp.sum(x**2)


def _const_mutated_after_read(x: Any, c: Any) -> Any:
    xp = ad.array_namespace(x, c)
    y = x * c
    c[...] = 0.0
    return xp.sum(y + c)


def _write_into_const(x: Any, buf: Any) -> Any:
    xp = ad.array_namespace(x, buf)
    buf[...] = x * 2.0
    return xp.sum(buf * x)


CASES = [
    Case(
        "mutation.seed003_log_then_fill",
        F,
        "seed 003: y = log(x); x[...] = 0; sum(y + x) -> 1/x (Zygote gives 1/x + 1, silently)",
        _log_then_fill,
        lambda: (np.array([1.0, 2.0, 3.0]),),
        requires=MUT,
    ),
    Case(
        "mutation.seed003_fill_with_parameter",
        F,
        "seed 003: y = log(x); x[...] = s; sum(y + x) -> (1/x, n) (Zygote drops s, "
        "Diffractor poisons both)",
        _fill_with_parameter,
        lambda: (np.array([1.0, 2.0, 3.0]), 0.5),
        closed_form=lambda x, s: (1 / x, float(x.size)),
        requires=MUT,
    ),
    Case(
        "mutation.write_duplicated_argument",
        F,
        "x[0] = 0 on a Duplicated argument after y = x * x: the shadow gets 2x + 3 except "
        "d/dx0 = 2 x0; the caller's x ends written",
        _write_duplicated,
        lambda: (ad.Duplicated(np.array([1.5, -2.0, 0.5])),),
        requires=MUT,
    ),
    Case(
        "mutation.seed003_matmul_then_fill",
        F,
        "seed 003: xy = x @ y; y[...] = z; "
        "sum(xy + y) -> ([[5,6],[5,6]], [4,6], 2) (Diffractor gets x wrong)",
        _matmul_then_fill,
        lambda: (np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([5.0, 6.0]), 7.0),
        closed_form=lambda x, y, z: (np.array([[5.0, 6.0], [5.0, 6.0]]), np.array([4.0, 6.0]), 2.0),
        requires=MUT,
    ),
    Case(
        "mutation.seed003_write_then_read",
        F,
        "seed 003: x[0] = y**2; sum(x * y) -> ([0,4,4], 53) (Zygote's rule gives NaN)",
        _write_then_read,
        lambda: (np.array([1.0, 2.0, 3.0]), 4.0),
        closed_form=lambda x, y: (np.array([0.0, 4.0, 4.0]), 53.0),
        requires=MUT,
    ),
    Case(
        "mutation.fill_fresh_buffer",
        F,
        "seed 003's fill!(similar(x), s): buf = zeros_like(x); buf[...] = s -> ds = 2 s n",
        _fill_fresh,
        lambda: (ad.Const(arr(150, 4)), 1.5),
        closed_form=lambda x, s: (None, 2 * s * x.size),
        requires=FRESH,
    ),
    Case(
        "mutation.fresh_buffer_like_traced",
        F,
        "buf = zeros_like(x) of the differentiated x, then slice and element writes of "
        "traced values: each write differentiated",
        _shift_into_like,
        lambda: (arr(158, 4),),
        requires=FRESH,
    ),
    Case(
        "mutation.assemble_fresh_buffer",
        F,
        "scalar writes into a fresh vector, then a read of written elements",
        _assemble_fresh,
        lambda: (np.array(0.7), np.array(-1.2)),
        requires=FRESH,
    ),
    Case(
        "mutation.fresh_slice_writes",
        F,
        "slice writes of traced values into a ones() buffer: untouched elements get no gradient",
        _fresh_slice_write,
        lambda: (arr(151, 4),),
        requires=FRESH,
    ),
    Case(
        "mutation.inplace_operators",
        F,
        "+=, *=, -=, /= on an intermediate array: the same gradient as the out-of-place expression",
        _inplace_operators,
        lambda: (arr(152, 4),),
        requires=MUT,
    ),
    Case(
        "mutation.inplace_after_use",
        F,
        "y *= 2 after z = y * y saved y: z's gradient must "
        "use the old y (torch's version-counter error otherwise)",
        _inplace_after_use,
        lambda: (arr(153, 4),),
        requires=MUT,
    ),
    Case(
        "mutation.inplace_on_argument",
        F,
        "x *= 2; x += 1 on the differentiated argument: "
        "right gradient, and the caller's x ends as a plain call leaves it",
        _inplace_on_argument,
        lambda: (arr(154, 3),),
        requires=MUT,
    ),
    Case(
        "mutation.write_through_view",
        F,
        "head = x[:2]; head *= 3 writes x through a view: d/dx = (18 x0, 18 x1, 2 x2), not "
        "the 2x of a rebinding engine",
        _write_through_view,
        lambda: (np.array([0.5, -1.0, 2.0]),),
        closed_form=lambda x: (np.array([18 * x[0], 18 * x[1], 2 * x[2]]),),
        requires=MUT,
    ),
    Case(
        "mutation.const_mutated_after_read",
        F,
        "y = x * c; c[...] = 0 on a Const array: "
        "dx must be the old c, not the zeroed one (stale saved value)",
        _const_mutated_after_read,
        lambda: (pos(155, 3), ad.Const(pos(156, 3))),
        requires=MUT,
        also_ok=REFUSED,
    ),
    Case(
        "mutation.write_into_const",
        F,
        "a traced value written into a Const numpy array: "
        "the right gradient or MutationError, never a lost dependence",
        _write_into_const,
        lambda: (arr(157, 3), ad.Const(np.zeros(3))),
        requires=MUT,
        also_ok=REFUSED,
    ),
]
