"""numpy's names for what the Array API spells otherwise, for the errors of engines'
namespaces and traced arrays: ``xp.linalg.norm`` or ``x.tolist()`` on a namespace that
follows the standard should say what to write instead, not raise a bare
``AttributeError``. Front end only: engines import it, it imports no engine.
"""

from __future__ import annotations

from typing import Any

from adswitch.errors import UnsupportedError

__all__ = ["LINALG_NAMES", "NUMPY_NAMES", "MissingFunctionError", "method_hint", "missing_function"]

_NORMS = (
    "xp.linalg.vector_norm(x, ord=...) (vectors) or xp.linalg.matrix_norm(x, ord=...) (matrices)"
)

NUMPY_NAMES: dict[str, str] = {
    "absolute": "xp.abs",
    "fabs": "xp.abs",
    "power": "xp.pow",
    "arccos": "xp.acos",
    "arcsin": "xp.asin",
    "arctan": "xp.atan",
    "arctan2": "xp.atan2",
    "arccosh": "xp.acosh",
    "arcsinh": "xp.asinh",
    "arctanh": "xp.atanh",
    "concatenate": "xp.concat",
    "transpose": "xp.permute_dims(x, axes) (or xp.matrix_transpose(x) for the last two axes)",
    "swapaxes": "xp.permute_dims(x, axes)",
    "amax": "xp.max",
    "amin": "xp.min",
    "cumsum": "xp.cumulative_sum",
    "cumprod": "xp.cumulative_prod",
    "true_divide": "xp.divide",
    "mod": "xp.remainder",
    "invert": "xp.bitwise_invert",
    "left_shift": "xp.bitwise_left_shift",
    "right_shift": "xp.bitwise_right_shift",
    "dot": "xp.matmul (or xp.vecdot / xp.tensordot, which say what they contract)",
    "inner": "xp.vecdot",
    "outer": "xp.linalg.outer",
    "trace": "xp.linalg.trace",
    "norm": _NORMS,
    "array": "xp.asarray",
    "copy": "xp.asarray(x, copy=True)",
    "ravel": "xp.reshape(x, (-1,))",
}
"""numpy function name -> the standard's equivalent, in the ``xp`` namespace."""

LINALG_NAMES: dict[str, str] = {
    "norm": _NORMS,
    "multi_dot": "chained xp.matmul (a @ b @ c)",
}
"""numpy.linalg name -> the standard's equivalent."""

# Methods that turn a traced array into Python data: no xp function does that while keeping
# the derivative, so the fix is to keep the computation in array operations.
_CONVERSIONS = {"tolist", "tobytes", "tostring", "numpy"}


class MissingFunctionError(UnsupportedError, AttributeError):
    """A function an engine's namespace does not provide (the message names the standard's
    equivalent where numpy spells it otherwise); also an ``AttributeError``, so
    ``hasattr(xp, name)`` stays False and ``getattr(xp, name, default)`` works."""


def missing_function(
    engine: str, name: str, where: str = "xp", otherwise: str = ""
) -> AttributeError:
    """The error for ``getattr(namespace, name)`` failing: ``where`` is how the user spells
    the namespace (``"xp"``, ``"xp.linalg"``); ``otherwise`` the fix when numpy has no such
    name either. Private names (protocols that numpy, doctest, pickle probe for) get a
    plain ``AttributeError``."""
    if name.startswith("_"):
        return AttributeError(f"{where} has no attribute {name!r}")
    table = LINALG_NAMES if where.endswith("linalg") else NUMPY_NAMES
    standard = table.get(name)
    if standard is not None:
        return MissingFunctionError(
            f"{engine}: `{where}.{name}` is numpy's name, not the Array API's, which "
            f"ad.array_namespace(x) follows. Fix: use {standard}."
        )
    return MissingFunctionError(
        f"{engine}: the namespace has no function `{where}.{name}`. "
        + (
            otherwise
            or "Fix: express it with the Array API's functions (e.g. numpy's "
            "arccos is xp.acos, concatenate is xp.concat), or choose another engine."
        )
    )


def method_hint(name: str, xp: Any) -> str:
    """What to write instead of the method ``x.name`` that traced arrays lack."""
    if name in _CONVERSIONS:
        return (
            f"x.{name}() turns a traced array into Python data, which would drop its "
            "gradient. Fix: keep the computation in array operations -- xp.sum(x), not "
            "sum(x.tolist()); xp.stack/xp.concat of pieces, not lists -- with "
            "xp = ad.array_namespace(x); to look at the values, return them as an "
            "auxiliary output (`return loss, {'x': x}`)."
        )
    standard = NUMPY_NAMES.get(name)
    if standard is not None:
        return f"numpy's x.{name}() is {standard} in the Array API. Fix: use that."
    if callable(getattr(xp, name, None)):
        return f"Fix: use the namespace: xp.{name}(x) where xp = ad.array_namespace(x)."
    return (
        "Fix: use the namespace's function with the same meaning (xp = "
        "ad.array_namespace(x); the Array API standard lists them)."
    )
