"""The example third-party engine ``examples/adswitch-dual`` (forward-mode dual numbers),
checked through the public API against central finite differences and closed forms."""

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
from adswitch.spec import CallInfo

pytest.importorskip("adswitch_dual", reason="pip install ./examples/adswitch-dual")

from adswitch_dual import dual, engine, namespace, plugin


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

    _check(views, RNG.normal(size=(3, 2)))
    _check(fresh, RNG.normal(size=(4,)))


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


def test_value_and_grad_follows_the_contract() -> None:
    def fn(leaves: Sequence[Any]) -> tuple[Any, list[Any]]:
        x, label, s = leaves
        loss = namespace.sum(x * x) * s
        return loss, [loss, label, x]

    x = np.array([1.0, 2.0])
    out, grads = plugin.DualBackend().value_and_grad(
        fn, [x, "tag", 2.0], [True, False, True], CallInfo()
    )
    assert all(not isinstance(o, dual.DualArray) for o in out)
    assert out[1] == "tag" and out[2] is x  # concrete, the caller's own array
    np.testing.assert_allclose(np.asarray(grads[0]), np.array([4.0, 8.0]))
    assert grads[1] is None and isinstance(grads[2], float) and grads[2] == 5.0
    with pytest.raises(UnsupportedError):
        engine.value_and_grad(fn, [x, "t", 2.0], [True, False, True], CallInfo(depth=1))


def test_registered_through_the_entry_point_with_honest_capabilities() -> None:
    info = {b.name: b for b in ad.backends()}["dual"]
    assert info.available and info.version
    caps = info.capabilities
    assert caps is not None and not caps.nested and caps.mutation and caps.fresh_buffer_writes


def test_plugin_module_imports_no_engine_code() -> None:
    code = "import sys, adswitch_dual.plugin; print('adswitch_dual.dual' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize("module", [dual, namespace, engine, plugin])
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
