"""Reductions, shape manipulation, indexing and matmul: the operations whose gradients
must be summed, transposed, scattered or broadcast back to the input's shape."""

from __future__ import annotations

from typing import Any

import adswitch as ad

from .case import Case, arr, pos

F = "ops"


def _sum_mean_axis(x: Any) -> Any:
    xp = ad.array_namespace(x)
    a = xp.sum(x, axis=1, keepdims=True)
    b = xp.mean(x, axis=0)
    c = xp.sum(x, axis=(0, 2))
    return xp.sum(a * x) + xp.sum(b**2) + xp.sum(c**3) + xp.mean(x)


def _prod_cumsum(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.prod(x, axis=0)) + xp.prod(x) + xp.sum(xp.cumulative_sum(x, axis=1) ** 2)


def _max_min_reduce(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.max(x, axis=1) ** 2) + xp.min(x) + xp.sum(xp.max(x, axis=0, keepdims=True) * x)


def _var_std(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.var(x, axis=0)) + xp.std(x) + xp.sum(xp.std(x, axis=1, keepdims=True) * x)


def _reshape_transpose(x: Any) -> Any:
    xp = ad.array_namespace(x)
    r = xp.reshape(x, (4, 6))
    p = xp.permute_dims(x, (2, 0, 1))
    m = xp.matrix_transpose(x)
    return (
        xp.sum(r * xp.sin(r)) + xp.sum(p[0] ** 2) + xp.sum(m[1] * r[0, :3]) + xp.sum(r.T[0] * 3.0)
    )


def _expand_squeeze_broadcast(x: Any) -> Any:
    xp = ad.array_namespace(x)
    e = xp.expand_dims(x, axis=0)
    s = xp.squeeze(xp.expand_dims(x, axis=2), axis=2)
    b = xp.broadcast_to(x[:, :1], (3, 4))
    return xp.sum(e**2) + xp.sum(s * b) + xp.sum(b**3)


def _concat_stack(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x, y)
    c = xp.concat([x, y * 2.0], axis=0)
    s = xp.stack([x, y], axis=1)
    return xp.sum(c**2) + xp.sum(s[:, 0] * s[:, 1])


def _basic_indexing(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return (
        xp.sum(x[1:, ::2] ** 2)
        + x[0, 1] * x[2, 3]
        + xp.sum(x[..., 0])
        + xp.sum(x[None, :, 1] * 2.0)
        + xp.sum(x[:, None] ** 3)
    )


def _integer_indexing(x: Any) -> Any:
    xp = ad.array_namespace(x)
    idx = xp.asarray([0, 0, 3, 1, 0])
    return xp.sum(x[idx] ** 2) + xp.sum(xp.take(x, xp.asarray([2, 2]), axis=0) * 3.0)


def _take_2d(x: Any) -> Any:
    xp = ad.array_namespace(x)
    rows = xp.take(x, xp.asarray([2, 0, 2]), axis=0)
    cols = xp.take(x, xp.asarray([1, 1]), axis=1)
    return xp.sum(rows * rows) + xp.sum(xp.sin(cols))


def _matmul_shapes(v: Any, w: Any, m: Any, b: Any) -> Any:
    xp = ad.array_namespace(v, w, m, b)
    vv = v @ w  # (3,) @ (3,) -> 0-d
    mv = m @ v  # (4,3) @ (3,) -> (4,)
    vm = xp.sin(mv) @ m  # (4,) @ (4,3) -> (3,)
    mm = m @ m.T  # (4,3) @ (3,4)
    bb = b @ xp.matrix_transpose(b)  # (2,3,4) @ (2,4,3) batched
    bv = b @ xp.ones((4,), dtype=b.dtype)  # batched matrix @ vector
    bm = b @ m  # (2,3,4) @ (4,3): the matrix broadcast over the batch
    return vv + xp.sum(vm**2) + xp.sum(mm) * 0.1 + xp.sum(bb**2) + xp.sum(bv) + xp.sum(xp.tanh(bm))


def _matmul_closed(v: Any, w: Any) -> Any:
    return (v @ w) ** 2


CASES = [
    Case(
        "ops.sum_mean_axis",
        F,
        "sum and mean over one axis, a tuple of axes and all, with "
        "and without keepdims: gradient broadcast back",
        _sum_mean_axis,
        lambda: (arr(20, 2, 3, 4),),
    ),
    Case(
        "ops.prod_cumsum",
        F,
        "prod over an axis and all (no zeros) and cumulative_sum",
        _prod_cumsum,
        lambda: (pos(21, 3, 4),),
    ),
    Case(
        "ops.max_min_reduce",
        F,
        "max/min reductions with axis and keepdims, no ties: gradient to the arg-max only",
        _max_min_reduce,
        lambda: (arr(22, 3, 4),),
    ),
    Case(
        "ops.var_std",
        F,
        "var and std (correction 0) over axes and all",
        _var_std,
        lambda: (arr(23, 4, 3),),
    ),
    Case(
        "ops.reshape_transpose",
        F,
        "reshape, permute_dims, matrix_transpose and .T: gradients un-permuted",
        _reshape_transpose,
        lambda: (arr(24, 2, 3, 4),),
    ),
    Case(
        "ops.expand_squeeze_broadcast",
        F,
        "expand_dims, squeeze, broadcast_to: broadcast gradients summed",
        _expand_squeeze_broadcast,
        lambda: (arr(25, 3, 4),),
    ),
    Case(
        "ops.concat_stack",
        F,
        "concat and stack: gradients split back to each input",
        _concat_stack,
        lambda: (arr(26, 3, 2), arr(27, 3, 2)),
    ),
    Case(
        "ops.basic_indexing",
        F,
        "slices with steps, integers, ellipsis, None: gradient scattered into zeros",
        _basic_indexing,
        lambda: (arr(28, 3, 4),),
    ),
    Case(
        "ops.integer_indexing_repeats",
        F,
        "integer-array indexing and take with repeated "
        "indices: contributions accumulated, not overwritten",
        _integer_indexing,
        lambda: (arr(29, 4),),
    ),
    Case(
        "ops.take_2d",
        F,
        "take along axis 0 and 1 of a matrix with repeats",
        _take_2d,
        lambda: (arr(30, 3, 4),),
    ),
    Case(
        "ops.matmul_shapes",
        F,
        "matmul vector-vector, matrix-vector, vector-matrix, "
        "matrix-matrix, batched and broadcast batches",
        _matmul_shapes,
        lambda: (arr(31, 3), arr(32, 3), arr(33, 4, 3), arr(34, 2, 3, 4)),
    ),
    Case(
        "ops.dot_closed_form",
        F,
        "(v . w)^2: closed form 2(v.w)w and 2(v.w)v, a check independent of finite differences",
        _matmul_closed,
        lambda: (arr(35, 5), arr(36, 5)),
        closed_form=lambda v, w: (2 * (v @ w) * w, 2 * (v @ w) * v),
    ),
]
