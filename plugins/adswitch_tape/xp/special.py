"""``xp.special``: the special functions the tape composes of its primitives (``expit``,
``logit``, ``exp2``, ``exp10``, ``cosm1``).

Not part of the Array API standard (a ``special`` extension is being discussed); scipy
looks here when ``SCIPY_ARRAY_API=1``: ``scipy.special.expit(traced)`` dispatches on the
array's namespace and uses ``xp.special.expit`` when there is one -- without it scipy
converts the tape's arrays to numpy, which the tape refuses (``MutationError``). Each
function is written so that no branch overflows where it is not taken (an ``inf``
there would turn the zero gradient it receives into NaN) and keeps scipy's accuracy.
Integer and boolean arguments are computed in float64, as scipy's. A name not here is
an ``AttributeError``, which makes scipy fall back to its own (numpy) code.

Example:
    >>> import numpy as np, adswitch as ad
    >>> def f(x):
    ...     xp = ad.array_namespace(x)
    ...     return xp.sum(xp.special.expit(x))
    >>> ad.gradient(f, np.zeros(2), backend="tape")[0]
    array([0.25, 0.25])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array.tracer import Tracer, raw
from ..rules import primitives as P
from .elementwise import where

__all__ = ["cosm1", "exp2", "exp10", "expit", "logit"]


def _floating(x: Any) -> Any:
    """``x``, or ``x`` in float64 when it is not floating (scipy's ufuncs do the same)."""
    if np.dtype(np.result_type(raw(x))).kind in "fc":
        return x
    return P.astype(x, dtype=np.float64) if type(x) is Tracer else np.asarray(x, np.float64)


def expit(x: Any, /) -> Any:
    """The logistic sigmoid ``1 / (1 + exp(-x))``, from ``exp(-|x|)`` (never overflows)."""
    x = _floating(x)
    nonneg = raw(x) >= 0
    e = P.exp(where(nonneg, -x, x))  # -|x|, with the derivative of the side it comes from
    return where(nonneg, 1.0 / (1.0 + e), e / (1.0 + e))


def logit(x: Any, /) -> Any:
    """The log-odds ``log(x / (1 - x))``: near 1/2 as ``log1p(s) - log1p(-s)`` with
    ``s = 2x - 1`` (no cancellation), elsewhere as ``log(x) - log1p(-x)`` (accurate near
    0 and 1); ``-inf`` at 0, ``inf`` at 1, NaN outside ``[0, 1]``."""
    x = _floating(x)
    near = np.abs(raw(x) - 0.5) < 0.25
    s = 2.0 * where(near, x, 0.5) - 1.0  # 0 where not near: the branch stays finite
    with np.errstate(divide="ignore", invalid="ignore"):  # scipy's: -inf, inf, NaN quietly
        far = P.log(x) - P.log1p(-x)
    return where(near, P.log1p(s) - P.log1p(-s), far)


def exp2(x: Any, /) -> Any:
    """``2 ** x``."""
    return P.pow(2.0, _floating(x))


def exp10(x: Any, /) -> Any:
    """``10 ** x``."""
    return P.pow(10.0, _floating(x))


def cosm1(x: Any, /) -> Any:
    """``cos(x) - 1`` as ``-2 sin(x / 2) ** 2``, accurate for small ``x``."""
    half = P.sin(_floating(x) / 2.0)
    return -2.0 * half * half
