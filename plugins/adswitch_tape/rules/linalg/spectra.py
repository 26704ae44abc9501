"""Where the rules of ``eigh`` and ``svd`` have no derivative: repeated eigenvalues and
repeated or zero singular values, and the errors that say so.

A repeated value (to rounding: the tolerance of ``helpers.gap_reciprocals``, so
exactly the pairs whose terms that mask drops) makes the vectors any rotation of one
another. There, a function of the vectors has no derivative its cotangent determines
(``sum(V diag(w - 1) V^T)`` and ``sum(w)`` get the same cotangents at the identity, and
have the gradients ``ones`` and ``I``); a function of the values has a first derivative
in reverse mode when it is symmetric in the repeated ones (equal cotangents), none when
it is not (a kink), none in forward mode along a direction that splits them, and no
second derivative in general (it goes through the vectors). The checks read concrete
values only: a traced cotangent, tangent or factorization (a higher derivative) at such
a point is refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError
from adswitch.spec import any_beyond
from adswitch.spec import close_pairs as _close_pairs
from adswitch.spec import negligible as _negligible

from ...core import Tracer, raw

__all__ = [
    "check_concrete", "check_tangent", "check_values", "close_pairs", "negligible",
    "refuse_vectors", "traced",
]  # fmt: skip

_KIND = {"eigen": "a repeated eigenvalue", "singular": "a repeated or zero singular value"}


def traced(*xs: Any) -> bool:
    """Whether any of ``xs`` is a tracer (a rule differentiated again)."""
    return any(type(x) is Tracer for x in xs)


def close_pairs(values: Any) -> np.ndarray:
    """``(..., n, n)`` booleans: the pairs ``i != j`` of the sorted ``values`` (``(...,
    n)``) equal to rounding (``adswitch.spec.close_pairs``)."""
    close: np.ndarray = _close_pairs(np.asarray(raw(values)))
    return close


def negligible(values: Any) -> np.ndarray:
    """Which of the nonnegative ``values`` (singular values) are 0 to rounding."""
    small: np.ndarray = _negligible(np.asarray(raw(values)))
    return small


def refuse_vectors(name: str, kind: str) -> UnsupportedError:
    """The error for a derivative through eigen- or singular vectors at a degenerate
    spectrum (``kind``: ``'eigen'`` or ``'singular'``)."""
    values = "xp.linalg.eigvalsh" if kind == "eigen" else "xp.linalg.svdvals"
    vectors = "eigenvectors" if kind == "eigen" else "singular vectors"
    return UnsupportedError(
        f"tape: the derivative of xp.linalg.{name}'s {vectors} at {_KIND[kind]}: the "
        "vectors are not unique there (any rotation of one another), and a function of "
        "them has no derivative their cotangent determines. Fix: differentiate functions "
        f"of the values only ({values}) there, or move away from the repeated value."
    )


def _refuse(name: str, kind: str, why: str, fix: str) -> UnsupportedError:
    return UnsupportedError(f"tape: xp.linalg.{name} at {_KIND[kind]}: {why}. Fix: {fix}.")


def check_concrete(name: str, kind: str, *xs: Any) -> None:
    """At a degenerate spectrum: refuse when any of ``xs`` (a cotangent, a tangent, the
    factorization) is traced -- the rule is being differentiated again."""
    if traced(*xs):
        raise _refuse(
            name,
            kind,
            "only first derivatives exist there (a second derivative goes through the "
            "vectors, which are not unique)",
            "differentiate once there (ad.gradient), or move away from the repeated value",
        )


def check_values(name: str, kind: str, cotangent: Any, close: np.ndarray, *saved: Any) -> None:
    """Reverse mode where ``close`` (the pairs of equal values) has any: the equal
    values' cotangents ``(..., n)`` must be equal and concrete, as must ``saved``."""
    if not close.any():
        return
    check_concrete(name, kind, cotangent, *saved)
    g = np.asarray(cotangent)
    if any_beyond(g[..., :, None] - g[..., None, :], close, g):
        raise _refuse(
            name,
            kind,
            "equal values get different cotangents, and neither has a derivative of its own "
            "where they meet (a kink)",
            "differentiate a symmetric function of the equal values (their sum), or move "
            "away from the repeated value",
        )


def check_tangent(name: str, kind: str, block: Any, close: np.ndarray, *saved: Any) -> None:
    """Forward mode where ``close`` has any pair: ``block`` (``V^T dx V``, symmetric, or
    ``sym(U^T dx V)``) must move the equal values together -- a multiple of the identity
    between them (any other direction splits them: the sorted values have a kink) -- and
    be concrete."""
    if not close.any():
        return
    check_concrete(name, kind, block, *saved)
    b = np.asarray(block)
    d = np.diagonal(b, axis1=-2, axis2=-1)
    splits = any_beyond(b, close, b) or any_beyond(d[..., :, None] - d[..., None, :], close, b)
    if splits:
        raise _refuse(
            name,
            kind,
            "forward mode in a direction that splits the repeated value (the sorted values "
            "have a kink there)",
            "use reverse mode (ad.gradient) for symmetric functions of the values, or move "
            "away from the repeated value",
        )
