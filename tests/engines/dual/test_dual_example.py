"""The example third-party engine ``examples/adswitch-dual``: forward-mode dual numbers that
implement only the ``jvp`` primitive. Every operator adswitch builds on it (gradients,
pullbacks, Jacobians in every mode, jvp, derivative) is checked through the public API
against central finite differences and closed forms; a spy counts the engine calls (one
batched ``jvp`` per gradient or Jacobian); second-order and nested calls must refuse."""

from __future__ import annotations

import doctest
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import MutationError, UnsupportedError
from adswitch.spec import PRIMITIVES, CallInfo, OutputFn, implements

pytest.importorskip("adswitch_dual", reason="pip install ./examples/adswitch-dual")

from adswitch_dual import (
    chain,
    creation,
    dual,
    engine,
    namespace,
    plugin,
    reductions,
    rules,
    shapes,
)


def _fd(f: Callable[..., Any], args: list[Any], i: int, h: float = 1e-5) -> Any:
    """Central differences of ``f``'s loss in argument ``i`` (on copies: f may mutate)."""

    def at(index: Any, delta: float) -> float:
        moved = [np.array(a, dtype=np.float64) if isinstance(a, np.ndarray) else a for a in args]
        if isinstance(moved[i], float):
            moved[i] += delta
        else:
            moved[i][index] += delta
        return float(f(*moved))

    if isinstance(args[i], float):
        return (at((), h) - at((), -h)) / (2 * h)
    grad = np.zeros(np.shape(args[i]))
    for index in np.ndindex(*np.shape(args[i])):
        grad[index] = (at(index, h) - at(index, -h)) / (2 * h)
    return grad


def _check(f: Callable[..., Any], *args: Any, rtol: float = 1e-6) -> None:
    grads = ad.gradient(
        f, *[a.copy() if isinstance(a, np.ndarray) else a for a in args], backend="dual"
    )
    for i, grad in enumerate(grads):
        np.testing.assert_allclose(grad, _fd(f, list(args), i), rtol=rtol, atol=1e-8)


RNG = np.random.default_rng(7)
X = RNG.uniform(-1, 1, (3, 4))
P = RNG.uniform(0.5, 1.5, (3, 4))


def _elementwise(x: Any, p: Any) -> Any:
    xp = ad.array_namespace(x, p)
    terms = [
        xp.exp(x),
        xp.log(p),
        xp.log1p(p),
        xp.expm1(x),
        xp.sqrt(p),
        xp.sin(x),
        xp.cos(x),
        xp.tan(x),
        xp.tanh(x),
        xp.sinh(x),
        xp.cosh(x),
        xp.asin(x * 0.9),
        xp.acos(x * 0.9),
        xp.atan(x),
        xp.asinh(x),
        xp.acosh(p + 1.0),
        xp.atanh(x * 0.9),
        xp.square(x),
        xp.abs(x),
        xp.pow(p, x),
        p**2.5,
        2.0**x,
        xp.logaddexp(x, p),
        xp.maximum(x, p * 0.3),
        xp.minimum(x, 0.1),
        xp.clip(x, -0.5, 0.5),
        xp.where(x > 0, x * p, -x),
        1.0 / p,
        3.0 - x,
        xp.log2(p),
        xp.log10(p),
        xp.atan2(x, p),
        xp.hypot(x, p),
        -x,
        +x,
    ]
    return sum(xp.sum(t * (k + 1.0)) for k, t in enumerate(terms))


def test_elementwise_and_arithmetic() -> None:
    _check(_elementwise, X, P)


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(axis: Any, keepdims: bool) -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        kw = {"axis": axis, "keepdims": keepdims}
        parts = [
            xp.sum(x, **kw),
            xp.mean(x, **kw),
            xp.prod(x, **kw),
            xp.max(x, **kw),
            xp.min(x, **kw),
            xp.var(x, **kw),
            xp.std(x, **kw),
        ]
        weights = xp.asarray(np.arange(1.0, 8.0))
        return sum(xp.sum(part) * weights[k] for k, part in enumerate(parts))

    _check(f, X)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ((4,), (4,)),
        ((3, 4), (4,)),
        ((4,), (4, 2)),
        ((3, 4), (4, 2)),
        ((2, 3, 4), (4, 2)),
        ((3, 4), (2, 4, 5)),
        ((2, 3, 4), (2, 4, 2)),
        ((4,), (2, 4, 3)),
    ],
)
def test_matmul_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    def f(x: Any, y: Any) -> Any:
        xp = ad.array_namespace(x, y)
        return xp.sum(xp.sin(x @ y))

    _check(f, RNG.normal(size=a), RNG.normal(size=b))


def test_shapes_joins_and_indexing() -> None:
    weights = RNG.normal(size=(3, 2, 2, 3))

    def f(x: Any, y: Any) -> Any:
        xp = ad.array_namespace(x, y)
        a = xp.permute_dims(xp.reshape(x, (2, 3, 2)), (2, 0, 1))
        b = xp.concat([a, xp.expand_dims(y, axis=0)], axis=0)
        c = xp.stack([b, b * 2.0], axis=-1)
        d = xp.take(c, xp.asarray([0, 0, 2]), axis=2)  # repeated index accumulates
        e = d[..., 1:, ::2]
        return (
            xp.sum(xp.cumulative_sum(e, axis=1) * xp.asarray(np.arange(e.size).reshape(e.shape)))
            + xp.sum(xp.broadcast_to(y[0], (4, 2, 3)) ** 3)
            + xp.sum(xp.squeeze(d[:, :1], axis=1))
            + xp.sum(xp.flip(xp.matrix_transpose(c), axis=1) * xp.asarray(weights))
            + xp.sum(x[None, 2:4] * y.T[1])
            + xp.vecdot(y, y)[1]
        )

    _check(f, RNG.normal(size=(12,)), RNG.normal(size=(2, 3)))


def test_integer_arrays_stay_plain_numpy_through_shape_functions() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        index = xp.reshape(xp.flip(xp.arange(6), axis=0), (2, 3))
        joined = xp.concat([index[0], xp.take(index[1], xp.asarray([0, 0]))])
        assert isinstance(index, np.ndarray) and isinstance(joined, np.ndarray)
        return xp.sum(xp.take(x, joined, axis=0) ** 2)

    x = RNG.normal(size=(6,))
    (g,) = ad.gradient(f, x, backend="dual")
    np.testing.assert_allclose(g, np.bincount([5, 4, 3, 2, 2], minlength=6) * 2 * x)


def test_python_float_float32_tied_and_unused_arguments() -> None:
    def f(x: Any, s: float, tied: Any, unused: Any) -> Any:
        xp = ad.array_namespace(x, tied, unused)
        return xp.sum(xp.sin(x) * s) + xp.sum(tied * x)

    x = np.array([0.5, -1.0])
    gx, gs, gt, gu = ad.gradient(f, x, 0.3, x, np.ones(2), backend="dual")
    np.testing.assert_allclose(gx, np.cos(x) * 0.3 + 2 * x)  # tied: total at the first
    assert isinstance(gs, float) and np.isclose(gs, np.sum(np.sin(x)))
    assert gt is None
    np.testing.assert_array_equal(gu, np.zeros(2))  # unused: zeros, not None

    x32 = np.array([0.5, -1.0], dtype=np.float32)
    (g32,) = ad.gradient(lambda v: ad.array_namespace(v).sum(v * v), x32, backend="dual")
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, 2 * x32)


def test_mutation_seed_examples_are_right() -> None:
    """Seed 003: Zygote is silently wrong here; forward mode is right by construction."""

    def fill(x: Any) -> Any:
        xp = ad.array_namespace(x)
        y = xp.log(x)
        x[...] = 0.0
        return xp.sum(y + x)

    x = np.array([1.0, 2.0, 3.0])
    (g,) = ad.gradient(fill, x, backend="dual")
    np.testing.assert_allclose(g, 1 / np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(x, 0.0)  # mutated, as a plain call leaves it

    def overwrite(x: Any, y: Any, z: Any) -> Any:
        xp = ad.array_namespace(x, y, z)
        xy = x @ y
        y[...] = z
        return xp.sum(xy + y)

    gx, gy, gz = ad.gradient(
        overwrite,
        np.array([[1.0, 2.0], [3.0, 4.0]]),
        np.array([5.0, 6.0]),
        np.array(7.0),
        backend="dual",
    )
    np.testing.assert_allclose(gx, [[5, 6], [5, 6]])
    np.testing.assert_allclose(gy, [4, 6])
    np.testing.assert_allclose(gz, 2)

    def setindex(x: Any, y: Any) -> Any:
        xp = ad.array_namespace(x, y)
        x[0] = y**2
        return xp.sum(x * y)

    gx, gy = ad.gradient(setindex, np.array([1.0, 2.0, 3.0]), np.array(4.0), backend="dual")
    np.testing.assert_allclose(gx, [0, 4, 4])
    np.testing.assert_allclose(gy, 53)


def test_writes_through_views_and_fresh_buffers() -> None:
    def views(x: Any) -> Any:
        xp = ad.array_namespace(x)
        row = x[1]
        row *= 3.0
        row += x[0]
        row /= x[2] * x[2] + 1.0
        row -= 1.0
        return xp.sum(x * x)

    def fresh(x: Any) -> Any:
        xp = ad.array_namespace(x)
        buf = xp.zeros_like(x)
        buf[1:] = xp.sin(x[:-1])
        buf[0] = xp.sum(x)
        out = xp.zeros((2,))
        out[...] = buf[:2]
        return xp.sum(buf * buf) + xp.sum(out)

    def power_and_matmul_in_place(x: Any, m: Any) -> Any:
        xp = ad.array_namespace(x, m)
        buf = xp.zeros((2, 2))
        buf[...] = x
        view = buf[0:2]
        view @= m  # in place, through a view: buf changes too
        row = buf[1]
        row **= 2.0
        return xp.sum(buf * xp.asarray(np.array([[1.0, 2.0], [3.0, 4.0]])))

    _check(views, RNG.normal(size=(3, 2)))
    _check(fresh, RNG.normal(size=(4,)))
    _check(power_and_matmul_in_place, RNG.normal(size=(2, 2)), RNG.normal(size=(2, 2)))


def test_clear_errors_never_silent_numbers() -> None:
    def into_numpy(x: Any) -> Any:
        buf = np.zeros(2)
        buf[:] = ad.array_namespace(x).sin(x)
        return ad.array_namespace(x).sum(x)

    def numpy_inplace(x: Any) -> Any:
        buf = np.zeros(2)
        buf += x
        return ad.array_namespace(x).sum(x)

    def missing(x: Any) -> Any:
        return ad.array_namespace(x).linalg.norm(x)

    def nested(x: Any) -> Any:
        (g,) = ad.gradient(lambda y: ad.array_namespace(y).sum(y**3), x)
        return ad.array_namespace(g).sum(g)

    x = np.array([0.1, 0.2])
    shadow = np.array([5.0, 6.0])
    for f, error, words in [
        (into_numpy, MutationError, "zeros_like"),
        (numpy_inplace, MutationError, "zeros_like"),
        (missing, UnsupportedError, "'linalg'"),
        (nested, UnsupportedError, "nested"),
    ]:
        with pytest.raises(error, match=words):
            ad.gradient(f, ad.Duplicated(x, shadow), backend="dual")
        np.testing.assert_array_equal(shadow, [5.0, 6.0])  # nothing lost


def test_jvp_follows_the_contract() -> None:
    """The primitive itself: concrete outputs, tangents in the output's dtype and layout,
    batched and not, constant outputs with zero tangents, the caller's tangents intact."""

    def fn(leaves: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        x, label, s = leaves
        y = x * x * s
        x[0] = 5.0 * x[1]  # an in-place write: changes x's tangent inside the call
        return [y, 2.0, np.ones(2)], [y, label, x]

    backend = plugin.DualBackend()
    x, tx = np.array([1.0, 2.0]), np.array([1.0, 10.0])
    out, (ty, t_const, t_array) = backend.jvp(
        fn, [x, "tag", 2.0], [True, False, True], [tx, None, 0.5], CallInfo()
    )
    assert all(not isinstance(o, dual.DualArray) for o in out)
    assert out[1] == "tag" and out[2] is x  # concrete, the caller's own (mutated) array
    np.testing.assert_array_equal(x, [10.0, 2.0])
    np.testing.assert_array_equal(tx, [1.0, 10.0])  # f's write did not reach the tangents
    # y = x^2 s: dy = 2 x s dx + x^2 ds
    x0 = np.array([1.0, 2.0])
    np.testing.assert_allclose(ty, 2 * x0 * 2.0 * tx + x0**2 * 0.5)
    assert t_const == 0.0 and isinstance(t_const, float)
    np.testing.assert_array_equal(t_array, np.zeros(2))

    x = np.array([1.0, 2.0], dtype=np.float32)
    batch = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=np.float32)
    out, (ty, t_const, t_array) = backend.jvp(  # s inactive: a Python float, as it is
        fn, [x, "tag", 2.0], [True, False, False], [batch, None, None], CallInfo(batched=True)
    )
    assert ty.dtype == np.float32 and ty.shape == (3, 2)  # one row per direction
    np.testing.assert_allclose(ty, 2 * x0 * 2.0 * batch)
    np.testing.assert_array_equal(t_const, np.zeros(3))
    np.testing.assert_array_equal(t_array, np.zeros((3, 2)))
    with pytest.raises(UnsupportedError, match="nested"):
        engine.jvp(fn, [x, "t", 2.0], [True, False, True], [x, None, 1.0], CallInfo(depth=1))


def test_only_jvp_is_implemented_and_declared_honestly() -> None:
    backend = plugin.DualBackend()
    assert [p for p in PRIMITIVES if implements(backend, p)] == ["jvp"]
    caps = backend.capabilities
    assert caps.forward and caps.batching and not caps.nested


def test_registered_through_the_entry_point_with_honest_capabilities() -> None:
    info = {b.name: b for b in ad.backends()}["dual"]
    assert info.available and info.version
    caps = info.capabilities
    assert caps is not None and not caps.nested and caps.mutation and caps.fresh_buffer_writes


def test_plugin_module_imports_no_engine_code() -> None:
    code = (
        "import sys, adswitch_dual.plugin; "
        "print(sorted(m for m in sys.modules if m.startswith('adswitch_dual.')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "['adswitch_dual.plugin']"


@pytest.mark.parametrize(
    "module", [rules, chain, dual, creation, reductions, shapes, namespace, engine, plugin]
)
def test_docstring_examples(module: Any) -> None:
    failures, _ = doctest.testmod(module)
    assert failures == 0


def test_constants_convert_to_numpy_losslessly() -> None:
    """A namespace constant (zero tangent) may go into plain numpy; a traced value may not."""

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        plain = np.zeros(3)
        plain[0] = xp.asarray(np.array(2.0))  # a constant: nothing to lose
        plain[1:] = xp.ones((2,))
        plain += xp.asarray(np.array([0.0, 1.0, 1.0]))  # in place, still constant
        return xp.sum(x * xp.asarray(plain))

    (g,) = ad.gradient(f, np.array([0.5, 1.0, 2.0]), backend="dual")
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])


# -- the whole operator family, from jvp alone -------------------------------------------
class Spy(plugin.DualBackend):
    """The dual engine, recording each ``jvp`` call: batched or not, and how many
    directions it carried."""

    def __init__(self) -> None:
        self.calls: list[tuple[bool, int]] = []

    def jvp(
        self,
        fn: OutputFn,
        leaves: Sequence[Any],
        active: Sequence[bool],
        tangents: Sequence[Any],
        info: CallInfo,
    ) -> tuple[list[Any], list[Any]]:
        given = [t for t in tangents if t is not None]
        self.calls.append((info.batched, int(np.shape(given[0])[0]) if info.batched else 1))
        return super().jvp(fn, leaves, active, tangents, info)


W = RNG.normal(size=(4, 3))  # y = W @ tanh(x) * s: J_x = W diag(1 - tanh(x)^2) s, J_s = y / s


def _model(x: Any, s: Any) -> Any:
    xp = ad.array_namespace(x, s)
    return (xp.asarray(W) @ xp.tanh(x)) * s


def _jac_x(x: np.ndarray, s: float) -> np.ndarray:
    return W * (1 - np.tanh(x) ** 2) * s


def _loss(x: Any, s: Any) -> Any:
    return ad.array_namespace(x).sum(_model(x, s) ** 2)


def _grad_x(x: np.ndarray, s: float) -> np.ndarray:  # d sum(y^2) = 2 y^T J
    return 2 * (W @ np.tanh(x) * s) @ _jac_x(x, s)


XS = np.array([0.3, -0.7, 1.1])


def test_gradient_is_one_batched_jvp_over_the_inputs() -> None:
    spy = Spy()
    gx, gs = ad.gradient(_loss, XS.copy(), 1.5, backend=spy)
    np.testing.assert_allclose(gx, _grad_x(XS, 1.5), rtol=1e-12)
    np.testing.assert_allclose(gs, _fd(_loss, [XS, 1.5], 1), rtol=1e-6)
    assert isinstance(gs, float)
    assert spy.calls == [(True, 4)]  # one call, 3 + 1 input scalars as its directions

    spy.calls.clear()
    val, (gx,) = ad.withgradient(lambda x: _loss(x, 1.5), XS.copy(), backend=spy)
    np.testing.assert_allclose(val, float(np.sum((W @ np.tanh(XS) * 1.5) ** 2)))
    np.testing.assert_allclose(gx, _grad_x(XS, 1.5), rtol=1e-12)
    assert spy.calls == [(True, 3)]


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse"])
def test_jacobian_in_every_mode_is_one_batched_jvp(mode: str) -> None:
    spy = Spy()
    jx, js = ad.jacobian(_model, XS, 2.0, backend=spy, mode=mode)
    np.testing.assert_allclose(jx, _jac_x(XS, 2.0), rtol=1e-12)
    np.testing.assert_allclose(js, W @ np.tanh(XS), rtol=1e-12)
    assert jx.shape == (4, 3) and js.shape == (4,)
    assert spy.calls == [(True, 4)]


def test_jacobian_of_a_tree_output_with_aux() -> None:
    def f(p: dict[str, Any]) -> Any:
        xp = ad.array_namespace(p["x"])
        y = {"y": _model(p["x"], 1.0), "total": xp.sum(p["x"] ** 3)}
        return y, "aux"

    spy = Spy()
    jac, aux = ad.jacobian(f, {"x": XS, "n": 3}, backend=spy, has_aux=True)
    assert aux == "aux"
    np.testing.assert_allclose(jac["y"][0]["x"], _jac_x(XS, 1.0), rtol=1e-12)
    np.testing.assert_allclose(jac["total"][0]["x"], 3 * XS**2, rtol=1e-12)
    assert jac["y"][0]["n"] is None
    assert spy.calls == [(True, 3)]


def test_vjp_pulls_back_through_the_jacobian_columns() -> None:
    spy = Spy()
    x = XS.copy()
    y, pullback = ad.vjp(_model, x, 2.0, backend=spy)
    np.testing.assert_allclose(y, W @ np.tanh(XS) * 2.0)
    x[...] = 0.0  # the pullback keeps what it needs: later writes change nothing
    for u in (np.ones(4), np.array([1.0, -2.0, 0.0, 3.0])):
        gx, gs = pullback(u)
        np.testing.assert_allclose(gx, u @ _jac_x(XS, 2.0), rtol=1e-12)
        np.testing.assert_allclose(gs, u @ (W @ np.tanh(XS)), rtol=1e-12)
    assert spy.calls == [(True, 4)]  # the columns, once; each pullback is a contraction

    shadow = np.full(3, 7.0)
    _, pullback = ad.vjp(lambda x: _model(x, 1.0), ad.Duplicated(XS.copy(), shadow), backend=spy)
    (g,) = pullback(np.ones(4))
    assert g is shadow
    np.testing.assert_allclose(shadow, np.ones(4) @ _jac_x(XS, 1.0), rtol=1e-12)


def test_jvp_and_derivative_are_single_unbatched_calls() -> None:
    spy = Spy()
    v = np.array([1.0, 0.5, -2.0])
    y, t = ad.jvp(_model, (XS, 2.0), (v, 0.25), backend=spy)
    np.testing.assert_allclose(y, W @ np.tanh(XS) * 2.0)
    np.testing.assert_allclose(t, _jac_x(XS, 2.0) @ v + W @ np.tanh(XS) * 0.25, rtol=1e-12)
    assert spy.calls == [(False, 1)]

    spy.calls.clear()
    d = ad.derivative(lambda s, x: _model(x, s) ** 2, 2.0, XS, backend=spy)
    np.testing.assert_allclose(d, 2 * 2.0 * (W @ np.tanh(XS)) ** 2, rtol=1e-12)
    assert spy.calls == [(False, 1)]


def test_second_order_operators_refuse_before_running() -> None:
    spy = Spy()
    with pytest.raises(UnsupportedError, match=r"Capabilities\.nested"):
        ad.hessian(_loss, XS, 1.0, backend=spy)
    shadow = np.full(3, 7.0)
    with pytest.raises(UnsupportedError, match=r"Capabilities\.nested"):
        ad.hvp(_loss, (ad.Duplicated(XS.copy(), shadow), 1.0), (np.ones(3), 1.0), backend=spy)
    np.testing.assert_array_equal(shadow, 7.0)  # nothing lost
    assert spy.calls == []


@pytest.mark.parametrize(
    "inner",
    [
        lambda x: ad.gradient(lambda y: ad.array_namespace(y).sum(y**3), x)[0],
        lambda x: ad.jvp(lambda y: y**3, (x,), (np.ones(3),))[1],
        lambda x: ad.jacobian(lambda y: y**3, x)[0][0],
        lambda x: ad.vjp(lambda y: y**3, x)[1](np.ones(3))[0],
        lambda x: ad.derivative(lambda t, y: y * t, 2.0, x),
    ],
    ids=["gradient", "jvp", "jacobian", "vjp", "derivative"],
)
def test_nested_operators_refuse_with_the_fix(inner: Callable[[Any], Any]) -> None:
    def f(x: Any) -> Any:
        return ad.array_namespace(x).sum(inner(x))

    shadow = np.full(3, 7.0)
    with pytest.raises(UnsupportedError, match=r"nested.*backend='tape'"):
        ad.gradient(f, ad.Duplicated(XS.copy(), shadow), backend="dual")
    np.testing.assert_array_equal(shadow, 7.0)


def test_gradient_has_the_leaf_dtype_when_the_loss_is_wider() -> None:
    x = np.array([1.0, 2.0], dtype=np.float32)

    def f(x: Any, c: Any) -> Any:
        return ad.array_namespace(x, c).sum(x * c)  # float32 * float64 -> float64

    (g, _) = ad.gradient(f, x, ad.Const(np.array([0.5, 0.25])), backend="dual")
    assert g.dtype == np.float32


def test_dual_sort_follows_each_element_and_shares_ties() -> None:
    # Oracle: the permutation matrix of np.argsort, with tied rows averaged (the mean of
    # the two one-sided permutations, the central-difference limit).
    x = np.array([[3.0, 1.0, 3.0, 2.0], [0.5, 0.5, 0.5, -1.0]])
    jac = ad.jacobian(lambda v: ad.array_namespace(v).sort(v, axis=1), x, backend="dual")[0]
    expected = np.zeros((2, 4, 2, 4))
    for row, places in (
        (0, [[1], [3], [0, 2], [0, 2]]),
        (1, [[3], [0, 1, 2], [0, 1, 2], [0, 1, 2]]),
    ):
        for k, tied in enumerate(places):
            expected[row, k, row, tied] = 1.0 / len(tied)
    np.testing.assert_array_equal(jac, expected)
    values = ad.withgradient(
        lambda v: ad.array_namespace(v).sum(ad.array_namespace(v).sort(v, descending=True)),
        x[0],
        backend="dual",
    )
    assert float(values.val) == 9.0


def test_dual_pow_at_zero_is_the_closed_form() -> None:
    # d/dx x**p at 0: p * 0 ** (p - 1) -> 0 for p = 0 (not 0 * inf = nan), 1 for p = 1.
    (g,) = ad.gradient(
        lambda v: ad.array_namespace(v).sum(v**0.0 + v**1.0 + v**2.0), np.zeros(2), backend="dual"
    )
    np.testing.assert_array_equal(g, [1.0, 1.0])
