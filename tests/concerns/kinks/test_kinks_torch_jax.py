"""The kink convention (symmetric-difference limits) on torch and jax.

Each case states its derivative at the kink in closed form (the convention's table) and
checks it against a central finite difference too, then against every mode of both
engines: reverse gradient, forward Jacobian, Hessian, prepared calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import array_api_compat.numpy
import numpy as np
import pytest

import adswitch as ad

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")

ENGINES = ("torch", "jax")
W = np.array([1.0, 2.0, 3.0])


def _xp(x: Any) -> Any:
    # numpy (the finite-difference oracle) through array_api_compat: ``sort(descending=)``
    return array_api_compat.numpy if isinstance(x, np.ndarray) else ad.array_namespace(x)


def _abs(x: Any) -> Any:
    return _xp(x).sum(_xp(x).abs(x))


def _clip(x: Any) -> Any:
    return _xp(x).sum(_xp(x).clip(x, -1.0, 1.0) * _xp(x).asarray(W))


def _sort(x: Any) -> Any:
    xp = _xp(x)
    return xp.sum(xp.sort(x) * xp.asarray(W))


def _sort_desc(x: Any) -> Any:
    xp = _xp(x)
    return xp.sum(xp.sort(x, descending=True) * xp.asarray(W))


def _sort_rows(x: Any) -> Any:
    xp = _xp(x)
    return xp.sum(xp.sort(x, axis=0) * xp.asarray(np.array([[1.0, 5.0], [2.0, 6.0], [4.0, 7.0]])))


def _pow(p: float) -> Callable[[Any], Any]:
    return lambda x: _xp(x).sum(_xp(x).pow(x, p))


def _abs_times_x(x: Any) -> Any:
    return _xp(x).sum(_xp(x).abs(x) * x)  # x |x|: f' = 2|x|, f'' = 2 sign(x), 0 at 0


def _sort_squared(x: Any) -> Any:
    xp = _xp(x)
    return xp.sum(xp.sort(x) ** 2 * xp.asarray(W))


def _pow_half(x: Any) -> Any:
    return _xp(x).sum(_xp(x).pow(x, 0.5))


def _pow_three_halves(x: Any) -> Any:
    return _xp(x).sum(_xp(x).pow(x, 1.5))


# name: (f, x, gradient at x by the table, Hessian at x or None where undefined)
CASES: dict[str, tuple[Callable[[Any], Any], np.ndarray, list[Any], Any]] = {
    "abs": (_abs, np.array([0.0, 2.0, -1.0]), [0.0, 1.0, -1.0], np.zeros((3, 3))),
    "clip": (_clip, np.array([-1.0, 1.0, 0.5]), [0.5, 1.0, 3.0], np.zeros((3, 3))),
    # sorted: [1, 2, 2] with weights [1, 2, 3]: the tied 2s share (2 + 3) / 2
    "sort": (_sort, np.array([2.0, 1.0, 2.0]), [2.5, 1.0, 2.5], np.zeros((3, 3))),
    "sort_desc": (_sort_desc, np.array([2.0, 1.0, 2.0]), [1.5, 3.0, 1.5], np.zeros((3, 3))),
    "sort_axis0": (
        _sort_rows,
        np.array([[3.0, 0.0], [3.0, 0.0], [1.0, 0.0]]),
        [[3.0, 6.0], [3.0, 6.0], [1.0, 6.0]],
        None,
    ),
    # the Hessian's own derivative of the primal must take the rule too
    "abs_times_x": (_abs_times_x, np.array([0.0, 1.0]), [0.0, 2.0], np.diag([0.0, 2.0])),
    # sorted [1, 2, 2], 2 w y = [2, 8, 12]: the tied pair shares 10; Hessian A diag(2w) A
    "sort_squared": (
        _sort_squared,
        np.array([2.0, 1.0, 2.0]),
        [10.0, 2.0, 10.0],
        np.array([[2.5, 0.0, 2.5], [0.0, 2.0, 0.0], [2.5, 0.0, 2.5]]),
    ),
    "pow0": (_pow(0.0), np.array([0.0, 2.0]), [0.0, 0.0], np.zeros((2, 2))),
    "pow1": (_pow(1.0), np.array([0.0, 2.0]), [1.0, 1.0], np.zeros((2, 2))),
    "pow2": (_pow(2.0), np.array([0.0, 2.0]), [0.0, 4.0], np.diag([2.0, 2.0])),
}


def _central(f: Callable[[Any], Any], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_table_matches_central_difference(name: str) -> None:
    """The closed forms are what a central difference converges to (numpy evaluation)."""
    f, x, grad, _ = CASES[name]
    np.testing.assert_allclose(_central(f, x), grad, atol=1e-5)  # x|x|: error h


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_forward_and_prepared(engine: str, name: str) -> None:
    f, x, grad, _ = CASES[name]
    expected = np.asarray(grad)
    (g,) = ad.gradient(f, x, backend=engine)
    np.testing.assert_allclose(g, expected, atol=1e-12)
    (j,) = ad.jacobian(f, x, backend=engine, mode="forward")
    np.testing.assert_allclose(j, expected, atol=1e-12)
    prep = ad.prepare(ad.gradient, f, x + 5.0, backend=engine)  # prepared off the kink
    np.testing.assert_allclose(prep(x)[0], expected, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(k for k, v in CASES.items() if v[3] is not None))
def test_hessian(engine: str, name: str) -> None:
    f, x, _, hess = CASES[name]
    (row,) = ad.hessian(f, x, backend=engine)
    np.testing.assert_allclose(row[0], hess, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_clip_bound_gets_the_other_half(engine: str) -> None:
    def f(x: Any, lo: Any, hi: Any) -> Any:
        return _xp(x).sum(_xp(x).clip(x, lo, hi))

    x, lo, hi = np.array([-1.0, 0.0, 1.0, 3.0]), np.array(-1.0), np.array(1.0)
    gx, glo, ghi = ad.gradient(f, x, lo, hi, backend=engine)
    np.testing.assert_allclose(gx, [0.5, 1.0, 0.5, 0.0])
    np.testing.assert_allclose(glo, 0.5)
    np.testing.assert_allclose(ghi, 1.5)  # half of x[2], all of x[3]

    def shifted(d: float) -> float:
        return float(f(x, lo + d, hi))

    np.testing.assert_allclose((shifted(1e-6) - shifted(-1e-6)) / 2e-6, glo, atol=1e-6)


def test_jax_rules_under_jit_vmap_and_nested_grad() -> None:
    xp = ad.array_namespace(jax.numpy.zeros(1))
    jnp = jax.numpy
    d_abs = jax.grad(lambda x: xp.abs(x))
    assert float(jax.jit(d_abs)(0.0)) == 0.0
    assert float(jax.grad(d_abs)(0.0)) == 0.0
    np.testing.assert_allclose(jax.vmap(d_abs)(jnp.array([-2.0, 0.0, 3.0])), [-1.0, 0.0, 1.0])
    np.testing.assert_allclose(jax.hessian(lambda x: xp.sum(xp.abs(x)))(jnp.zeros(2)), 0.0)
    d_sort = jax.jit(jax.grad(lambda x: xp.sum(xp.sort(x) * jnp.asarray(W))))
    np.testing.assert_allclose(d_sort(jnp.array([2.0, 1.0, 2.0])), [2.5, 1.0, 2.5])
    batched = jax.vmap(jax.grad(lambda x: xp.sum(xp.sort(x) * jnp.asarray(W))))
    rows = jnp.array([[2.0, 1.0, 2.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(batched(rows), np.array([[2.5, 1.0, 2.5], [2.0, 2.0, 2.0]]))
    d2_pow1 = jax.jit(jax.grad(jax.grad(lambda x: xp.pow(x, 1.0))))
    assert float(d2_pow1(0.0)) == 0.0


def test_torch_rules_double_backward_and_vmap() -> None:
    xp = ad.array_namespace(torch.zeros(1))
    x = torch.tensor([1.0, -1.0, 0.0], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(xp.sum(xp.clip(x, -1.0, 1.0) * x), x, create_graph=True)
    np.testing.assert_allclose(g.detach(), [1.5, -1.5, 0.0])  # clip'(x) x + clip(x)
    (h,) = torch.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h, [1.0, 1.0, 2.0])  # 2 clip'(x); clip'' = 0
    jac = torch.func.jacrev(lambda v: xp.sort(v))(torch.tensor([2.0, 1.0, 2.0]).double())
    np.testing.assert_allclose(jac.numpy(), np.array([[0, 1, 0], [0.5, 0, 0.5], [0.5, 0, 0.5]]))


@pytest.mark.parametrize("engine", ENGINES)
def test_smooth_points_unchanged(engine: str) -> None:
    """Away from kinks and ties the rules give the ordinary derivative (vs central)."""
    x = np.array([0.3, -0.7, 2.0])
    for f in (_abs, _clip, _sort, _sort_desc, _pow_half, _pow_three_halves):
        (g,) = ad.gradient(f, np.abs(x) if f is not _clip else x, backend=engine)
        np.testing.assert_allclose(g, _central(f, np.abs(x) if f is not _clip else x), atol=1e-6)
