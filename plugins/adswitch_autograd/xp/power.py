"""``pow``: ``x1 ** x2`` with exact derivatives, to every order, in a traced exponent.

autograd's rule for ``d/db b ** e`` is ``e * b ** where(e, e - 1, 1)`` (a guard against
``0 * inf`` at ``b == 0``), so its derivative with respect to ``e`` -- a nested gradient,
e.g. a loss on ``ad.gradient(h, e, b)[1]`` differentiated by ``e`` -- is ``b`` at
``e == 0`` instead of ``b ** -1``: a silently wrong number. ``pow(b, e)`` therefore takes
its own primitive when ``e`` is traced and the result is real floating (a constant
exponent keeps ``anp.power``): value ``np.power(b, e)``; ``d/db = e * pow(b, e - 1)`` and
``d/de = pow(b, e) * log(b)``, each written with this same ``pow``, so every order is
right (forward mode uses the same slopes). The only masks are at ``b == 0``, where
``b ** e`` is not smooth in ``e``: there ``d/db = 0`` where ``e == 0`` (``b ** 0`` is
constant), ``d/de = 0`` where ``e >= 0`` (``0 ** e`` is 0 for ``e > 0``) and ``-inf`` for
``e < 0``; their own derivatives at those points are those of the masks (0) and are not
meaningful. For ``b < 0`` the value is nan
unless ``e`` is an integer, and every derivative with respect to ``e`` is nan (as
autograd's own ``d/de``; ``b ** e`` is real only at integer ``e``).

Inside adswitch calls the operators ``b ** e``, ``2.0 ** e`` and ``b **= e`` on traced
values take this same rule (:mod:`.operators`). Limitation: calling
``autograd.numpy.power`` (or ``anp.float_power``) directly keeps autograd's rule; write
``xp.pow(b, e)`` or ``b ** e``.
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defvjp, primitive
from autograd.numpy.numpy_vjps import unbroadcast_f
from autograd.tracer import getval

from .kinks import power
from .searching import where
from .support import is_traced

__all__ = ["pow"]


def pow(x1: Any, x2: Any, /) -> Any:
    """``x1 ** x2``; exact nested derivatives in a traced exponent (see the module doc).

    Example:
        >>> pow(np.asarray([2.0, 0.5]), 2.0)
        array([4.  , 0.25])
    """
    if not is_traced(x2):
        return power(x1, x2)  # zero seeds at an infinite slope (``kinks``)
    if isinstance(x1, (list, tuple)):  # ``[2.0, 3.0] ** e``; entries may be traced
        x1 = anp.array(x1)
    if np.result_type(getval(x1), getval(x2)).kind != "f":
        return anp.power(x1, x2)
    return _traced_pow(x1, x2)


@primitive  # type: ignore[untyped-decorator]
def _traced_pow(base: Any, exponent: Any) -> Any:
    return np.power(base, exponent)


def _base_slope(base: Any, exponent: Any) -> Any:
    # d/db b**e = e b**(e-1); b**0 is constant (also at b == 0, where e b**-1 would be
    # 0 * inf): 0 there, with a safe base so no nan leaks into the unselected branch.
    flat = (getval(base) == 0) & (getval(exponent) == 0)
    safe = where(flat, 1.0, base)
    with np.errstate(divide="ignore"):  # 0 ** (e - 1) for e < 1: inf, the right slope
        powered = _traced_pow(safe, exponent - 1.0)
    return where(flat, 0.0, exponent * powered)


def _exponent_slope(ans: Any, base: Any, exponent: Any) -> Any:
    # d/de b**e = b**e log b; 0**e is 0 for e > 0 (1 at e == 0): 0 there. For b < 0 the
    # log is nan, as is the derivative (b**e is real only at integer e).
    flat = (getval(base) == 0) & (getval(exponent) >= 0)
    safe = where(flat, 1.0, base)
    with np.errstate(invalid="ignore", divide="ignore"):
        log_base = anp.log(safe)
    return where(flat, 0.0, ans * log_base)


defvjp(
    _traced_pow,
    lambda ans, base, exponent: unbroadcast_f(base, lambda g: g * _base_slope(base, exponent)),
    lambda ans, base, exponent: unbroadcast_f(
        exponent, lambda g: g * _exponent_slope(ans, base, exponent)
    ),
)
# Forward mode, from the same slopes: every order stays exact.
defjvp(
    _traced_pow,
    lambda g, ans, base, exponent: g * _base_slope(base, exponent),
    lambda g, ans, base, exponent: g * _exponent_slope(ans, base, exponent),
)
