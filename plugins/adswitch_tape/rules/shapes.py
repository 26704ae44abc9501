"""The gradient rules of the shape, copy and indexing primitives (reshape, getitem, concat...).

Rules are ``rule(g, ans, *args, **params)``, written with primitives (see ``elementwise``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import raw
from ..recording import defvjp, defvjp_variadic
from . import primitives as P
from .helpers import shape_of, unbroadcast


def _concat_k(k: int, g: Any, ans: Any, *xs: Any, axis: int | None) -> Any:
    if axis is None:
        start = int(sum(np.size(raw(x)) for x in xs[:k]))
        piece = P.getitem(g, key=slice(start, start + np.size(raw(xs[k]))))
        return P.reshape(piece, shape=shape_of(xs[k]))
    ax = axis % len(shape_of(g))
    start = int(sum(shape_of(x)[ax] for x in xs[:k]))
    key = (slice(None),) * ax + (slice(start, start + shape_of(xs[k])[ax]),)
    return P.getitem(g, key=key)


def _stack_k(k: int, g: Any, ans: Any, *xs: Any, axis: int) -> Any:
    return P.getitem(g, key=(slice(None),) * (axis % len(shape_of(g))) + (k,))


defvjp(P.reshape, lambda g, ans, x, shape: P.reshape(g, shape=shape_of(x)))
defvjp(
    P.permute_dims,
    lambda g, ans, x, axes: P.permute_dims(g, axes=tuple(int(a) for a in np.argsort(axes))),
)
defvjp(P.matrix_transpose, lambda g, ans, x: P.matrix_transpose(g))
defvjp(P.broadcast_to, lambda g, ans, x, shape: unbroadcast(g, x))
defvjp(P.flip, lambda g, ans, x, axis=None: P.flip(g, axis=axis))
defvjp(P.astype, lambda g, ans, x, dtype: P.astype(g, dtype=raw(x).dtype))
defvjp(P.getitem, lambda g, ans, x, key: P.scatter(g, key=key, shape=shape_of(x)))
defvjp(P.scatter, lambda g, ans, x, key, shape: P.getitem(g, key=key))
defvjp(
    P.index_update,
    lambda g, ans, x, v, key: P.index_update(g, 0.0, key=key),
    lambda g, ans, x, v, key: unbroadcast(P.getitem(g, key=key), v),
)
defvjp_variadic(P.concat, _concat_k)
defvjp_variadic(P.stack, _stack_k)
