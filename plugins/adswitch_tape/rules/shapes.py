"""The gradient rules of the shape, copy and indexing primitives (reshape, getitem, concat...).

Rules are ``rule(g, ans, *args, **params)``, written with primitives (see ``elementwise``).
In a batched sweep (``helpers``) every shape, axis and key a rule passes on spells the
batch axes out: a basic key gets one ``slice(None)`` per batch axis in front; an advanced
key (index arrays, masks), whose result numpy lays out by rules of its own, is given as
it is with ``lead=`` (the indexing primitives' count of leading axes the key skips, see
``indexing``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import BATCH, raw
from ..recording import defvjp, defvjp_variadic
from . import primitives as P
from .helpers import batch_of, shape_of, shifted_axes, unbroadcast

_ALL = slice(None)


def _concat_k(k: int, g: Any, ans: Any, *xs: Any, axis: int | None) -> Any:
    nb = BATCH.axes
    if axis is None:
        start = int(sum(np.size(raw(x)) for x in xs[:k]))
        piece = P.getitem(g, key=(_ALL,) * nb + (slice(start, start + np.size(raw(xs[k]))),))
        return P.reshape(piece, shape=batch_of(g) + shape_of(xs[k]))
    ax = axis % (len(shape_of(g)) - nb)
    start = int(sum(shape_of(x)[ax] for x in xs[:k]))
    key = (_ALL,) * (nb + ax) + (slice(start, start + shape_of(xs[k])[ax]),)
    return P.getitem(g, key=key)


def _stack_k(k: int, g: Any, ans: Any, *xs: Any, axis: int) -> Any:
    nb = BATCH.axes
    return P.getitem(g, key=(_ALL,) * (nb + axis % (len(shape_of(g)) - nb)) + (k,))


def _permute_x(g: Any, ans: Any, x: Any, axes: tuple[int, ...]) -> Any:
    nb = BATCH.axes
    back = tuple(nb + int(a) for a in np.argsort(axes))
    return P.permute_dims(g, axes=tuple(range(nb)) + back)


def flip_x(g: Any, ans: Any, x: Any, axis: Any = None) -> Any:
    nb = BATCH.axes
    if not nb:
        return P.flip(g, axis=axis)
    return P.flip(g, axis=shifted_axes(axis, len(shape_of(g)) - nb, nb))


# -- indexing: a key, with ``lead`` leading axes it skips (0 in user code) ---------------
def keyed(prim: Any, args: tuple[Any, ...], key: Any, lead: int, **kw: Any) -> Any:
    """``prim(*args, key=key, **kw)`` with the key moved behind ``lead`` leading axes."""
    if not lead:
        return prim(*args, key=key, **kw)
    if P.is_basic_key(key):  # numpy lays a basic key's result out in order: prefix it
        return prim(*args, key=(_ALL,) * lead + (key if type(key) is tuple else (key,)), **kw)
    return prim(*args, key=key, lead=lead, **kw)


def _getitem_x(g: Any, ans: Any, x: Any, key: Any, lead: int = 0) -> Any:
    shape = batch_of(g) + shape_of(x)
    return keyed(P.scatter, (g,), key, lead + BATCH.axes, shape=shape)


def _scatter_x(g: Any, ans: Any, x: Any, key: Any, shape: Any, lead: int = 0) -> Any:
    return keyed(P.getitem, (g,), key, lead + BATCH.axes)


def _index_update_x(g: Any, ans: Any, x: Any, v: Any, key: Any, lead: int = 0) -> Any:
    return keyed(P.index_update, (g, 0.0), key, lead + BATCH.axes)


def _index_update_v(g: Any, ans: Any, x: Any, v: Any, key: Any, lead: int = 0) -> Any:
    return unbroadcast(keyed(P.getitem, (g,), key, lead + BATCH.axes), v)


defvjp(P.reshape, lambda g, ans, x, shape: P.reshape(g, shape=batch_of(g) + shape_of(x)))
defvjp(P.permute_dims, _permute_x)
defvjp(P.matrix_transpose, lambda g, ans, x: P.matrix_transpose(g))
defvjp(P.broadcast_to, lambda g, ans, x, shape: unbroadcast(g, x))
defvjp(P.flip, flip_x)
defvjp(P.astype, lambda g, ans, x, dtype: P.astype(g, dtype=raw(x).dtype))
defvjp(P.getitem, _getitem_x)
defvjp(P.scatter, _scatter_x)
defvjp(P.index_update, _index_update_x, _index_update_v)
defvjp_variadic(P.concat, _concat_k)
defvjp_variadic(P.stack, _stack_k)
