"""Host code with a rule: ``ad.custom_vjp(f, host=True)`` / ``ad.custom_jvp(g, host=True)``
(``adswitch.host_rules``, the engines' ``to_host``/``from_host`` hooks, jax's
``adswitch_jax.integrations.host``).

Oracles: closed forms -- the flow of ``dy/dt = A y`` is ``expm(A T) y0``; the gradient
of a loss of ``y(T)`` is ``expm(A T)^T g`` for ``y0`` and ``T * L(A^T T, g y0^T)`` (the
Fréchet derivative of ``expm``, ``scipy.linalg.expm_frechet``) for ``A``; the user's
adjoint is a second ``solve_ivp`` run backwards. Never an engine against itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import UnsupportedError, UsageError

scipy_integrate = pytest.importorskip("scipy.integrate")
scipy_linalg = pytest.importorskip("scipy.linalg")
for _module in ("torch", "jax", "autograd"):
    pytest.importorskip(_module)

ENGINES = ["tape", "torch", "jax", "autograd"]
A0 = np.array([[-0.5, 1.0], [-1.0, -0.3]])
Y0 = np.array([1.0, 0.5])
W = np.array([0.3, -1.2])
T = 1.3
TOL = dict(rtol=1e-11, atol=1e-12)


def _np(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().numpy()
    return np.asarray(value)


def solve(y0: np.ndarray, a: np.ndarray) -> np.ndarray:
    assert isinstance(y0, np.ndarray) and isinstance(a, np.ndarray)  # host code sees numpy
    sol = scipy_integrate.solve_ivp(lambda t, y: a @ y, (0.0, T), y0, **TOL)
    out: np.ndarray = sol.y[:, -1]
    return out


def adjoint(res: tuple[np.ndarray, np.ndarray], ct: np.ndarray) -> tuple[Any, Any]:
    """Backwards in time s = T - t: y' = -A y, lambda' = A^T lambda, dA' = lambda y^T."""
    y0, a = res
    n = y0.size

    def rhs(s: float, z: np.ndarray) -> np.ndarray:
        y, lam = z[:n], z[n : 2 * n]
        return np.concatenate([-(a @ y), a.T @ lam, np.outer(lam, y).ravel()])

    z0 = np.concatenate([solve(y0, a), np.asarray(ct), np.zeros(n * n)])
    z = scipy_integrate.solve_ivp(rhs, (0.0, T), z0, **TOL).y[:, -1]
    return z[n : 2 * n], z[2 * n :].reshape(n, n)


def flow_rule(**kw: Any) -> ad.custom_vjp:
    rule = ad.custom_vjp(solve, host=True, **kw)
    rule.defvjp(lambda y0, a: (solve(y0, a), (y0, a)), adjoint)
    return rule


def closed_form(y0: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    g = 2 * W * (scipy_linalg.expm(a * T) @ y0)
    gy0 = scipy_linalg.expm(a * T).T @ g
    ga = T * scipy_linalg.expm_frechet((a * T).T, np.outer(g, y0), compute_expm=False)
    return gy0, ga


def loss_of(rule: Any) -> Any:
    def loss(y0: Any, a: Any) -> Any:
        y = rule(y0, a)
        xp = ad.array_namespace(y)
        return xp.sum(y * y * xp.asarray(W))

    return loss


@pytest.mark.parametrize("engine", ENGINES)
def test_solve_ivp_adjoint_matches_expm(engine: str) -> None:
    rule = flow_rule(out_shape=np.empty(2))
    gy0, ga = ad.gradient(loss_of(rule), Y0, A0, backend=engine)
    want_y0, want_a = closed_form(Y0, A0)
    np.testing.assert_allclose(_np(gy0), want_y0, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(_np(ga), want_a, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("engine", ["tape", "torch", "autograd"])
def test_eager_engines_need_no_out_shape(engine: str) -> None:
    _, ga = ad.gradient(loss_of(flow_rule()), Y0, A0, backend=engine)
    np.testing.assert_allclose(_np(ga), closed_form(Y0, A0)[1], rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
def test_reverse_jacobian_is_expm(engine: str) -> None:
    jac = ad.jacobian(flow_rule(out_shape=np.empty(2)), Y0, A0, backend=engine)
    np.testing.assert_allclose(_np(jac[0]), scipy_linalg.expm(A0 * T), rtol=1e-8, atol=1e-9)


@pytest.mark.filterwarnings("ignore:tape. the prepared")  # (the tape traces every call then)
@pytest.mark.parametrize("engine", ENGINES)
def test_prepared_at_a_second_point(engine: str) -> None:
    rule = flow_rule(out_shape=np.empty(2))
    prepared = ad.prepare(ad.gradient, loss_of(rule), Y0, A0, backend=engine)
    for y0, a in [(Y0, A0), (np.array([-0.2, 0.7]), A0 + 0.1 * np.eye(2))]:
        gy0, ga = prepared(y0, a)
        want_y0, want_a = closed_form(y0, a)
        np.testing.assert_allclose(_np(gy0), want_y0, rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(_np(ga), want_a, rtol=1e-8, atol=1e-9)


def test_jax_without_out_shape_names_it() -> None:
    with pytest.raises(UsageError, match="out_shape="):
        ad.gradient(loss_of(flow_rule()), Y0, A0, backend="jax")


def test_out_shape_leaf_without_shape() -> None:
    with pytest.raises(UsageError, match=r"out_shape's leaf at .* give objects with \.shape"):
        ad.gradient(loss_of(flow_rule(out_shape="abc")), Y0, A0, backend="jax")


def test_out_shape_that_lies_about_the_shape() -> None:
    rule = flow_rule(out_shape=np.empty(3))
    total = lambda y0, a: ad.array_namespace(y0).sum(rule(y0, a))  # noqa: E731
    with pytest.raises(UsageError, match=r"shape \(2,\) where out_shape= \(or f\) says \(3,\)"):
        ad.gradient(total, Y0, A0, backend="jax")


def test_host_code_errors_reach_the_caller_on_jax() -> None:
    def broken(x: np.ndarray) -> np.ndarray:
        raise KeyError("the simulator failed")

    rule = ad.custom_vjp(broken, host=True, out_shape=np.empty(3))
    rule.defvjp(lambda x: (broken(x), None), lambda res, ct: (ct,))
    with pytest.raises(KeyError, match="the simulator failed"):
        ad.gradient(lambda x: ad.array_namespace(x).sum(rule(x)), np.ones(3), backend="jax")


def sine_vjp() -> ad.custom_vjp:
    rule = ad.custom_vjp(np.sin, host=True, out_shape=np.empty(3))
    rule.defvjp(lambda x: (np.sin(x), np.cos(x)), lambda c, ct: (c * ct,))
    return rule


def sine_jvp() -> ad.custom_jvp:
    rule = ad.custom_jvp(np.sin, host=True, out_shape=np.empty(3))
    rule.defjvp(lambda p, t: (np.sin(p[0]), np.cos(p[0]) * t[0]))
    return rule


X = np.array([0.1, -0.7, 1.9])
V = np.array([1.0, 0.5, -2.0])


def squares(rule: Any) -> Any:
    return lambda x: ad.array_namespace(x).sum(rule(x) * rule(x))


@pytest.mark.parametrize("engine", ENGINES)
def test_second_order_through_host_code_is_refused(engine: str) -> None:
    with pytest.raises(UnsupportedError, match="host"):
        ad.hessian(squares(sine_vjp()), X, backend=engine)
    nested = lambda x: ad.array_namespace(x).sum(ad.gradient(squares(sine_vjp()), x)[0])  # noqa: E731
    with pytest.raises(UnsupportedError, match="host"):
        ad.gradient(nested, X, backend=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_forward_mode_through_host_vjp_is_refused(engine: str) -> None:
    with pytest.raises(UnsupportedError, match="forward-mode rule"):
        ad.jvp(sine_vjp(), (X,), (V,), backend=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_host_jvp_rule_in_forward_mode(engine: str) -> None:
    y, t = ad.jvp(sine_jvp(), (X,), (V,), backend=engine)
    np.testing.assert_allclose(_np(y), np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(_np(t), np.cos(X) * V, rtol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_host_jvp_rule_in_reverse_mode_is_refused(engine: str) -> None:
    with pytest.raises(UnsupportedError, match=r"custom_vjp\(f, host=True\)"):
        ad.gradient(squares(sine_jvp()), X, backend=engine)


@pytest.mark.parametrize("engine", ["tape", "torch", "autograd"])
def test_wrong_cotangent_count_is_the_front_ends_error(engine: str) -> None:
    rule = ad.custom_vjp(np.sin, host=True)
    rule.defvjp(lambda x: (np.sin(x), np.cos(x)), lambda c, ct: (c * ct, c))
    with pytest.raises(UsageError, match="tuple of 1 cotangent"):
        ad.gradient(squares(rule), X, backend=engine)


def test_host_code_runs_outside_the_call() -> None:
    seen: list[Any] = []

    def f(x: np.ndarray) -> np.ndarray:
        from adswitch.selection import enclosing

        seen.append((type(x), enclosing()))
        out: np.ndarray = np.sin(x)
        return out

    rule = ad.custom_vjp(f, host=True)
    rule.defvjp(lambda x: (f(x), np.cos(x)), lambda c, ct: (c * ct,))
    (g,) = ad.gradient(squares(rule), X, backend="torch")
    np.testing.assert_allclose(_np(g), 2 * np.sin(X) * np.cos(X), rtol=1e-12)
    assert seen and all(t is np.ndarray and e is None for t, e in seen)
    assert rule(X).tolist() == np.sin(X).tolist()  # outside any call: f itself


def test_forward_only_engine_runs_a_host_jvp_rule() -> None:
    # the dual example hands rules plain numpy: no conversion hooks needed
    y, t = ad.jvp(sine_jvp(), (X,), (V,), backend="dual")
    np.testing.assert_allclose(_np(y), np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(_np(t), np.cos(X) * V, rtol=1e-12)
    with pytest.raises(UnsupportedError, match="custom_vjp"):
        ad.gradient(squares(sine_vjp()), X, backend="dual")


def test_engine_handing_its_values_without_hooks_refuses() -> None:
    from types import SimpleNamespace

    from adswitch.host_rules import call_jvp

    class Boxed:
        shape, dtype = (3,), np.dtype(float)

    stub = SimpleNamespace(
        name="stub",
        owns=lambda v: isinstance(v, Boxed),
        custom_jvp=lambda fn, rule, leaves, active: fn(list(leaves)),
    )
    with pytest.raises(UnsupportedError, match=r"Backend\.to_host/Backend\.from_host"):
        call_jvp(sine_jvp(), stub, (Boxed(),), None)


@pytest.mark.parametrize("engine", ENGINES)
def test_python_float_and_int_arguments(engine: str) -> None:
    def f(x: np.ndarray, s: Any, n: Any) -> np.ndarray:
        out: np.ndarray = np.sin(x) * s * n
        return out

    def bwd(res: Any, ct: np.ndarray) -> tuple[Any, ...]:
        x, s, n = res
        return np.cos(x) * s * n * ct, float(np.sum(np.sin(x) * n * ct)), None

    rule = ad.custom_vjp(f, host=True, out_shape=np.empty(3))
    rule.defvjp(lambda x, s, n: (f(x, s, n), (x, s, n)), bwd)
    loss = lambda x, s, n: ad.array_namespace(x).sum(rule(x, s, n))  # noqa: E731
    gx, gs, gn = ad.gradient(loss, X, 1.5, 2, backend=engine)
    np.testing.assert_allclose(_np(gx), np.cos(X) * 3.0, rtol=1e-12)
    assert isinstance(gs, float) and gs == pytest.approx(2 * np.sin(X).sum(), rel=1e-12)
    assert gn is None


def test_float32_cotangents_come_back_float32_on_torch() -> None:
    import torch

    x = torch.tensor(X, dtype=torch.float32)
    (g,) = ad.gradient(squares(sine_vjp()), x, backend="torch")
    assert g.dtype == torch.float32
    np.testing.assert_allclose(g.numpy(), 2 * np.sin(X) * np.cos(X), rtol=1e-5)
