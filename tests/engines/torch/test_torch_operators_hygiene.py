"""What the torch engine's vjp, vjp_apply and jvp promise besides the numbers: in-place
writes (refused by default, differentiated with copy_saved=True), pullbacks that own what
they need, results in memory of their own, float(x) refused, numpy calls named, jax arrays
in and out, threads, a forward-AD level held by the caller. Oracles: closed forms and
central differences on numpy copies."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

torch: Any = pytest.importorskip("torch")

from adswitch_torch import TorchBackend  # noqa: E402

import adswitch as ad  # noqa: E402
from tests.support.fd_oracle import central_fd  # noqa: E402

F64: dict[str, Any] = dict(rtol=1e-10, atol=1e-12)
FD: dict[str, Any] = dict(rtol=1e-6, atol=1e-7)

rng = np.random.default_rng(5)
W = rng.standard_normal((4, 3))


def layer(x: Any, W: Any) -> Any:
    xp = ad.array_namespace(x, W)
    return xp.tanh(W @ x)


def slope(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    return (1 - np.tanh(W @ x) ** 2)[:, None] * W


def log_then_write(x: Any, s: Any) -> Any:
    xp = ad.array_namespace(x, s)
    y = xp.log(x)
    x[0] = s**2
    return y * x


def log_then_write_np(x: np.ndarray, s: float) -> np.ndarray:
    x = x.copy()
    y = np.log(x)
    x[0] = s**2
    return y * x


OPERATORS = {
    "vjp": lambda f, x, s, backend: ad.vjp(f, x, s, backend=backend)[1](np.ones(3)),
    "jvp": lambda f, x, s, backend: ad.jvp(f, (x, s), (np.ones(3), 1.0), backend=backend),
    "jacobian_reverse": lambda f, x, s, backend: ad.jacobian(
        f, x, s, backend=backend, mode="reverse"
    ),
    "jacobian_forward": lambda f, x, s, backend: ad.jacobian(
        f, x, s, backend=backend, mode="forward"
    ),
}


# ---------------------------------------------------------------------------- mutation
@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("kind", ["numpy", "tensor"])
def test_default_mode_refuses_a_write_into_a_differentiated_argument(
    operator: str, kind: str
) -> None:
    x = np.array([1.5, 2.0, 3.0])
    arg = x if kind == "numpy" else torch.tensor(x)
    if operator != "jvp":
        with pytest.raises(ad.MutationError, match="in-place write into an argument"):
            OPERATORS[operator](log_then_write, arg, np.array(0.8), "torch")
        np.testing.assert_array_equal(np.asarray(arg), [1.5, 2.0, 3.0])  # refused before it
        return
    # forward AD lets the write through: refused after f, which left it as a plain call does
    with pytest.raises(ad.MutationError, match="during a jvp"):
        OPERATORS[operator](log_then_write, arg, np.array(0.8), "torch")
    np.testing.assert_allclose(np.asarray(arg), [0.64, 2.0, 3.0], **F64)


@pytest.mark.parametrize("operator", OPERATORS)
def test_copy_saved_differentiates_the_write(operator: str) -> None:
    x0 = np.array([1.5, 2.0, 3.0])
    x = x0.copy()
    got = OPERATORS[operator](log_then_write, x, np.array(0.8), TorchBackend(copy_saved=True))
    np.testing.assert_allclose(x, [0.64, 2.0, 3.0], **F64)  # written once, as a plain call
    Jx = np.stack([central_fd(lambda z, k=k: log_then_write_np(z, 0.8)[k], x0) for k in range(3)])
    Js = np.array(
        [
            central_fd(lambda s, k=k: log_then_write_np(x0, float(s))[k], np.array(0.8))
            for k in range(3)
        ]
    )
    if operator == "vjp":
        np.testing.assert_allclose(got[0], Jx.T @ np.ones(3), **FD)
        np.testing.assert_allclose(got[1], Js @ np.ones(3), **FD)
    elif operator == "jvp":
        np.testing.assert_allclose(got[1], Jx @ np.ones(3) + Js, **FD)
    else:
        np.testing.assert_allclose(got[0], Jx, **FD)
        np.testing.assert_allclose(got[1], Js, **FD)


@pytest.mark.parametrize("operator", OPERATORS)
def test_a_write_into_a_const_argument_reaches_the_caller_once(operator: str) -> None:
    def f(x: Any, c: Any) -> Any:
        c[0] = c[0] + 1.0  # a write into a constant: no derivative, the caller sees it
        return x * 2.0

    c = np.zeros(3)
    x = np.array([1.0, 2.0, 3.0])
    if operator == "vjp":
        (g, _) = ad.vjp(f, x, ad.Const(c), backend="torch")[1](np.ones(3))
        np.testing.assert_allclose(g, 2 * np.ones(3))
    elif operator == "jvp":
        _, t = ad.jvp(f, (x, ad.Const(c)), (np.ones(3), None), backend="torch")
        np.testing.assert_allclose(t, 2 * np.ones(3))
    else:
        J = ad.jacobian(f, x, ad.Const(c), backend="torch", mode=operator.split("_")[1])[0]
        np.testing.assert_allclose(J, 2 * np.eye(3))
    assert c[0] == 1.0


def test_a_write_into_a_saved_fresh_buffer_is_refused_by_the_pullback() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        buf = xp.zeros(2)
        buf[0] = x[0] * x[1]
        buf[1] = buf[0] * x[2]  # buf[0]'s storage was saved by this product, then written
        return buf

    x = np.array([1.0, 2.0, 3.0])
    for mode in ("reverse", "forward"):  # a batch of tangents runs in reverse mode too
        with pytest.raises(ad.MutationError, match="overwritten in place"):
            ad.jacobian(f, x, backend="torch", mode=mode)
    # forward AD (one tangent) has no saved values to lose: finite differences' numbers
    _, t = ad.jvp(f, (x,), (np.array([1.0, 0.0, 0.0]),), backend="torch")
    np.testing.assert_allclose(t, [2.0, 6.0], **F64)


# ---------------------------------------------------------------------------- ownership
def test_a_pullback_owns_the_numpy_arrays_it_needs() -> None:
    x, Wc = rng.standard_normal(3), W.copy()
    x0, W0 = x.copy(), W.copy()
    y, pullback = ad.vjp(layer, x, ad.Const(Wc), backend="torch")
    x[:] = 0.0
    Wc[:] = 0.0
    y[:] = 7.0  # tanh saved its output: the caller's copy is not it
    u = rng.standard_normal(4)
    (g, _) = pullback(u)
    np.testing.assert_allclose(g, slope(x0, W0).T @ u, **F64)


def test_a_pullback_refuses_after_its_tensor_argument_was_overwritten() -> None:
    x = torch.tensor(rng.standard_normal(3))
    _, pullback = ad.vjp(lambda x: ad.array_namespace(x).sin(x) * x, x, backend="torch")
    with torch.no_grad():
        x.mul_(2.0)
    with pytest.raises(ad.MutationError, match=r"after ad\.vjp returned"):
        pullback(torch.ones(3, dtype=torch.float64))


def test_a_tensor_output_written_by_the_caller_is_refused_by_the_pullback() -> None:
    x = torch.tensor(rng.standard_normal(3))
    y, pullback = ad.vjp(lambda x: ad.array_namespace(x).tanh(x), x, backend="torch")
    y.zero_()  # tanh saved its output: this is it
    with pytest.raises(ad.MutationError, match="an output of the call"):
        pullback(torch.tensor(rng.standard_normal(3)))


def test_results_never_share_memory_with_cotangents_or_each_other() -> None:
    u = np.array([1.0, 2.0, 3.0])
    _, pullback = ad.vjp(lambda a, b: a + b, np.zeros(3), np.ones(3), backend="torch")
    ga, gb = pullback(u)
    ga[0] = 50.0
    assert u[0] == 1.0 and gb[0] == 1.0
    (gi,) = ad.vjp(lambda a: a, np.zeros(3), backend="torch")[1](u)
    gi[1] = 50.0
    assert u[1] == 2.0


# ---------------------------------------------------------------------------- guards, kinds
@pytest.mark.parametrize("operator", ["vjp", "jvp", "jacobian_reverse", "jacobian_forward"])
def test_float_of_a_traced_value_is_refused(operator: str) -> None:
    def f(x: Any, s: Any) -> Any:
        return x * float(x[0]) * s

    with pytest.raises(ad.UnsupportedError, match=r"float\(x\)"):
        OPERATORS[operator](f, np.array([1.0, 2.0, 3.0]), np.array(0.5), "torch")


def test_a_numpy_function_on_a_traced_tensor_is_named() -> None:
    def f(x: Any) -> Any:
        return np.tanh(x)

    with pytest.raises(ad.UnsupportedError, match=r"xp\.tanh"):
        ad.jvp(f, (np.ones(2),), (np.ones(2),), backend="torch")
    with pytest.raises(ad.UnsupportedError, match=r"xp\.tanh"):
        ad.jacobian(f, np.ones(2), backend="torch")


def test_f_runs_once_per_operator_call() -> None:
    calls: list[int] = []

    def f(x: Any) -> Any:
        calls.append(1)
        return layer(x, ad.array_namespace(x).asarray(W))

    x = rng.standard_normal(3)
    for mode in ("reverse", "forward", "auto"):
        calls.clear()
        ad.jacobian(f, x, backend="torch", mode=mode)
        assert len(calls) == 1, mode
    calls.clear()
    ad.jvp(f, (x,), (x,), backend="torch")
    ad.hessian(lambda z: ad.array_namespace(z).sum(f(z)), x, backend="torch")
    assert len(calls) == 2


def test_jax_arrays_in_jax_results_out() -> None:
    jax = pytest.importorskip("jax")
    x = jax.numpy.asarray(np.array([0.3, -1.2, 2.0], dtype=np.float32))
    J = ad.jacobian(lambda z: ad.array_namespace(z).sin(z) * z, x, backend="torch")[0]
    assert isinstance(J, jax.Array) and J.dtype == x.dtype
    xn = np.asarray(x, dtype=np.float64)
    np.testing.assert_allclose(np.asarray(J), np.diag(np.sin(xn) + xn * np.cos(xn)), rtol=1e-5)
    y, t = ad.jvp(lambda z: ad.array_namespace(z).exp(z), (x,), (x,), backend="torch")
    assert isinstance(y, jax.Array) and isinstance(t, jax.Array)
    np.testing.assert_allclose(np.asarray(t), np.exp(xn) * xn, rtol=1e-5)


# ---------------------------------------------------------------------------- forward AD
def test_jvps_from_several_threads_at_once() -> None:
    errors: list[BaseException] = []
    x = rng.standard_normal(3)

    def work(seed: int) -> None:
        try:
            v = np.random.default_rng(seed).standard_normal(3)
            for _ in range(30):
                _, t = ad.jvp(layer, (x, ad.Const(W)), (v, None), backend="torch")
                np.testing.assert_allclose(t, slope(x, W) @ v, **F64)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]


def test_a_jvp_inside_the_callers_own_forward_ad_level() -> None:
    x, v = rng.standard_normal(3), rng.standard_normal(3)
    with torch.autograd.forward_ad.dual_level():
        _, t = ad.jvp(layer, (x, ad.Const(W)), (v, None), backend="torch")
    np.testing.assert_allclose(t, slope(x, W) @ v, **F64)


def test_a_detached_value_is_constant_in_every_mode() -> None:
    # x.detach() holds a value constant for forward AD and reverse mode alike (unlike
    # torch.no_grad(), which torch's forward AD ignores: see the plugin doc)
    def f(x: Any) -> Any:
        return x * (x.detach() * 2.0)

    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    expected = torch.diag(2.0 * x)
    for mode in ("reverse", "forward"):
        torch.testing.assert_close(ad.jacobian(f, x, backend="torch", mode=mode)[0], expected)
    e0 = torch.tensor([1.0, 0.0], dtype=torch.float64)
    torch.testing.assert_close(ad.jvp(f, (x,), (e0,), backend="torch")[1], expected @ e0)
    (g,) = ad.vjp(f, x, backend="torch")[1](e0)
    torch.testing.assert_close(g, expected.T @ e0)


def test_a_jvp_refuses_a_write_into_the_callers_tensor_behind_an_argument() -> None:
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)

    def f(z: Any) -> Any:
        x.mul_(2.0)  # the caller's tensor itself, through a closure: z's data changes
        return z * z

    with pytest.raises(ad.MutationError, match="during a jvp"):
        ad.jvp(f, (x,), (torch.ones(3, dtype=torch.float64),), backend="torch")


def test_copy_saved_jvp_leaves_the_callers_tangent_alone() -> None:
    x, v = np.array([1.5, 2.0, 3.0]), np.array([1.0, 1.0, 1.0])
    _, t = ad.jvp(
        log_then_write, (x, np.array(0.8)), (v, 1.0), backend=TorchBackend(copy_saved=True)
    )
    np.testing.assert_array_equal(v, [1.0, 1.0, 1.0])  # forward AD updated its own copy
    # y0 = log(x0) s**2 after the write: d/dx0 (log x0) s**2 + d/ds log(x0) 2 s
    np.testing.assert_allclose(t[0], 0.64 / 1.5 + np.log(1.5) * 1.6, **F64)
    np.testing.assert_allclose(x, [0.64, 2.0, 3.0], **F64)


def test_a_jvp_with_a_const_parameter_that_requires_grad() -> None:
    lin = torch.nn.Linear(3, 2).double()
    x, v = torch.randn(3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    _, t = ad.jvp(
        lambda z, w: torch.tanh(w @ z), (x, ad.Const(lin.weight)), (v, None), backend="torch"
    )
    w = lin.weight.detach()
    torch.testing.assert_close(t, (1 - torch.tanh(w @ x) ** 2) * (w @ v), **F64)
    assert lin.weight.grad is None
