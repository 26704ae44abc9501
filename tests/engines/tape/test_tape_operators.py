"""The operators on the tape (``ad.vjp``, ``ad.jvp``, ``ad.jacobian``, ``ad.hessian``,
``ad.hvp``, ``ad.derivative``), now on its native ``vjp``/``vjp_apply``/``jvp``: against
central differences of the plain numpy call and closed forms -- arrays, trees, ties,
``Const``, Python floats, float32, writes inside ``f``, nested inside a gradient."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from tests.engines.tape.test_tape_support import fd_gradient


def _xp(*arrays: Any) -> Any:
    return ad.array_namespace(*arrays)


def _fresh(args: tuple[Any, ...]) -> list[Any]:
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]


def fd_jacobian(f: Callable[..., Any], args: tuple[Any, ...], i: int, eps: float = 1e-6) -> Any:
    """Central differences of the array-valued ``f(*args)`` in ``args[i]``: shape
    ``y.shape + x.shape`` (copies of the arguments at every evaluation)."""
    x = args[i]

    def at(delta: Any) -> np.ndarray:
        moved = _fresh(args)
        moved[i] = moved[i] + delta
        return np.asarray(f(*moved), dtype=np.float64)

    if isinstance(x, float):
        return (at(eps) - at(-eps)) / (2 * eps)
    y_shape = at(0.0 * x).shape
    jac = np.zeros(y_shape + np.shape(x))
    for index in np.ndindex(np.shape(x)):
        step = np.zeros(np.shape(x))
        step[index] = eps
        jac[(Ellipsis, *index)] = (at(step) - at(-step)) / (2 * eps)
    return jac


RNG = np.random.default_rng(3)
W = RNG.standard_normal((5, 3))
B = RNG.standard_normal(5)
X = RNG.standard_normal(3)


def layer(x: Any, w: Any, b: Any) -> Any:
    return _xp(x).tanh(w @ x + b)


def loss(x: Any) -> Any:
    xp = _xp(x)
    return xp.sum(xp.log1p(xp.exp(W @ x))) + 0.5 * xp.sum(x * x)


def loss_hessian(x: np.ndarray) -> np.ndarray:
    s = 1.0 / (1.0 + np.exp(-(W @ x)))
    return np.asarray(W.T @ (W * (s * (1 - s))[:, None]) + np.eye(len(x)))


# -- jacobians ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["reverse", "forward", "auto"])
@pytest.mark.parametrize("shape", [(5, 3), (40, 2), (2, 40)], ids=["square", "tall", "wide"])
def test_jacobian_of_a_layer_every_mode(mode: str, shape: tuple[int, int]) -> None:
    w = RNG.standard_normal(shape)
    b = RNG.standard_normal(shape[0])
    x = RNG.standard_normal(shape[1])
    jac = ad.jacobian(layer, x, ad.Const(w), ad.Const(b), mode=mode, backend="tape")
    assert jac[1] is None and jac[2] is None
    closed = (1 - np.tanh(w @ x + b) ** 2)[:, None] * w
    np.testing.assert_allclose(jac[0], closed, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_jacobian_with_respect_to_every_argument(mode: str) -> None:
    jac = ad.jacobian(layer, X, W, B, mode=mode, backend="tape")
    for i in range(3):
        np.testing.assert_allclose(jac[i], fd_jacobian(layer, (X, W, B), i), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_jacobian_of_a_tree_output_with_python_floats_and_ties(mode: str) -> None:
    shared = np.array([0.3, -0.7])

    def f(p: dict[str, Any], s: float) -> Any:
        xp = _xp(p["a"])
        return {"y": xp.sin(p["a"]) * s, "z": xp.sum(p["a"] * p["b"]) + s * s, "tag": "t"}

    p = {"a": shared, "b": shared}  # tied: one parameter
    jac = ad.jacobian(f, p, 1.5, mode=mode, backend="tape")
    assert jac["tag"] is None
    dy_da, dy_ds = jac["y"][0]["a"], jac["y"][1]
    assert jac["y"][0]["b"] is None  # the later place of a tie
    np.testing.assert_allclose(dy_da, np.diag(np.cos(shared) * 1.5), rtol=1e-12)
    np.testing.assert_allclose(dy_ds, np.sin(shared), rtol=1e-12)
    np.testing.assert_allclose(jac["z"][0]["a"], 2 * shared, rtol=1e-12)
    assert isinstance(jac["z"][1], float) and jac["z"][1] == pytest.approx(3.0)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_jacobian_in_float32(mode: str) -> None:
    x = X.astype(np.float32)
    (jac,) = ad.jacobian(lambda v: _xp(v).sin(v) * v, x, mode=mode, backend="tape")
    assert jac.dtype == np.float32
    np.testing.assert_allclose(jac, np.diag(np.cos(x) * x + np.sin(x)), rtol=1e-5)
    # a float64 constant makes the output float64: the numbers are float64's
    w32 = W.astype(np.float32)
    mixed = ad.jacobian(layer, x, ad.Const(w32), ad.Const(B), mode=mode, backend="tape")[0]
    closed = (1 - np.tanh(w32 @ x + B) ** 2)[:, None] * w32
    np.testing.assert_allclose(mixed, closed, rtol=1e-6)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_jacobian_of_a_function_that_writes_into_its_argument(mode: str) -> None:
    def f(x: Any) -> Any:
        xp = _xp(x)
        y = xp.exp(x)
        x[1] = x[0] * 3.0  # recorded: y keeps the value it read
        x *= 2.0
        return xp.concat([y, x * x])

    x = np.array([0.2, -0.5, 1.1])
    expected = fd_jacobian(f, (x,), 0)
    after = x.copy()
    f(after)  # what a plain call leaves in the argument
    (jac,) = ad.jacobian(f, x, mode=mode, backend="tape")
    np.testing.assert_allclose(jac, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(x, after)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_jacobian_through_fresh_buffers_and_advanced_indexing(mode: str) -> None:
    idx = np.array([2, 0, 2])

    def f(x: Any) -> Any:
        xp = _xp(x)
        buf = xp.zeros((2, 3))
        buf[0, :] = x * x
        buf[1] = xp.flip(x)
        return xp.reshape(buf[:, idx], (-1,)) + xp.sum(xp.cumulative_sum(x)[idx[:2]])

    x = np.array([0.4, -1.2, 0.9])
    (jac,) = ad.jacobian(f, x, mode=mode, backend="tape")
    np.testing.assert_allclose(jac, fd_jacobian(f, (x,), 0), rtol=1e-6, atol=1e-8)


# -- vjp -------------------------------------------------------------------------------------
def test_vjp_against_closed_forms_and_reuse() -> None:
    y, pullback = ad.vjp(layer, X, ad.Const(W), ad.Const(B), backend="tape")
    np.testing.assert_allclose(y, np.tanh(W @ X + B), rtol=1e-15)
    jac = (1 - np.tanh(W @ X + B) ** 2)[:, None] * W
    for u in RNG.standard_normal((4, 5)):  # the same pullback, many times
        gx, gw, gb = pullback(u)
        assert gw is None and gb is None
        np.testing.assert_allclose(gx, u @ jac, rtol=1e-12)


def test_vjp_of_a_tree_with_has_aux_and_a_python_float() -> None:
    def f(p: dict[str, Any], s: float) -> Any:
        xp = _xp(p["w"])
        h = xp.tanh(p["w"] * s)
        return (h, xp.sum(h) * s), {"aux": h[0]}

    p = {"w": np.array([0.5, -0.25, 1.0])}
    _, pullback, aux = ad.vjp(f, p, 0.8, has_aux=True, backend="tape")
    np.testing.assert_allclose(aux["aux"], np.tanh(0.4))
    u_h, u_t = np.array([1.0, 2.0, -1.0]), 0.5
    gp, gs = pullback((u_h, u_t))
    assert isinstance(gs, float)

    def scalar(w: np.ndarray, s: float) -> float:
        hh = np.tanh(w * s)
        return float(np.sum(u_h * hh) + u_t * np.sum(hh) * s)

    np.testing.assert_allclose(gp["w"], fd_gradient(scalar, (p["w"], 0.8), 0), rtol=1e-6)
    assert gs == pytest.approx(fd_gradient(scalar, (p["w"], 0.8), 1), rel=1e-6)


def test_vjp_with_a_duplicated_argument_writes_its_shadow_every_call() -> None:
    dup = ad.Duplicated(X.copy())
    _, pullback = ad.vjp(lambda x: x * x, dup, backend="tape")
    for scale in (1.0, 3.0):
        (entry,) = pullback(np.ones(3) * scale)
        assert entry is dup.dval
        np.testing.assert_allclose(dup.dval, 2 * X * scale)


def test_pullback_is_unaffected_by_later_writes_into_the_callers_arrays() -> None:
    x = np.array([0.5, -1.0, 2.0])
    w = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]])
    idx = np.array([2, 0])

    def f(v: Any, c: Any) -> Any:
        xp = _xp(v)
        e = xp.exp(v)  # its rule reads its output, which is returned
        return xp.sin(v[idx]) * (c @ v) + e[idx], e

    (y, e), pullback = ad.vjp(f, x, ad.Const(w), backend="tape")
    u = (np.array([1.0, -2.0]), np.array([0.5, 1.0, -1.0]))
    expected = fd_jacobian(lambda v, c: f(v, c)[0], (x, w), 0).T @ u[0] + np.exp(x) * u[1]
    first = pullback(u)[0]
    np.testing.assert_allclose(first, expected, rtol=1e-6)
    # the arguments, a constant, an index array, the outputs: all the caller's again
    for array in (x, w, idx, y, e):
        assert array.flags.writeable
        array[...] = 0
    u_again = (u[0].copy(), u[1].copy())
    np.testing.assert_array_equal(pullback(u_again)[0], first)
    np.testing.assert_array_equal(u_again[0], u[0])  # the cotangents are not written to
    np.testing.assert_array_equal(u_again[1], u[1])


def test_pullback_of_a_function_that_writes_into_its_argument() -> None:
    def f(v: Any) -> Any:
        xp = _xp(v)
        y = xp.log(v)
        v[...] = 0.0  # written back into the caller's array when vjp returns
        return y + v * 3.0

    x = np.array([1.0, 2.0, 4.0])
    expected = fd_jacobian(f, (x,), 0)
    y, pullback = ad.vjp(f, x, backend="tape")
    np.testing.assert_array_equal(x, 0.0)  # as a plain call leaves it
    np.testing.assert_allclose(y, np.log([1.0, 2.0, 4.0]))
    for u in np.eye(3):
        np.testing.assert_allclose(pullback(u)[0], u @ expected, rtol=1e-6, atol=1e-9)


def test_pullback_of_the_identity_hands_back_its_own_array() -> None:
    _, pullback = ad.vjp(lambda v: v, X, backend="tape")
    u = np.array([1.0, 2.0, 3.0])
    (g,) = pullback(u)
    np.testing.assert_array_equal(g, u)
    assert g is not u and not np.shares_memory(g, u)


# -- jvp and derivative ----------------------------------------------------------------------
def test_jvp_against_differences_with_trees_ties_and_floats() -> None:
    a = np.array([0.3, -0.8, 1.2])

    def f(p: dict[str, Any], s: float, c: Any) -> Any:
        xp = _xp(p["a"])
        return {"y": xp.sin(p["a"] * s) @ c + xp.sum(p["b"] ** 2), "s": s * s}

    p = {"a": a, "b": a}  # tied: one tangent, the first place's
    c = RNG.standard_normal((3, 2))
    ta, ts = np.array([1.0, -0.5, 2.0]), 0.7
    y, t = ad.jvp(f, (p, 1.3, ad.Const(c)), ({"a": ta, "b": ta}, ts, None), backend="tape")

    def along(eps: float) -> Any:
        q = a + eps * ta
        return np.sin(q * (1.3 + eps * ts)) @ c + np.sum(q**2)

    expected = (along(1e-6) - along(-1e-6)) / 2e-6
    np.testing.assert_allclose(t["y"], expected, rtol=1e-6)
    assert isinstance(t["s"], float) and t["s"] == pytest.approx(2 * 1.3 * ts)
    np.testing.assert_allclose(y["y"], along(0.0), rtol=1e-15)


def test_jvp_of_a_function_that_writes_into_its_argument() -> None:
    def f(v: Any) -> Any:
        xp = _xp(v)
        y = xp.exp(v)
        v[0] = v[2] * y[1]
        return y * v

    x = np.array([0.1, 0.2, 0.3])
    tangent = np.array([1.0, -1.0, 0.5])
    expected = fd_jacobian(f, (x,), 0) @ tangent
    _, t = ad.jvp(f, (x,), (tangent,), backend="tape")
    np.testing.assert_allclose(t, expected, rtol=1e-6)


def test_derivative_closed_form_float_and_float32() -> None:
    d = ad.derivative(lambda t, a: _xp(a).exp(a * t) + t**3, 0.5, np.array([1.0, -2.0]))
    np.testing.assert_allclose(d, np.array([1.0, -2.0]) * np.exp([0.5, -1.0]) + 0.75)
    t32 = np.float32(0.5)
    d32 = ad.derivative(lambda t: _xp(t).sin(t) * t, t32, backend="tape")
    assert d32.dtype == np.float32
    np.testing.assert_allclose(d32, np.cos(0.5) * 0.5 + np.sin(0.5), rtol=1e-6)


# -- second order -----------------------------------------------------------------------------
def test_hessian_closed_form() -> None:
    (row,) = ad.hessian(loss, X, backend="tape")
    np.testing.assert_allclose(row[0], loss_hessian(X), rtol=1e-12)


def test_hessian_of_a_tree_with_a_const_and_a_python_float() -> None:
    def f(p: dict[str, Any], s: float, c: Any) -> Any:
        xp = _xp(p["u"])
        return xp.sum(p["u"] ** 3 * s) + xp.sum(p["v"] * c) * s * s

    p = {"u": np.array([1.0, 2.0]), "v": np.array([0.5, -1.0, 3.0])}
    c = np.array([2.0, 1.0, -1.0])
    hp, hs, hc = ad.hessian(f, p, 0.5, ad.Const(c), backend="tape")  # H[a][b]
    assert hc is None and hp["u"][2] is None and hs[2] is None
    np.testing.assert_allclose(hp["u"][0]["u"], np.diag(6 * p["u"] * 0.5))
    np.testing.assert_allclose(hp["u"][0]["v"], np.zeros((2, 3)))
    np.testing.assert_allclose(hp["v"][0]["v"], np.zeros((3, 3)))
    np.testing.assert_allclose(hp["v"][1], 2 * 0.5 * c)  # d2 f / dv ds
    np.testing.assert_allclose(hs[0]["u"], 3 * p["u"] ** 2)
    np.testing.assert_allclose(hs[0]["v"], 2 * 0.5 * c)
    assert isinstance(hs[1], float) and hs[1] == pytest.approx(2 * np.sum(p["v"] * c))


def test_hessian_in_float32() -> None:
    x = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    (row,) = ad.hessian(lambda v: _xp(v).sum(_xp(v).sin(v) * v), x, backend="tape")
    assert row[0].dtype == np.float32
    np.testing.assert_allclose(row[0], np.diag(2 * np.cos(x) - x * np.sin(x)), rtol=1e-5)


def test_hessian_of_a_function_that_writes_into_its_argument() -> None:
    def f(v: Any) -> Any:
        xp = _xp(v)
        first = xp.sum(v**3)
        v[1] = v[0] * v[2]
        return first + xp.sum(xp.exp(v))

    x = np.array([0.3, -0.4, 0.8])

    def grad(v: np.ndarray) -> np.ndarray:
        return np.asarray(fd_gradient(f, (v,), 0, eps=1e-5))

    expected = fd_jacobian(grad, (x,), 0, eps=1e-4)
    (row,) = ad.hessian(f, x, backend="tape")
    np.testing.assert_allclose(row[0], expected, rtol=1e-4, atol=1e-6)


def test_hvp_against_the_closed_hessian_with_a_duplicated_argument() -> None:
    v = np.array([1.0, -2.0, 0.5])
    (hv,) = ad.hvp(loss, (X,), (v,), backend="tape")
    np.testing.assert_allclose(hv, loss_hessian(X) @ v, rtol=1e-12)
    dup = ad.Duplicated(X.copy())
    (entry,) = ad.hvp(loss, (dup,), (v,), backend="tape")
    assert entry is dup.dval
    np.testing.assert_allclose(dup.dval, loss_hessian(X) @ v, rtol=1e-12)


# -- nested inside an enclosing gradient -------------------------------------------------------
def test_a_jacobian_inside_a_gradient() -> None:
    def outer(x: Any, mode: str) -> Any:
        xp = _xp(x)
        jac = ad.jacobian(layer, x, ad.Const(W), ad.Const(B), mode=mode)[0]
        return xp.sum(jac * jac)

    def plain(x: np.ndarray) -> float:
        jac = (1 - np.tanh(W @ x + B) ** 2)[:, None] * W
        return float(np.sum(jac * jac))

    expected = fd_gradient(plain, (X,), 0)
    for mode in ("reverse", "forward"):
        (g, _) = ad.gradient(outer, X, ad.Const(mode), backend="tape")
        np.testing.assert_allclose(g, expected, rtol=1e-6, err_msg=mode)


def test_a_hessian_inside_a_gradient_third_order() -> None:
    def outer(x: Any) -> Any:
        (row,) = ad.hessian(lambda v: _xp(v).sum(v**4 + _xp(v).sin(v)), x)
        return _xp(x).sum(row[0])

    (g,) = ad.gradient(outer, X, backend="tape")
    np.testing.assert_allclose(g, 24 * X - np.cos(X), rtol=1e-12)


def test_a_jvp_and_a_pullback_inside_a_gradient() -> None:
    tangent = np.array([1.0, 0.5, -1.0])

    def outer(x: Any) -> Any:
        xp = _xp(x)
        _, t = ad.jvp(layer, (x, ad.Const(W), ad.Const(B)), (tangent, None, None))
        y, pullback = ad.vjp(lambda v: xp.sin(v) * v, x)
        (g,) = pullback(y)  # a traced cotangent: differentiated too
        return xp.sum(t * t) + xp.sum(g)

    def plain(x: np.ndarray) -> float:
        jac = (1 - np.tanh(W @ x + B) ** 2)[:, None] * W
        y = np.sin(x) * x
        return float(np.sum((jac @ tangent) ** 2) + np.sum(y * (np.cos(x) * x + np.sin(x))))

    (g,) = ad.gradient(outer, X, backend="tape")
    np.testing.assert_allclose(g, fd_gradient(plain, (X,), 0), rtol=1e-6)


def test_hvp_of_a_loss_on_an_input_gradient() -> None:
    # forward over a reverse sweep that is itself recorded: three levels of tracers
    c = np.array([0.5, -1.0, 2.0])

    def f(x: Any) -> Any:
        (dx,) = ad.gradient(lambda v: _xp(v).sum(_xp(v).tanh(v) * c), x)
        return _xp(x).sum(dx * dx)

    def plain(x: np.ndarray) -> float:
        return float(np.sum(((1 - np.tanh(x) ** 2) * c) ** 2))

    def grad(x: np.ndarray) -> np.ndarray:
        return np.asarray(fd_gradient(plain, (x,), 0, eps=1e-5))

    v = np.array([0.3, 1.0, -0.7])
    (hv,) = ad.hvp(f, (X,), (v,), backend="tape")
    np.testing.assert_allclose(hv, fd_jacobian(grad, (X,), 0, eps=1e-4) @ v, rtol=1e-4, atol=1e-6)


def test_every_operator_refuses_a_write_into_an_array_its_sweep_reads() -> None:
    w = np.array([1.0, 2.0, 3.0])

    def f(x: Any) -> Any:
        y = x * w
        w[0] = 5.0  # w is saved for the sweep: the write would change the derivative
        return y

    calls: list[Callable[[], Any]] = [
        lambda: ad.vjp(f, X, backend="tape"),
        lambda: ad.jvp(f, (X,), (np.ones(3),), backend="tape"),
        lambda: ad.jacobian(f, X, mode="reverse", backend="tape"),
        lambda: ad.jacobian(f, X, mode="forward", backend="tape"),
        lambda: ad.hessian(lambda v: _xp(v).sum(f(v) ** 2), X, backend="tape"),
    ]
    for call in calls:
        with pytest.raises(ad.MutationError, match="`w`"):
            call()
        assert w.flags.writeable and w[0] == 1.0


def test_forward_over_forward_and_forward_over_a_pullback() -> None:
    def d1(t: Any) -> Any:
        return ad.derivative(lambda s: _xp(s).sin(s) * s * s, t)

    def d2(t: Any) -> Any:
        return ad.derivative(d1, t)

    t = 0.7
    assert d2(t) == pytest.approx(2 * np.sin(t) + 4 * t * np.cos(t) - t * t * np.sin(t))
    assert ad.derivative(d2, t) == pytest.approx(
        6 * np.cos(t) - 6 * t * np.sin(t) - t * t * np.cos(t)
    )

    def pulled(x: Any) -> Any:  # a reverse-mode gradient as a function, pushed forward
        _, pullback = ad.vjp(lambda v: _xp(v).exp(v) * v, x)
        return pullback(_xp(x).ones_like(x))[0]

    _, t_out = ad.jvp(pulled, (X,), (np.array([1.0, 0.0, -2.0]),), backend="tape")
    np.testing.assert_allclose(t_out, np.exp(X) * (X + 2) * [1.0, 0.0, -2.0], rtol=1e-12)
