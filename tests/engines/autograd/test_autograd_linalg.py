"""The autograd engine's ``linalg`` extension, differentiated: every function's gradient
(float64 and float32), forward-mode derivative and second derivatives (forward over
reverse, and reverse over reverse) against finite differences of the same code on
plain numpy -- never autograd against itself. Decompositions are differentiated through
quantities their sign and basis conventions do not change (``V**2``, ``U diag(c) V^T``,
QR made unique by a positive diagonal of ``R``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd

pytest.importorskip("autograd")

import adswitch as ad

B = "autograd"
RNG = np.random.default_rng(7)
SQUARE = RNG.standard_normal((4, 4)) + 3.0 * np.eye(4)
_root = RNG.standard_normal((4, 4))
SPD = _root @ _root.T + 2.0 * np.eye(4)
TALL = RNG.standard_normal((5, 3))
WIDE = RNG.standard_normal((3, 5))
STACK = RNG.standard_normal((2, 3, 3)) + 2.0 * np.eye(3)
VECTOR = RNG.uniform(-2.0, 2.0, 6)
RHS = RNG.standard_normal((4, 2))
COLUMN = RNG.standard_normal(4)


def _flat(xp: Any, *parts: Any) -> Any:
    return xp.concat([xp.reshape(p, (-1,)) for p in parts])


def _eigh_invariants(xp: Any, x: Any) -> Any:
    w, v = xp.linalg.eigh(x)
    c = xp.asarray(np.linspace(0.5, 2.0, 4), dtype=x.dtype)
    return _flat(xp, w, v * v, (v * c) @ xp.linalg.matrix_transpose(v))


def _svd_invariants(xp: Any, x: Any, full: bool) -> Any:
    u, s, vh = xp.linalg.svd(x, full_matrices=full)
    c = xp.asarray(np.linspace(0.5, 2.0, s.shape[-1]), dtype=x.dtype)
    return _flat(xp, s, u * u, vh * vh, (u * c) @ vh)


def _qr_unique(xp: Any, x: Any) -> Any:
    """Q and R with R's diagonal made positive (the unique factorisation)."""
    q, r = xp.linalg.qr(x)
    d = xp.sign(xp.linalg.diagonal(r))
    return _flat(xp, q * d, r * d[:, None])


Body = Callable[[Any, Any], Any]
CASES: list[tuple[str, Body, np.ndarray]] = [
    ("matmul", lambda xp, x: xp.linalg.matmul(x, xp.linalg.matrix_transpose(x)), TALL),
    ("tensordot", lambda xp, x: xp.linalg.tensordot(x, x[::-1], axes=([1], [1])), TALL),
    ("vecdot", lambda xp, x: xp.linalg.vecdot(x, x[::-1]), TALL),
    ("vecdot-axis", lambda xp, x: xp.linalg.vecdot(x, x[::-1], axis=-2), TALL),
    ("outer", lambda xp, x: xp.linalg.outer(x[0], x[1]), TALL),
    ("cross", lambda xp, x: xp.linalg.cross(x, x[::-1]), TALL),
    ("cross-axis-broadcast", lambda xp, x: xp.linalg.cross(x, x[:, :1], axis=-2), WIDE),
    ("trace", lambda xp, x: xp.linalg.trace(x, offset=1) + xp.linalg.trace(x), SQUARE),
    ("trace-stack", lambda xp, x: xp.linalg.trace(x), STACK),
    ("diagonal", lambda xp, x: xp.linalg.diagonal(x, offset=-1), SQUARE),
    ("vector_norm", lambda xp, x: xp.linalg.vector_norm(x), VECTOR),
    ("vector_norm-1", lambda xp, x: xp.linalg.vector_norm(x, ord=1), VECTOR),
    ("vector_norm-inf", lambda xp, x: xp.linalg.vector_norm(x, ord=xp.inf), VECTOR),
    ("vector_norm--inf", lambda xp, x: xp.linalg.vector_norm(x, ord=-xp.inf), VECTOR),
    ("vector_norm-3", lambda xp, x: xp.linalg.vector_norm(x, ord=3), VECTOR),
    ("vector_norm-0.5", lambda xp, x: xp.linalg.vector_norm(x, ord=0.5), VECTOR),
    ("vector_norm--1", lambda xp, x: xp.linalg.vector_norm(x, ord=-1), VECTOR),
    ("vector_norm-0", lambda xp, x: xp.linalg.vector_norm(x, ord=0) * x, VECTOR),
    (
        "vector_norm-axes",
        lambda xp, x: xp.linalg.vector_norm(x, axis=(0, 2), keepdims=True, ord=3),
        STACK,
    ),
    ("vector_norm-axis", lambda xp, x: xp.linalg.vector_norm(x, axis=-1), TALL),
    ("matrix_norm-fro", lambda xp, x: xp.linalg.matrix_norm(x), STACK),
    ("matrix_norm-nuc", lambda xp, x: xp.linalg.matrix_norm(x, ord="nuc"), TALL),
    ("matrix_norm-1", lambda xp, x: xp.linalg.matrix_norm(x, ord=1), SQUARE),
    ("matrix_norm--1", lambda xp, x: xp.linalg.matrix_norm(x, ord=-1), SQUARE),
    ("matrix_norm-inf", lambda xp, x: xp.linalg.matrix_norm(x, ord=xp.inf), WIDE),
    ("matrix_norm--inf", lambda xp, x: xp.linalg.matrix_norm(x, ord=-xp.inf), WIDE),
    ("matrix_norm-2", lambda xp, x: xp.linalg.matrix_norm(x, ord=2, keepdims=True), STACK),
    ("matrix_norm--2", lambda xp, x: xp.linalg.matrix_norm(x, ord=-2), TALL),
    ("det", lambda xp, x: xp.linalg.det(x), SQUARE),
    ("det-stack", lambda xp, x: xp.linalg.det(x), STACK),
    ("slogdet", lambda xp, x: xp.linalg.slogdet(x).logabsdet * xp.linalg.slogdet(x).sign, SQUARE),
    ("inv", lambda xp, x: xp.linalg.inv(x), SQUARE),
    ("inv-stack", lambda xp, x: xp.linalg.inv(x), STACK),
    ("solve-matrix", lambda xp, x: xp.linalg.solve(x, xp.asarray(RHS, dtype=x.dtype)), SQUARE),
    ("solve-vector", lambda xp, x: xp.linalg.solve(x, xp.asarray(COLUMN, dtype=x.dtype)), SQUARE),
    ("solve-rhs", lambda xp, x: xp.linalg.solve(xp.asarray(SPD, dtype=x.dtype), x), SQUARE),
    ("solve-both", lambda xp, x: xp.linalg.solve(x, x[:, :2] * x[:, 1:3]), SQUARE),
    ("solve-broadcast", lambda xp, x: xp.linalg.solve(x, x[0, :, :2]), STACK),
    ("cholesky", lambda xp, x: xp.linalg.cholesky(x), SPD),
    ("cholesky-upper", lambda xp, x: xp.linalg.cholesky(x, upper=True), SPD),
    ("eigh", _eigh_invariants, SPD),
    ("eigvalsh", lambda xp, x: xp.linalg.eigvalsh(x), SPD),
    ("svd-square", lambda xp, x: _svd_invariants(xp, x, True), SQUARE),
    ("svd-tall", lambda xp, x: _svd_invariants(xp, x, False), TALL),
    ("svd-wide", lambda xp, x: _svd_invariants(xp, x, False), WIDE),
    ("svdvals", lambda xp, x: xp.linalg.svdvals(x), WIDE),
    ("qr-tall", _qr_unique, TALL),
    ("qr-square", _qr_unique, SQUARE),
    ("qr-wide", _qr_unique, WIDE),
    ("pinv-tall", lambda xp, x: xp.linalg.pinv(x), TALL),
    ("pinv-wide", lambda xp, x: xp.linalg.pinv(x), WIDE),
    ("pinv-square", lambda xp, x: xp.linalg.pinv(x), SQUARE),
    ("matrix_power-3", lambda xp, x: xp.linalg.matrix_power(x, 3), SQUARE),
    ("matrix_power-5", lambda xp, x: xp.linalg.matrix_power(x, 5) * 1e-3, SQUARE),
    ("matrix_power--2", lambda xp, x: xp.linalg.matrix_power(x, -2), SQUARE),
    ("matrix_power-0", lambda xp, x: xp.linalg.matrix_power(x, 0) * x, SQUARE),
]
IDS = [c[0] for c in CASES]


def _weights(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(3).standard_normal(shape)


def _loss(body: Body) -> Callable[[Any], Any]:
    def loss(x: Any) -> Any:
        xp = ad.array_namespace(x)
        y = body(xp, x)
        return xp.sum(y * _weights(tuple(y.shape)).astype(np.float64))

    return loss


def _numpy_loss(body: Body) -> Callable[[np.ndarray], float]:
    def loss(x: np.ndarray) -> float:
        y = np.asarray(body(np, x))
        return float(np.sum(y * _weights(y.shape)))

    return loss


def _direction(x: np.ndarray, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, x.shape)


@pytest.mark.parametrize(("name", "body", "x"), CASES, ids=IDS)
def test_gradient_matches_finite_differences(name: str, body: Body, x: np.ndarray) -> None:
    (grad,) = ad.gradient(_loss(body), x.copy(), backend=B)
    expected = central_fd(_numpy_loss(body), x)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6 * np.abs(expected).max())


@pytest.mark.parametrize(("name", "body", "x"), CASES, ids=IDS)
def test_float32_gradient_is_float32_and_matches_float64_differences(
    name: str, body: Body, x: np.ndarray
) -> None:
    def loss32(v: Any) -> Any:
        xp = ad.array_namespace(v)
        y = body(xp, v)
        assert y.dtype == np.float32, f"{name}: {y.dtype}"  # float32 all the way
        return xp.sum(y * _weights(tuple(y.shape)).astype(np.float32))

    (grad,) = ad.gradient(loss32, x.astype(np.float32), backend=B)
    assert grad.dtype == np.float32
    expected = central_fd(_numpy_loss(body), x.astype(np.float32).astype(np.float64))
    np.testing.assert_allclose(grad, expected, rtol=2e-3, atol=2e-3 * np.abs(expected).max())


@pytest.mark.parametrize(("name", "body", "x"), CASES, ids=IDS)
def test_values_are_numpys_traced_and_untraced(name: str, body: Body, x: np.ndarray) -> None:
    from adswitch_autograd import namespace

    want = np.asarray(body(np, x))
    # numpy's own value to rounding: a contraction's summation order (vecdot) follows the
    # SIMD kernel numpy picks at run time, which moves the last bit.
    np.testing.assert_allclose(np.asarray(body(namespace, x)), want, rtol=4e-16, atol=0)
    seen = []

    def loss(v: Any) -> Any:
        xp = ad.array_namespace(v)
        y = body(xp, v)
        seen.append(np.array(y._value))
        return xp.sum(y)

    ad.gradient(loss, x.copy(), backend=B)
    np.testing.assert_allclose(seen[0], want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("name", "body", "x"), CASES, ids=IDS)
def test_jvp_matches_finite_differences(name: str, body: Body, x: np.ndarray) -> None:
    t = _direction(x, 5)
    _, dy = ad.jvp(lambda v: body(ad.array_namespace(v), v), (x.copy(),), (t,), backend=B)
    h = 1e-6
    expected = (np.asarray(body(np, x + h * t)) - np.asarray(body(np, x - h * t))) / (2 * h)
    np.testing.assert_allclose(dy, expected, rtol=1e-5, atol=1e-6 * np.abs(expected).max())


def _mixed_second_difference(loss: Callable[[np.ndarray], float], x: Any, u: Any, t: Any) -> float:
    """``u^T H t`` of the numpy loss by central second differences."""
    h = 1e-4

    def at(a: float, b: float) -> float:
        return loss(x + a * u + b * t)

    return (at(h, h) - at(h, -h) - at(-h, h) + at(-h, -h)) / (4 * h * h)


@pytest.mark.parametrize(("name", "body", "x"), CASES, ids=IDS)
def test_second_derivatives_match_second_differences(name: str, body: Body, x: np.ndarray) -> None:
    u, t = _direction(x, 11), _direction(x, 13)
    expected = _mixed_second_difference(_numpy_loss(body), x, u, t)
    (hv,) = ad.hvp(_loss(body), (x.copy(),), (t,), backend=B)  # forward over reverse

    def directional(v: Any) -> Any:  # reverse over reverse
        (g,) = ad.gradient(_loss(body), v)
        return ad.array_namespace(g).sum(g * t)

    (nested,) = ad.gradient(directional, x.copy(), backend=B)
    scale = max(1.0, abs(expected))
    assert float(np.sum(hv * u)) == pytest.approx(expected, rel=1e-4, abs=1e-4 * scale)
    assert float(np.sum(nested * u)) == pytest.approx(expected, rel=1e-4, abs=1e-4 * scale)


def test_decompositions_give_numpys_result_types_traced_at_every_depth() -> None:
    from adswitch_autograd import namespace

    calls = {
        "eigh": (lambda la, x: la.eigh(x), ("eigenvalues", "eigenvectors")),
        "qr": (lambda la, x: la.qr(x), ("Q", "R")),
        "slogdet": (lambda la, x: la.slogdet(x), ("sign", "logabsdet")),
        "svd": (lambda la, x: la.svd(x), ("U", "S", "Vh")),
    }
    for name, (call, fields) in calls.items():
        want = call(np.linalg, SPD)
        got = call(namespace.linalg, SPD)
        assert type(got) is type(want) and got._fields == fields, name
        seen: list[Any] = []

        def inner(v: Any, call: Any = call, seen: list[Any] = seen) -> Any:
            result = call(ad.array_namespace(v).linalg, v)
            seen.append(result)
            return ad.array_namespace(v).sum(result[-1])

        def outer(x: Any, inner: Any = inner) -> Any:
            (g,) = ad.gradient(inner, x * 1.0)
            return ad.array_namespace(g).sum(g * g) + inner(x)

        ad.gradient(outer, SPD.copy(), backend=B)
        for result in seen:  # nested, then at the outer call
            assert type(result) is type(want), name
            for part, expected in zip(result, want, strict=True):
                np.testing.assert_allclose(np.asarray(_raw(part)), expected, atol=1e-12)


def _raw(x: Any) -> Any:
    while hasattr(x, "_value") and hasattr(x, "_node"):
        x = x._value
    return x
