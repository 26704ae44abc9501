"""``a @ b`` where a zero factor contributes 0 even against an infinite one.

Derived pullbacks and pushforwards (:mod:`adswitch.derive`) contract a Jacobian built by
the engine with the caller's seeds. A Jacobian entry can be infinite (``sqrt`` at 0, the
kink convention's one-sided slope); IEEE gives ``0 * inf = nan``, so a zero cotangent
-- a structurally zero Jacobian entry -- would come back nan. Here a product with a zero
factor is 0; a product of a nonzero and an infinite factor is that signed infinity, and
opposite infinities in one sum are nan (as IEEE). The plain ``matmul`` is the result
whenever neither factor holds an infinity (one check on each).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["matmul_zero_safe"]


def matmul_zero_safe(xp: Any, a: Any, b: Any) -> Any:
    """``xp.matmul(a, b)`` (2-d ``a`` and ``b``) with ``0 * inf`` taken as 0 (module doc).

    Only for numpy arrays (the engines that take derived contractions hold numpy): an
    engine's own arrays may be traced (a truth test would end the trace) or on a device
    (a sync), and keep the plain ``matmul``."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        return xp.matmul(a, b)
    a_inf, b_inf = xp.isinf(a), xp.isinf(b)
    if not (bool(xp.any(a_inf)) or bool(xp.any(b_inf))):
        return xp.matmul(a, b)
    dtype = xp.result_type(a, b)

    def f(mask: Any) -> Any:
        return xp.astype(mask, dtype)

    # The finite terms (infinite entries taken as 0), then per entry of the result: does
    # it receive a +inf term, a -inf term (a nonzero times an infinity, with its sign)?
    finite = xp.matmul(xp.where(a_inf, 0.0, a), xp.where(b_inf, 0.0, b))
    a_pos, a_neg, b_pos, b_neg = a > 0, a < 0, b > 0, b < 0
    ai_pos, ai_neg = f(a_inf & a_pos), f(a_inf & a_neg)
    bi_pos, bi_neg = f(b_inf & b_pos), f(b_inf & b_neg)
    pos = (
        xp.matmul(ai_pos, f(b_pos))
        + xp.matmul(ai_neg, f(b_neg))
        + xp.matmul(f(a_pos), bi_pos)
        + xp.matmul(f(a_neg), bi_neg)
    ) > 0
    neg = (
        xp.matmul(ai_pos, f(b_neg))
        + xp.matmul(ai_neg, f(b_pos))
        + xp.matmul(f(a_pos), bi_neg)
        + xp.matmul(f(a_neg), bi_pos)
    ) > 0
    inf = float("inf")
    out = xp.where(pos, finite + inf, xp.where(neg, finite - inf, finite))
    return xp.where(pos & neg, float("nan"), out)
