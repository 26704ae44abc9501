"""Engine hygiene: no stale state or compiled program reused for the wrong call, nothing
lost on error (rule 8). Every case also gets the runner's generic checks: a second call
gives the same answer, the first result survives it, inputs ``f`` does not write stay
unchanged, ``g[i] is dup.dval``.

Run prepared (``adswitch conformance --prepared``), the cases whose ``second_args``
change shapes, dtypes or activity expect a ``PreparationError`` from the call prepared at
``make_args`` when it is called at ``second_args`` (a prepared call is strict: never a
stale answer for arguments it was not prepared for); each point is then checked with a
call prepared at its own kind of arguments."""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad
from adswitch.errors import ActivityError, OutputError, PreparationError

from .case import Case, arr

F = "hygiene"


def _sin_x(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * x)


_STATE = {"scale": 1.0}


def _reads_state(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return _STATE["scale"] * xp.sum(x**2)


def _state_args(scale: float, seed: int) -> tuple[Any, ...]:
    _STATE["scale"] = scale
    return (arr(seed, 3),)


def _branch(x: Any) -> Any:
    xp = ad.array_namespace(x)
    if xp.sum(x) > 0:
        return xp.sum(x**2)
    return xp.sum(x**3)


def _activity_swap(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x, y)
    return xp.sum(xp.sin(x) * y**2)


class UserBoom(Exception):
    """The user's own error, raised from inside ``f``."""


def _raises(w: Any, x: Any) -> Any:
    xp = ad.array_namespace(w, x)
    loss = xp.sum(x @ w)
    if loss is not None:
        raise UserBoom("raised by f after computing the loss")
    return loss


def _vector(w: Any, x: Any) -> Any:
    return x @ w


def _prefilled() -> Any:
    w = arr(160, 3, 2)
    return ad.Duplicated(w, np.full_like(w, 7.0))


def _dtype_first() -> tuple[Any, ...]:
    return (arr(161, 4),)


def _dtype_second() -> tuple[Any, ...]:
    return (arr(162, 4, dtype=np.float32),)


CASES = [
    Case(
        "hygiene.stale_cache_values",
        F,
        "the same f on new values: the new gradient, not a cached one",
        _sin_x,
        lambda: (arr(163, 5),),
        second_args=lambda: (arr(164, 5),),
    ),
    Case(
        "hygiene.stale_cache_shapes",
        F,
        "the same f on a new shape: recompiled, not reused or broadcast",
        _sin_x,
        lambda: (arr(165, 5),),
        second_args=lambda: (arr(166, 2, 3),),
        prepared_second_raises=PreparationError,
    ),
    Case(
        "hygiene.stale_cache_dtype",
        F,
        "the same f on float64 then float32: gradients in each call's own dtype",
        _sin_x,
        _dtype_first,
        second_args=_dtype_second,
        prepared_second_raises=PreparationError,
        requires=("float32",),
    ),
    Case(
        "hygiene.stale_cache_activity",
        F,
        "the same f with activity swapped (Const x, then "
        "Const y): the program is keyed by activity",
        _activity_swap,
        lambda: (ad.Const(arr(167, 3)), arr(168, 3)),
        second_args=lambda: (arr(169, 3), ad.Const(arr(170, 3))),
        prepared_second_raises=PreparationError,
    ),
    Case(
        "hygiene.closure_state_changes",
        F,
        "f reads a global that changes between calls: "
        "a traced-and-cached program must not bake the old value in",
        _reads_state,
        lambda: _state_args(1.0, 171),
        second_args=lambda: _state_args(3.0, 172),
    ),
    Case(
        "hygiene.value_dependent_branch",
        F,
        "Python if on a traced value: each call takes "
        "its own branch (no program traced for the other)",
        _branch,
        lambda: (np.array([0.5, 1.0, 2.0]),),
        second_args=lambda: (np.array([-0.5, -1.0, 0.2]),),
    ),
    Case(
        "hygiene.user_error_keeps_shadow",
        F,
        "f raises its own exception: re-raised "
        "(or chained) unchanged, the prefilled shadow untouched",
        _raises,
        lambda: (_prefilled(), ad.Const(arr(173, 4, 3))),
        raises=UserBoom,
    ),
    Case(
        "hygiene.output_error_keeps_shadow",
        F,
        "OutputError after f ran: the prefilled shadow neither zeroed nor half-written",
        _vector,
        lambda: (_prefilled(), ad.Const(arr(174, 4, 3))),
        raises=OutputError,
    ),
    Case(
        "hygiene.activity_error_keeps_shadow",
        F,
        "ActivityError on a later argument: the earlier Duplicated's shadow untouched",
        _vector,
        lambda: (_prefilled(), ad.Active(arr(175, 4, 3))),
        raises=ActivityError,
    ),
    Case(
        "hygiene.zero_false_error_keeps_shadow",
        F,
        "zero=False and f raising: the accumulated shadow keeps its old total",
        _raises,
        lambda: (_prefilled(), ad.Const(arr(176, 4, 3))),
        zero=False,
        raises=UserBoom,
    ),
]
