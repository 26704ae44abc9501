"""torch's ``xp.linalg`` rules (``adswitch_torch.linalg``) at regular points: every
function they cover, first order (reverse and forward), second order and batched stacks,
against finite differences of the same function run by numpy -- and torch's own numbers
(the rules hand regular points to torch, or compute what torch computes).

The degenerate points are in ``test_torch_linalg_degenerate``; the oracle (central
differences with Richardson extrapolation, and mixed second differences) is here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")

import array_api_compat.torch.linalg as compat
import torch
from adswitch_torch.xp.namespace import float64_namespace

import adswitch as ad
from tests.support.linalg_regular_cases import (
    NAMES,
    STACKS,
    check_batched_jacobians,
    check_gradient_and_jvp,
    check_hessian,
    det,
    eigvalsh,
    fd_gradient,
    regular,
    spread,
    svdvals,
    weights,
    xp_of,
)

B = "torch"


@pytest.mark.parametrize("name", NAMES)
def test_gradient_and_jvp_match_finite_differences(name: str) -> None:
    check_gradient_and_jvp(name, B)


@pytest.mark.parametrize("name", NAMES)
def test_hessian_matches_second_differences(name: str) -> None:
    check_hessian(name, B)


@pytest.mark.parametrize("name", STACKS)
def test_batched_jacobians_of_stacks(name: str) -> None:
    """A Jacobian's rows are one batched backward pass (vmap); forward mode, columns."""
    check_batched_jacobians(name, B)


def test_regular_points_give_torch_s_own_numbers() -> None:
    """Where the point is regular the wrappers return torch's own results (and rules)."""
    la = float64_namespace().linalg
    a = torch.tensor(regular(3, 15), requires_grad=True)
    for name in ("det", "eigh", "eigvalsh", "svd", "svdvals", "slogdet", "qr"):
        ours, native = getattr(la, name)(a), getattr(compat, name)(a)
        ours = ours if isinstance(ours, tuple) else (ours,)
        native = native if isinstance(native, tuple) else (native,)
        for o, n in zip(ours, native):
            assert o.grad_fn.name() == n.grad_fn.name(), name
    assert la.det is not compat.det and la.matmul is compat.matmul


def test_float32_gradients() -> None:
    x = spread(3, 3, 16).astype(np.float32)
    for f in (det, svdvals, eigvalsh):
        (g,) = ad.gradient(f, x.copy(), backend=B)
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, fd_gradient(f, x.astype(np.float64)), rtol=2e-3, atol=2e-3)


_SYMMETRIC_READERS = {
    "eigh": lambda xp, x: xp.sum(
        weights(x)
        * ((lambda r: (r[1] * r[0][None, :]) @ xp.matrix_transpose(r[1]))(xp.linalg.eigh(x)))
    ),
    "eigvalsh": lambda xp, x: xp.sum(xp.linalg.eigvalsh(x) * xp.asarray([1.0, 2.0, 3.0])),
    "cholesky": lambda xp, x: xp.sum(weights(x) * xp.linalg.cholesky(x)),
}


@pytest.mark.parametrize("name", sorted(_SYMMETRIC_READERS))
def test_forward_and_reverse_follow_one_convention_for_unsymmetric_tangents(name: str) -> None:
    """A plain matrix argument read by one triangle: ``jvp`` along each ``E_ij`` (tangents
    that are not symmetric) equals the gradient's entry, and both the symmetric convention's (the
    function of ``(x + x^T) / 2``, by finite differences in numpy). torch's own forward
    rules of ``eigh`` and ``cholesky`` took such tangents as symmetric ones."""
    spd = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]])

    def f(x: Any) -> Any:
        return _SYMMETRIC_READERS[name](xp_of(x), x)

    x = torch.tensor(spd)
    reverse = ad.gradient(f, x, backend=B)[0].numpy()
    forward = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):  # one unbatched jvp each: torch's own forward AD
            tangent = torch.zeros(3, 3, dtype=torch.float64)
            tangent[i, j] = 1.0
            forward[i, j] = float(ad.jvp(f, (x,), (tangent,), backend=B)[1])
    h, expected = 1e-6, np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            d = np.zeros((3, 3))
            d[i, j] = h
            up, down = (spd + s * (d + d.T) / 2 for s in (1.0, -1.0))
            expected[i, j] = (float(f(up)) - float(f(down))) / (2 * h)
    np.testing.assert_allclose(reverse, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(forward, reverse, rtol=1e-10, atol=1e-12)
