"""Turn torch's own errors about in-place writes and numpy mixing into adswitch errors.

torch detects two kinds of unsafe in-place writes, at different moments: writes into a
tensor being differentiated (a leaf, or a view of one) fail at the write, inside the
user's function; writes into a value that an earlier operation saved for the backward
pass fail later, when the backward pass checks the saved value's version counter. Both
are translated here into a ``MutationError`` that says where and how to fix it, with
torch's exception chained. Anything unrecognised is left alone (returns ``None``).
"""

from __future__ import annotations

from types import TracebackType

from adswitch.errors import MutationError, UnsupportedError
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
# Frames of adswitch, of this adapter and of torch are bookkeeping, not the user's line.
_NOT_USER = ("adswitch_torch", "torch")


def user_line(tb: TracebackType | None) -> str:
    """``" at file:line: `source`"`` for the innermost traceback frame outside torch
    and adswitch, or ``""``."""
    return kit_user_line(tb, skip=_NOT_USER)


def caller_line() -> str:
    """Like :func:`user_line`, for the innermost user frame of the current stack."""
    return kit_user_line(skip=_NOT_USER)


def translate_forward(exc: BaseException) -> Exception | None:
    """The adswitch error for a torch error raised while running the user's function."""
    text = str(exc)
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
        return UnsupportedError(
            f"torch: a numpy operation met a traced torch tensor"
            f"{user_line(exc.__traceback__)}; numpy cannot see torch's graph, so the "
            f"gradient would be lost. Fix: compute with xp = ad.array_namespace(x) instead "
            f"of np.*, and wrap numpy constants with xp.asarray(c) (no copy) or pass them "
            f"as ad.Const(c) arguments."
        )
    return None


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


def mutated_argument(index: int) -> MutationError:
    """The error for a differentiated argument whose data ``f`` changed in place.

    torch lets such writes through under ``torch.no_grad()``, through ``.data``, or into
    a view of a nested call's traced argument; the recorded gradient would then belong
    to the overwritten value.
    """
    return MutationError(
        f"torch: f wrote in place into differentiated leaf #{index} (under torch.no_grad(), "
        f"through .data, or through a view), so torch's recorded gradient would describe "
        f"the overwritten value. {_FIX_COPY}"
    )
