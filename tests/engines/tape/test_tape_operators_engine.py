"""The tape's operator primitives called directly (``vjp``, ``vjp_apply``, ``jvp`` of the
engine contract): batches against loops of single calls and central differences, the
outputs a sweep cannot reach, Python floats and float32, the transposed forward mode
for a primitive without a tangent rule, and threads with different batch sizes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from adswitch_tape import operators, recording
from adswitch_tape.plugin import TapeBackend
from adswitch_tape.recording import defvjp, unary
from adswitch_tape.rules import primitives as P

import adswitch as ad
from adswitch.derive import natives
from adswitch.spec import CallInfo
from tests.engines.tape.test_tape_operators import fd_jacobian

TAPE = TapeBackend()
RNG = np.random.default_rng(11)


class Outputs:
    """An ``OutputFn`` for a plain ``f(*leaves) -> list of differentiated outputs``."""

    def __init__(self, f: Callable[..., list[Any]]) -> None:
        self.f = f
        self.output_structure: Hashable = None

    def __call__(self, values: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        ys = self.f(*values)
        return list(ys), [*ys, "aux"]

    def reuse(self, structure: Hashable) -> None:
        self.output_structure = structure


def _xp(*arrays: Any) -> Any:
    return ad.array_namespace(*arrays)


def two_outputs(x: Any, s: Any, c: Any) -> list[Any]:
    xp = _xp(x)
    return [xp.tanh(c @ x) * s, xp.sum(x * x) + s * s]


X = RNG.standard_normal(3)
C = RNG.standard_normal((4, 3))
LEAVES = [X, 0.7, C]
ACTIVE = (True, True, False)


def plain(x: np.ndarray, s: float) -> np.ndarray:
    """``two_outputs`` flattened into one vector, for differences."""
    ys = two_outputs(x, s, C)
    return np.concatenate([np.ravel(ys[0]), np.ravel(ys[1])])


def test_the_engine_declares_every_primitive_batched_and_a_forward_mode() -> None:
    assert natives(TAPE) == {"value_and_grad", "vjp", "vjp_apply", "jvp"}
    assert TAPE.capabilities.batching and TAPE.capabilities.forward


def _cotangents(batch: int | None) -> list[Any]:
    if batch is None:
        return [RNG.standard_normal(4), float(RNG.standard_normal())]
    return [RNG.standard_normal((batch, 4)), RNG.standard_normal(batch)]


def _expected_pullback(u: list[Any]) -> tuple[np.ndarray, float]:
    jx = fd_jacobian(plain, (X, 0.7), 0)  # (5, 3)
    js = fd_jacobian(plain, (X, 0.7), 1)  # (5,)
    flat = np.concatenate([u[0], [u[1]]])
    return flat @ jx, float(flat @ js)


def test_a_pullback_batched_and_single_against_differences_many_times() -> None:
    outs, pullback = TAPE.vjp(Outputs(two_outputs), LEAVES, ACTIVE, CallInfo(entry="vjp"))
    assert outs[-1] == "aux" and isinstance(outs[0], np.ndarray)
    for _ in range(3):
        u = _cotangents(None)
        gx, gs, gc = pullback(u)
        ex, es = _expected_pullback(u)
        assert gc is None and isinstance(gs, float)
        np.testing.assert_allclose(gx, ex, rtol=1e-6)
        assert gs == pytest.approx(es, rel=1e-6)
        ub = _cotangents(5)
        bx, bs, bc = pullback(ub, batched=True)
        assert bc is None and bx.shape == (5, 3) and bs.shape == (5,)
        for b in range(5):
            rx, rs, _ = pullback([ub[0][b], float(ub[1][b])])
            np.testing.assert_allclose(bx[b], rx, rtol=1e-12)
            assert bs[b] == pytest.approx(rs, rel=1e-12)


def test_vjp_apply_batched_against_the_loop() -> None:
    ub = _cotangents(6)
    _, (bx, bs, _) = TAPE.vjp_apply(
        Outputs(two_outputs), LEAVES, ACTIVE, lambda diffs: ub, CallInfo(batched=True)
    )
    for b in range(6):
        ex, es = _expected_pullback([ub[0][b], float(ub[1][b])])
        np.testing.assert_allclose(bx[b], ex, rtol=1e-6)
        assert bs[b] == pytest.approx(es, rel=1e-6)


def test_jvp_batched_and_single_against_differences() -> None:
    jx = fd_jacobian(plain, (X, 0.7), 0)
    js = fd_jacobian(plain, (X, 0.7), 1)
    tx, ts = RNG.standard_normal((4, 3)), RNG.standard_normal(4)
    _, (ty, tz) = TAPE.jvp(
        Outputs(two_outputs), LEAVES, ACTIVE, [tx, ts, None], CallInfo(batched=True)
    )
    assert ty.shape == (4, 4) and tz.shape == (4,)
    expected = tx @ jx.T + ts[:, None] * js
    np.testing.assert_allclose(np.column_stack([ty, tz]), expected, rtol=1e-6)
    _, (t0, z0) = TAPE.jvp(
        Outputs(two_outputs), LEAVES, ACTIVE, [tx[0], float(ts[0]), None], CallInfo()
    )
    np.testing.assert_allclose(t0, ty[0], rtol=1e-12)
    assert np.shape(z0) == () and float(z0) == pytest.approx(float(tz[0]), rel=1e-12)


def unreachable(x: Any) -> list[Any]:
    """Outputs a sweep cannot reach from x -- a constant, a Python float -- beside the
    input itself, twice, and a value of it twice (two roots on one slot)."""
    xp = _xp(x)
    y = xp.sin(x)
    return [np.ones(2), 2.5, x, x, y, y]


def test_outputs_independent_of_the_input_the_input_itself_and_repeated_roots() -> None:
    x = np.array([0.3, -0.6])
    fn = Outputs(unreachable)
    _, pullback = TAPE.vjp(fn, [x], (True,), CallInfo())
    u: list[Any] = [np.full(2, 7.0), 3.0, np.array([1.0, 2.0]), np.array([10.0, 0.0])]
    u += [np.ones(2), np.ones(2)]
    (g,) = pullback(u)
    np.testing.assert_allclose(g, [11.0, 2.0] + 2 * np.cos(x), rtol=1e-12)
    (gb,) = pullback(
        [np.stack([c, c]) if np.ndim(c) else np.array([c, c]) for c in u], batched=True
    )
    np.testing.assert_allclose(gb, np.stack([g, g]), rtol=1e-12)
    _, tangents = TAPE.jvp(fn, [x], (True,), [np.array([1.0, -1.0])], CallInfo())
    zeros, scalar, same, again, ty, ty2 = tangents
    np.testing.assert_array_equal(zeros, [0.0, 0.0])
    assert scalar == 0.0 and isinstance(scalar, float)
    np.testing.assert_array_equal(same, [1.0, -1.0])
    np.testing.assert_array_equal(again, [1.0, -1.0])
    assert same is not again  # each output its own array
    np.testing.assert_allclose(ty, np.cos(x) * [1.0, -1.0])
    assert ty is not ty2


def test_float32_results_keep_the_leaves_and_outputs_dtypes() -> None:
    x = np.array([0.5, 1.5], dtype=np.float32)
    fn = Outputs(lambda v: [_xp(v).exp(v), P.astype(v, dtype=np.float64) * 2.0])
    _, pullback = TAPE.vjp(fn, [x], (True,), CallInfo())
    (g,) = pullback([np.ones((3, 2), np.float32), np.ones((3, 2))], batched=True)
    assert g.dtype == np.float32 and g.shape == (3, 2)
    np.testing.assert_allclose(g[0], np.exp(x) + 2.0, rtol=1e-6)
    _, (t32, t64) = TAPE.jvp(
        fn, [x], (True,), [np.ones((3, 2), np.float32)], CallInfo(batched=True)
    )
    assert t32.dtype == np.float32 and t64.dtype == np.float64
    np.testing.assert_allclose(t32[2], np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(t64[1], [2.0, 2.0])


@pytest.fixture
def gradient_only() -> Iterator[Callable[..., Any]]:
    """A primitive (``sin``) with a gradient rule and no tangent rule, unregistered after."""
    fn = unary("gradient_only_sin", np.sin)
    defvjp(fn, lambda g, ans, x: g * P.cos(x))
    yield fn
    del recording._PRIMS[fn]


def test_jvp_transposes_the_reverse_mode_for_a_primitive_without_a_tangent_rule(
    gradient_only: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    transposed = operators._transposed

    def counted(*args: Any) -> Any:
        calls.append(1)
        return transposed(*args)

    monkeypatch.setattr(operators, "_transposed", counted)

    def f(v: Any) -> list[Any]:
        xp = _xp(v)
        w = xp.exp(v)
        v[0] = 2.0 * v[1]  # mutation is differentiated through the transposition too
        return [gradient_only(w * v) @ C.T[:2], xp.sum(w)]

    x = np.array([0.2, -0.4])

    def flat(v: np.ndarray) -> np.ndarray:
        v = v.copy()
        w = np.exp(v)
        v[0] = 2.0 * v[1]
        return np.concatenate([np.sin(w * v) @ C.T[:2], [np.sum(w)]])

    jac = fd_jacobian(flat, (x,), 0)
    tangents = RNG.standard_normal((3, 2))
    _, (ta, tb) = TAPE.jvp(Outputs(f), [x.copy()], (True,), [tangents], CallInfo(batched=True))
    np.testing.assert_allclose(np.column_stack([ta, tb]), tangents @ jac.T, rtol=1e-6)
    assert calls == [1]

    # nested: the transposition recorded by an enclosing gradient
    def outer(v: Any) -> Any:
        _, t = ad.jvp(lambda u: gradient_only(u * u), (v,), (np.array([1.0, 2.0]),))
        return _xp(v).sum(t * t)

    (g,) = ad.gradient(outer, x, backend="tape")
    expected = fd_jacobian(lambda v: np.sum((np.cos(v * v) * 2 * v * [1.0, 2.0]) ** 2), (x,), 0)
    np.testing.assert_allclose(g, expected, rtol=1e-6)
    assert calls == [1, 1]


def test_threads_with_different_batch_sizes_at_once() -> None:
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []
    jac = (1 - np.tanh(C @ X) ** 2)[:, None] * C

    def work(batch: int) -> None:
        try:
            _, pullback = TAPE.vjp(
                Outputs(lambda v: [_xp(v).tanh(C @ v)]), [X], (True,), CallInfo()
            )
            u = RNG.standard_normal((batch, 4))
            tangents = RNG.standard_normal((batch, 3))
            barrier.wait()
            for _ in range(40):
                (g,) = pullback([u], batched=True)
                np.testing.assert_allclose(g, u @ jac, rtol=1e-12)
                (full,) = ad.jacobian(lambda v: _xp(v).tanh(C @ v), X, mode="reverse")
                np.testing.assert_allclose(full, jac, rtol=1e-12)
                _, (t,) = TAPE.jvp(
                    Outputs(lambda v: [_xp(v).tanh(C @ v)]),
                    [X],
                    (True,),
                    [tangents],
                    CallInfo(batched=True),
                )
                np.testing.assert_allclose(t, tangents @ jac.T, rtol=1e-12)
                (row,) = ad.hessian(lambda v: _xp(v).sum(v**3) * batch, X)
                np.testing.assert_allclose(row[0], np.diag(6 * X * batch), rtol=1e-12)
        except BaseException as exc:  # reported to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(b,)) for b in (3, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_a_pullback_given_the_wrong_number_of_cotangents() -> None:
    _, pullback = TAPE.vjp(Outputs(two_outputs), LEAVES, ACTIVE, CallInfo())
    with pytest.raises(ValueError, match="one cotangent per differentiated output"):
        pullback([np.ones(4)])
