"""The torch engine's own vjp, vjp_apply and jvp: every operator on arrays, trees, modules,
ties, Const, Python floats, float32/float64, batched. Oracles: torch.func.jacrev and
torch.autograd.functional.hessian on the same function written in plain torch, and
central finite differences on numpy copies."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch: Any = pytest.importorskip("torch")

from adswitch_torch import TorchBackend  # noqa: E402

import adswitch as ad  # noqa: E402
from adswitch.spec import CallInfo, implements  # noqa: E402
from tests.support.fd_oracle import central_fd  # noqa: E402

F64: dict[str, Any] = dict(rtol=1e-10, atol=1e-12)
F32: dict[str, Any] = dict(rtol=1e-5, atol=1e-6)
FD: dict[str, Any] = dict(rtol=1e-6, atol=1e-8)
MODES = ("reverse", "forward", "auto")

rng = np.random.default_rng(7)
W = rng.standard_normal((5, 3))
B = rng.standard_normal(5)


def layer(x: Any, W: Any, b: Any) -> Any:
    """y = tanh(W x + b) on any engine's arrays (numpy constants wrapped for torch)."""
    xp = ad.array_namespace(x)
    return xp.tanh(xp.asarray(W) @ x + xp.asarray(b))


def layer_torch(x: Any) -> Any:
    return torch.tanh(torch.from_numpy(W) @ x + torch.from_numpy(B))


def softplus(x: Any, A: Any) -> Any:
    xp = ad.array_namespace(x, A)
    return xp.sum(xp.log1p(xp.exp(A @ x))) + 0.5 * xp.sum(x * x)


def jacobian_oracle(x: np.ndarray) -> np.ndarray:
    return torch.func.jacrev(layer_torch)(torch.from_numpy(x)).numpy()


def test_declared_capabilities_and_primitives() -> None:
    backend = TorchBackend()
    caps = backend.capabilities
    assert caps.batching and caps.nested and caps.forward
    assert caps.second_order == "reverse-over-reverse"
    assert all(implements(backend, p) for p in ("value_and_grad", "vjp", "vjp_apply", "jvp"))


# ---------------------------------------------------------------------------- Jacobians
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["numpy", "tensor"])
def test_jacobian_of_an_array_matches_jacrev(mode: str, kind: str) -> None:
    x = rng.standard_normal(3)
    args = (x, W, B) if kind == "numpy" else tuple(torch.from_numpy(a) for a in (x, W, B))
    J = ad.jacobian(
        layer, args[0], ad.Const(args[1]), ad.Const(args[2]), backend="torch", mode=mode
    )[0]
    assert isinstance(J, np.ndarray if kind == "numpy" else torch.Tensor)
    np.testing.assert_allclose(np.asarray(J), jacobian_oracle(x), **F64)


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_float32_keeps_its_dtype(mode: str) -> None:
    x = rng.standard_normal(3).astype(np.float32)
    J = ad.jacobian(
        layer,
        x,
        ad.Const(W.astype(np.float32)),
        ad.Const(B.astype(np.float32)),
        backend="torch",
        mode=mode,
    )[0]
    assert J.dtype == np.float32
    np.testing.assert_allclose(J, jacobian_oracle(x.astype(np.float64)), **F32)


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_a_tree_with_const_and_float(mode: str) -> None:
    # y = {"u": a * tanh(W x), "v": sum(x) * s}: leaves x (array), s (Python float), a (Const)
    def f(p: dict[str, Any], a: Any) -> Any:
        xp = ad.array_namespace(p["x"])
        return {"u": a * xp.tanh(p["W"] @ p["x"]), "v": xp.sum(p["x"]) * p["s"]}

    x = rng.standard_normal(3)
    p = {"x": x, "W": W, "s": 1.5}
    a = rng.standard_normal(5)
    J = ad.jacobian(f, p, ad.Const(a), backend="torch", mode=mode)
    assert J["u"][1] is None and J["v"][1] is None

    def flat(x_: Any, W_: Any, s_: Any) -> Any:
        return torch.cat([torch.from_numpy(a) * torch.tanh(W_ @ x_), (x_.sum() * s_)[None]])

    oracle = torch.func.jacrev(flat, argnums=(0, 1, 2))(
        torch.from_numpy(x), torch.from_numpy(W), torch.tensor(1.5, dtype=torch.float64)
    )
    for name, rows in (("u", slice(0, 5)), ("v", 5)):
        np.testing.assert_allclose(J[name][0]["x"], oracle[0][rows].numpy(), **F64)
        np.testing.assert_allclose(J[name][0]["W"], oracle[1][rows].numpy(), **F64)
        np.testing.assert_allclose(J[name][0]["s"], oracle[2][rows].numpy(), **F64)
    assert isinstance(J["v"][0]["s"], float)  # a Python float leaf, a Python float block


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_with_a_tie_puts_the_total_first(mode: str) -> None:
    x = rng.standard_normal(3)
    J = ad.jacobian(lambda a, b: a * ad.array_namespace(b).sin(b), x, x, backend="torch", mode=mode)
    assert J[1] is None
    expected = np.diag(np.sin(x) + x * np.cos(x))
    np.testing.assert_allclose(J[0], expected, **F64)


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_a_module_with_respect_to_its_parameters(mode: str) -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    net = net.double()
    x = torch.randn(3, dtype=torch.float64)
    J = ad.jacobian(lambda m, x: m(x), net, ad.Const(x), backend="torch", mode=mode)[0]
    params = dict(net.named_parameters())
    oracle = torch.func.jacrev(lambda p: torch.func.functional_call(net, p, (x,)))(
        {k: v.detach() for k, v in params.items()}
    )
    assert set(J) == set(params)
    for name in params:
        torch.testing.assert_close(J[name], oracle[name], **F64)


def test_jacobian_of_an_unused_input_is_zero_and_of_a_constant_output_too() -> None:
    def f(x: Any, y: Any) -> Any:
        xp = ad.array_namespace(x)
        return (xp.sin(x), xp.ones(2))  # y unused, second output constant

    x, y = rng.standard_normal(3), rng.standard_normal(2)
    for mode in MODES:
        J = ad.jacobian(f, x, y, backend="torch", mode=mode)
        np.testing.assert_allclose(J[0][0], np.diag(np.cos(x)), **F64)
        np.testing.assert_array_equal(J[0][1], np.zeros((3, 2)))
        np.testing.assert_array_equal(J[1][0], np.zeros((2, 3)))
        np.testing.assert_array_equal(J[1][1], np.zeros((2, 2)))


# ---------------------------------------------------------------------------- vjp
def test_vjp_pullback_is_reusable_and_matches_jacrev() -> None:
    x = rng.standard_normal(3)
    calls = []

    def f(x: Any) -> Any:
        calls.append(1)
        return layer(x, W, B)

    y, pullback = ad.vjp(f, x, backend="torch")
    assert isinstance(y, np.ndarray)
    np.testing.assert_allclose(y, np.tanh(W @ x + B), **F64)
    J = jacobian_oracle(x)
    for _ in range(2):
        u = rng.standard_normal(5)
        (g,) = pullback(u)
        np.testing.assert_allclose(g, J.T @ u, **F64)
    assert len(calls) == 1  # the pullback never runs f again


def test_vjp_of_a_tree_with_float_leaves_and_aux() -> None:
    def f(p: dict[str, Any], c: Any) -> Any:
        xp = ad.array_namespace(p["x"])
        return (xp.exp(p["x"]) * p["s"], p["s"] * p["s"]), {"note": "aux", "c": c}

    x = rng.standard_normal(3)
    _, pullback, aux = ad.vjp(f, {"x": x, "s": 0.7}, ad.Const(2.0), backend="torch", has_aux=True)
    assert aux == {"note": "aux", "c": 2.0}
    u = (rng.standard_normal(3), 1.3)
    (g, gc) = pullback(u)
    assert gc is None and isinstance(g["s"], float)
    np.testing.assert_allclose(g["x"], np.exp(x) * 0.7 * u[0], **F64)
    np.testing.assert_allclose(g["s"], np.exp(x) @ u[0] + 2 * 0.7 * 1.3, **F64)


def test_batched_pullback_matches_single_calls() -> None:
    backend = TorchBackend()
    x = torch.tensor(rng.standard_normal(3))

    def fn(values: Any) -> Any:
        y = layer(values[0], torch.from_numpy(W), torch.from_numpy(B))
        return [y, values[1] * 2.0], [y, values[1] * 2.0]

    _, pullback = backend.vjp(fn, [x, 0.5], [True, True], CallInfo(entry="vjp"))
    U = rng.standard_normal((4, 5))
    V = rng.standard_normal(4)
    gx, gs = pullback([U, V], batched=True)
    J = jacobian_oracle(x.numpy())
    torch.testing.assert_close(gx, torch.from_numpy(U @ J), **F64)
    assert isinstance(gs, np.ndarray) and gs.shape == (4,)
    np.testing.assert_allclose(gs, 2.0 * V, **F64)
    for k in range(4):
        single = pullback([U[k], float(V[k])])
        torch.testing.assert_close(single[0], gx[k], **F64)
        assert isinstance(single[1], float)


def test_batched_pullback_falls_back_to_a_loop_when_torch_cannot_batch() -> None:
    backend = TorchBackend()
    backend._engine()

    def no_batching(*args: Any) -> Any:
        raise RuntimeError("Batching rule not implemented for aten::something")

    backend._passes = backend._passes._replace(batched=no_batching)
    x = rng.standard_normal(3)
    J = ad.jacobian(layer, x, ad.Const(W), ad.Const(B), backend=backend, mode="reverse")[0]
    np.testing.assert_allclose(J, jacobian_oracle(x), **F64)
    Jf = ad.jacobian(layer, x, ad.Const(W), ad.Const(B), backend=backend, mode="forward")[0]
    np.testing.assert_allclose(Jf, jacobian_oracle(x), **F64)


# ---------------------------------------------------------------------------- jvp
@pytest.mark.parametrize("kind", ["numpy", "tensor"])
def test_jvp_matches_jacrev(kind: str) -> None:
    x, v = rng.standard_normal(3), rng.standard_normal(3)
    conv = (lambda a: a) if kind == "numpy" else torch.from_numpy
    y, t = ad.jvp(
        layer,
        (conv(x), ad.Const(conv(W)), ad.Const(conv(B))),
        (conv(v), None, None),
        backend="torch",
    )
    assert isinstance(t, np.ndarray if kind == "numpy" else torch.Tensor)
    assert not isinstance(t, torch.Tensor) or not t.requires_grad
    np.testing.assert_allclose(np.asarray(t), jacobian_oracle(x) @ v, **F64)
    np.testing.assert_allclose(np.asarray(y), np.tanh(W @ x + B), **F64)


def test_jvp_of_a_tree_float32_and_python_float() -> None:
    def f(p: dict[str, Any]) -> Any:
        xp = ad.array_namespace(p["x"])
        return {"a": xp.sin(p["x"]) * p["s"], "b": p["s"] ** 3}

    x = rng.standard_normal(4).astype(np.float32)
    v = rng.standard_normal(4).astype(np.float32)
    _, t = ad.jvp(f, ({"x": x, "s": 2.0},), ({"x": v, "s": 0.5},), backend="torch")
    assert t["a"].dtype == np.float32
    np.testing.assert_allclose(t["a"], np.cos(x) * v * 2.0 + np.sin(x) * 0.5, **F32)
    assert float(t["b"]) == pytest.approx(3 * 4.0 * 0.5, rel=1e-12)


def test_derivative_of_a_scalar_path() -> None:
    def f(t: Any, a: Any) -> Any:
        xp = ad.array_namespace(a)
        return xp.cos(a * t) * t

    a = rng.standard_normal(3)
    d = ad.derivative(f, 0.3, a, backend="torch")
    expected = central_fd(lambda t: f(float(t), a) @ np.ones(3), np.array(0.3))
    np.testing.assert_allclose(d.sum(), expected, **FD)
    np.testing.assert_allclose(d, np.cos(a * 0.3) - a * 0.3 * np.sin(a * 0.3), **F64)


def test_batched_jvp_matches_single_calls_and_leaves_the_tangents() -> None:
    backend = TorchBackend()
    x = rng.standard_normal(3)

    def fn(values: Any) -> Any:
        y = layer(values[0], W, B)
        return [y], [y]

    T = rng.standard_normal((6, 3))
    before = T.copy()
    _, (cols,) = backend.jvp(fn, [x], [True], [T], CallInfo(entry="jvp", batched=True))
    np.testing.assert_allclose(cols, T @ jacobian_oracle(x).T, **F64)
    np.testing.assert_array_equal(T, before)
    for k in range(6):
        _, (single,) = backend.jvp(fn, [x], [True], [T[k]], CallInfo(entry="jvp"))
        np.testing.assert_allclose(single, cols[k], **F64)


def test_jvp_returns_no_memory_of_the_callers_tangent() -> None:
    x, v = rng.standard_normal(3), rng.standard_normal(3)
    _, t = ad.jvp(lambda x: x, (x,), (v,), backend="torch")
    np.testing.assert_array_equal(t, v)
    t[0] = 100.0
    assert v[0] != 100.0


# ---------------------------------------------------------------------------- second order
def test_hessian_matches_torch_functional_hessian() -> None:
    A = rng.standard_normal((6, 4))
    x = rng.standard_normal(4)
    H = ad.hessian(softplus, x, ad.Const(A), backend="torch")
    assert H[1] is None
    oracle = torch.autograd.functional.hessian(
        lambda z: softplus(z, torch.from_numpy(A)), torch.from_numpy(x)
    )
    np.testing.assert_allclose(H[0][0], oracle.numpy(), **F64)


def test_hessian_of_a_tree_with_a_float() -> None:
    def f(p: dict[str, Any]) -> Any:
        xp = ad.array_namespace(p["x"])
        return xp.sum(xp.sin(p["x"]) * p["s"] ** 2) + p["s"] * xp.sum(p["x"] ** 3)

    x = rng.standard_normal(3)
    H = ad.hessian(f, {"x": x, "s": 0.4}, backend="torch")[0]  # H[a][b][i][0][j]

    def flat(z: Any) -> Any:
        return torch.sum(torch.sin(z[:3]) * z[3] ** 2) + z[3] * torch.sum(z[:3] ** 3)

    oracle = torch.autograd.functional.hessian(flat, torch.tensor([*x, 0.4])).numpy()
    np.testing.assert_allclose(H["x"][0]["x"], oracle[:3, :3], **F64)
    np.testing.assert_allclose(H["x"][0]["s"], oracle[:3, 3], **F64)
    np.testing.assert_allclose(H["s"][0]["x"], oracle[3, :3], **F64)
    assert isinstance(H["s"][0]["s"], float)
    assert H["s"][0]["s"] == pytest.approx(oracle[3, 3], rel=1e-10)


@pytest.mark.parametrize("kind", ["numpy", "tensor"])
def test_hvp_matches_the_hessian(kind: str) -> None:
    A = rng.standard_normal((6, 4))
    x, v = rng.standard_normal(4), rng.standard_normal(4)
    conv = (lambda a: a) if kind == "numpy" else torch.from_numpy
    (hv, hc) = ad.hvp(softplus, (conv(x), ad.Const(conv(A))), (conv(v), None), backend="torch")
    assert hc is None and isinstance(hv, np.ndarray if kind == "numpy" else torch.Tensor)
    oracle = torch.autograd.functional.hessian(
        lambda z: softplus(z, torch.from_numpy(A)), torch.from_numpy(x)
    ).numpy()
    np.testing.assert_allclose(np.asarray(hv), oracle @ v, **F64)


def test_hvp_into_a_duplicated_shadow() -> None:
    A = rng.standard_normal((6, 4))
    x, v = torch.tensor(rng.standard_normal(4)), torch.tensor(rng.standard_normal(4))
    dup = ad.Duplicated(x)
    (out, _) = ad.hvp(softplus, (dup, ad.Const(A)), (v, None), backend="torch")
    assert out is dup.dval
    oracle = torch.autograd.functional.hessian(lambda z: softplus(z, torch.from_numpy(A)), x)
    torch.testing.assert_close(dup.dval, oracle @ v, **F64)


def test_a_prepared_jacobian_and_hessian_keep_giving_the_right_numbers() -> None:
    x = rng.standard_normal(3)
    prep = ad.prepare(
        ad.jacobian, layer, x, ad.Const(W), ad.Const(B), backend="torch", mode="reverse"
    )
    A = rng.standard_normal((6, 3))
    hess = ad.prepare(ad.hessian, softplus, x, ad.Const(A), backend="torch")
    for _ in range(3):
        x = rng.standard_normal(3)
        np.testing.assert_allclose(prep(x, ad.Const(W), ad.Const(B))[0], jacobian_oracle(x), **F64)
        oracle = torch.autograd.functional.hessian(
            lambda z: softplus(z, torch.from_numpy(A)), torch.from_numpy(x)
        )
        np.testing.assert_allclose(hess(x, ad.Const(A))[0][0], oracle.numpy(), **F64)


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_a_python_float_output_is_zero(mode: str) -> None:
    J = ad.jacobian(lambda x: (2.0, x * 3.0), np.ones(2), backend="torch", mode=mode)
    np.testing.assert_array_equal(J[0][0], np.zeros(2))
    np.testing.assert_array_equal(J[1][0], 3.0 * np.eye(2))
