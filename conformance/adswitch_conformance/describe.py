"""How a wrong value reads in a report: every digit, and how far off it is.

numpy prints arrays with 8 significant digits, so ``got [-1. 2.], expected [-1. 2.]``
can describe a wrong result; the report shows what tells the two apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["exact", "got_expected"]


def exact(value: Any) -> str:
    """``value`` with the digits that round-trip each entry (17 significant digits).

    Example:
        >>> exact(np.array([1.0 + 1e-12, 2.0]))
        '[1.000000000001, 2.0]'
    """
    array = np.asarray(value)
    if array.dtype.kind not in "fc":
        return repr(array.tolist())
    return repr(array.astype(np.complex128 if array.dtype.kind == "c" else np.float64).tolist())


def got_expected(got: Any, expected: Any) -> str:
    """``got ..., expected ... (largest difference ...)`` for two arrays of one shape.

    Example:
        >>> got_expected(np.array([-1.0, 2.0 + 3e-9]), np.array([-1.0, 2.0]))
        'got [-1.0, 2.000000003], expected [-1.0, 2.0] (largest difference 3e-09 at [1])'
    """
    got64, ref64 = np.asarray(got), np.asarray(expected)
    text = f"got {exact(got64)}, expected {exact(ref64)}"
    if got64.shape != ref64.shape or got64.size == 0:
        return text
    diff = np.abs(got64.astype(np.complex128) - ref64.astype(np.complex128))
    if np.isnan(diff).all():
        return text + " (nan)"
    where = np.unravel_index(int(np.nanargmax(diff)), diff.shape)
    at = f" at [{','.join(map(str, where))}]" if where else ""
    return text + f" (largest difference {float(diff[where]):.3g}{at})"
