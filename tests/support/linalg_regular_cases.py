"""The oracle and the cases of ``test_jax_linalg`` and ``test_torch_linalg`` (the engines'
``xp.linalg`` rules at regular points): central differences with Richardson
extrapolation and mixed second differences of the same function run by numpy, every
function the rules cover, and the checks both engines' tests run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad

_rng = np.random.default_rng(7)
C3 = _rng.standard_normal((3, 3))


def weights(x: Any) -> Any:
    """Fixed weights shaped like one matrix of ``x``, in ``x``'s namespace."""
    m, n = x.shape[-2:]
    return xp_of(x).asarray(np.random.default_rng(m * 10 + n).standard_normal((m, n)))


def xp_of(x: Any) -> Any:
    return ad.array_namespace(x)


def sym(x: Any) -> Any:
    return (x + xp_of(x).linalg.matrix_transpose(x)) / 2.0


def value(f: Callable[[Any], Any], x: np.ndarray) -> float:
    return float(np.asarray(f(np.array(x, dtype=np.float64))))


def fd_gradient(f: Callable[[Any], Any], x: np.ndarray, h: float = 1e-4) -> np.ndarray:
    """Central differences of ``f`` run by numpy, Richardson-extrapolated (error h^4)."""
    grad = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[i] = h
        near = value(f, x + e) - value(f, x - e)
        far = value(f, x + 2 * e) - value(f, x - 2 * e)
        grad[i] = (8 * near - far) / (12 * h)
    return grad


def fd_second(f: Callable[[Any], Any], x: np.ndarray, u: np.ndarray, v: np.ndarray) -> float:
    """``u^T H v`` by a mixed second difference of ``f`` run by numpy (step 1e-4)."""
    h = 1e-4
    total = sum(su * sv * value(f, x + h * (su * u + sv * v)) for su in (1, -1) for sv in (1, -1))
    return total / (4 * h * h)


def spread(m: int, n: int, seed: int, *stack: int) -> np.ndarray:
    """Matrices with the distinct singular values 3.5, 2.5, 1.5, ..."""
    rng = np.random.default_rng(seed)
    k = min(m, n)
    u = np.linalg.qr(rng.standard_normal((*stack, m, k)))[0]
    v = np.linalg.qr(rng.standard_normal((*stack, n, k)))[0]
    return (u * (np.arange(k, 0.0, -1.0) + 0.5)[..., None, :]) @ np.swapaxes(v, -1, -2)


def regular(n: int, seed: int, *stack: int) -> np.ndarray:
    return 1.5 * np.eye(n) + np.random.default_rng(seed).uniform(-0.4, 0.4, (*stack, n, n))


# -- the functions: each sign- and convention-invariant, so numpy's value is the oracle ----
def det(x: Any) -> Any:
    xp = xp_of(x)
    return xp.sum(xp.linalg.det(x) ** 2) + xp.sum(xp.linalg.det(x))


def slogdet(x: Any) -> Any:
    xp = xp_of(x)
    sign, logabs = xp.linalg.slogdet(x)
    return xp.sum(sign * logabs**2)


def eigh(x: Any) -> Any:
    xp = xp_of(x)
    w, v = xp.linalg.eigh(sym(x))
    quadratic = xp.sum(v * (xp.asarray(C3) @ v), axis=-2)  # v_i^T C v_i
    return xp.sum(quadratic * xp.asarray([1.0, -2.0, 0.5])) + xp.sum(w**3)


def eigvalsh(x: Any) -> Any:
    xp = xp_of(x)
    return xp.sum(xp.sin(xp.linalg.eigvalsh(sym(x))) * xp.asarray([1.0, 2.0, 3.0]))


def svd(x: Any) -> Any:
    xp = xp_of(x)
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    return xp.sum((u * xp.sin(s)[..., None, :]) @ vh * weights(x)) + xp.sum(s**3)


def svdvals(x: Any) -> Any:
    xp = xp_of(x)
    return xp.sum(xp.exp(xp.linalg.svdvals(x)) * xp.asarray([1.0, -1.0, 2.0]))


def norms(x: Any) -> Any:
    la = xp_of(x).linalg
    return la.matrix_norm(x, ord=2) ** 2 + la.matrix_norm(x, ord=-2) + la.matrix_norm(x, ord="nuc")


def qr(x: Any) -> Any:
    xp = xp_of(x)
    q, r = xp.linalg.qr(x)
    d = xp.linalg.diagonal(r)
    return xp.sum(xp.sin(q * d[..., None, :]) * weights(q)) + xp.sum((r * d[..., :, None]) ** 2)


CASES: dict[str, tuple[Callable[[Any], Any], np.ndarray]] = {
    "det": (det, regular(3, 1)),
    "det_stack": (det, regular(3, 2, 2)),
    "slogdet": (slogdet, -regular(3, 3)),
    "eigh": (eigh, regular(3, 4) * 2.0 + np.diag([0.0, 1.0, 3.0])),
    "eigh_stack": (eigh, regular(3, 5, 2) + np.diag([0.0, 1.0, 3.0])),
    "eigvalsh": (eigvalsh, regular(3, 6) + np.diag([0.0, 1.0, 3.0])),
    "svd_tall": (svd, spread(4, 3, 7)),
    "svd_wide": (svd, spread(3, 5, 8)),
    "svd_stack": (svd, spread(4, 3, 9, 2)),
    "svdvals": (svdvals, spread(3, 3, 10)),
    "matrix_norm": (norms, spread(4, 3, 11)),
    "qr": (qr, spread(4, 3, 12)),
    "qr_wide": (qr, spread(3, 5, 17)),
}
NAMES = sorted(CASES)


def check_gradient_and_jvp(name: str, backend: str) -> None:
    """The gradient and a jvp of case ``name`` against central differences in numpy."""
    f, x = CASES[name]
    val, (g,) = ad.withgradient(f, x.copy(), backend=backend)
    assert float(val) == pytest.approx(value(f, x), rel=1e-12, abs=1e-12)
    expected = fd_gradient(f, x)
    np.testing.assert_allclose(g, expected, rtol=1e-7, atol=1e-8)
    t = np.random.default_rng(13).standard_normal(x.shape)
    _, tangent = ad.jvp(f, (x.copy(),), (t,), backend=backend)
    assert float(tangent) == pytest.approx(float(np.sum(expected * t)), rel=1e-7, abs=1e-8)


def check_hessian(name: str, backend: str) -> None:
    """``u^T H v`` of case ``name`` against mixed second differences in numpy."""
    f, x = CASES[name]
    (hess,) = ad.hessian(f, x.copy(), backend=backend)
    u, v = np.random.default_rng(14).standard_normal((2, *x.shape))
    got = u.ravel() @ np.asarray(hess[0]).reshape(x.size, x.size) @ v.ravel()
    assert got == pytest.approx(fd_second(f, x, u, v), rel=1e-5, abs=1e-5)


STACKS = ["det_stack", "eigh_stack", "svd_stack"]


def check_batched_jacobians(name: str, backend: str) -> None:
    """A Jacobian's rows are one batched backward pass (vmap); forward mode, columns."""
    f, x = CASES[name]

    def per_matrix(y: Any) -> Any:
        xp = xp_of(y)
        return xp.stack([f(y[i]) for i in range(y.shape[0])])

    expected = np.stack([fd_gradient(lambda y, i=i: per_matrix(y)[i], x) for i in range(2)])
    for mode in ("reverse", "forward"):
        (jac,) = ad.jacobian(per_matrix, x.copy(), backend=backend, mode=mode)
        np.testing.assert_allclose(np.asarray(jac), expected, rtol=1e-7, atol=1e-8)
