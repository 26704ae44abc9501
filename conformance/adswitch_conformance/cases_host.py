"""Host code with a rule (issue 20): ``ad.custom_vjp(f, host=True)`` /
``ad.custom_jvp(g, host=True)``, whose functions see numpy whatever the engine, and
``ad.differentiate_with(fn, backend=name)``, a piece of ``f`` differentiated by another
engine. References: closed forms (the flow of ``dy/dt = A y`` is ``expm(A T) y0``; its
gradient in ``A`` is ``expm_frechet``) or finite differences (outside an adswitch call a
host rule is its function, ``differentiate_with`` runs ``fn`` on its engine). Every case
passes ``out_shape=`` (a compiling engine, jax, needs it). A reverse rule needs reverse
mode (``Capabilities.custom_vjp``: the dual example refuses); an engine that honours no
rule (``Capabilities.rules``: finite differences) refuses every case. A piece handed to
an engine that is not installed is accepted as ``BackendUnavailableError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad
from adswitch.errors import BackendUnavailableError, UnsupportedError, UsageError

from .case import Case, arr

F = "host"
VJP = ("custom_vjp",)
T = 0.9
_A = np.array([[-0.4, 0.9], [-0.8, -0.2]])
_W = np.array([0.6, -1.1])
_TOL = {"rtol": 1e-13, "atol": 1e-14}


def _xp(*xs: Any) -> Any:
    return ad.array_namespace(*xs)


def _solve(y0: np.ndarray, a: np.ndarray) -> np.ndarray:
    from scipy.integrate import solve_ivp

    sol = solve_ivp(lambda t, y: a @ y, (0.0, T), y0, method="DOP853", **_TOL)
    out: np.ndarray = sol.y[:, -1]
    return out


def _adjoint(res: tuple[np.ndarray, np.ndarray], ct: np.ndarray) -> tuple[Any, Any]:
    """Backwards in s = T - t: y' = -A y, lambda' = A^T lambda, (dL/dA)' = lambda y^T."""
    from scipy.integrate import solve_ivp

    y0, a = res
    n = y0.size

    def rhs(s: float, z: np.ndarray) -> np.ndarray:
        y, lam = z[:n], z[n : 2 * n]
        return np.concatenate([-(a @ y), a.T @ lam, np.outer(lam, y).ravel()])

    z0 = np.concatenate([_solve(y0, a), np.asarray(ct, dtype=float), np.zeros(n * n)])
    z = solve_ivp(rhs, (0.0, T), z0, method="DOP853", **_TOL).y[:, -1]
    return z[n : 2 * n], z[2 * n :].reshape(n, n)


flow = ad.custom_vjp(_solve, host=True, out_shape=np.empty(2))
flow.defvjp(lambda y0, a: (_solve(y0, a), (y0, a)), _adjoint)


def _flow_loss(y0: Any, a: Any) -> Any:
    y = flow(y0, a)
    xp = _xp(y)
    return xp.sum(y * y * xp.asarray(_W))


def _flow_closed(y0: np.ndarray, a: np.ndarray) -> tuple[Any, ...]:
    from scipy.linalg import expm, expm_frechet

    g = 2 * _W * (expm(a * T) @ y0)
    return expm(a * T).T @ g, T * expm_frechet((a * T).T, np.outer(g, y0), compute_expm=False)


def _flow_args() -> tuple[Any, ...]:
    return (arr(901, 2), _A + 0.1 * arr(902, 2, 2))


def _flow_jac(y0: np.ndarray, a: Any) -> tuple[Any, ...]:
    from scipy.linalg import expm

    return (expm(np.asarray(a) * T), None)


sine_jvp = ad.custom_jvp(np.sin, host=True, out_shape=np.empty(4))
sine_jvp.defjvp(lambda p, t: (np.sin(p[0]), np.cos(p[0]) * t[0]))

_V = np.array([0.5, -1.0, 2.0, 0.3])


def _sine_path(t: Any) -> Any:
    return sine_jvp(t * _xp(t).asarray(_V))


bad_count = ad.custom_vjp(np.sin, host=True, out_shape=np.empty(3))
bad_count.defvjp(lambda x: (np.sin(x), np.cos(x)), lambda c, ct: (c * ct, c))


def _inner(x: Any, w: Any) -> Any:
    xp = _xp(x, w)
    return xp.sin(x) * xp.asarray(w) + x * x


def _piece(engine: str, mode: str = "reverse") -> Any:
    return ad.differentiate_with(_inner, backend=engine, mode=mode, out_shape=np.empty(3))


def _piece_loss(engine: str) -> Any:
    piece = _piece(engine)

    def loss(x: Any, w: Any) -> Any:
        y = piece(x, w)
        return _xp(y).sum(y * y)

    return loss


_forward_piece = ad.differentiate_with(
    lambda x, w: _inner(x, w), backend="jax", mode="forward", out_shape=np.empty(3)
)


def _forward_path(t: Any) -> Any:
    xp = _xp(t)
    return _forward_piece(t * xp.asarray(_V[:3]), xp.asarray(_V[1:]) + t)


def _case(name: str, what: str, fn: Any, make: Any, **kw: Any) -> Case:
    kw["requires"] = ("rules", *kw.get("requires", ()))
    return Case(f"host.{name}", F, what, fn, make, **kw)


# fmt: off
CASES: list[Case] = [
    _case("solve_ivp_gradient", "scipy solve_ivp of dy/dt = A y with a user adjoint: "
          "gradients in y0 and A equal expm(A T)^T g and the expm_frechet closed form",
          _flow_loss, _flow_args, closed_form=_flow_closed, requires=VJP,
          second_args=lambda: (arr(903, 2), _A - 0.1 * arr(904, 2, 2))),
    _case("solve_ivp_jacobian", "reverse jacobian of the solve_ivp flow in y0 (Const A): "
          "expm(A T), one adjoint solve per row", flow,
          lambda: (arr(905, 2), ad.Const(_A.copy())), entry="jacobian", mode="reverse",
          closed_form=_flow_jac, requires=VJP),
    _case("host_jvp_forward", "custom_jvp(host=True) of np.sin under ad.derivative of "
          "t -> sin(t v): the rule's cos(t v) v", _sine_path, lambda: (np.array(0.7),),
          entry="derivative", requires=("forward",)),
    *[
        _case(f"differentiate_with_{e}", f"a piece of f differentiated by {e} "
              "(ad.differentiate_with), gradient of sum(piece(x, w)**2)",
              _piece_loss(e), lambda: (arr(910, 3), arr(911, 3)), requires=VJP,
              also_ok=(BackendUnavailableError,))
        for e in ("tape", "torch", "jax", "autograd")
    ],
    _case("differentiate_with_forward", "differentiate_with(mode='forward') to jax under "
          "ad.derivative: the tangent is jax's", _forward_path, lambda: (np.array(0.4),),
          entry="derivative", requires=("forward",), also_ok=(BackendUnavailableError,)),
    # -- refusals: an AdswitchError naming the fix, never a wrong number
    _case("error_second_order", "a hessian through host code: UnsupportedError (numpy's "
          "derivative is not differentiable again), never a silent zero",
          lambda x: _xp(x).sum(flow(x, _A) ** 2), lambda: (arr(916, 2),), entry="hessian",
          raises=UnsupportedError),
    _case("error_cotangent_count", "a host bwd returning two cotangents for one argument: "
          "the front end's UsageError", lambda x: _xp(x).sum(bad_count(x)),
          lambda: (arr(917, 3),), raises=UsageError, requires=VJP),
]
# fmt: on
