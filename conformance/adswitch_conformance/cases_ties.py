"""Tied parameters (seed 001, rule 6): one array object at several places is one
parameter whose total gradient sits at its first occurrence; distinct parameters are never
merged; memory-sharing views give the right partials or ``AliasingError``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import adswitch as ad
from adswitch.errors import AliasingError

from .case import Case, arr

F = "ties"


@dataclass
class Linear:
    weight: Any
    bias: Any

    def __call__(self, x: Any) -> Any:
        return x @ self.weight + self.bias


@dataclass
class TwoHeads:
    """Seed 001's ``Model(d, d)``: the same layer object in two fields."""

    a: Linear
    b: Linear

    def __call__(self, x: Any) -> Any:
        return self.a(x) + self.b(x) ** 2


def _two_heads() -> TwoHeads:
    shared = Linear(arr(100, 2, 3), arr(101, 3))
    return TwoHeads(shared, shared)


def _model_loss(model: Any, x: Any) -> Any:
    out = model(x)
    return ad.array_namespace(out).sum(out)


def _dict_tie(params: dict[str, Any]) -> Any:
    xp = ad.array_namespace(params["enc"])
    return xp.sum(xp.tanh(params["enc"]) * 2.0) + xp.sum(params["dec"] ** 2) + xp.sum(params["b"])


def _dict_tie_args() -> tuple[Any, ...]:
    w = arr(102, 3, 3)
    return ({"enc": w, "b": arr(103, 3), "dec": w},)


def _cross_arg(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x, y)
    return xp.sum(xp.sin(x) * y)


def _cross_arg_args() -> tuple[Any, ...]:
    w = arr(104, 4)
    return w, w


def _destructure_loss(flat: Any, rebuild: Any, x: Any) -> Any:
    xp = ad.array_namespace(flat, x)
    return xp.sum(xp.tanh(rebuild(flat)(x)))


def _destructure_args() -> tuple[Any, ...]:
    flat, rebuild = ad.destructure(_two_heads())
    return flat, ad.Const(rebuild), ad.Const(arr(105, 4, 2))


def _same_gradient(p: Any, q: Any) -> Any:
    xp = ad.array_namespace(p, q)
    return xp.sum(xp.sin(p + q))


def _views(base: Any, view: Any) -> Any:
    xp = ad.array_namespace(base, view)
    return xp.sum(base**2) + xp.sum(xp.sin(view) * 3.0)


def _view_args() -> tuple[Any, ...]:
    base = arr(106, 6)
    return base, base[1:4]


def _transpose_view_args() -> tuple[Any, ...]:
    w = arr(107, 2, 3)
    return ({"W": w, "Wt": w.T},)


def _transpose_view(p: dict[str, Any]) -> Any:
    xp = ad.array_namespace(p["W"])
    return xp.sum(p["W"] ** 3) + xp.sum(p["Wt"] * xp.ones((3, 2), dtype=p["Wt"].dtype))


CASES = [
    Case(
        "ties.shared_layer_plain",
        F,
        "seed 001's Model(d, d) passed plain: total gradient "
        "in model.a, None in model.b (later occurrence)",
        _model_loss,
        lambda: (_two_heads(), ad.Const(arr(108, 4, 2))),
    ),
    Case(
        "ties.shared_layer_duplicated",
        F,
        "Duplicated(Model(d, d)): make_zero keeps the "
        "tie, the one shared shadow receives the total",
        _model_loss,
        lambda: (ad.Duplicated(_two_heads()), ad.Const(arr(109, 4, 2))),
    ),
    Case(
        "ties.dict_tie_insertion_order",
        F,
        "the same array under 'enc' and 'dec': total "
        "at the first key in insertion order ('enc'), None at 'dec'",
        _dict_tie,
        _dict_tie_args,
    ),
    Case(
        "ties.across_arguments",
        F,
        "the same array passed as two arguments: total at args[0], None at args[1]",
        _cross_arg,
        _cross_arg_args,
    ),
    Case(
        "ties.destructure",
        F,
        "seed 001: destructure of a tied model lists the shared "
        "layer once; the flat gradient sums both uses",
        _destructure_loss,
        _destructure_args,
    ),
    Case(
        "ties.distinct_same_gradient",
        F,
        "f(p + q): distinct parameters with identical "
        "gradients are never merged (seed 001, mcabbott)",
        _same_gradient,
        lambda: (arr(110, 3), arr(111, 3)),
    ),
    Case(
        "ties.distinct_same_gradient_duplicated",
        F,
        "f(p + q) with both Duplicated: each shadow gets its own full gradient",
        _same_gradient,
        lambda: (ad.Duplicated(arr(112, 3)), ad.Duplicated(arr(113, 3))),
    ),
    Case(
        "ties.view_of_argument",
        F,
        "a slice view and its base as two arguments: each "
        "gets its own partial gradient, or AliasingError",
        _views,
        _view_args,
        also_ok=(AliasingError,),
    ),
    Case(
        "ties.transpose_view",
        F,
        "W and W.T (shared memory, seed 001's W and W'): right "
        "partials or AliasingError, never a merged or dropped gradient",
        _transpose_view,
        _transpose_view_args,
        also_ok=(AliasingError,),
    ),
]
