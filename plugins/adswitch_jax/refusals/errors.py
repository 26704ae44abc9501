"""Translate jax's own exceptions into adswitch errors that say the fix.

Imported only once jax is in use (it imports jax at the top).
"""

from __future__ import annotations

import jax

from adswitch.errors import MutationError, NoForwardRuleError, UnsupportedError
from adswitch.spec import user_line
from adswitch_jax.integrations.custom import NO_FORWARD, NOT_LINEAR, jvp_rules_traced
from adswitch_jax.integrations.host import raised_in
from adswitch_jax.refusals.conversions import NOT_USER
from adswitch_jax.xp.linalg.checks import refusal_in

__all__ = ["TRACE_FAILURES", "translate"]

#: Raised while tracing under ``jit`` by code that needs concrete values (value-dependent
#: Python control flow, ``int(x)``...). Plain ``jax.value_and_grad`` runs such code fine,
#: so these make the engine fall back to eager mode instead of failing.
TRACE_FAILURES: tuple[type[BaseException], ...] = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerBoolConversionError,
    jax.errors.NonConcreteBooleanIndexError,
)

_IMMUTABLE = "JAX arrays are immutable"
# jax's words for a jvp through a custom_vjp, and for a transpose of a non-linear jvp rule
_JVP_OF_VJP = "can't apply forward-mode autodiff (jvp) to a custom_vjp function"
_NO_TRANSPOSE = "Transpose rule (for reverse-mode differentiation) for"
# jax's backward pass asserting that a bilinear op (x * y) has one linear operand: its
# values' reprs (ValAccum/GradAccum, UndefinedPrimal in older jax) are in the message
_BILINEAR = ("Accum(", "UndefinedPrimal(")
_SEQUENCE = "setting an array element with a sequence"


def translate(exc: BaseException) -> BaseException | None:
    """The adswitch error to raise instead of ``exc``, or ``None`` to let ``exc`` through.

    Only exceptions that jax raises on behalf of the engine are translated; the user's own
    exceptions pass unchanged.

    Args:
        exc: the exception raised while differentiating.

    Returns:
        A :class:`MutationError` or :class:`UnsupportedError` (the caller chains ``exc``),
        or ``None``.

    Example:
        >>> translate(TypeError("JAX arrays are immutable ...")).__class__.__name__
        'MutationError'
    """
    text = str(exc)
    # raised by host code in a callback (integrations.host)
    if (host := raised_in(exc)) is not None:
        return host
    refused = refusal_in(exc)  # raised on the host by a linalg rule's check: compiled
    if refused is not None or isinstance(exc, jax.errors.JaxRuntimeError):  # (jax's error),
        return refused  # or eager (a ValueError carrying the text)
    # the user's line that raised it (the innermost frame outside adswitch, jax and numpy)
    line = user_line(exc.__traceback__, skip=NOT_USER)
    if isinstance(exc, TypeError) and _IMMUTABLE in text:
        return MutationError(
            f"jax engine: f assigns into an array in place (x[idx] = v, or a write into a "
            f"buffer made with xp.zeros_like/xp.empty){line}; jax arrays are immutable, so the "
            "gradient cannot follow the write. Fix: write x = x.at[idx].set(v) (or .add, "
            ".multiply) instead, or choose an engine that supports mutation "
            "(see ad.backends(), capability 'mutation')."
        )
    if isinstance(exc, ValueError) and _SEQUENCE in text:
        return MutationError(
            f"jax engine: f writes a traced jax value into a numpy array (buf[idx] = v){line}; "
            "numpy cannot hold jax's traced values, so the gradient would be lost. Fix: build "
            "the array with the traced namespace (xp = ad.array_namespace(x); "
            "buf = xp.zeros_like(x).at[idx].set(v))."
        )
    if isinstance(exc, jax.errors.TracerArrayConversionError):
        return UnsupportedError(
            f"jax engine: f converts a traced value to a numpy array (np.asarray, np.array, "
            f"x.__array__(), or a numpy function such as np.sin){line}, which cuts the "
            "gradient. Fix: keep it traced -- compute with xp = ad.array_namespace(x) "
            "instead of numpy inside f (xp.sin, xp.asarray) -- or pass the argument as "
            "ad.Const(value) if it is not to be differentiated."
        )
    if isinstance(exc, TypeError) and _JVP_OF_VJP in text:
        return NoForwardRuleError(NO_FORWARD)
    if jvp_rules_traced() and (
        (isinstance(exc, NotImplementedError) and _NO_TRANSPOSE in text)
        or (isinstance(exc, AssertionError) and any(s in text for s in _BILINEAR))
    ):  # (only once a jvp rule was traced: without one these are not the user's doing)
        detail = text.strip() if _NO_TRANSPOSE in text else "a product of two tangents"
        return UnsupportedError(NOT_LINEAR.format(detail=detail))
    if isinstance(exc, TRACE_FAILURES):
        # Raised here only when even eager jax.value_and_grad failed: the value is one
        # being differentiated, which jax cannot hand to Python.
        return UnsupportedError(
            f"jax engine: f needs the concrete value of an array being differentiated "
            f"({type(exc).__name__}: float(y), int(y), y.item(), or Python control flow on "
            f"it){line}; jax cannot give a Python number for a value it differentiates. Fix: keep "
            "it an array (xp.where instead of if; return the array among f's outputs and "
            "format it after the call)."
        )
    if isinstance(exc, jax.errors.UnexpectedTracerError):
        return UnsupportedError(
            "jax engine: a traced value escaped its differentiation or its jax.jit/vmap (stored "
            "in a global, a closure or an attribute by an earlier call of f, or set on an "
            f"object inside a jitted function -- model.w = w -- and read after it){line}. Fix: "
            "return such values from f as outputs instead of storing them, and set the "
            "attribute back to a concrete array after the jitted call (or pass it as an "
            "argument)."
        )
    return None
