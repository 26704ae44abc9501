"""What the ``linalg`` rules share: batched matrix algebra written with differentiable
operations (so every rule is itself differentiable, to any order), the triangle a
symmetric input is read from, and the tests for degenerate spectra.

Every rule is written for a stack of matrices (``(..., M, N)``) and for real floating
dtypes; constants it makes take the input's dtype, so a float32 input gets float32
derivatives.
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defvjp, primitive
from autograd.numpy.numpy_vjps import unbroadcast

from adswitch.errors import UnsupportedError
from adswitch.spec import any_beyond
from adswitch.spec import close_pairs as _close_pairs
from adswitch.spec import negligible as _negligible

from ...mutation.writes import buffer_write
from ...tracing.boxes import raw_value
from ..support import is_traced

__all__ = [
    "T",
    "check_tangent",
    "check_values",
    "close_pairs",
    "diagonal",
    "differences",
    "eye",
    "inverse_gaps",
    "lower_read",
    "lower_tangent",
    "matmul",
    "negligible",
    "refuse",
    "refuse_vectors",
    "solve_left",
    "solve_right",
    "spread",
    "upper_read",
    "upper_tangent",
]

matmul = anp.matmul


def T(a: Any) -> Any:
    """The transpose of each matrix of a stack.

    Example:
        >>> T(np.arange(6.0).reshape(2, 3)).shape
        (3, 2)
    """
    return anp.swapaxes(a, -1, -2)


def eye(n: int, like: Any) -> np.ndarray:
    """The ``n`` by ``n`` identity in ``like``'s dtype."""
    return np.eye(n, dtype=np.result_type(raw_value(like)))


@primitive  # type: ignore[untyped-decorator]
def solve_left(a: Any, b: Any) -> Any:
    """``a^{-1} b`` for stacks of square ``a`` and of matrices ``b`` (their stack axes
    broadcast, as numpy's ``solve`` of a ``b`` with two or more axes); differentiable in
    both, to any order. A singular ``a`` raises numpy's ``LinAlgError``.

    Example:
        >>> solve_left(2.0 * np.eye(2), np.ones((2, 1)))
        array([[0.5],
               [0.5]])
    """
    return np.linalg.solve(a, b)


def _solve_vjp_a(ans: Any, a: Any, b: Any) -> Any:
    meta = anp.metadata(a)
    # d(a^{-1} b) = -a^{-1} da x: the cotangent of a is -(a^{-T} g) x^T
    return lambda g: unbroadcast(-matmul(solve_left(T(a), g), T(ans)), meta)


def _solve_vjp_b(ans: Any, a: Any, b: Any) -> Any:
    meta = anp.metadata(b)
    return lambda g: unbroadcast(solve_left(T(a), g), meta)


defvjp(solve_left, _solve_vjp_a, _solve_vjp_b)
defjvp(
    solve_left,
    lambda g, ans, a, b: -solve_left(a, matmul(g, ans)),
    lambda g, ans, a, b: solve_left(a, g),
)


def solve_right(b: Any, a: Any) -> Any:
    """``b a^{-1}`` for stacks of matrices ``b`` and square ``a``: ``(a^{-T} b^T)^T``."""
    return T(solve_left(T(a), T(b)))


def lower_read(g: Any) -> Any:
    """The gradient with respect to a matrix of which only the lower triangle is read (as
    a symmetric matrix, ``M = tril(A) + tril(A, -1)^T``), from the gradient ``g`` with
    respect to ``M``: ``tril(g) + tril(g^T, -1)``. Above the diagonal it is zero: those
    elements are never read. For an input that is symmetric by construction (built from
    parameters), its parameters' gradient is the one the symmetric convention gives."""
    return anp.tril(g) + anp.tril(T(g), -1)


def upper_read(g: Any) -> Any:
    """As :func:`lower_read`, for a matrix of which only the upper triangle is read."""
    return anp.triu(g) + anp.triu(T(g), 1)


def lower_tangent(t: Any) -> Any:
    """The tangent of ``M = tril(A) + tril(A, -1)^T`` from ``A``'s tangent ``t``."""
    return anp.tril(t) + T(anp.tril(t, -1))


def upper_tangent(t: Any) -> Any:
    """The tangent of ``M = triu(A) + triu(A, 1)^T`` from ``A``'s tangent ``t``."""
    return anp.triu(t) + T(anp.triu(t, 1))


def close_pairs(values: np.ndarray) -> np.ndarray:
    """``(..., n, n)`` booleans: which pairs ``i != j`` of each row of ``values`` (sorted
    eigen- or singular values, ``(..., n)``) are equal to within rounding -- a degenerate
    spectrum, where eigen- and singular vectors are not unique.

    Rounding: every engine's one tolerance, ``16 n eps`` times the largest magnitude of
    the row (``adswitch.spec.tolerance``).

    Example:
        >>> close_pairs(np.array([1.0, 1.0, 2.0]))[0]
        array([False,  True, False])
    """
    close: np.ndarray = _close_pairs(np.asarray(values))
    return close


def spread(values: Any, mask: np.ndarray, scale: Any) -> bool:
    """Whether the entries of ``values`` picked by ``mask`` are not all zero to within
    ``sqrt(eps)`` times the largest magnitude in ``scale`` (``adswitch.spec.any_beyond``
    of the concrete values).

    Example:
        >>> spread(np.array([0.0, 1e-12]), np.array([True, True]), np.array([1.0]))
        False
    """
    return any_beyond(np.asarray(raw_value(values)), mask, np.asarray(raw_value(scale)))


def differences(values: Any) -> np.ndarray:
    """``(..., n, n)``: ``values[..., i] - values[..., j]`` of the concrete ``values``."""
    values = np.asarray(raw_value(values))
    gaps: np.ndarray = values[..., :, None] - values[..., None, :]
    return gaps


def inverse_gaps(values: Any, skip: np.ndarray) -> Any:
    """``F[..., i, j] = 1 / (values[..., j] - values[..., i])``, 0 on the diagonal and
    where ``skip``; differentiable in ``values``."""
    gaps = values[..., None, :] - values[..., :, None]
    masked = skip | np.eye(np.shape(skip)[-1], dtype=bool)
    return anp.where(masked, 0.0, 1.0 / anp.where(masked, 1.0, gaps))


@primitive  # type: ignore[untyped-decorator]
def diagonal(a: Any, *, offset: int = 0) -> Any:
    """numpy's diagonal ``offset`` of each matrix of a stack (a read-only view), with
    derivatives for every ``offset`` (autograd's own rule has ``offset=0`` only)."""
    return np.diagonal(a, offset=offset, axis1=-2, axis2=-1)


def _diagonal_positions(shape: tuple[int, ...], offset: int) -> tuple[Any, ...]:
    m, n = shape[-2:]
    count = max(0, min(m + min(offset, 0), n - max(offset, 0)))
    rows = np.arange(count) - min(offset, 0)
    return (Ellipsis, rows, rows + offset)


def _diagonal_vjp(ans: Any, a: Any, offset: int = 0) -> Any:
    shape = tuple(anp.shape(a))
    dtype = np.result_type(raw_value(a))
    return lambda g: buffer_write(np.zeros(shape, dtype), _diagonal_positions(shape, offset), g)


defvjp(diagonal, _diagonal_vjp)
defjvp(diagonal, lambda g, ans, a, offset=0: diagonal(g, offset=offset))


def check_values(name: str, cotangent: Any, close: np.ndarray) -> None:
    """Reverse mode at repeated eigen- or singular values (``close``: which pairs are
    equal): equal values must get equal cotangents (``cotangent``: their ``(..., n)``
    cotangents), concrete ones -- a traced cotangent (a forward-mode or higher
    derivative) cannot be checked, and is refused."""
    if not close.any():
        return
    if is_traced(cotangent):
        raise refuse(
            name,
            "it has a repeated value, where only first derivatives in reverse mode are "
            "computed (forward-mode and higher derivatives are not)",
            "differentiate once there, with ad.gradient, or move away from the repeated value",
        )
    if spread(differences(cotangent), close, cotangent):
        raise refuse(
            name,
            "two equal values get different cotangents: neither has a derivative of its own "
            "where they meet",
            "differentiate a symmetric function of the equal values (their sum)",
        )


def refuse_vectors(name: str, what: str) -> UnsupportedError:
    """The error for a derivative through eigen- or singular vectors at a degenerate
    spectrum: there the vectors' cotangent does not determine a derivative (two smooth
    functions can give the same cotangents and different gradients)."""
    return refuse(
        name,
        f"{what}, so the vectors are not unique there, and a function of them has no "
        "derivative that their cotangent determines",
        "differentiate functions of the values only (xp.linalg.eigvalsh, xp.linalg.svdvals) "
        "there, or move away from the repeated or zero value",
    )


def check_tangent(name: str, block: Any, close: np.ndarray) -> None:
    """Forward mode at repeated values: only a tangent that moves them together has a
    derivative there (``block``: ``V^T dA V``, whose entries between equal values must
    be those of a multiple of the identity -- any other splits them, and the sorted
    values have a kink), and it must be concrete to be checked."""
    if not close.any():
        return
    value = np.asarray(raw_value(block))
    diagonal = np.diagonal(value, axis1=-2, axis2=-1)
    if (
        is_traced(block)
        or spread(value, close, value)
        or spread(differences(diagonal), close, value)
    ):
        raise refuse(
            name,
            "forward mode at a repeated value, in a direction that splits it (the sorted "
            "values have a kink there)",
            "use reverse mode (ad.gradient) for symmetric functions of the values, or move "
            "away from the repeated value",
        )


def negligible(values: np.ndarray) -> np.ndarray:
    """Which singular values ``(..., n)`` are zero to within rounding (the tolerance of
    :func:`close_pairs`)."""
    small: np.ndarray = _negligible(np.asarray(values))
    return small


def refuse(name: str, why: str, fix: str) -> UnsupportedError:
    """The error for a derivative that does not exist at this point."""
    return UnsupportedError(
        f"autograd (HIPS) via adswitch: linalg.{name} has no derivative here: {why}. Fix: {fix}"
    )
