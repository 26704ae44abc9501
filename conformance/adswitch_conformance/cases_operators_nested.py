"""Operators, third part: operators inside functions that are differentiated again (rule
9 for the operator family). Each ``ref_fn`` writes the inner operator's result in closed
form, so the reference is finite differences of a function with no adswitch call in it."""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad

from .case import Case, arr
from .cases_nested import _two_branch

F = "operators"
NESTED = ("nested",)


def _field(p: dict[str, Any], z: Any) -> Any:
    return ad.array_namespace(z, p["W"]).tanh(p["W"] @ z + p["b"])


def _field_slope(p: dict[str, Any], z: Any) -> Any:
    return 1 - np.tanh(p["W"] @ z + p["b"]) ** 2


def _jacobian_penalty(W: Any, x: Any) -> Any:
    xp = ad.array_namespace(W, x)
    J = ad.jacobian(lambda z: xp.tanh(W @ z), x)[0]
    return xp.sum(xp.tanh(W @ x)) + xp.sum(J**2)


def _jacobian_penalty_ref(W: Any, x: Any) -> Any:
    J = (1 - np.tanh(W @ x) ** 2)[:, None] * W
    return np.sum(np.tanh(W @ x)) + np.sum(J**2)


def _net(ps: dict[str, Any], x: Any) -> Any:
    """A small network of 2-d points: (N, 2) -> (N,)."""
    xp = ad.array_namespace(x, ps["W1"])
    return xp.tanh(x @ ps["W1"] + ps["b1"]) @ ps["w2"]


def _net_ps() -> dict[str, Any]:
    return {"W1": arr(500, 2, 4), "b1": arr(501, 4), "w2": arr(502, 4)}


def _pinn_jvp(ps: dict[str, Any], x: Any, e: Any) -> Any:
    xp = ad.array_namespace(x, ps["W1"])
    u, du = ad.jvp(lambda z: _net(ps, z), (x,), (e,))
    return xp.mean((du + u - xp.sin(x[:, 1])) ** 2)


def _pinn_jvp_ref(ps: dict[str, Any], x: Any, e: Any) -> Any:
    h = np.tanh(x @ ps["W1"] + ps["b1"])
    u = h @ ps["w2"]
    du = ((1 - h**2) * (e @ ps["W1"])) @ ps["w2"]
    return np.mean((du + u - np.sin(x[:, 1])) ** 2)


def _pinn_jvp_args() -> tuple[Any, ...]:
    e = np.zeros((5, 2))
    e[:, 0] = 1.0  # d/dt at every collocation point
    return _net_ps(), ad.Const(arr(503, 5, 2)), ad.Const(e)


def _net1(ps: dict[str, Any], t: Any) -> Any:
    """A network of a scalar input at N points: (N,) -> (N,)."""
    xp = ad.array_namespace(t, ps["w1"])
    return xp.tanh(t[:, None] * ps["w1"] + ps["b1"]) @ ps["w2"]


def _pinn_derivative(ps: dict[str, Any], c: Any) -> Any:
    xp = ad.array_namespace(c, ps["w1"])
    du = ad.derivative(lambda t, p, c_: _net1(p, t + c_), 0.0, ps, c)
    return xp.mean((du + _net1(ps, c) * c) ** 2)


def _pinn_derivative_ref(ps: dict[str, Any], c: Any) -> Any:
    h = np.tanh(c[:, None] * ps["w1"] + ps["b1"])
    du = (1 - h**2) @ (ps["w1"] * ps["w2"])
    return np.mean((du + (h @ ps["w2"]) * c) ** 2)


def _field_ps() -> dict[str, Any]:
    return {"W": arr(504, 3, 3), "b": arr(505, 3)}


def _probes() -> Any:
    return np.sign(arr(506, 4, 3))  # Rademacher probes, fixed


def _hutchinson_vjp(p: dict[str, Any], z: Any, V: Any) -> Any:
    xp = ad.array_namespace(z, p["W"])
    y, pullback = ad.vjp(lambda z_: _field(p, z_), z)
    total = xp.sum(y**2) * 0.1
    for v in V:
        (vJ,) = pullback(v)
        total = total + xp.sum(vJ * v) / V.shape[0]
    return total


def _hutchinson_jvp(p: dict[str, Any], z: Any, V: Any) -> Any:
    xp = ad.array_namespace(z, p["W"])
    total = xp.sum(_field(p, z) ** 2) * 0.1
    for v in V:
        _, Jv = ad.jvp(lambda z_: _field(p, z_), (z,), (v,))
        total = total + xp.sum(v * Jv) / V.shape[0]
    return total


def _hutchinson_ref(p: dict[str, Any], z: Any, V: Any) -> Any:
    J = _field_slope(p, z)[:, None] * p["W"]
    return 0.1 * np.sum(np.tanh(p["W"] @ z + p["b"]) ** 2) + np.mean(
        np.einsum("ki,ij,kj->k", V, J, V)
    )


def _hutchinson_args() -> tuple[Any, ...]:
    return _field_ps(), ad.Const(arr(507, 3)), ad.Const(_probes())


def _ntk_trace(p: dict[str, Any], x: Any) -> Any:
    xp = ad.array_namespace(x, p["W"])
    J = ad.jacobian(lambda q: xp.tanh(x @ q["W"]) @ q["v"], p)[0]
    return xp.sum(J["W"] ** 2) + xp.sum(J["v"] ** 2)


def _ntk_trace_ref(p: dict[str, Any], x: Any) -> Any:
    h = np.tanh(x @ p["W"])
    J_W = x[:, :, None] * ((1 - h**2) * p["v"])[:, None, :]
    return np.sum(J_W**2) + np.sum(h**2)


def _seed_jacobian_args() -> tuple[Any, ...]:
    """Seed 000's parameters (width 6) and tuple input, on a batch of 3 points."""
    ps = {"W1": arr(526, 6, 2), "b1": arr(527, 6, 1), "W2": arr(528, 6, 1), "b2": arr(529, 6, 1)}
    return ps, ((arr(530, 2, 3), arr(531, 1, 3)), arr(532, 2, 3))


def _seed_jacobian_loss(ps: dict[str, Any], data: Any) -> Any:
    (u, t), targets = data
    xp = ad.array_namespace(u, targets)
    J = ad.jacobian(lambda u_: _two_branch(ps, u_, t, "tanh"), u)[0]  # (6, 3, 2, 3)
    return xp.mean(J**2) + xp.mean(xp.sum(J, axis=(0, 1)) * targets)


def _seed_jacobian_ref(ps: dict[str, Any], data: Any) -> Any:
    (u, _t), targets = data
    s = 1 - np.tanh(ps["W1"] @ u + ps["b1"]) ** 2  # (6, 3)
    J = np.einsum("in,ik,nm->inkm", s, ps["W1"], np.eye(u.shape[1]))
    return np.mean(J**2) + np.mean(np.sum(J, axis=(0, 1)) * targets)


def _hvp_norm(x: Any, v: Any, a: Any) -> Any:
    xp = ad.array_namespace(x, v, a)
    (hv,) = ad.hvp(lambda y: xp.sum(xp.exp(a @ y)), (x,), (v,))
    return xp.sum(hv**2)


def _hvp_norm_ref(x: Any, v: Any, a: Any) -> Any:
    return np.sum((a.T @ (np.exp(a @ x) * (a @ v))) ** 2)


def _grad_field(x: Any, A: Any) -> Any:
    xp = ad.array_namespace(x, A)
    return ad.gradient(lambda y: xp.sum(xp.tanh(A @ y) ** 2), x)[0]


def _grad_field_ref(x: Any, A: Any) -> Any:
    h = np.tanh(A @ x)
    return A.T @ (2 * h * (1 - h**2))


CASES = [
    Case(
        "operators.jacobian_norm_penalty",
        F,
        "gradient of a loss holding the squared Frobenius norm of an input Jacobian "
        "(ad.jacobian inside f), w.r.t. the weights",
        _jacobian_penalty,
        lambda: (arr(508, 3, 4), ad.Const(arr(509, 4))),
        ref_fn=_jacobian_penalty_ref,
        requires=NESTED,
    ),
    Case(
        "operators.pinn_jvp_residual",
        F,
        "PINN: du/dt of a small network by ad.jvp along e_t at collocation points, the "
        "residual's MSE differentiated w.r.t. the parameters (closed over)",
        _pinn_jvp,
        _pinn_jvp_args,
        ref_fn=_pinn_jvp_ref,
        requires=NESTED,
    ),
    Case(
        "operators.pinn_derivative_residual",
        F,
        "PINN: du/dt by ad.derivative (the parameters passed as its constant args, "
        "differentiated by the outer gradient: their dependence must not be cut)",
        _pinn_derivative,
        lambda: ({"w1": arr(510, 4), "b1": arr(511, 4), "w2": arr(512, 4)}, ad.Const(arr(513, 5))),
        ref_fn=_pinn_derivative_ref,
        requires=NESTED,
    ),
    Case(
        "operators.hutchinson_vjp",
        F,
        "Hutchinson's trace estimator mean_k v_k^T J v_k through one ad.vjp's pullback "
        "called per probe, differentiated w.r.t. the field's parameters",
        _hutchinson_vjp,
        _hutchinson_args,
        ref_fn=_hutchinson_ref,
        requires=NESTED,
    ),
    Case(
        "operators.hutchinson_jvp",
        F,
        "Hutchinson's estimator through one ad.jvp per probe, differentiated w.r.t. the "
        "field's parameters",
        _hutchinson_jvp,
        _hutchinson_args,
        ref_fn=_hutchinson_ref,
        requires=NESTED,
    ),
    Case(
        "operators.parameter_jacobian",
        F,
        "the NTK trace (sum of squares of a network's parameter Jacobian, ad.jacobian of "
        "a dict) differentiated w.r.t. the same parameters",
        _ntk_trace,
        lambda: ({"W": arr(514, 3, 2), "v": arr(515, 2)}, ad.Const(arr(516, 4, 3))),
        ref_fn=_ntk_trace_ref,
        requires=NESTED,
    ),
    Case(
        "operators.seed000_input_jacobian",
        F,
        "seed 000's two-branch tanh network on its tuple input with the inner gradient "
        "replaced by the full input Jacobian (6, 3, 2, 3) inside the loss",
        _seed_jacobian_loss,
        _seed_jacobian_args,
        ref_fn=_seed_jacobian_ref,
        requires=NESTED,
    ),
    Case(
        "operators.hvp_inside_gradient",
        F,
        "gradient of |H v|^2 with ad.hvp inside f (third derivatives): closed-form H v "
        "A^T diag(exp(Ax)) A v",
        _hvp_norm,
        lambda: (arr(517, 3), ad.Const(arr(518, 3)), ad.Const(arr(519, 4, 3))),
        ref_fn=_hvp_norm_ref,
        requires=NESTED,
    ),
    Case(
        "operators.gradient_inside_jacobian",
        F,
        "jacobian of a function returning ad.gradient of sum(tanh(Ay)^2): the Hessian, "
        "None for the Const A",
        _grad_field,
        lambda: (arr(520, 3), ad.Const(arr(521, 4, 3))),
        entry="jacobian",
        ref_fn=_grad_field_ref,
        requires=NESTED,
    ),
    Case(
        "operators.gradient_inside_vjp",
        F,
        "vjp of a function returning ad.gradient (a reverse-over-reverse pullback), and "
        "its adjoint identity with the jvp of the gradient",
        _grad_field,
        lambda: (arr(522, 3), ad.Const(arr(523, 4, 3))),
        entry="vjp",
        ref_fn=_grad_field_ref,
        seeds=lambda: (arr(524, 3), arr(525, 3)),
        requires=NESTED,
    ),
]
