"""Closed forms and programs for pow with a differentiated exponent (shared by the pow tests).

The engines' own pow rules get higher derivatives at ``e == 0`` wrong (torch masks its
``d/db`` there, HIPS autograd uses ``b ** where(e, e - 1, 1)``); these are the references.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad

TOL: dict[str, Any] = dict(rtol=1e-12, atol=1e-12)


def pow_sum(e: Any, b: Any) -> Any:
    xp = ad.array_namespace(e, b)
    return xp.sum(xp.pow(b, e))


def base_grad_sum(e: Any, b: Any) -> Any:
    """sum over the inner d/db sum(b**e) = e b**(e-1): its d/de needs d2/(de db) at e == 0."""
    xp = ad.array_namespace(e, b)
    return xp.sum(ad.gradient(pow_sum, e, b)[1])


def closed_mixed(e: Any, b: Any) -> Any:
    """d/de [e b**(e-1)] = b**(e-1) (1 + e log b)."""
    return b ** (e - 1) * (1 + e * np.log(b))


E = np.array([0.0, 0.5, 0.0, -1.0, 2.0])
BASE = np.array([0.625, 0.625, 2.0, 1.5, 1.75])


def op_pow_sum(e: Any, b: Any) -> Any:
    xp = ad.array_namespace(e, b)
    return xp.sum(b**e)


def op_base_grad_sum(e: Any, b: Any) -> Any:
    xp = ad.array_namespace(e, b)
    return xp.sum(ad.gradient(op_pow_sum, e, b)[1])
