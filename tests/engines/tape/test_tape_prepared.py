"""Prepared calls on the tape replay what they recorded: a replayed call returns exactly what
a fresh trace returns (values, gradients, outputs, shadows, the caller's arrays after a
mutating ``f``), for every operator primitive, and ``f`` runs only when recorded.

Oracles: closed forms where they are short, and the unprepared call at the same point
(itself checked against finite differences by the conformance suite); the runs of ``f``
are counted with a profile hook, which the replay's checks cannot see. The helpers here
(``runs_of``, ``assert_identical``) serve the other ``test_tape_prepared_*`` files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import sys
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pytest
from adswitch_tape.replay.notices import TapeReplayWarning

import adswitch as ad

# A refusal would make these tests compare a fresh trace with itself: it is an error here.
pytestmark = pytest.mark.filterwarnings("error::adswitch_tape.replay.notices.TapeReplayWarning")


@contextlib.contextmanager
def runs_of(*functions: Callable[..., Any]) -> Iterator[list[int]]:
    """``with runs_of(f) as n:`` -- ``n[0]`` counts the calls of ``f``'s code in this
    thread while the block runs."""
    codes = {f.__code__ for f in functions}
    count = [0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            count[0] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield count
    finally:
        sys.setprofile(previous)


def assert_identical(got: Any, want: Any, path: str = "result") -> None:
    """The same structure, types, dtypes and exactly the same numbers (NaN where NaN)."""
    if type(want).__module__.startswith("scipy.sparse"):  # (sparse Jacobians, Hessians)
        assert type(got) is type(want) and got.shape == want.shape, f"{path}: {got!r}"
        assert_identical(got.toarray(), want.toarray(), path)
    elif isinstance(want, np.ndarray):
        assert type(got) is np.ndarray, f"{path}: {type(got).__name__}, expected an array"
        assert got.dtype == want.dtype and got.shape == want.shape, f"{path}: {got!r} vs {want!r}"
        np.testing.assert_array_equal(got, want, err_msg=path, strict=True)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), path
        for k in want:
            assert_identical(got[k], want[k], f"{path}[{k!r}]")
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), f"{path}: {got!r} vs {want!r}"
        for k, (g, w) in enumerate(zip(got, want)):
            assert_identical(g, w, f"{path}[{k}]")
    elif dataclasses.is_dataclass(want) and not isinstance(want, type):
        assert type(got) is type(want), path
        for field in dataclasses.fields(want):
            assert_identical(getattr(got, field.name), getattr(want, field.name), path)
    elif isinstance(want, float) and want != want:
        assert isinstance(got, float) and got != got, path
    else:
        assert type(got) is type(want) and got == want, f"{path}: {got!r} vs {want!r}"


def fresh_copy(tree: Any) -> Any:
    """A copy of nested containers of arrays (numpy arrays copied, the rest kept)."""
    if isinstance(tree, np.ndarray):
        return tree.copy()
    if isinstance(tree, dict):
        return {k: fresh_copy(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(fresh_copy(v) for v in tree)
    return tree


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# -- functions, each with its arguments at a seed ------------------------------------------
def mlp(params: dict[str, Any], x: Any, t: Any) -> Any:
    xp = ad.array_namespace(params["W1"])
    h = xp.tanh(x @ params["W1"] + params["b1"])
    h = xp.tanh(h @ params["W2"] + params["b2"])
    return xp.mean((h @ params["W3"] + params["b3"] - t) ** 2)


def mlp_args(seed: int, dtype: Any = np.float64, data_seed: int = 100) -> tuple[Any, ...]:
    """The mlp's parameters at ``seed``, its data (Const) at ``data_seed``."""
    r = _rng(seed)
    sizes = [(16, 128), (128, 64), (64, 1)]
    params = {}
    for i, (a, b) in enumerate(sizes, 1):
        params[f"W{i}"] = (r.standard_normal((a, b)) / np.sqrt(a)).astype(dtype)
        params[f"b{i}"] = (0.1 * r.standard_normal(b)).astype(dtype)
    d = _rng(data_seed)
    x, t = d.standard_normal((64, 16)).astype(dtype), d.standard_normal((64, 1)).astype(dtype)
    return params, ad.Const(x), ad.Const(t)


def chain(x: Any) -> Any:
    xp = ad.array_namespace(x)
    for _ in range(8):
        x = xp.tanh(xp.sin(x) * 1.01 + 0.1)
    return xp.sum(x)


def softmax_xent(logits: Any, labels: Any) -> Any:
    xp = ad.array_namespace(logits)
    shifted = logits - xp.max(logits, axis=1, keepdims=True)
    logp = shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
    return -xp.mean(xp.sum(logp * labels, axis=1))


def shapes_and_views(x: Any, w: Any) -> Any:
    xp = ad.array_namespace(x)
    y = xp.reshape(x, (3, 4)).T @ w  # a view, a product
    z = xp.concat([y[0:2], xp.flip(y, axis=0)[1:]], axis=0)
    s = xp.stack([xp.sum(z, axis=0), xp.max(z, axis=0)])
    return xp.sum(s**2) + xp.sum(xp.sqrt(x * x + 1.0)) + xp.prod(x[[0, 2, 5]])


class Pair(NamedTuple):
    a: Any
    b: Any


@dataclasses.dataclass
class Layer:
    w: Any
    scale: float


def trees(p: Pair, layer: Layer, items: list[Any]) -> Any:
    xp = ad.array_namespace(layer.w)
    return (
        xp.sum(xp.exp(p.a) * p.b)
        + layer.scale * xp.sum(layer.w**3)
        + sum(xp.sum(v * v) for v in items)
    )


def _args_chain(seed: int, dtype: Any = np.float64) -> tuple[Any, ...]:
    return (_rng(seed).standard_normal(50).astype(dtype),)


def _args_softmax(seed: int, dtype: Any = np.float64) -> tuple[Any, ...]:
    labels = np.eye(5, dtype=dtype)[_rng(100).integers(0, 5, 7)]
    return _rng(seed).standard_normal((7, 5)).astype(dtype), ad.Const(labels)


def _args_shapes(seed: int, dtype: Any = np.float64) -> tuple[Any, ...]:
    w = _rng(100).standard_normal((3, 2)).astype(dtype)
    return _rng(seed).standard_normal(12).astype(dtype), ad.Const(w)


def _args_trees(seed: int, dtype: Any = np.float64) -> tuple[Any, ...]:
    r = _rng(seed)
    return (
        Pair(r.standard_normal(3).astype(dtype), r.standard_normal(3).astype(dtype)),
        Layer(r.standard_normal((2, 2)).astype(dtype), float(r.uniform(1, 2))),
        [r.standard_normal(2).astype(dtype), r.standard_normal(4).astype(dtype)],
    )


CASES = {
    "mlp": (mlp, mlp_args),
    "chain": (chain, _args_chain),
    "softmax": (softmax_xent, _args_softmax),
    "shapes": (shapes_and_views, _args_shapes),
    "trees": (trees, _args_trees),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("op", [ad.gradient, ad.withgradient])
def test_a_replay_is_a_fresh_trace_at_new_values(name: str, dtype: Any, op: Any) -> None:
    """New values of the differentiated arguments (the Const data kept)."""
    f, make = CASES[name]
    prep = ad.prepare(op, f, *make(0, dtype), backend="tape")
    with runs_of(f) as runs:
        for seed in (1, 2, 3):
            args = make(seed, dtype)
            got = prep(*args)
            assert_identical(got, op(f, *args, backend="tape"))
    assert runs[0] == 1 + 3  # the first prepared call traced f; the others replayed it


def test_the_replayed_mlp_gradient_is_the_hand_written_one() -> None:
    prep = ad.prepare(ad.gradient, mlp, *mlp_args(0))
    for seed in (1, 2):
        p, xc, tc = mlp_args(seed)
        x, t = xc.val, tc.val
        g = prep(p, xc, tc)[0]
        h1 = np.tanh(x @ p["W1"] + p["b1"])
        h2 = np.tanh(h1 @ p["W2"] + p["b2"])
        dy = 2.0 * (h2 @ p["W3"] + p["b3"] - t) / t.size
        dz2 = (dy @ p["W3"].T) * (1.0 - h2**2)
        dz1 = (dz2 @ p["W2"].T) * (1.0 - h1**2)
        want = {"W1": x.T @ dz1, "b1": dz1.sum(0), "W2": h1.T @ dz2, "b2": dz2.sum(0)}
        want |= {"W3": h2.T @ dy, "b3": dy.sum(0)}
        for k, w in want.items():
            np.testing.assert_allclose(g[k], w, rtol=1e-10, atol=1e-12)


def test_the_gradients_handed_back_are_the_callers_own() -> None:
    """Later replays never write into arrays an earlier call returned (the mlp's program
    writes its large temporaries into buffers it keeps), and two results share nothing."""
    prep = ad.prepare(ad.gradient, mlp, *mlp_args(0))
    first = prep(*mlp_args(1))[0]
    kept = {k: v.copy() for k, v in first.items()}
    second = prep(*mlp_args(2))[0]
    for _ in range(3):
        prep(*mlp_args(3))
    for k in first:
        np.testing.assert_array_equal(first[k], kept[k])
        assert not np.shares_memory(first[k], second[k])
        assert first[k].flags.writeable and first[k].flags.owndata
    first["W2"][...] = 0.0  # the caller's to write
    assert_identical(prep(*mlp_args(2))[0], second)


def _aux(x: Any, c: Any, n: int, label: str) -> Any:
    xp = ad.array_namespace(x)
    y = xp.sin(x) * c
    return xp.sum(y) * n, {"y": y, "c": c, "label": label, "n": n, "fresh": np.arange(3.0)}


def test_outputs_are_what_a_fresh_trace_returns() -> None:
    r = _rng(0)
    prep = ad.prepare(ad.withgradient, _aux, r.random(4), ad.Const(r.random(4)), 2, "a")
    c = r.random(4)
    with runs_of(_aux) as runs:
        for k in range(3):
            x = r.random(4)
            if k == 1:
                c = r.random(4)  # new Const values: recorded again
            got = prep(x, ad.Const(c), 2, "a")
            assert_identical(got, ad.withgradient(_aux, x, ad.Const(c), 2, "a"))
            assert got.val[1]["c"] is c  # a Const argument handed back is the caller's
            got.val[1]["fresh"][0] = 99.0  # an array f made: the caller's own
    assert runs[0] == 2 + 3  # new Const values: recorded again, then replayed
    x = r.random(4)
    c = np.full(4, 0.5)
    with runs_of(_aux) as runs:
        prep(x, ad.Const(c), 2, "a")
        for n, label in [(2, "a"), (3, "b"), (2, "a"), (3, "b")]:
            got = prep(x, ad.Const(c), n, label)
            assert_identical(got, ad.withgradient(_aux, x, ad.Const(c), n, label))
    assert runs[0] == 1 + 1 + 4  # one recording per value of the non-array Const leaves


def test_ties_and_duplicated_shadows() -> None:
    def f(a: Any, b: Any, c: Any) -> Any:
        xp = ad.array_namespace(a)
        return xp.sum(a * b * c) + xp.sum(xp.cos(c))

    r = _rng(0)
    shared = r.random(3)
    prep = ad.prepare(ad.gradient, f, shared, shared, ad.Duplicated(r.random(3)))
    with runs_of(f) as runs:
        for _ in range(3):
            w, c = r.random(3), r.random(3)
            dup = ad.Duplicated(c, np.full(3, 7.0))
            got = prep(w, w, dup)
            fresh = ad.Duplicated(c.copy(), np.full(3, 7.0))
            assert_identical(got[:2], ad.gradient(f, w, w, fresh)[:2])
            assert got[1] is None and got[2] is dup.dval
            np.testing.assert_array_equal(dup.dval, fresh.dval)
            np.testing.assert_allclose(dup.dval, w * w - np.sin(c), rtol=1e-15)
    assert runs[0] == 1 + 3
    accumulate = ad.prepare(ad.gradient, f, shared, shared, ad.Duplicated(c), zero=False)
    dup = ad.Duplicated(c, np.zeros(3))
    for _ in range(3):
        accumulate(w, w, dup)
    np.testing.assert_allclose(dup.dval, 3 * (w * w - np.sin(c)), rtol=1e-14)


def test_python_float_and_0d_arguments() -> None:
    def f(a: float, x: Any) -> Any:
        xp = ad.array_namespace(x)
        return a * xp.sin(x) + a**2 * x + xp.exp(x * a)

    prep = ad.prepare(ad.gradient, f, 0.7, np.array(0.4))
    for a, x in [(0.3, np.array(-1.0)), (1.5, np.array(2.0))]:
        got = prep(a, x)
        assert type(got[0]) is float
        assert_identical(got, ad.gradient(f, a, x))
        np.testing.assert_allclose(got[1], a * np.cos(x) + a**2 + a * np.exp(x * a))


def _mutating(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x)
    out = xp.log(x)
    x[0] = y[0] ** 2  # a write into the argument, recorded copy-on-write
    x *= 2.0
    buf = xp.zeros_like(y)
    buf[1:] = x[:2] * y[1:]  # a fresh buffer written with traced values
    return xp.sum(out * x) + xp.sum(buf)


def test_writes_into_arguments_and_fresh_buffers_replay() -> None:
    r = _rng(0)
    prep = ad.prepare(ad.withgradient, _mutating, r.random(3) + 1, r.random(3))
    with runs_of(_mutating) as runs:
        for _ in range(3):
            x, y = r.random(3) + 1, r.random(3)
            x_fresh = x.copy()
            got = prep(x, y)
            want = ad.withgradient(_mutating, x_fresh, y.copy())
            assert_identical(got, want)
            np.testing.assert_array_equal(x, x_fresh)  # written back as a fresh call does
    assert runs[0] == 1 + 3


def vector_fn(p: dict[str, Any], x: Any) -> Any:
    xp = ad.array_namespace(x)
    h = xp.tanh(p["W"] @ x + p["b"])
    return h * xp.sum(x), {"norm": xp.sum(h * h)}


def vector_args(seed: int) -> tuple[Any, ...]:
    r = _rng(seed)
    return {"W": r.standard_normal((4, 3)), "b": r.standard_normal(4)}, r.standard_normal(3)


def test_vjp_and_its_pullback_replay() -> None:
    prep = ad.prepare(ad.vjp, vector_fn, *vector_args(0), has_aux=True)
    pullbacks = []
    with runs_of(vector_fn) as runs:
        for seed in (1, 2, 3):
            p, x = vector_args(seed)
            y, pullback, aux = prep(p, x)
            y_want, pullback_want, aux_want = ad.vjp(vector_fn, p, x, has_aux=True)
            assert_identical((y, aux), (y_want, aux_want))
            u = _rng(seed + 10).standard_normal(4)
            assert_identical(pullback(u), pullback_want(u))
            pullbacks.append((pullback, pullback_want, u))
            p["W"][...] = 0.0  # the caller's arrays change: the pullback keeps its own
            x[...] = 0.0
    assert runs[0] == 1 + 3
    for pullback, want, u in pullbacks:  # each still pulls back at its own point
        assert_identical(pullback(u), want(u))


def _vec(x: Any, c: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sin(x) * c + xp.cumulative_sum(x) ** 2


@pytest.mark.parametrize(("mode", "recorded"), [("forward", 1), ("reverse", 1), ("auto", 2)])
def test_jacobians_replay(mode: str, recorded: int) -> None:
    """Batched forward and reverse sweeps of replayed tapes (``auto`` records a pullback on
    its first call, then the sweep that fits the output it saw -- one recording only when
    an earlier call of the process saw the output's size already)."""
    r = _rng(0)
    c = r.random(4)
    prep = ad.prepare(ad.jacobian, _vec, r.random(4), ad.Const(c), mode=mode)
    with runs_of(_vec) as runs:
        for _ in range(4):
            x = r.random(4)
            got = prep(x, ad.Const(c))
            assert_identical(got, ad.jacobian(_vec, x, ad.Const(c), mode=mode))
            rows = 2 * np.tril(np.ones((4, 4))) * np.cumsum(x)[:, None]  # of cumsum(x) ** 2
            np.testing.assert_allclose(got[0], np.diag(np.cos(x) * c) + rows)
    assert runs[0] == recorded + 4 or (mode == "auto" and runs[0] == 1 + 4)


def test_jvp_and_derivative_replay() -> None:
    r = _rng(0)
    c = r.random(4)
    prep = ad.prepare(ad.jvp, _vec, (r.random(4), ad.Const(c)), (r.random(4), None))
    deriv = ad.prepare(ad.derivative, lambda t, v: ad.array_namespace(v).sin(v * t), 0.5, c)
    with runs_of(_vec) as runs:
        for _ in range(3):
            x, v = r.random(4), r.random(4)
            got = prep((x, ad.Const(c)), (v, None))
            assert_identical(got, ad.jvp(_vec, (x, ad.Const(c)), (v, None)))
            want = np.cos(x) * c * v + 2 * np.cumsum(x) * np.cumsum(v)
            np.testing.assert_allclose(got[1], want, rtol=1e-12)
    assert runs[0] == 1 + 3
    for t in (0.1, 0.9):
        np.testing.assert_allclose(deriv(t, c), np.cos(c * t) * c, rtol=1e-14)


def test_no_warning_for_replayable_calls() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", TapeReplayWarning)
        prep = ad.prepare(ad.gradient, chain, *_args_chain(0))
        for seed in range(3):
            prep(*_args_chain(seed))


def test_a_dropped_prepared_call_frees_what_it_kept_at_once() -> None:
    """No reference cycle: the program, its constants and its buffers go with the prepared
    call, without waiting for the garbage collector."""
    gc.disable()
    try:
        prep = ad.prepare(ad.gradient, mlp, *mlp_args(0))
        prep(*mlp_args(1))
        prep(*mlp_args(2))
        state = prep._slot[("tape", "value_and_grad")]  # type: ignore[attr-defined]
        stored = next(iter(state.programs.values()))
        kept = [weakref.ref(stored.gradient.run)] + [weakref.ref(a) for _, a in stored.arrays]
        for arena in stored.arenas._idle:
            kept += [weakref.ref(b) for bufs in arena.buffers.values() for b in bufs]
        assert len(kept) > 3
        del prep, state, stored, arena
        assert all(ref() is None for ref in kept)
    finally:
        gc.enable()
