"""Models as trees (rule 1, 4, 7): the gradient mirrors the argument's structure and
types, non-differentiable fields get ``None``, unused floats get zeros."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

import adswitch as ad

from .case import Case, arr
from .trees import register

F = "trees"


def _mlp_dict(params: dict[str, Any], x: Any) -> Any:
    xp = ad.array_namespace(params["W1"], x)
    h = xp.tanh(x @ params["W1"] + params["b1"])
    return xp.mean((h @ params["W2"] + params["b2"]) ** 2)


def _mlp_args() -> tuple[Any, ...]:
    params = {"W1": arr(40, 3, 4), "b1": arr(41, 4), "W2": arr(42, 4, 2), "b2": arr(43, 2)}
    return params, ad.Const(arr(44, 5, 3))


def _nested_containers(tree: dict[str, Any]) -> Any:
    xp = ad.array_namespace(tree["layers"][0]["w"])
    total = tree["scale"] * xp.sum(tree["layers"][0]["w"] ** 2)
    for i, (a, b) in enumerate(tree["pairs"]):
        total = total + xp.sum(a * b) * (i + 1)
    return total + xp.sum(xp.sin(tree["layers"][1]["w"]))


def _nested_args() -> tuple[Any, ...]:
    tree = {
        "layers": [{"w": arr(45, 2, 2), "name": "first"}, {"w": arr(46, 3), "name": "second"}],
        "pairs": ((arr(47, 2), arr(48, 2)), (arr(49, 3), arr(50, 3))),
        "scale": 1.5,
        "empty": [],
    }
    return (tree,)


class Affine(NamedTuple):
    W: Any
    b: Any


def _namedtuple_fn(layer: Affine, x: Any) -> Any:
    xp = ad.array_namespace(layer.W, x)
    return xp.sum(xp.tanh(x @ layer.W + layer.b))


@dataclass
class Dense:
    W: Any
    b: Any
    activation: str = "tanh"
    width: int = 3
    frozen: Any = field(default_factory=lambda: np.arange(3))
    tag: Any = None

    def __call__(self, x: Any) -> Any:
        xp = ad.array_namespace(x, self.W)
        z = x @ self.W + self.b
        return xp.tanh(z) if self.activation == "tanh" else z


def _dataclass_fn(layer: Dense, x: Any) -> Any:
    xp = ad.array_namespace(layer.W, x)
    return xp.sum(layer(x) ** 2) + xp.sum(layer.frozen[0] * layer.b)


def _dense() -> Dense:
    return Dense(arr(51, 4, 3), arr(52, 3))


class Scaled:
    """A container the walker does not know until it is registered."""

    def __init__(self, weight: Any, gain: float, label: str) -> None:
        self.weight, self.gain, self.label = weight, gain, label


register(
    Scaled,
    lambda s: ([s.weight, s.gain], s.label),
    lambda label, kids: Scaled(kids[0], kids[1], label),
)


def _registered_fn(model: Scaled, x: Any) -> Any:
    xp = ad.array_namespace(model.weight, x)
    return model.gain * xp.sum(xp.sin(model.weight * x))


@dataclass
class Chain:
    layers: list[Dense]

    def __call__(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x


def _call_model(model: Chain, x: Any) -> Any:
    out = model(x)
    return ad.array_namespace(out).sum(out)


def _chain() -> Chain:
    return Chain([Dense(arr(53, 3, 4), arr(54, 4)), Dense(arr(55, 4, 2), arr(56, 2), "linear")])


def _apply(x: Any, model: Any) -> Any:
    return model(x)


@dataclass
class SumOfLayer:
    layer: Dense

    def __call__(self, x: Any) -> Any:
        out = self.layer(x)
        return ad.array_namespace(out).sum(out)


def _nondiff_fn(tree: dict[str, Any]) -> Any:
    xp = ad.array_namespace(tree["w"])
    scale = float(tree["n"]) + (1.0 if tree["flag"] else 0.0)
    return xp.sum(tree["w"] ** 2) * scale + xp.sum(tree["w"] * tree["ints"]) + len(tree["name"])


def _nondiff_args() -> tuple[Any, ...]:
    tree = {
        "w": arr(57, 3),
        "n": 2,
        "flag": True,
        "name": "abc",
        "none": None,
        "ints": np.array([1, 2, 3]),
        "mask": np.array([True, False, True]),
        "fn": np.sin,
        "unused": arr(58, 2),
        "unused_float": 0.25,
    }
    return (tree,)


CASES = [
    Case(
        "trees.dict_mlp",
        F,
        "a dict of MLP weights: gradient is a dict with the same keys in the same order",
        _mlp_dict,
        _mlp_args,
    ),
    Case(
        "trees.nested_containers",
        F,
        "dicts of lists of dicts, tuples of tuples, a float "
        "and an empty list: structure and types mirrored",
        _nested_containers,
        _nested_args,
    ),
    Case(
        "trees.namedtuple",
        F,
        "a namedtuple layer: the gradient is the same namedtuple type",
        _namedtuple_fn,
        lambda: (Affine(arr(59, 4, 3), arr(60, 3)), ad.Const(arr(61, 2, 4))),
    ),
    Case(
        "trees.dataclass",
        F,
        "a dataclass layer with str, int, integer-array and None "
        "fields: a new instance, None at the non-float fields",
        _dataclass_fn,
        lambda: (_dense(), ad.Const(arr(62, 2, 4))),
    ),
    Case(
        "trees.registered_type",
        F,
        "a type taught with ad.register_tree: gradient of the same type, its aux data kept",
        _registered_fn,
        lambda: (Scaled(arr(63, 3), 0.8, "s"), ad.Const(arr(64, 3))),
    ),
    Case(
        "trees.callable_model",
        F,
        "a callable dataclass model (a Chain of Dense layers) "
        "as the differentiated argument (rule 7)",
        _call_model,
        lambda: (_chain(), ad.Const(arr(65, 2, 3))),
    ),
    Case(
        "trees.duplicated_callable",
        F,
        "Duplicated(sum . layer) passed to |>: seed 002's "
        "Duplicated callable, shadows written into the model's copy",
        _apply,
        lambda: (ad.Const(arr(66, 2, 4)), ad.Duplicated(SumOfLayer(_dense()))),
    ),
    Case(
        "trees.callable_plain_input",
        F,
        "apply(x, model) with both plain: gradients for "
        "the input and every model field (seed 002's Zygote example)",
        _apply,
        lambda: (arr(67, 2, 4), SumOfLayer(_dense())),
    ),
    Case(
        "trees.nondifferentiable_leaves",
        F,
        "ints, bools, strings, None, callables, "
        "integer and bool arrays get None; unused floats get zeros, not None",
        _nondiff_fn,
        _nondiff_args,
    ),
]
