"""The autograd engine's native operator primitives (vjp, vjp_apply, jvp) through the
operators that use them, against independent oracles: closed forms, central finite
differences of the same numpy code, and torch (its own autograd) -- never autograd
against itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.engines.autograd.test_autograd_mutation import CASES as WRITES
from tests.support.fd_oracle import central_fd

pytest.importorskip("autograd")

import adswitch as ad
from adswitch.errors import MutationError, UnsupportedError
from adswitch.spec import implements

B = "autograd"
X0 = np.array([0.3, 0.7, 0.4, 1.1])


def xp_of(*arrays: Any) -> Any:
    return ad.array_namespace(*arrays)


def backend() -> Any:
    from adswitch_autograd.plugin import AutogradBackend

    return AutogradBackend()


def test_declares_every_primitive_and_a_true_forward_mode_with_batches() -> None:
    engine = backend()
    assert all(implements(engine, p) for p in ("value_and_grad", "vjp", "vjp_apply", "jvp"))
    assert engine.capabilities.forward and engine.capabilities.batching


# ---- vjp -------------------------------------------------------------------------------


def test_vjp_of_a_tree_output_matches_the_closed_form() -> None:
    def f(x: Any, w: float, c: Any) -> Any:
        xp = xp_of(x)
        return {"y": xp.sin(x) * w, "s": xp.sum(x * c), "tag": "aux"}

    x, c = np.array([0.2, -0.5, 1.3]), np.array([1.0, 2.0, 3.0])
    y, pullback = ad.vjp(f, x, 1.5, ad.Const(c), backend=B)
    np.testing.assert_allclose(y["y"], np.sin(x) * 1.5)
    assert y["tag"] == "aux"
    u = np.array([1.0, -2.0, 0.5])
    gx, gw, gc = pullback({"y": u, "s": 2.0, "tag": None})
    np.testing.assert_allclose(gx, u * np.cos(x) * 1.5 + 2.0 * c)
    assert type(gw) is float and gw == pytest.approx(float(np.sum(u * np.sin(x))))
    assert gc is None


def test_pullback_is_reusable_and_owns_what_it_refers_to() -> None:
    def f(x: Any, c: Any) -> Any:
        xp = xp_of(x)
        return xp.exp(x), xp.sin(x) * c  # exp's VJP reads its output, the mul's reads c

    x, c = np.array([0.1, 0.2, 0.3]), np.array([2.0, 3.0, 4.0])
    x0, c0 = x.copy(), c.copy()
    (e, y), pullback = ad.vjp(f, x, ad.Const(c), backend=B)
    u, w = np.array([1.0, 0.5, -1.0]), np.array([0.2, 1.0, 3.0])
    expected = u * np.exp(x0) + w * np.cos(x0) * c0
    first = pullback((u, w))[0]
    x[...] = 9.0  # the caller writes into its arguments and into the outputs it got
    c[...] = -1.0
    e[...] = 7.0
    y[...] = 7.0
    np.testing.assert_allclose(pullback((u, w))[0], expected)
    np.testing.assert_allclose(first, expected)
    assert pullback((u, w))[0] is not pullback((u, w))[0]


def test_results_never_alias_each_other_nor_the_cotangent() -> None:
    def f(x: Any, y: Any) -> Any:
        return x + y  # both VJPs hand the cotangent itself back

    u = np.array([1.0, 2.0])
    _, pullback = ad.vjp(f, np.zeros(2), np.zeros(2), backend=B)
    gx, gy = pullback(u)
    gx[0] = 5.0
    np.testing.assert_array_equal(gy, [1.0, 2.0])
    np.testing.assert_array_equal(u, [1.0, 2.0])
    gx, gy = ad.gradient(lambda a, b: xp_of(a).sum((a + b) * 2.0), np.ones(2), np.ones(2),
                         backend=B)  # fmt: skip
    gx[0] = 5.0
    np.testing.assert_array_equal(gy, [2.0, 2.0])


def test_vjp_keeps_dtypes_ties_and_python_floats() -> None:
    w = np.array([0.5, 1.5], dtype=np.float32)

    def f(p: dict[str, Any], s: float) -> Any:
        return p["a"] * p["b"] * s, s * s

    (y, z), pullback = ad.vjp(f, {"a": w, "b": w}, 2.0, backend=B)
    assert y.dtype == np.float32 and isinstance(z, float)
    (gp, gs) = pullback((np.ones(2, np.float32), 1.0))
    assert gp["a"].dtype == np.float32 and gp["b"] is None  # the tie's total at its first place
    np.testing.assert_allclose(gp["a"], 2 * w * 2.0, rtol=1e-6)
    assert type(gs) is float and gs == pytest.approx(float(np.sum(w * w)) + 4.0, rel=1e-6)


def test_duplicated_shadow_gets_each_pullback_result() -> None:
    x = np.array([1.0, 2.0])
    dup = ad.Duplicated(x, np.full(2, 10.0))
    _, pullback = ad.vjp(lambda a: a * a, dup, backend=B)
    (shadow,) = pullback(np.ones(2))
    assert shadow is dup.dval
    np.testing.assert_allclose(dup.dval, [2.0, 4.0])
    pullback(np.ones(2))  # zero=True: restarted, not accumulated
    np.testing.assert_allclose(dup.dval, [2.0, 4.0])


@pytest.mark.parametrize("body", WRITES, ids=[c.__name__ for c in WRITES])
def test_vjp_differentiates_writes_and_leaves_the_caller_array_as_numpy(body: Any) -> None:
    x = X0.copy()
    y, pullback = ad.vjp(body, x, backend=B)
    plain = X0.copy()
    out = body(plain)
    np.testing.assert_allclose(x, plain, rtol=1e-12)  # as a plain call leaves it
    np.testing.assert_allclose(y, out, rtol=1e-6)
    x[...] = -3.0  # later writes into the caller's array change nothing
    (grad,) = pullback(np.ones((), dtype=np.asarray(y).dtype))
    (again,) = pullback(np.ones((), dtype=np.asarray(y).dtype))
    np.testing.assert_array_equal(grad, again)
    if body.__name__ == "float32_buffer":
        np.testing.assert_allclose(grad, 8.0 * X0, rtol=1e-6)
        return
    np.testing.assert_allclose(grad, central_fd(lambda v: float(body(v.copy())), X0),
                               rtol=1e-6, atol=1e-8)  # fmt: skip


# ---- jvp -------------------------------------------------------------------------------


@pytest.mark.parametrize("body", WRITES, ids=[c.__name__ for c in WRITES])
def test_jvp_differentiates_writes(body: Any) -> None:
    t = np.array([0.5, -1.0, 2.0, 0.25])
    x = X0.copy()
    _y, dy = ad.jvp(body, (x,), (t,), backend=B)
    plain = X0.copy()
    body(plain)
    np.testing.assert_allclose(x, plain, rtol=1e-12)
    if body.__name__ == "float32_buffer":
        assert float(dy) == pytest.approx(float(np.sum(8.0 * X0 * t)), rel=1e-5)
        return
    expected = central_fd(lambda s: float(body(X0 + s[0] * t)), np.zeros(1))[0]
    assert float(dy) == pytest.approx(expected, rel=1e-6, abs=1e-8)


def test_jvp_of_a_tree_with_const_float_and_float32() -> None:
    def f(p: dict[str, Any], s: float, c: Any) -> Any:
        xp = xp_of(p["w"])
        return {"y": xp.tanh(p["w"] * s) + c, "z": s**3, "n": 3}

    w = np.array([0.1, -0.4], dtype=np.float32)
    tw = np.array([1.0, 2.0], dtype=np.float32)
    y, dy = ad.jvp(f, ({"w": w}, 0.5, ad.Const(np.ones(2, np.float32))), ({"w": tw}, 2.0, None),
                   backend=B)  # fmt: skip
    assert dy["n"] is None and y["n"] == 3
    # a 0-d output of numpy inputs is a numpy scalar on every engine, its tangent too
    assert dy["y"].dtype == np.float32 and type(dy["z"]) is type(y["z"]) is np.float64
    sech2 = 1.0 / np.cosh(w * 0.5) ** 2
    np.testing.assert_allclose(dy["y"], sech2 * (tw * 0.5 + w * 2.0), rtol=1e-6)
    assert dy["z"] == pytest.approx(3 * 0.25 * 2.0)


def test_jvp_of_a_constant_output_is_zero_and_never_the_tangent_itself() -> None:
    t = np.array([1.0, 2.0])
    _, (dy, dz) = ad.jvp(lambda x: (x, np.ones(3)), (np.zeros(2),), (t,), backend=B)
    np.testing.assert_array_equal(dy, t)
    dy[0] = 9.0
    np.testing.assert_array_equal(t, [1.0, 2.0])
    np.testing.assert_array_equal(dz, np.zeros(3))


def test_jvp_through_primitives_without_jvp_rules_by_transposition() -> None:
    import autograd.numpy as anp

    a = np.array([[2.0, 0.5], [0.3, 1.5]])
    da = np.array([[0.1, -0.2], [0.4, 0.3]])
    # autograd has VJPs but no JVP rules for inv and det
    _, d_inv = ad.jvp(lambda m: anp.linalg.inv(m), (a,), (da,), backend=B)
    inv = np.linalg.inv(a)
    np.testing.assert_allclose(d_inv, -inv @ da @ inv, rtol=1e-12)
    _, d_det = ad.jvp(lambda m: anp.linalg.det(m), (a,), (da,), backend=B)
    assert float(d_det) == pytest.approx(np.linalg.det(a) * np.trace(inv @ da), rel=1e-12)
    # batched (a Jacobian's columns) and second order (hvp: forward over the VJPs of inv)
    jac = ad.jacobian(lambda m: anp.linalg.det(m), a, backend=B, mode="forward")[0]
    np.testing.assert_allclose(jac, np.linalg.det(a) * inv.T, rtol=1e-12)
    (hv,) = ad.hvp(lambda m: anp.linalg.det(m), (a,), (da,), backend=B)
    grad_at = lambda m: np.linalg.det(m) * np.linalg.inv(m).T  # noqa: E731  (closed form)
    expected = (grad_at(a + 1e-6 * da) - grad_at(a - 1e-6 * da)) / 2e-6
    np.testing.assert_allclose(hv, expected, rtol=1e-6)


def test_a_primitive_with_no_derivative_at_all_is_an_unsupported_error() -> None:
    from autograd.extend import primitive

    opaque = primitive(lambda x: np.sort(x) * 1.0)
    with pytest.raises(UnsupportedError, match="no derivative"):
        ad.jvp(lambda x: opaque(x), (np.ones(2),), (np.ones(2),), backend=B)


# ---- batches: Jacobians and Hessians against torch --------------------------------------


def _torch() -> Any:
    return pytest.importorskip("torch")


@pytest.mark.parametrize("shape", [(64, 64), (8, 256), (256, 8)], ids=["square", "tall", "wide"])
@pytest.mark.parametrize("mode", ["auto", "reverse", "forward"])
def test_jacobians_match_torch(shape: tuple[int, int], mode: str) -> None:
    torch = _torch()
    n_in, n_out = shape
    rng = np.random.default_rng(n_in + n_out)
    w, b, x = (
        rng.standard_normal((n_out, n_in)),
        rng.standard_normal(n_out),
        rng.standard_normal(n_in),
    )
    f = lambda x, w, b: xp_of(x).tanh(w @ x + b)  # noqa: E731
    (jac, _, _) = ad.jacobian(f, x, ad.Const(w), ad.Const(b), backend=B, mode=mode)
    tw, tb = torch.from_numpy(w), torch.from_numpy(b)
    expected = torch.autograd.functional.jacobian(lambda t: torch.tanh(tw @ t + tb),
                                                  torch.from_numpy(x))  # fmt: skip
    np.testing.assert_allclose(jac, expected.numpy(), rtol=1e-12, atol=1e-14)


def test_hessian_and_hvp_match_torch() -> None:
    torch = _torch()
    rng = np.random.default_rng(5)
    a, x, v = rng.standard_normal((100, 50)), rng.standard_normal(50), rng.standard_normal(50)

    def f(x: Any, a: Any) -> Any:
        xp = xp_of(x)
        return xp.sum(xp.log1p(xp.exp(a @ x))) + 0.5 * xp.sum(x * x)

    ta = torch.from_numpy(a)
    tf = lambda t: torch.sum(torch.log1p(torch.exp(ta @ t))) + 0.5 * torch.sum(t * t)  # noqa: E731
    h = torch.autograd.functional.hessian(tf, torch.from_numpy(x)).numpy()
    (hx, _), _ = ad.hessian(f, x, ad.Const(a), backend=B)
    np.testing.assert_allclose(hx, h, rtol=1e-11, atol=1e-12)
    (hv, _) = ad.hvp(f, (x, ad.Const(a)), (v, None), backend=B)
    np.testing.assert_allclose(hv, h @ v, rtol=1e-11, atol=1e-12)


def test_mlp_hvp_and_jvp_over_every_parameter_match_torch() -> None:
    torch = _torch()
    rng = np.random.default_rng(9)
    sizes = [(6, 5), (5, 4), (4, 1)]
    params = {}
    for i, (n, m) in enumerate(sizes, 1):
        params[f"W{i}"] = rng.standard_normal((n, m)) / np.sqrt(n)
        params[f"b{i}"] = rng.standard_normal(m) * 0.1
    x, t = rng.standard_normal((7, 6)), rng.standard_normal((7, 1))
    v = {k: rng.standard_normal(p.shape) for k, p in params.items()}

    def forward(p: dict[str, Any], x: Any) -> Any:
        xp = xp_of(p["W1"])
        h = xp.tanh(x @ p["W1"] + p["b1"])
        h = xp.tanh(h @ p["W2"] + p["b2"])
        return h @ p["W3"] + p["b3"]

    def loss(p: dict[str, Any], x: Any, t: Any) -> Any:
        return xp_of(p["W1"]).mean((forward(p, x) - t) ** 2)

    keys = list(params)
    tp = tuple(torch.from_numpy(params[k]) for k in keys)
    tv = tuple(torch.from_numpy(v[k]) for k in keys)
    tx, tt = torch.from_numpy(x), torch.from_numpy(t)

    def tforward(*ps: Any) -> Any:
        p = dict(zip(keys, ps, strict=True))
        h = torch.tanh(tx @ p["W1"] + p["b1"])
        h = torch.tanh(h @ p["W2"] + p["b2"])
        return h @ p["W3"] + p["b3"]

    _, hv_ref = torch.autograd.functional.hvp(lambda *ps: torch.mean((tforward(*ps) - tt) ** 2),
                                              tp, tv)  # fmt: skip
    _, jv_ref = torch.autograd.functional.jvp(tforward, tp, tv)
    (hv, _, _) = ad.hvp(loss, (params, ad.Const(x), ad.Const(t)), (v, None, None), backend=B)
    _, jv = ad.jvp(forward, (params, ad.Const(x)), (v, None), backend=B)
    for k, ref in zip(keys, hv_ref, strict=True):
        np.testing.assert_allclose(hv[k], ref.numpy(), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(jv, jv_ref.numpy(), rtol=1e-12, atol=1e-14)


WRITES_ARGUMENT = ("log_then_fill", "argument_plus_equals", "write_through_argument_view")


@pytest.mark.parametrize("body", WRITES, ids=[c.__name__ for c in WRITES])
def test_hessians_through_writes_match_second_differences(body: Any) -> None:
    if body.__name__ in WRITES_ARGUMENT:
        # The inner gradient's argument belongs to the outer call: refused, as for every
        # nested call on this engine (value_and_grad's rule), with the fix.
        with pytest.raises(MutationError, match="Fix"):
            ad.hessian(body, X0.copy(), backend=B)
        return
    if body.__name__ == "float32_buffer":
        h_ref = 8.0 * np.eye(4)
    else:
        step = 1e-4
        h_ref = np.zeros((4, 4))
        for i in range(4):
            for j in range(4):
                e_i, e_j = np.eye(4)[i] * step, np.eye(4)[j] * step
                h_ref[i, j] = (
                    float(body(X0 + e_i + e_j)) - float(body(X0 + e_i - e_j))
                    - float(body(X0 - e_i + e_j)) + float(body(X0 - e_i - e_j))
                ) / (4 * step * step)  # fmt: skip
    x = X0.copy()
    ((h,),) = ad.hessian(body, x, backend=B)
    np.testing.assert_allclose(h, h_ref, rtol=1e-4, atol=1e-5)
    (hv,) = ad.hvp(body, (X0.copy(),), (np.array([1.0, -1.0, 0.5, 2.0]),), backend=B)
    np.testing.assert_allclose(hv, h_ref @ np.array([1.0, -1.0, 0.5, 2.0]), rtol=1e-4, atol=1e-5)


def test_an_engine_pullback_keeps_its_own_copies_not_the_callers_arrays() -> None:
    import weakref

    from adswitch.spec import CallInfo

    class Fn:
        output_structure = None

        def __call__(self, leaves: list[Any]) -> Any:
            y = leaves[0] * leaves[0]
            return [y], [y]

        def reuse(self, structure: Any) -> None:
            pass

    x = np.array([1.0, 3.0])
    freed = weakref.ref(x)
    _, pullback = backend().vjp(Fn(), [x], [True], CallInfo())
    del x
    assert freed() is None
    np.testing.assert_array_equal(pullback([np.ones(2)])[0], [2.0, 6.0])


def test_operators_leave_no_garbage_cycles() -> None:
    import gc
    import weakref

    def f(x: Any, c: Any) -> Any:
        xp = xp_of(x)
        return xp.sum(xp.tanh(x * c) ** 2)

    x, c, v = np.array([0.1, 0.5, -0.3]), np.array([1.0, 2.0, 3.0]), np.ones(3)

    def run_all() -> Any:
        _, pullback = ad.vjp(lambda a: xp_of(a).sin(a) * c, x, backend=B)
        (g,) = pullback(v)
        ad.jvp(f, (x, ad.Const(c)), (v, None), backend=B)
        ad.jacobian(lambda a: xp_of(a).exp(a), x, backend=B, mode="forward")
        ad.hessian(f, x, ad.Const(c), backend=B)
        ad.hvp(f, (x, ad.Const(c)), (v, None), backend=B)
        return g

    run_all()  # first calls: caches fill
    gc.collect()
    gc.disable()
    try:
        freed = weakref.ref(run_all())
        assert freed() is None  # freed by reference counting alone
        assert gc.collect() == 0  # and the calls made no cycles
    finally:
        gc.enable()
