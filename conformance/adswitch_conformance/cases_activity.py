"""Activity (seed 002): plain / ``Duplicated`` / ``Const`` mixtures, ``zero=False``
accumulation, every error of rules 3 and 5, and ``withgradient`` aux outputs."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import adswitch as ad
from adswitch.errors import ActivityError, AdswitchError, OutputError, UsageError

from .case import Case, arr

F = "activity"


def _affine(w: Any, b: Any, x: Any) -> Any:
    xp = ad.array_namespace(w, b, x)
    return xp.sum(xp.tanh(x @ w + b) ** 2)


def _affine_args() -> tuple[Any, ...]:
    return ad.Duplicated(arr(70, 3, 2)), arr(71, 2), ad.Const(arr(72, 4, 3))


def _prefilled_args() -> tuple[Any, ...]:
    w = arr(73, 3, 2)
    return ad.Duplicated(w, np.full_like(w, 0.5)), arr(74, 2), ad.Const(arr(75, 4, 3))


def _dot(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x, y)
    return xp.sum(x * y)


def _scaled(x: Any, s: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum((x * s) ** 2)


def _unused(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(x**2)


def _mixed_scalars(x: Any, n: int, flag: bool, name: str, none: Any) -> Any:
    xp = ad.array_namespace(x)
    scale = float(n) + (0.5 if flag else 0.0) + len(name)
    return xp.sum(xp.sin(x) * scale)


def _tuple_out(x: Any) -> Any:
    xp = ad.array_namespace(x)
    z = 1.0 / x
    return xp.sum(z), "aux output", z, 3


class Out(NamedTuple):
    loss: Any
    message: str
    hidden: Any


def _namedtuple_out(x: Any) -> Any:
    xp = ad.array_namespace(x)
    h = xp.tanh(x)
    return Out(xp.sum(h**2), "ok", h)


def _dict_out(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return {"loss": xp.mean(x**3), "stats": [xp.max(x), "max"], "x2": x * 2.0}


def _list_out(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return [xp.sum(xp.exp(x)), x + 1.0]


def _vector_out(x: Any) -> Any:
    return x * 2.0


def _tuple_vector_first(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return x * 2.0, xp.sum(x)


def _string_out(x: Any) -> Any:
    return "loss"


def _none_out(x: Any) -> Any:
    return None


def _one_element(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.reshape(xp.sum(x), (1,))


def _dval_is_val() -> tuple[Any, ...]:
    x = arr(103, 3)
    return ad.Duplicated(x, x), arr(104, 3)


def _err(case_id: str, description: str, fn: Any, make_args: Any, raises: type) -> Case:
    return Case(case_id, F, description, fn, make_args, raises=raises)


class _Opaque:
    """A type the tree walker does not know, holding a floating array (issue 12)."""

    def __init__(self, weight: Any) -> None:
        self.weight = weight


def _opaque_loss(x: Any, holder: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(x * x)


CASES = [
    Case(
        "activity.mixture",
        F,
        "Duplicated weight, plain bias, Const data in one call: "
        "shadow written, plain gradient returned, None for Const",
        _affine,
        _affine_args,
    ),
    Case(
        "activity.zero_true_restarts",
        F,
        "a prefilled shadow with zero=True, called twice: "
        "holds exactly one gradient (zeroed before each call)",
        _affine,
        _prefilled_args,
        repeat_same=2,
    ),
    Case(
        "activity.zero_false_accumulates",
        F,
        "zero=False called twice on a prefilled "
        "shadow: initial + 2 x gradient (accumulation, not overwrite)",
        _affine,
        _prefilled_args,
        zero=False,
        repeat_same=2,
    ),
    Case(
        "activity.const_and_plain",
        F,
        "seed 002's dot(x, Const(y)): gradient for x only, None for the Const",
        _dot,
        lambda: (arr(76, 3), ad.Const(arr(77, 3))),
    ),
    Case(
        "activity.float_argument",
        F,
        "a plain Python float argument: its gradient is a Python float",
        _scaled,
        lambda: (arr(78, 3), 4.0),
    ),
    Case(
        "activity.nonfloat_arguments",
        F,
        "plain int, bool, str and None arguments next to an array: None for each, never "
        "differentiated or rejected",
        _mixed_scalars,
        lambda: (arr(102, 3), 3, True, "ab", None),
    ),
    Case(
        "activity.unused_argument",
        F,
        "an argument f never reads: zeros of its shape, not None (rule 4)",
        _unused,
        lambda: (arr(79, 3), arr(80, 2, 2)),
    ),
    Case(
        "activity.withgradient_tuple",
        F,
        "withgradient with (loss, str, array, int): the "
        "whole output back, concrete numpy, strings passed through",
        _tuple_out,
        lambda: (np.array([1.0, 2.0, 4.0]),),
        entry="withgradient",
    ),
    Case(
        "activity.withgradient_namedtuple",
        F,
        "withgradient with a namedtuple output: same type back, no tracers leaked",
        _namedtuple_out,
        lambda: (arr(81, 4),),
        entry="withgradient",
    ),
    Case(
        "activity.withgradient_dict",
        F,
        "withgradient with a dict output: first value is the loss, nested list with a string kept",
        _dict_out,
        lambda: (arr(82, 3),),
        entry="withgradient",
    ),
    Case(
        "activity.withgradient_list",
        F,
        "withgradient with a list output [loss, array]",
        _list_out,
        lambda: (arr(83, 3),),
        entry="withgradient",
    ),
    Case(
        "activity.withgradient_duplicated",
        F,
        "withgradient on Duplicated arguments: val "
        "and the shadow both right (seed 002's Enzyme withgradient failure)",
        _tuple_out,
        lambda: (ad.Duplicated(np.array([1.0, 2.0, 4.0])),),
        entry="withgradient",
    ),
    _err(
        "activity.all_const",
        "every argument Const: ActivityError (nothing to differentiate) instead of an empty result",
        _dot,
        lambda: (ad.Const(arr(84, 3)), ad.Const(arr(85, 3))),
        ActivityError,
    ),
    _err(
        "activity.active_wrapper",
        "ad.Active(x): ActivityError pointing to Duplicated or plain",
        _dot,
        lambda: (ad.Active(arr(86, 3)), arr(87, 3)),
        ActivityError,
    ),
    _err(
        "activity.duplicated_scalar",
        "Duplicated(4.0, 0.0): no array to write into -> ActivityError (seed 002)",
        _scaled,
        lambda: (arr(88, 3), ad.Duplicated(4.0, 0.0)),
        ActivityError,
    ),
    _err(
        "activity.duplicated_int_array",
        "Duplicated of an integer array: nothing differentiable to shadow -> ActivityError",
        _dot,
        lambda: (ad.Duplicated(np.arange(3)), arr(100, 3)),
        ActivityError,
    ),
    _err(
        "activity.duplicated_no_float_tree",
        "Duplicated of a dict holding only an int and a string: ActivityError, not an empty shadow",
        lambda t, y: _dot(y, y) * t["n"],
        lambda: (ad.Duplicated({"n": 3, "name": "x"}), arr(101, 3)),
        ActivityError,
    ),
    _err(
        "activity.dval_is_val",
        "Duplicated(x, x): the shadow is the value itself, so writing the gradient would "
        "overwrite the data -> an AdswitchError, not corruption",
        _dot,
        _dval_is_val,
        AdswitchError,
    ),
    _err(
        "activity.dval_shape",
        "a shadow of the wrong shape: ActivityError naming the leaf",
        _dot,
        lambda: (ad.Duplicated(arr(89, 3), np.zeros(4)), arr(90, 3)),
        ActivityError,
    ),
    _err(
        "activity.dval_dtype",
        "a float32 shadow for a float64 value: ActivityError",
        _dot,
        lambda: (ad.Duplicated(arr(91, 3), np.zeros(3, np.float32)), arr(92, 3)),
        ActivityError,
    ),
    _err(
        "activity.dval_structure",
        "a shadow dict with other keys than the value: ActivityError naming the key path",
        lambda t, y: _dot(t["a"], y),
        lambda: (ad.Duplicated({"a": arr(93, 3)}, {"b": np.zeros(3)}), arr(94, 3)),
        ActivityError,
    ),
    _err(
        "activity.output_vector",
        "f returns a vector: OutputError suggesting sum() or a Jacobian",
        _vector_out,
        lambda: (arr(95, 3),),
        OutputError,
    ),
    _err(
        "activity.output_tuple_vector_first",
        "f returns (vector, scalar): the first element is the loss, so OutputError",
        _tuple_vector_first,
        lambda: (arr(96, 3),),
        OutputError,
    ),
    _err(
        "activity.output_string",
        "f returns a string: OutputError",
        _string_out,
        lambda: (arr(97, 3),),
        OutputError,
    ),
    _err(
        "activity.output_none",
        "f returns None (forgot return): OutputError",
        _none_out,
        lambda: (arr(98, 3),),
        OutputError,
    ),
    _err(
        "activity.output_one_element",
        "f returns shape (1,), not 0-d: OutputError, no silent squeeze",
        _one_element,
        lambda: (arr(99, 3),),
        OutputError,
    ),
    _err(
        "activity.unknown_object_with_floats",
        "an object of an unregistered type holding a floating array, passed plain: "
        "ActivityError naming it (never silently not differentiated)",
        _opaque_loss,
        lambda: (arr(100, 3), _Opaque(arr(101, 3))),
        ActivityError,
    ),
    Case(
        "activity.zero_not_bool",
        F,
        "zero='no' (a truthy string): UsageError, not read as True",
        _affine,
        _affine_args,
        zero="no",  # type: ignore[arg-type]  # the wrong type is the case
        raises=UsageError,
    ),
]
