"""The entry points: ``withgradient`` and ``gradient``, which is it minus the value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from adswitch.accepts import check_flag
from adswitch.call import run_gradient, start
from adswitch.compilers import outside_compilers
from adswitch.spec import Backend

__all__ = ["WithGradient", "gradient", "withgradient"]


class WithGradient(NamedTuple):
    """The result of :func:`withgradient`: the function's whole output and the gradients."""

    val: Any
    grad: tuple[Any, ...]


@outside_compilers
def withgradient(
    f: Callable[..., Any], *args: Any, backend: str | Backend | None = None, zero: bool = True
) -> WithGradient:
    """Evaluate ``f(*args)`` and its gradient with respect to every non-``Const`` argument.

    Args:
        f: the function. It returns a real scalar (a Python number or a 0-d floating
            array), or a tuple/list/namedtuple/dict whose first element is one; only
            that first element is differentiated, the rest rides along (aux outputs).
        *args: the arguments, each plain (differentiated; gradient returned as a new
            tree of the same type), ``Duplicated(x, dx)`` (gradient added into ``dx`` in
            place; the entry is ``dx`` itself) or ``Const(x)`` (not differentiated; entry
            ``None``). Trees may be dicts, lists, tuples, namedtuples, dataclasses or
            registered types; the same array object at several places is one parameter
            whose total gradient sits at its first occurrence (``None`` at the others).
        backend: the engine's name or object; by default the enclosing call's engine,
            then ``ad.use``, ``ADSWITCH_BACKEND``, the arguments' array types, ``"tape"``.
        zero: zero ``Duplicated`` shadows before adding (``False`` accumulates).

    Returns:
        ``WithGradient(val, grad)``: ``val`` is ``f``'s whole output with arrays concrete,
        in the caller's array kind; ``grad`` has one entry per argument.

    Raises:
        ActivityError, OutputError, AliasingError, MutationError, UnsupportedError,
        BackendUnavailableError: each message says the fix. Exceptions raised by ``f``
        propagate unchanged. On any exception, no ``Duplicated`` shadow has been touched.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> def loss(w, x):
        ...     xp = ad.array_namespace(w)
        ...     y = xp.sum(w * x)
        ...     return y, "aux"
        >>> out = ad.withgradient(loss, np.array([1.0, 2.0]), ad.Const(np.array([3.0, 4.0])))
        >>> float(out.val[0]), out.val[1], out.grad[0].tolist(), out.grad[1]
        (11.0, 'aux', [3.0, 4.0], None)
    """
    if zero is not True and zero is not False:
        check_flag("zero", zero)
    return WithGradient(
        *run_gradient(start(f, args, backend, "withgradient"), f, zero, "withgradient")
    )


@outside_compilers
def gradient(
    f: Callable[..., Any], *args: Any, backend: str | Backend | None = None, zero: bool = True
) -> tuple[Any, ...]:
    """The gradient of ``f`` at ``args``: :func:`withgradient` without the value.

    Returns:
        One entry per positional argument (see :func:`withgradient`).

    Example:
        >>> import adswitch as ad, numpy as np
        >>> ad.gradient(lambda x: ad.array_namespace(x).sum(x**2), np.array([1.0, 2.0]))
        (array([2., 4.]),)
    """
    if zero is not True and zero is not False:  # (the flag check inline: the hot path)
        check_flag("zero", zero)
    return run_gradient(start(f, args, backend, "gradient"), f, zero, "gradient")[1]
