"""What to tell a user whose arguments cannot be planned as they are: nothing to
differentiate, objects adswitch cannot look into (unknown types holding arrays,
generators, sets), one array with two activities, complex leaves -- each error with its
fix. The plan (:mod:`adswitch.plan`) raises them."""

from __future__ import annotations

import functools
import types
from typing import Any

from adswitch.errors import ActivityError, UnsupportedError
from adswitch.foreign import foreign_array, is_pandas
from adswitch.leaves import describe, leaf_kind
from adswitch.shadows import no_float_in_duplicated

__all__ = [
    "KIND_NAMES",
    "complex_leaf",
    "nothing_active",
    "opaque_floats",
    "opaque_object",
    "tie_conflict",
]

KIND_NAMES = ("plain", "Const", "Duplicated")  # by the plan's activity codes
_CONST, _DUPLICATED = 1, 2


def tie_conflict(first_kind: int, first_path: str, kind: int, path: str) -> ActivityError:
    """One array passed with two activities."""
    return ActivityError(
        f"the same array is passed as {KIND_NAMES[first_kind]} at {first_path} and as "
        f"{KIND_NAMES[kind]} at {path}, so its gradient has no single destination. Pass it "
        "once, or pass a copy (x.copy()) where it must differ."
    )


def opaque_object(leaf: Any, path: str) -> ActivityError | UnsupportedError | None:
    """The error for an unknown object holding floating arrays (it would be a leaf, never
    differentiated), or ``None`` if it holds none."""
    if is_pandas(leaf):  # (refused on every engine, with pandas' own fix)
        return foreign_array(leaf, path)
    inside = opaque_floats(leaf)
    if inside is None:
        return None
    name = type(leaf).__qualname__
    return ActivityError(
        f"{path} is a {name} holding a floating array in {inside}, but adswitch does not "
        f"know how to look inside {name} objects, so it would not be differentiated. Teach "
        "the walker with ad.register_tree(cls, flatten, unflatten) (or make it a dataclass), "
        "or pass it as ad.Const(...) if it should stay constant."
    )


def complex_leaf(leaf: Any, path: str) -> UnsupportedError:
    return UnsupportedError(
        f"{path} is complex ({describe(leaf)}); adswitch differentiates real functions of "
        "real inputs. Split it into real and imaginary parts, or pass it as Const."
    )


def nothing_active(args: list[tuple[int, Any, Any]]) -> ActivityError:
    """Why no argument has a differentiable leaf, from ``(kind, value, treedef)`` per
    argument, with the fix."""
    if not args:
        return ActivityError("gradient needs at least one argument to differentiate.")
    if all(kind == _CONST for kind, _, _ in args):
        return ActivityError(
            "nothing to differentiate: every argument is Const. Pass the arguments you want "
            "gradients for plain (or as Duplicated)."
        )
    for a, (kind, val, _) in enumerate(args):
        if kind == _DUPLICATED:
            no_float_in_duplicated(a, val)
    got = ", ".join(describe(val) for _, val, _ in args)
    for a, (kind, val, treedef) in enumerate(args):
        if kind != _CONST and treedef is None and is_unwalkable(val):
            return ActivityError(
                f"nothing to differentiate: args[{a}] is {describe(val)}, which adswitch "
                f"cannot look into (got {got}). {unwalkable_fix(val)}"
            )
    return ActivityError(
        "nothing to differentiate: no argument holds a floating array or a Python float "
        f"(got {got}). Convert integer data with x.astype(float) or np.asarray(x, dtype=float)."
    )


_NOT_DATA = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
    functools.partial,
)


def opaque_floats(obj: Any) -> str | None:
    """Where an object of an unknown type keeps a floating array (``".W"``,
    ``".layers[0]"``), looking one container deep into its attributes; ``None`` if
    nowhere (functions, classes and modules are not looked into)."""
    if isinstance(obj, _NOT_DATA) or hasattr(obj, "shape"):
        return None
    attrs = getattr(obj, "__dict__", None)
    if attrs is None:
        names = [n for cls in type(obj).__mro__ for n in getattr(cls, "__slots__", ())]
        attrs = {n: getattr(obj, n) for n in names if hasattr(obj, n)}
    for name, value in attrs.items():
        if leaf_kind(value) == "f" and not isinstance(value, float):
            return f".{name}"
        if isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                if leaf_kind(item) == "f" and not isinstance(item, float):
                    return f".{name}[{i}]"
        elif isinstance(value, dict):
            for key, item in value.items():
                if leaf_kind(item) == "f" and not isinstance(item, float):
                    return f".{name}[{key!r}]"
    return None


def is_unwalkable(value: Any) -> bool:
    return isinstance(value, (types.GeneratorType, set, frozenset)) or (
        leaf_kind(value) == "o"
        and not isinstance(value, (int, str, bytes, type(None), bool))
        and not hasattr(value, "dtype")
    )


def unwalkable_fix(value: Any) -> str:
    if isinstance(value, types.GeneratorType):
        return "A generator can be read only once; pass a list or tuple (list(gen))."
    if isinstance(value, (set, frozenset)):
        return "A set has no order for gradients to follow; pass a list or tuple."
    if is_pandas(value):  # (refused on every engine: adswitch.foreign)
        return "pandas objects are refused: pass df.to_numpy() (or s.to_numpy())."
    return (
        f"Teach the walker {type(value).__qualname__} with ad.register_tree(cls, flatten, "
        "unflatten), or pass the arrays it holds."
    )
