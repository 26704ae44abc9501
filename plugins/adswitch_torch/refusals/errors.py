"""Turn torch's own errors about in-place writes and numpy mixing into adswitch errors.

torch detects two kinds of unsafe in-place writes, at different moments: writes into a
tensor being differentiated (a leaf, or a view of one) fail at the write, inside the
user's function; writes into a value that an earlier operation saved for the backward
pass fail later, when the backward pass checks the saved value's version counter. Both
are translated here into a ``MutationError`` that says where and how to fix it, with
torch's exception chained. Anything unrecognised is left alone (returns ``None``).
"""

from __future__ import annotations

import re
from types import TracebackType
from typing import Any

from adswitch.errors import AdswitchError, MutationError, UnsupportedError
from adswitch.spec import user_line as kit_user_line

__all__ = [
    "translate_forward",
    "translate_backward",
    "mutated_argument",
    "user_line",
    "caller_line",
]

_FIX_COPY = (
    "Fix: write into a fresh buffer instead (buf = xp.zeros_like(x); buf[...] = ...), or "
    "copy the argument first (x = xp.asarray(x, copy=True)) and write into the copy, or "
    "use a functional form (xp.where(mask, new, x))."
)
_FIX_MODE = (
    " Or differentiate writes as they are: backend=adswitch_torch.TorchBackend("
    "copy_saved=True) copies the values torch saves (slower, more memory)."
)
_LEAF_MARKERS = (
    "a leaf Variable that requires grad is being used in an in-place operation",
    "a view of a leaf Variable that requires grad is being used in an in-place operation",
)
_VIEW_MARKER = "is a view and"
_VERSION_MARKER = "has been modified by an inplace operation"
_NUMPY_MARKERS = (
    "Can't call numpy() on Tensor that requires grad",
    "'numpy.ndarray' and 'Tensor'",
    "'Tensor' and 'numpy.ndarray'",
)
# Frames of adswitch, of this adapter, of torch and of numpy are not the user's line.
_NOT_USER = ("adswitch_torch", "torch", "numpy")
# numpy names whose Array API (xp) function is spelled differently.
_XP_NAMES = {
    "amax": "max",
    "amin": "min",
    "absolute": "abs",
    "around": "round",
    "concatenate": "concat",
    "transpose": "permute_dims",
    "power": "pow",
    "arccos": "acos",
    "arcsin": "asin",
    "arctan": "atan",
    "arctan2": "atan2",
    "arccosh": "acosh",
    "arcsinh": "asinh",
    "arctanh": "atanh",
    "linalg.norm": "linalg.vector_norm",
}
_NUMPY_CALL = re.compile(r"\b(?:np|numpy)\.([A-Za-z_][\w.]*)\s*\(")


def user_line(tb: TracebackType | None) -> str:
    """``" at file:line: `source`"`` for the innermost traceback frame outside torch
    and adswitch, or ``""``."""
    return kit_user_line(tb, skip=_NOT_USER)


def caller_line() -> str:
    """Like :func:`user_line`, for the innermost user frame of the current stack."""
    return kit_user_line(skip=_NOT_USER)


def translate_forward(exc: BaseException) -> Exception | None:
    """The adswitch error for a torch error raised while running the user's function."""
    if isinstance(exc, AdswitchError):
        return None
    text = str(exc)
    called = _numpy_function(exc.__traceback__)
    if called is not None:
        return _numpy_met_tensor([called], "", exc.__traceback__)
    if isinstance(exc, RuntimeError) and _NUMPY_MARKERS[0] in text:
        # a ufunc or a C-level numpy function: no numpy frame says which, the line does
        line = _numpy_calls_in(user_line(exc.__traceback__))
        return _numpy_met_tensor(line, "a numpy function on this line, ", exc.__traceback__)
    if isinstance(exc, RuntimeError) and any(m in text for m in _LEAF_MARKERS):
        return MutationError(
            f"torch: in-place write into an argument being differentiated"
            f"{user_line(exc.__traceback__)}. torch cannot differentiate through a write "
            f"into its own input (the value the write destroys may be needed for the "
            f"gradient). {_FIX_COPY}{_FIX_MODE}"
        )
    if isinstance(exc, RuntimeError) and _VIEW_MARKER in text and "inplace" in text:
        return MutationError(
            f"torch: in-place write into a view{user_line(exc.__traceback__)} that torch "
            f"cannot track (torch says: {text.splitlines()[0]}). {_FIX_COPY}{_FIX_MODE}"
        )
    if isinstance(exc, (RuntimeError, TypeError)) and any(m in text for m in _NUMPY_MARKERS):
        return _numpy_met_tensor([], "", exc.__traceback__)
    return None


def _numpy_met_tensor(names: list[str], lead: str, tb: TracebackType | None) -> UnsupportedError:
    """The error for numpy functions (or operators: ``names`` empty) given a torch tensor
    inside ``f``."""
    where = user_line(tb)
    if names:
        fix = ", ".join(f"{_xp_name(name)} for np.{name}" for name in names)
        what = f"{lead}{' or '.join('np.' + n for n in names)}, was called on a torch tensor"
        if not lead:
            what = what.replace(",", "", 1)
        return UnsupportedError(
            f"torch: {what}{where}; numpy cannot compute on the tensors adswitch traces "
            f"(torch refuses, or the gradient would be lost). Fix: use {fix}, with "
            f"xp = ad.array_namespace(x); wrap numpy constants with xp.asarray(c) or pass "
            f"them as ad.Const(c)."
        )
    return UnsupportedError(
        f"torch: a numpy operation met a traced torch tensor{where}; numpy cannot see "
        f"torch's graph, so the gradient would be lost. Fix: compute with xp = "
        f"ad.array_namespace(x) instead of np.*, and wrap numpy constants with "
        f"xp.asarray(c) (no copy) or pass them as ad.Const(c) arguments."
    )


def _numpy_function(tb: TracebackType | None) -> str | None:
    """The public name (``"mean"``, ``"linalg.norm"``) of the first numpy function in the
    traceback, if a torch tensor is among its arguments (else the error is not ours)."""
    while tb is not None:
        frame = tb.tb_frame
        module = str(frame.f_globals.get("__name__", ""))
        if module.partition(".")[0] == "numpy":
            if not any(_holds_tensor(v) for v in frame.f_locals.values()):
                return None
            parts = module.split(".")
            sub = parts[1] if len(parts) > 1 else ""
            prefix = "" if sub.startswith("_") or sub in ("", "lib") else sub + "."
            return prefix + frame.f_code.co_name
        tb = tb.tb_next
    return None


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value[:64])
    return type(value).__module__.partition(".")[0] == "torch" and hasattr(value, "grad_fn")


def _numpy_calls_in(where: str) -> list[str]:
    """numpy functions named in the user's source line (operators and ufuncs leave no
    numpy frame behind, only the line)."""
    return list(dict.fromkeys(_NUMPY_CALL.findall(where.partition(": `")[2])))


def _xp_name(name: str) -> str:
    from ..xp.namespace import float64_namespace

    xp_name = _XP_NAMES.get(name, name)
    found: Any = float64_namespace()
    for part in xp_name.split("."):
        found = getattr(found, part, None)
    return f"xp.{xp_name}" if found is not None else "the matching xp function (Array API)"


def translate_backward(exc: BaseException) -> Exception | None:
    """The adswitch error for a torch error raised by the backward pass."""
    text = str(exc)
    if isinstance(exc, RuntimeError) and _VERSION_MARKER in text:
        detail = text.split("Hint:")[0].strip()
        return MutationError(
            f"torch: a value saved for the gradient was overwritten in place later in f "
            f"(torch says: {detail}). The gradient would be wrong, so none is returned. "
            f"{_FIX_COPY}{_FIX_MODE}"
        )
    return None


def mutated_argument(index: int, after: bool = False) -> MutationError:
    """The error for a differentiated argument whose data ``f`` changed in place.

    torch lets such writes through under ``torch.no_grad()``, through ``.data``, or into
    a view of a nested call's traced argument; the recorded gradient would then belong
    to the overwritten value. ``after``: a forward-mode jvp, whose arguments torch lets
    ``f`` write into at all -- the write is found after ``f`` (the caller's array holds it,
    as a plain call of ``f`` leaves it), and refused as every other operator refuses it.
    """
    if after:
        return MutationError(
            f"torch: f wrote in place into differentiated leaf #{index} during a jvp (the "
            f"caller's array holds the write, as a plain call of f leaves it); adswitch's "
            f"torch engine refuses such writes in every operator. {_FIX_COPY}{_FIX_MODE}"
        )
    return MutationError(
        f"torch: f wrote in place into differentiated leaf #{index} (under torch.no_grad(), "
        f"through .data, or through a view), so torch's recorded gradient would describe "
        f"the overwritten value. {_FIX_COPY}"
    )
