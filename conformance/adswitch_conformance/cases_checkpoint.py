"""Rematerialisation (issue 20): ``ad.checkpoint`` gives the same numbers as the plain
function in every operator, at every order, with trees, several arguments, ``Const``,
``Duplicated`` and ties. Outside an adswitch call ``ad.checkpoint(f)`` is ``f``, so the
reference is finite differences of the same code (closed forms where the inner gradient
is computed inside ``f``). An engine without the ``Backend.checkpoint`` hook runs ``f``
plainly (a memory optimisation never changes a number), so no engine refuses a case for
the checkpoint itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad

from .case import Case, arr

F = "checkpoint"
NESTED = ("nested",)


def _xp(*xs: Any) -> Any:
    return ad.array_namespace(*xs)


@ad.checkpoint
def _layer(h: Any, w: Any) -> Any:
    return _xp(h).tanh(h @ w)


def _chain(x: Any, ws: list[Any]) -> Any:
    h = x
    for w in ws:
        h = _layer(h, w)
    return h


def _chain_loss(x: Any, ws: list[Any]) -> Any:
    return _xp(x).sum(_chain(x, ws) ** 2)


@ad.checkpoint
def _segment(h: Any, ws: list[Any]) -> Any:  # checkpointed layers inside a checkpoint
    return _chain(h, ws)


def _segments_loss(x: Any, ws: list[Any]) -> Any:
    h = _segment(_segment(x, ws[:2]), ws[2:])
    return _xp(x).sum(_xp(x).sin(h))


@ad.checkpoint
def _loss_inside(x: Any, w: Any) -> Any:  # the loss itself checkpointed: a scalar output
    xp = _xp(x)
    return xp.sum(xp.exp(xp.sin(x @ w)) * x[..., :1])


@ad.checkpoint
def _tree_fn(p: dict[str, Any], x: Any, *, scale: float) -> dict[str, Any]:
    # a str and an int leaf, a Python float keyword, a dict and a tuple out (one int leaf)
    xp = _xp(x)
    h = xp.tanh(x @ p["W"] + p["b"]) * scale
    return {"h": h, "pair": (xp.sum(h**2), p["n"]), "tag": p["name"]}


def _tree_loss(p: dict[str, Any], x: Any, s: float) -> Any:
    o = _tree_fn(p, x, scale=s)
    return _xp(x).sum(o["h"] * x[..., :1]) + o["pair"][0] * o["pair"][1]


@ad.checkpoint
def _two_outputs(x: Any, y: Any) -> tuple[Any, Any]:
    xp = _xp(x)
    return xp.sin(x) * y, xp.exp(y[:2]) + x[1]


def _vec(x: Any, y: Any) -> Any:
    a, b = _two_outputs(x, y)
    return _xp(x).concat([a, b * 2.0])


@ad.checkpoint
def _mixed(x: Any, y32: Any) -> tuple[Any, Any]:  # outputs of two dtypes, packed together
    xp = _xp(x)
    return xp.sin(x) * 2.0, xp.cos(y32) * 3.0


def _mixed_loss(x: Any, y32: Any) -> Any:
    a, b = _mixed(x, y32)
    xp = _xp(x)
    return xp.sum(a**2) + xp.sum(xp.astype(b, a.dtype))


def _inner(x: Any, w: Any) -> Any:
    g = ad.gradient(lambda z: _xp(z).sum(_layer(z, w) ** 2), x)[0]
    return _xp(x).sum(g * x)


def _inner_ref(x: Any, w: Any) -> Any:
    t = np.tanh(x @ w)
    return np.sum(((2.0 * t * (1.0 - t**2)) @ w.T) * x)


def _closure(x: Any) -> Any:
    # the checkpointed function closes over the outer call's traced x
    xp = _xp(x)
    inner = ad.checkpoint(lambda z: xp.sin(z * x))
    return xp.sum(ad.gradient(lambda y: xp.sum(inner(y) ** 2), x)[0])


def _closure_ref(x: Any) -> Any:
    return np.sum(np.sin(2.0 * x * x) * x)  # d/dy sum(sin(y x)^2) = sin(2 y x) x, at y = x


def _case(name: str, what: str, fn: Any, make: Any, **kw: Any) -> Case:
    return Case(f"{F}.{name}", F, what, fn, make, **kw)


def _ws(seed: int, n: int = 4, width: int = 3) -> list[Any]:
    return [arr(seed + k, width, width) * 0.8 for k in range(n)]


_CHAIN = lambda: (arr(800, 2, 3), _ws(801))  # noqa: E731
_PAIR = lambda: (arr(810, 3, 2), arr(811, 2, 2))  # noqa: E731
_TREE = lambda: (  # noqa: E731
    {"W": arr(820, 3, 2), "b": arr(821, 2), "name": "l1", "n": 3},
    arr(822, 2, 3),
    0.7,
)
_TWO = lambda: (arr(830, 3), arr(831, 3))  # noqa: E731

CASES = [
    _case(
        "chain_gradient",
        "a chain of 4 checkpointed tanh layers: x and every weight",
        _chain_loss,
        _CHAIN,
    ),
    _case(
        "chain_withgradient",
        "withgradient of the chain: value and gradients",
        _chain_loss,
        _CHAIN,
        entry="withgradient",
    ),
    _case(
        "chain_const_weights",
        "the chain with Const weights: only x's gradient",
        _chain_loss,
        lambda: (arr(802, 2, 3), ad.Const(_ws(803))),
    ),
    _case(
        "chain_duplicated",
        "Duplicated(x) through the chain: the shadow gets the gradient",
        _chain_loss,
        lambda: (ad.Duplicated(arr(804, 2, 3), arr(805, 2, 3)), ad.Const(_ws(806))),
    ),
    _case(
        "chain_float32",
        "the chain in float32: float32 gradients",
        _chain_loss,
        lambda: (arr(807, 2, 3, dtype=np.float32), [w.astype(np.float32) for w in _ws(808)]),
        requires=("float32",),
    ),
    _case(
        "segments",
        "checkpoints of checkpointed layers (segments of 2): recomputation inside recomputation",
        _segments_loss,
        _CHAIN,
    ),
    _case("loss_inside", "the loss itself checkpointed (a scalar output)", _loss_inside, _PAIR),
    _case(
        "tree_args",
        "a dict argument (str, int leaves), a second array and a float "
        "keyword; dict/tuple output with int and str leaves",
        _tree_loss,
        _TREE,
    ),
    _case(
        "tied",
        "one array as input and weight of the same checkpointed layer, and at two places: the sums",
        lambda a, b: _xp(a).sum(_layer(a, a) + _layer(b, a) * 2.0),
        lambda: (lambda x: (x, x))(arr(840, 3, 3) * 0.7),
    ),
    _case(
        "mixed_dtypes",
        "outputs of two dtypes (float64 and float32) from one checkpoint",
        _mixed_loss,
        lambda: (arr(841, 3), arr(842, 2, dtype=np.float32)),
        requires=("float32",),
    ),
    _case(
        "jacobian_reverse",
        "reverse jacobian of two outputs of one checkpoint",
        _vec,
        _TWO,
        entry="jacobian",
        mode="reverse",
    ),
    _case(
        "jacobian_forward",
        "forward jacobian through the checkpoint (its tangent rule recomputes)",
        _vec,
        _TWO,
        entry="jacobian",
        mode="forward",
    ),
    _case(
        "jvp",
        "jvp through a checkpointed chain",
        _chain,
        _CHAIN,
        entry="jvp",
        seeds=lambda: (arr(850, 2, 3), _ws(851)),
    ),
    _case(
        "vjp",
        "vjp of two checkpoint outputs",
        _two_outputs,
        _TWO,
        entry="vjp",
        seeds=lambda: ((arr(852, 3), arr(853, 2)),),
    ),
    _case(
        "derivative",
        "derivative of a scalar function of a scalar through a checkpoint",
        lambda t: _two_outputs(t * _xp(t).ones(3), t * 2.0 * _xp(t).ones(3))[0],
        lambda: (arr(854),),
        entry="derivative",
    ),
    _case(
        "hessian",
        "hessian through the checkpointed chain (the recomputation differentiated again)",
        _chain_loss,
        lambda: (arr(860, 2, 3), ad.Const(_ws(861))),
        entry="hessian",
        requires=NESTED,
    ),
    _case(
        "hvp",
        "hvp through checkpoints of checkpoints",
        _segments_loss,
        lambda: (arr(862, 2, 3), ad.Const(_ws(863))),
        entry="hvp",
        seeds=lambda: (arr(864, 2, 3), None),
        requires=NESTED,
    ),
    _case(
        "nested_gradient",
        "ad.gradient of a checkpointed layer inside f, differentiated by the outer call",
        _inner,
        lambda: (arr(865, 2, 3), ad.Const(arr(866, 3, 3))),
        ref_fn=_inner_ref,
        requires=NESTED,
    ),
    _case(
        "closure_nested",
        "a checkpointed function closing over the outer call's traced value, inside an inner "
        "gradient: the outer derivative through the closure",
        _closure,
        lambda: (arr(867, 3),),
        ref_fn=_closure_ref,
        requires=NESTED,
    ),
]
