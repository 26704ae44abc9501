"""``xp.special``: special functions for scipy's Array API dispatch (``expit``, ``logit``,
``erf``, ``exp2``, ``exp10``, ``cosm1``).

Not part of the Array API standard (a ``special`` extension is being discussed); scipy
looks here when ``SCIPY_ARRAY_API=1``: ``scipy.special.expit(traced)`` uses the
namespace's ``special.expit`` when there is one, and otherwise calls its numpy ufunc on
autograd's arrays, which fails. Each function is composed of differentiable operations
(``erf`` is one primitive, with ``d erf = 2 / sqrt(pi) exp(-x^2)``), written so that no
branch overflows where it is not taken, and keeps scipy's accuracy. Integer and boolean
arguments are computed in float64, as scipy's. A name not here is an ``AttributeError``,
which makes scipy fall back to its own code.

Example:
    >>> import numpy as np, adswitch as ad
    >>> def f(x):
    ...     xp = ad.array_namespace(x)
    ...     return xp.sum(xp.special.expit(x))
    >>> ad.gradient(f, np.zeros(2), backend="autograd")[0]
    array([0.25, 0.25])
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defvjp, primitive

from .dtypes import astype
from .power import pow
from .searching import where
from .support import untraced

__all__ = ["cosm1", "erf", "exp2", "exp10", "expit", "logit"]


def _floating(x: Any) -> Any:
    """``x``, or ``x`` in float64 when it is not floating (scipy's ufuncs do the same)."""
    if np.result_type(untraced(x)).kind in "fc":
        return x
    return astype(x, np.float64)


def expit(x: Any, /) -> Any:
    """The logistic sigmoid ``1 / (1 + exp(-x))``, from ``exp(-|x|)`` (never overflows)."""
    x = _floating(x)
    nonneg = np.asarray(untraced(x)) >= 0
    e = anp.exp(where(nonneg, -x, x))  # -|x|, with the derivative of the side it comes from
    return where(nonneg, 1.0 / (1.0 + e), e / (1.0 + e))


def logit(x: Any, /) -> Any:
    """The log-odds ``log(x / (1 - x))``: near 1/2 as ``log1p(s) - log1p(-s)`` with
    ``s = 2x - 1`` (no cancellation), elsewhere as ``log(x) - log1p(-x)`` (accurate near
    0 and 1); ``-inf`` at 0, ``inf`` at 1, NaN outside ``[0, 1]``."""
    x = _floating(x)
    near = np.abs(np.asarray(untraced(x)) - 0.5) < 0.25
    s = 2.0 * where(near, x, 0.5) - 1.0  # 0 where not near: the branch stays finite
    with np.errstate(divide="ignore", invalid="ignore"):  # scipy's: -inf, inf, NaN quietly
        far = anp.log(where(near, 0.5, x)) - anp.log1p(-where(near, 0.5, x))
    return where(near, anp.log1p(s) - anp.log1p(-s), far)


@primitive  # type: ignore[untyped-decorator]
def _erf(x: Any) -> Any:
    # scipy is imported when first asked for (scipy itself asks for this function), so
    # that importing the namespace does not fix SCIPY_ARRAY_API before the user sets it
    return importlib.import_module("scipy.special").erf(x)


def _erf_slope(x: Any) -> Any:
    return (2.0 / math.sqrt(math.pi)) * anp.exp(-(x * x))


defvjp(_erf, lambda ans, x: lambda g: g * _erf_slope(x))
defjvp(_erf, lambda g, ans, x: g * _erf_slope(x))


def erf(x: Any, /) -> Any:
    """The error function (scipy's value; ``d erf = 2 / sqrt(pi) exp(-x^2) dx``)."""
    return _erf(_floating(x))


def exp2(x: Any, /) -> Any:
    """``2 ** x``."""
    return pow(2.0, _floating(x))


def exp10(x: Any, /) -> Any:
    """``10 ** x``."""
    return pow(10.0, _floating(x))


def cosm1(x: Any, /) -> Any:
    """``cos(x) - 1`` as ``-2 sin(x / 2) ** 2``, accurate for small ``x``."""
    half = anp.sin(_floating(x) / 2.0)
    return -2.0 * half * half
