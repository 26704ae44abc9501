"""Front-end behaviour of ad.custom_vjp / ad.custom_jvp / ad.stop_gradient.

Engine-independent checks: calls outside any differentiation, the user-facing errors,
and an engine without the hooks (the finite-difference test engine in a fresh registry).
Then the tape's hooks (``adswitch_tape.custom``) in every mode and order, batched,
prepared, with ties and Duplicated. Closed forms and finite differences are the oracles.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from tests.support.fd_engine import FiniteDifferenceBackend


def _lse(x: Any) -> Any:
    xp = ad.array_namespace(x)
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m)))


def test_outside_a_call_a_rule_is_its_function() -> None:
    cv = ad.custom_vjp(_lse)
    cv.defvjp(lambda x: (_lse(x), x), lambda r, ct: (ct * r,))
    x = np.array([1000.0, 1000.0])
    assert cv(x) == pytest.approx(1000.0 + np.log(2.0))  # closed form, finite
    cj = ad.custom_jvp(lambda x, n: x * n, nondiff_argnums=(1,))
    assert cj(2.0, 3) == 6.0
    tree = {"a": np.ones(2), "b": [1.5, 2]}
    assert ad.stop_gradient(tree) is tree


def test_stop_gradient_of_a_string_names_the_key_path() -> None:
    with pytest.raises(ad.UsageError, match=r"x\['b'\]\[1\].*str"):
        ad.stop_gradient({"a": np.ones(2), "b": [1.0, "no"]})


def test_bad_nondiff_argnums() -> None:
    with pytest.raises(ad.UsageError, match="nondiff_argnums"):
        ad.custom_vjp(_lse, nondiff_argnums=(-1,))


@pytest.fixture
def fd(fresh_registry: Any) -> FiniteDifferenceBackend:
    engine = FiniteDifferenceBackend()
    fresh_registry.add(engine)
    return engine


def test_engine_without_hooks_refuses_with_the_hook_name(fd: FiniteDifferenceBackend) -> None:
    cv = ad.custom_vjp(_lse)
    cv.defvjp(lambda x: (_lse(x), None), lambda r, ct: (ct,))
    cj = ad.custom_jvp(_lse)
    cj.defjvp(lambda p, t: (_lse(*p), t[0][0]))
    x = np.array([0.5, 1.5])
    with pytest.raises(ad.UnsupportedError, match=r"Backend\.custom_vjp.*Engines that have"):
        ad.gradient(cv, x, backend="fd")
    with pytest.raises(ad.UnsupportedError, match=r"Backend\.custom_jvp"):
        ad.gradient(cj, x, backend="fd")
    with pytest.raises(ad.UnsupportedError, match=r"Backend\.stop_gradient"):
        ad.gradient(lambda x: ad.array_namespace(x).sum(ad.stop_gradient(x)), x, backend="fd")


def test_defvjp_never_called(fd: FiniteDifferenceBackend) -> None:
    cv = ad.custom_vjp(_lse)
    with pytest.raises(ad.UsageError, match=r"defvjp was never called.*_lse\.defvjp"):
        ad.gradient(cv, np.array([0.5, 1.5]), backend="fd")
    cj = ad.custom_jvp(_lse)
    with pytest.raises(ad.UsageError, match=r"defjvp was never called"):
        ad.gradient(cj, np.array([0.5, 1.5]), backend="fd")


class _Engine:
    """Hook stand-in: calls the flat callables the way an engine would, and returns the
    checked results (so the front end's checks are exercised without any AD engine)."""

    def __init__(self) -> None:
        self.grads: list[Any] = []

    def custom_vjp(self, fn: Any, fwd: Any, bwd: Any, leaves: Any, active: Any) -> Any:
        out, res = fwd(list(leaves))
        self.grads = bwd(res, [np.ones_like(np.asarray(o, dtype=float)) for o in out])
        return out

    def custom_jvp(self, fn: Any, rule: Any, leaves: Any, active: Any) -> Any:
        out, tangents = rule(list(leaves), [None] * len(leaves))
        self.grads = tangents
        return out


def _call_with_hooks(monkeypatch: pytest.MonkeyPatch, f: Any, *args: Any) -> _Engine:
    from adswitch.selection import current_calls

    engine = _Engine()
    engine.name = "stand-in"  # type: ignore[attr-defined]
    engine.owns = lambda x: isinstance(x, np.ndarray)  # type: ignore[attr-defined]
    token = current_calls.set((engine,))  # (as if f ran inside a call on the stand-in)
    try:
        f(*args)
    finally:
        current_calls.reset(token)
    return engine


def test_bwd_results_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    x, w = np.array([1.0, 2.0]), {"k": np.zeros(3), "n": 4}

    def f(x: Any, w: Any) -> Any:
        return x * 2.0

    cv = ad.custom_vjp(f)
    cv.defvjp(lambda x, w: (f(x, w), None), lambda r, ct: (ct,))
    with pytest.raises(ad.UsageError, match=r"bwd returned 1 values.*tuple of 2"):
        _call_with_hooks(monkeypatch, cv, x, w)
    cv.defvjp(lambda x, w: (f(x, w), None), lambda r, ct: (ct, {"k": np.ones(2), "n": None}))
    with pytest.raises(ad.UsageError, match=r"args\[1\]\['k'\] \(argument 1\) has shape \(2,\)"):
        _call_with_hooks(monkeypatch, cv, x, w)
    cv.defvjp(lambda x, w: (f(x, w), None), lambda r, ct: (ct, {"k": np.ones(3)}))
    with pytest.raises(ad.UsageError, match=r"cotangent for argument 1 has another structure"):
        _call_with_hooks(monkeypatch, cv, x, w)
    cv.defvjp(lambda x, w: ([f(x, w)], None), lambda r, ct: (ct, None))
    with pytest.raises(ad.UsageError, match=r"output fwd returns differs from f's"):
        _call_with_hooks(monkeypatch, cv, x, w)
    # A right rule: integer leaves get None, a None argument is all zeros (None).
    cv.defvjp(lambda x, w: (f(x, w), None), lambda r, ct: (ct * 0.5, {"k": None, "n": 7}))
    engine = _call_with_hooks(monkeypatch, cv, x, w)
    np.testing.assert_allclose(engine.grads[0], [0.5, 0.5])
    assert engine.grads[1:] == [None, None]


def test_jvp_rule_results_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.array([1.0, 2.0])
    cj = ad.custom_jvp(lambda x: {"y": x})
    cj.defjvp(lambda p, t: ({"y": p[0]}, {"y": np.ones(5)}))
    with pytest.raises(ad.UsageError, match=r"tangent at out\['y'\] has shape \(5,\)"):
        _call_with_hooks(monkeypatch, cj, x)
    cj.defjvp(lambda p, t: ({"z": p[0]}, {"z": t[0]}))
    with pytest.raises(ad.UsageError, match=r"differs from f's"):
        _call_with_hooks(monkeypatch, cj, x)
    cj.defjvp(lambda p, t: (p[0], t[0]))
    with pytest.raises(ad.UsageError, match=r"differs from f's"):
        _call_with_hooks(monkeypatch, cj, x)
    # None tangents from the engine reach the rule as zeros of the leaf's shape.
    seen: list[Any] = []

    def rule(p: Any, t: Any) -> Any:
        seen.append(t[0])
        return {"y": p[0]}, {"y": None}

    cj.defjvp(rule)
    engine = _call_with_hooks(monkeypatch, cj, x)
    np.testing.assert_array_equal(seen[0], np.zeros(2))
    np.testing.assert_array_equal(engine.grads[0], np.zeros(2))


def _x_times_stopped(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(x * ad.stop_gradient(x) ** 2)


def test_tape_stop_gradient_every_mode() -> None:
    # f(x) = sum(x * c**2) with c = x held constant: gradient c**2 (not 3 x**2),
    # hessian 0 (not 6 diag(x)), jvp c**2 . v.
    x = np.array([1.0, -2.0, 3.0])
    (g,) = ad.gradient(_x_times_stopped, x, backend="tape")
    np.testing.assert_allclose(g, x**2)
    h = ad.hessian(_x_times_stopped, x, backend="tape")
    np.testing.assert_allclose(np.asarray(h).reshape(3, 3), np.zeros((3, 3)))
    v = np.array([0.5, 1.0, -1.0])
    out = ad.jvp(_x_times_stopped, (x,), (v,), backend="tape")
    tangent = out[1] if isinstance(out, tuple) else out.tangent
    np.testing.assert_allclose(tangent, float(x**2 @ v))
    # Prepared: right at a second point (the recording re-traces).
    prep = ad.prepare(ad.gradient, _x_times_stopped, x, backend="tape")
    x2 = np.array([2.0, 0.5, -1.0])
    with pytest.warns(Warning, match="traces f in Python on every call"):
        np.testing.assert_allclose(prep(x2)[0], x2**2)


# -- the tape's hooks (adswitch_tape.custom) ---------------------------------------------
# Oracles: closed forms (softmax for logsumexp, the rule's own formula where the rule
# differs from the function's derivative on purpose) and central finite differences of a
# closed-form function; never the tape against itself.
X = np.array([0.3, -1.2, 2.0, 0.5])
V = np.array([1.0, -0.5, 0.25, 2.0])


def _np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()  # type: ignore[no-any-return]


def _np_lse(x: np.ndarray) -> float:
    return float(x.max() + np.log(np.exp(x - x.max()).sum()))


def _fd_jacobian(g: Any, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of the closed-form ``g``: ``J[i, j] = dg_i/dx_j``."""
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        cols.append((np.asarray(g(x + e)) - np.asarray(g(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def _lse_fwd(x: Any) -> tuple[Any, Any]:
    out = _lse(x)
    return out, (x, out)


def _lse_bwd(res: Any, g: Any) -> tuple[Any]:
    x, out = res
    return (g * ad.array_namespace(x).exp(x - out),)  # differentiable ops: it nests


lse = ad.custom_vjp(_lse)
lse.defvjp(_lse_fwd, _lse_bwd)

clipped = ad.custom_vjp(lambda x: x)  # the gradient clipped to [-1, 1]: not d(x)/dx
clipped.defvjp(lambda x: (x, None), lambda _, g: (ad.array_namespace(g).clip(g, -1.0, 1.0),))


def _sin2_rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    xp = ad.array_namespace(x)
    return xp.sin(x), 2.0 * xp.cos(x) * t  # twice the true derivative, on purpose


sin2 = ad.custom_jvp(lambda x: ad.array_namespace(x).sin(x))
sin2.defjvp(_sin2_rule)


def _sum(x: Any) -> Any:
    return ad.array_namespace(x).sum(x)


def _h(h: Any) -> np.ndarray:
    """A one-argument Hessian as an array (``hessian`` nests it in tuples per argument)."""
    while isinstance(h, tuple):
        (h,) = h
    return np.asarray(h)


@pytest.mark.parametrize("shift", [0.0, 1000.0])
def test_tape_logsumexp_gradient_is_softmax(shift: float) -> None:
    x = X + shift  # at 1000 the naive exp overflows: the rule's gradient stays finite
    value, (g,) = ad.withgradient(lse, x, backend="tape")
    assert float(value) == pytest.approx(_np_lse(x))
    np.testing.assert_allclose(g, _np_softmax(x), rtol=1e-12, atol=1e-15)
    x32 = x.astype(np.float32)
    (g32,) = ad.gradient(lse, x32, backend="tape")
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, _np_softmax(x32.astype(np.float64)), rtol=1e-4)


def test_tape_clipped_gradient_and_straight_through() -> None:
    (g,) = ad.gradient(lambda x: _sum(3.0 * clipped(x)), X, backend="tape")
    np.testing.assert_allclose(g, np.ones_like(X))  # clip(3) = 1, not 3
    st = ad.custom_vjp(lambda x: ad.array_namespace(x).round(x))
    st.defvjp(lambda x: (ad.array_namespace(x).round(x), None), lambda _, g: (g,))
    value, (g,) = ad.withgradient(lambda x: _sum(st(x) * x), X, backend="tape")
    assert float(value) == pytest.approx(float(np.sum(np.round(X) * X)))
    np.testing.assert_allclose(g, X + np.round(X))  # d/dx [st(x) x] = x + round(x)


def test_tape_second_order_through_custom_vjp() -> None:
    hess = _fd_jacobian(_np_softmax, X)  # the Hessian of logsumexp
    np.testing.assert_allclose(_h(ad.hessian(lse, X, backend="tape")), hess, atol=1e-8)
    (hv,) = ad.hvp(lse, (X,), (V,), backend="tape")
    np.testing.assert_allclose(hv, hess @ V, atol=1e-8)

    def inner_dot(x: Any) -> Any:  # d/dx <grad(lse^2)(x), V>, grad = 2 lse softmax
        xp = ad.array_namespace(x)
        (g,) = ad.gradient(lambda y: lse(y) ** 2, x)
        return xp.sum(g * xp.asarray(V))

    (got,) = ad.gradient(inner_dot, X, backend="tape")
    closed = _fd_jacobian(lambda x: 2 * _np_lse(x) * _np_softmax(x), X)
    np.testing.assert_allclose(got, closed.T @ V, atol=1e-7)


def _two_out(x: Any, w: Any) -> Any:
    xp = ad.array_namespace(x)
    return {"s": xp.sum(x * w), "t": xp.tanh(x), "n": xp.argmax(x)}  # n: an integer output


two = ad.custom_vjp(_two_out)
two.defvjp(
    lambda x, w: (_two_out(x, w), (x, w)),
    lambda r, ct: (
        ct["s"] * r[1] + ct["t"] * (1 - ad.array_namespace(r[0]).tanh(r[0]) ** 2),
        ct["s"] * r[0],
    ),
)


def test_tape_several_outputs_batched_jacobian() -> None:
    # One rule entry, cotangents of both outputs gathered (zeros where none reached), and
    # the reverse Jacobian's batched sweep calling bwd once per row.
    w = np.array([2.0, -1.0, 0.5, 3.0])
    (gx, gw) = ad.gradient(lambda x, w: two(x, w)["s"], X, w, backend="tape")
    np.testing.assert_allclose(gx, w)
    np.testing.assert_allclose(gw, X)
    (jac,) = ad.jacobian(lambda x: two(x, w)["t"] * 2.0, X, backend="tape")
    np.testing.assert_allclose(jac, np.diag(2 * (1 - np.tanh(X) ** 2)), atol=1e-12)
    (jac,) = ad.jacobian(lambda x: two(x, w)["t"] + two(x, w)["s"], X, backend="tape")
    np.testing.assert_allclose(jac, np.diag(1 - np.tanh(X) ** 2) + w[None, :], atol=1e-12)
    assert int(ad.gradient(lambda x: two(x, w)["s"] + 0 * two(x, w)["n"], X,
                           backend="tape")[0].size) == 4  # fmt: skip


def test_tape_custom_vjp_in_forward_mode_refuses() -> None:
    with pytest.raises(ad.UnsupportedError, match="custom_vjp has no forward-mode rule"):
        ad.jvp(lse, (X,), (V,), backend="tape")
    with pytest.raises(ad.UnsupportedError, match=r"define ad\.custom_jvp"):
        ad.jacobian(clipped, X, backend="tape", mode="forward")


def test_tape_transposed_forward_mode_refuses_a_vjp_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    # Forward mode falls back to transposing the reverse sweep when an operation has no
    # tangent rule; transposing a clipped bwd would give the unclipped 3 V, silently.
    from adswitch_tape.recording import PRIMS
    from adswitch_tape.rules import primitives as P

    monkeypatch.setattr(PRIMS[P.sin], "jvp", None)
    f = lambda x: ad.array_namespace(x).sin(clipped(3.0 * x))  # noqa: E731
    with pytest.raises(ad.UnsupportedError, match="custom_vjp has no forward-mode rule"):
        ad.jvp(f, (X,), (V,), backend="tape")
    out = ad.jvp(lambda x: ad.array_namespace(x).sin(x), (X,), (V,), backend="tape")
    np.testing.assert_allclose(out[1], np.cos(X) * V)  # (the fallback itself works)


def test_tape_custom_jvp_forward_and_reverse() -> None:
    out, t = ad.jvp(sin2, (X,), (V,), backend="tape")
    np.testing.assert_allclose(out, np.sin(X))
    np.testing.assert_allclose(t, 2 * np.cos(X) * V)
    diag = np.diag(2 * np.cos(X))
    for mode in ("forward", "reverse"):  # batched tangents / cotangents: row by row
        (jac,) = ad.jacobian(sin2, X, backend="tape", mode=mode)
        np.testing.assert_allclose(jac, diag, atol=1e-15)
    (g,) = ad.gradient(lambda x: _sum(sin2(x) * ad.array_namespace(x).asarray(V)), X,
                       backend="tape")  # fmt: skip
    np.testing.assert_allclose(g, 2 * np.cos(X) * V)
    h = _h(ad.hessian(lambda x: _sum(sin2(x)), X, backend="tape"))
    np.testing.assert_allclose(h, np.diag(-2 * np.sin(X)), atol=1e-12)  # d/dx 2 cos x


def test_tape_custom_jvp_tree_and_nondiff() -> None:
    # out = a * x + b with the int n a nondiff argument; rule: n * (ta x + a tx + tb)
    def f(n: int, p: Any) -> Any:
        return p["a"] * p["x"] + p["b"]

    cj = ad.custom_jvp(f, nondiff_argnums=(0,))
    cj.defjvp(lambda n, pr, tg: (f(n, pr[0]), n * (tg[0]["a"] * pr[0]["x"] +
              pr[0]["a"] * tg[0]["x"] + tg[0]["b"])))  # fmt: skip
    p = {"a": np.array([1.5, -2.0]), "x": np.array([0.5, 4.0]), "b": np.array([1.0, 1.0])}
    (g,) = ad.gradient(lambda p: _sum(cj(3, p)), p, backend="tape")
    np.testing.assert_allclose(g["a"], 3 * p["x"])
    np.testing.assert_allclose(g["x"], 3 * p["a"])
    np.testing.assert_allclose(g["b"], [3.0, 3.0])


def test_tape_ties_and_duplicated_through_rules() -> None:
    # The same array in two rule calls (and twice in one) gets the sum of the rules'.
    (g,) = ad.gradient(lambda x: _sum(3.0 * clipped(x)) + lse(x) + _sum(sin2(x)), X,
                       backend="tape")  # fmt: skip
    np.testing.assert_allclose(g, 1.0 + _np_softmax(X) + 2 * np.cos(X))
    mul = ad.custom_vjp(lambda a, b: a * b)
    mul.defvjp(lambda a, b: (a * b, (a, b)), lambda r, ct: (ct * r[1], ct * r[0]))
    (g,) = ad.gradient(lambda x: _sum(mul(x, x)), X, backend="tape")
    np.testing.assert_allclose(g, 2 * X)
    shadow = np.zeros(4)
    ad.gradient(lse, ad.Duplicated(X.copy(), shadow), backend="tape")
    np.testing.assert_allclose(shadow, _np_softmax(X), rtol=1e-12)


def test_tape_rules_prepared_replay() -> None:
    # A prepared call records a rule call as one operation and replays it (no
    # TapeReplayWarning): the user's fwd/bwd run again on the new values.
    import warnings

    from adswitch_tape.replay.notices import TapeReplayWarning

    y, z = X[::-1] * 2.0, X * 0.5 - 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", TapeReplayWarning)
        grad = ad.prepare(ad.gradient, lse, X, backend="tape")
        for point in (X, y, z):
            np.testing.assert_allclose(grad(point)[0], _np_softmax(point), rtol=1e-12)
        jvp = ad.prepare(ad.jvp, sin2, (X,), (V,), backend="tape")
        for point in (y, z):
            np.testing.assert_allclose(jvp((point,), (V,))[1], 2 * np.cos(point) * V)
        jac = ad.prepare(ad.jacobian, clipped, X, backend="tape")
        np.testing.assert_allclose(jac(y)[0], np.eye(4))
        both = ad.prepare(ad.gradient, lambda x: lse(x) * _sum(3.0 * clipped(x)), X,
                          backend="tape")  # fmt: skip
        for point in (y, z):
            ref = _np_softmax(point) * _sum(3.0 * point) + np.clip(3.0 * _np_lse(point), -1, 1)
            np.testing.assert_allclose(both(point)[0], ref, rtol=1e-12)
    hess = ad.prepare(ad.hessian, lse, X, backend="tape")
    np.testing.assert_allclose(_h(hess(y)), _fd_jacobian(_np_softmax, y), atol=1e-8)


def test_tape_rules_prepared_nondiff_arguments() -> None:
    # A numeric nondiff argument replays; one the replay could not recompute (an
    # object) makes the call trace every time, warned, with the right numbers.
    from adswitch_tape.replay.notices import TapeReplayWarning

    scale = ad.custom_vjp(lambda x, k: x * k["k"], nondiff_argnums=(1,))
    scale.defvjp(lambda x, k: (x * k["k"], None), lambda k, r, ct: (ct * k["k"],))
    box = {"k": 3.0}
    grad = ad.prepare(ad.gradient, lambda x: _sum(scale(x, box)), X, backend="tape")
    np.testing.assert_allclose(grad(X)[0], np.full(4, 3.0))
    box["k"] = 5.0  # read through f's closure: the guard sees it, f is traced again
    np.testing.assert_allclose(grad(X)[0], np.full(4, 5.0))
    obj = type("Box", (), {"k": 2.0})()
    scale2 = ad.custom_vjp(lambda x, o: x * o.k, nondiff_argnums=(1,))
    scale2.defvjp(lambda x, o: (x * o.k, None), lambda o, r, ct: (ct * o.k,))
    with pytest.warns(TapeReplayWarning, match="custom rule"):
        g2 = ad.prepare(ad.gradient, lambda x: _sum(scale2(x, obj)), X, backend="tape")
        np.testing.assert_allclose(g2(X * 2)[0], np.full(4, 2.0))


def test_tape_third_order_and_zero_cotangents() -> None:
    # d/dx |H(x) V|^2 through the rule, against central differences of the closed form;
    # bwd's None for an active argument (and a view, a numpy constant) reach the sweep.
    def hv(x: Any) -> Any:
        (h,) = ad.hvp(lse, (x,), (V,))
        return _sum(h * h)

    def hv_np(x: np.ndarray) -> float:
        return float(np.sum((_fd_jacobian(_np_softmax, x, 1e-5) @ V) ** 2))

    (g,) = ad.gradient(hv, X, backend="tape")
    np.testing.assert_allclose(g, _fd_jacobian(lambda x: np.array([hv_np(x)]), X, 1e-4)[0],
                               atol=1e-7)  # fmt: skip
    mul = ad.custom_vjp(lambda a, b: a * b)
    mul.defvjp(lambda a, b: (a * b, (a, b)), lambda r, ct: (ct * r[1], None))
    c = np.array([1.0, 2.0])
    (g,) = ad.gradient(lambda x: _sum(mul(x[1:3], c)), X, backend="tape")
    np.testing.assert_allclose(g, [0.0, 1.0, 2.0, 0.0])
    gx, gw = ad.gradient(lambda x, w: _sum(mul(x, w)), X, 2 * X, backend="tape")
    np.testing.assert_allclose(gx, 2 * X)
    np.testing.assert_allclose(gw, np.zeros(4))  # the rule's None, not d(a b)/db


def test_tape_rules_with_writes_and_python_floats() -> None:
    # A write into the argument after the rule call leaves the rule's residuals as they
    # were (copy-on-write); Python float arguments in both modes and second order.
    def f(x: Any) -> Any:
        y = lse(x)
        x[0] = 5.0
        return y + _sum(x)

    (g,) = ad.gradient(f, X.copy(), backend="tape")
    np.testing.assert_allclose(g, _np_softmax(X) + np.array([0.0, 1.0, 1.0, 1.0]), rtol=1e-12)
    sq = ad.custom_vjp(lambda a: a * a)
    sq.defvjp(lambda a: (a * a, a), lambda r, ct: (2.0 * r * ct,))
    assert ad.gradient(sq, 3.0, backend="tape")[0] == pytest.approx(6.0)
    assert float(_h(ad.hessian(lambda a: sq(a) * a, 2.0, backend="tape"))) == pytest.approx(12.0)
    assert ad.derivative(sin2, 0.5, backend="tape") == pytest.approx(2 * np.cos(0.5))
