"""Front-end behaviour of ad.custom_vjp / ad.custom_jvp / ad.stop_gradient.

Engine-independent checks: calls outside any differentiation, the user-facing errors,
and an engine without the hooks (the finite-difference test engine in a fresh registry).
Closed forms are the oracles.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from tests.fd_engine import FiniteDifferenceBackend


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
    import adswitch.custom as custom

    engine = _Engine()
    engine.name = "stand-in"  # type: ignore[attr-defined]
    engine.owns = lambda x: isinstance(x, np.ndarray)  # type: ignore[attr-defined]
    monkeypatch.setattr(custom, "enclosing", lambda: engine)
    f(*args)
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
