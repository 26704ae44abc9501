"""Every primitive's batched rules -- gradient and tangent -- against two oracles: the
unbatched rule applied row by row (a loop), and finite differences of the primitive's
numpy code. At top level (one and two batch axes) and nested: the rule run on values
and seeds traced by an enclosing trace, whose batched sweep then differentiates it once
more (second order, a batch of outer cotangents) -- against a loop of unbatched outer
sweeps, first-order differences for the derivative in the seed (the rule is linear in
it) and second-order differences for the derivative in the arguments.

The example calls are those of ``test_tape_rules`` (every primitive has one there), so a
primitive added with an example is checked here too, and more of the shapes, axes and
keys that batches make hard (advanced indices, negative axes, stacks times vectors).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import adswitch_tape.namespace  # noqa: F401  -- registers the rules, completes the tracers
import numpy as np
import pytest
from adswitch_tape.array.tracer import Tracer, raw
from adswitch_tape.core import BATCH, Trace, backward_many
from adswitch_tape.recording import PRIMS
from adswitch_tape.rules import primitives as P

from tests.engines.tape.test_tape_rules import CASES, Case, _case_id

_rng = np.random.default_rng(7)


def _u(*shape: int) -> np.ndarray:
    return _rng.uniform(-1.0, 1.0, shape)


_MASK = np.array([[True, False, True], [False, True, True]])
_KEYS = [  # advanced keys numpy lays out by rules of their own, and basic ones
    (0, slice(None), np.array([1, 2])),  # separated index arrays: their axis goes first
    (Ellipsis, np.array([1, 0, 1])),
    (_MASK,),
    (np.array([1, 0]), None, slice(1, 3)),
    (slice(None), np.array([[0, 2], [1, 1]])),
    (Ellipsis, 1),
    (None, 0, Ellipsis),
]
_X = _u(2, 3, 4)


def _extra() -> list[Case]:
    """Shapes, axes and keys beyond ``test_tape_rules``' examples: negative axes, 3-d
    arrays, advanced indexing, the matrix products of stacks with vectors."""
    cases = []
    for key in _KEYS:
        cases.append(Case(P.getitem, (_X,), {"key": key}))
        sub = np.shape(_X[key])
        cases.append(Case(P.scatter, (_u(*sub),), {"key": key, "shape": _X.shape}))
        hits = np.zeros(_X.shape)
        np.add.at(hits, key, 1.0)
        if hits.max() == 1:  # (the tape refuses traced writes at repeated indices)
            cases.append(Case(P.index_update, (_u(2, 3, 4), _u(*sub)), {"key": key}))
            cases.append(Case(P.index_update, (_u(2, 3, 4), _u(*sub[-1:])), {"key": key}))
    cases += [
        Case(P.sum, (_u(2, 3, 4),), {"axis": (-1, 0)}),
        Case(P.max, (_u(2, 3, 4),), {"axis": -2, "keepdims": True}),
        Case(P.prod, (_u(2, 3, 4) * 0.3 + 1.0,), {"axis": None}),
        Case(P.cumulative_sum, (_u(2, 3, 4),), {"axis": -1}),
        Case(P.cumulative_sum, (_u(2, 3, 4),), {"axis": 1, "include_initial": True}),
        Case(P.flip, (_u(2, 3, 4),), {"axis": -1}),
        Case(P.flip, (_u(2, 3, 4),), {"axis": None}),
        Case(P.permute_dims, (_u(2, 3, 4),), {"axes": (1, 2, 0)}),
        Case(P.reshape, (_u(2, 3, 4),), {"shape": (4, -1)}),
        Case(P.broadcast_to, (_u(3, 1),), {"shape": (2, 3, 4)}),
        Case(P.concat, (_u(2, 3), _u(2, 1)), {"axis": -1}),
        Case(P.stack, (_u(2, 3), _u(2, 3), _u(2, 3)), {"axis": -1}),
        Case(P.where, (_u(2, 3) > 0, _u(3), _u(2, 3))),
        Case(P.add, (_u(4), _u(2, 3, 1))),
        Case(P.multiply, (_u(3, 1), _u(2, 1, 4))),
    ]
    for a, b in [((3,), (2, 3, 4)), ((2, 2, 3), (3,)), ((4, 3), (2, 3, 5)), ((2, 4, 3), (3, 2))]:
        cases.append(Case(P.matmul, (_u(*a), _u(*b))))
    cases.append(Case(P.matmul_nt, (_u(2, 3), _u(2, 4, 3))))
    cases.append(Case(P.matmul_tn, (_u(2, 3, 2), _u(3, 4))))
    return cases


CHECKED = CASES + _extra()
BATCHES = [(3,), (2, 2)]  # top-level batch shapes (the engine uses one axis; two check the rest)
OUTER = 2  # outer cotangents per nested check


@contextmanager
def batched(nb: int) -> Iterator[None]:
    previous = BATCH.axes
    BATCH.axes = nb
    try:
        yield
    finally:
        BATCH.axes = previous


def _wrt(case: Case) -> list[int]:
    return [i for i, a in enumerate(case.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


def _fresh(case: Case) -> list[Any]:
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in case.args]


def _impl(case: Case, args: list[Any]) -> np.ndarray:
    return np.asarray(PRIMS[case.fn].impl(*args, **case.kw), dtype=np.float64)


def _jacobians(case: Case, args: list[Any], eps: float) -> dict[int, np.ndarray]:
    """Central differences: per differentiable argument ``i``, ``ans.shape + x_i.shape``."""
    out = {}
    ans_shape = _impl(case, args).shape
    for i in _wrt(case):
        x = args[i]
        jac = np.zeros(ans_shape + x.shape)
        for index in np.ndindex(x.shape):
            sides = []
            for step in (eps, -eps):
                moved = list(args)
                moved[i] = x.copy()
                moved[i][index] += step
                sides.append(_impl(case, moved))
            jac[(Ellipsis, *index)] = (sides[0] - sides[1]) / (2 * eps)
        out[i] = jac
    return out


_JACOBIANS: dict[int, dict[int, np.ndarray]] = {}
_HESSIANS: dict[int, dict[tuple[int, int], np.ndarray]] = {}


def jacobians(case: Case) -> dict[int, np.ndarray]:
    if id(case) not in _JACOBIANS:
        _JACOBIANS[id(case)] = _jacobians(case, list(case.args), case.eps)
    return _JACOBIANS[id(case)]


def hessians(case: Case) -> dict[tuple[int, int], np.ndarray]:
    """``(l, i) -> ans.shape + x_l.shape + x_i.shape``: mixed second differences (step 1e-4,
    ``f(+ +) - f(+ -) - f(- +) + f(- -)``: errors about 1e-8)."""
    if id(case) not in _HESSIANS:
        eps = 1e-4
        wrt = _wrt(case)
        ans_shape = _impl(case, list(case.args)).shape
        out = {}
        for l in wrt:
            for i in wrt:
                xl, xi = case.args[l], case.args[i]
                block = np.zeros(ans_shape + xl.shape + xi.shape)
                for j in np.ndindex(xl.shape):
                    for m in np.ndindex(xi.shape):
                        total = np.zeros(ans_shape)
                        for sj, sm in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                            moved = [
                                np.array(a, copy=True) if k in (l, i) else a
                                for k, a in enumerate(case.args)
                            ]
                            moved[l][j] += sj * eps
                            moved[i][m] += sm * eps
                            total += sj * sm * _impl(case, moved)
                        block[(Ellipsis, *j, *m)] = total / (4 * eps * eps)
                out[(l, i)] = block
        _HESSIANS[id(case)] = out
    return _HESSIANS[id(case)]


def _contract(a: np.ndarray, b: np.ndarray, axes: int) -> np.ndarray:
    """``a``'s last ``axes`` axes against ``b``'s first ``axes`` axes."""
    return np.tensordot(a, b, axes=axes)


class Recorded:
    """One call of a primitive recorded on an inner trace, its traced arguments leaves of
    an outer trace too when ``nested``."""

    def __init__(self, case: Case, traced: list[int], nested: bool) -> None:
        self.case, self.traced, self.nested = case, traced, nested
        self.args = _fresh(case)
        self.outer, self.inner = Trace(), Trace()
        self.slots: dict[int, int] = {}  # argument -> its slot on the outer trace
        leaves = list(self.args)
        for i in traced:
            value: Any = self.args[i]
            if nested:
                value = self.leaf(value)
                self.slots[i] = value._idx
            self.inner.tape.append(None)
            leaves[i] = Tracer(value, self.inner, len(self.inner.tape) - 1)
        out = case.fn(*leaves, **case.kw)
        assert type(out) is Tracer and out._idx == len(self.inner.tape) - 1
        self.prim = PRIMS[case.fn]
        _, self.kept, self.ans, kw, _ = self.inner.tape[-1]
        self.kw = kw or {}
        self.ans_shape = np.shape(raw(out))

    def leaf(self, value: Any) -> Tracer:
        """``value`` as a new leaf of the outer trace."""
        self.outer.tape.append(None)
        return Tracer(value, self.outer, len(self.outer.tape) - 1)

    def vjp(self, k: int, g: Any) -> Any:
        rule = self.prim.rules[k]
        assert rule is not None
        return rule(g, self.ans, *self.kept, **self.kw)

    def jvp(self, ts: tuple[Any, ...]) -> Any:
        rule = self.prim.jvp
        assert rule is not None, f"`{self.prim.name}` has no tangent rule"
        return rule(ts, self.ans, *self.kept, **self.kw)

    def close(self) -> None:
        self.inner.close()
        self.outer.close()


def _runs(case: Case) -> Iterator[list[int]]:
    wrt = _wrt(case)
    yield wrt
    if len(wrt) > 1:
        yield from ([k] for k in wrt)


def _rows(batch: tuple[int, ...], fn: Any) -> np.ndarray:
    """``fn(index)`` for every index of ``batch``, stacked into ``batch + result.shape``."""
    rows = [np.asarray(raw(fn(index))) for index in np.ndindex(batch)]
    return np.stack(rows).reshape(batch + rows[0].shape)


def _grad(grads: list[Any], slot: int, shape: tuple[int, ...]) -> np.ndarray:
    """A sweep's gradient at ``slot`` (zeros where none reached it)."""
    g = grads[slot]
    return np.zeros(shape) if g is None else np.asarray(raw(g))


def _close(got: Any, expected: np.ndarray, case: Case, what: str, atol: float = 1e-7) -> None:
    got = np.asarray(raw(got))
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    np.testing.assert_allclose(got, expected, rtol=max(case.rtol, 1e-6), atol=atol, err_msg=what)


# -- gradient rules ----------------------------------------------------------------------------
def check_vjp_top(case: Case, traced: list[int], batch: tuple[int, ...]) -> None:
    rec = Recorded(case, traced, nested=False)
    try:
        g = _rng.standard_normal(batch + rec.ans_shape)
        for k in traced:
            with batched(len(batch)):
                got = rec.vjp(k, g)
            loop = _rows(batch, lambda b, k=k: rec.vjp(k, g[b]))
            _close(got, loop, case, f"rule {k}, batch {batch}, against the loop")
            fd = _contract(g, jacobians(case)[k], len(rec.ans_shape))
            _close(got, fd, case, f"rule {k}, batch {batch}, against differences")
    finally:
        rec.close()


def check_vjp_nested(case: Case, traced: list[int], nb: int) -> None:
    rec = Recorded(case, traced, nested=True)
    batch = (3,) * nb
    try:
        g0 = _rng.standard_normal(batch + rec.ans_shape)
        for k in traced:
            g = rec.leaf(g0)
            with batched(nb):
                r = rec.vjp(k, g)
            assert type(r) is Tracer and r._trace is rec.outer, "the rule was not recorded"
            _close(r, _contract(g0, jacobians(case)[k], len(rec.ans_shape)), case, "value")
            h = _rng.standard_normal((OUTER, *np.shape(raw(r))))
            grads = backward_many(rec.outer, [r._idx], [h], batch=1, keep=True)
            loop = [backward_many(rec.outer, [r._idx], [h[c]], keep=True) for c in range(OUTER)]
            x_k = np.ndim(case.args[k])
            for slot, shape, what in [
                (g._idx, g0.shape, "the seed"),
                *((rec.slots[i], case.args[i].shape, f"arg {i}") for i in traced),
            ]:
                expected = np.stack([_grad(row, slot, shape) for row in loop])
                got = _grad(grads, slot, (OUTER, *shape))
                _close(got, expected, case, f"rule {k}, {what}: against the loop")
            # the rule is g -> g @ J_k: its derivative in g is h_c @ J_k^T
            d_seed = _contract(h, np.moveaxis(jacobians(case)[k], range(-x_k, 0), range(x_k)), x_k)
            got = _grad(grads, g._idx, (OUTER, *g0.shape))
            _close(got, d_seed, case, f"rule {k}, the seed: against differences")
            if case.eps < 1e-4:  # (second differences need float64 throughout)
                for i in traced:
                    # sum over batch and output of h (x) g (x) d2 f / dx_k dx_i
                    m = np.tensordot(h, g0, axes=(list(range(1, 1 + nb)), list(range(nb))))
                    hess = hessians(case)[(k, i)]  # ans + x_k + x_i
                    moved = np.moveaxis(
                        hess, range(len(rec.ans_shape)), range(x_k, x_k + len(rec.ans_shape))
                    )
                    expected = np.tensordot(m, moved, axes=x_k + len(rec.ans_shape))
                    got = _grad(grads, rec.slots[i], (OUTER, *case.args[i].shape))
                    # the oracle's own error (step 1e-4, fourth derivatives) scales with the
                    # block's size: eigh's came to 1.4e-6 on entries of size 5
                    atol = 1e-6 * max(1.0, float(np.abs(expected).max()))
                    what = f"rule {k}, arg {i}: second differences"
                    _close(got, expected, case, what, atol)
    finally:
        rec.close()


@pytest.mark.parametrize("case", CHECKED, ids=[_case_id(c) for c in CHECKED])
def test_batched_gradient_rules(case: Case) -> None:
    for traced in _runs(case):
        for batch in BATCHES:
            check_vjp_top(case, traced, batch)
        for nb in (0, 1):
            check_vjp_nested(case, traced, nb)


# -- tangent rules -----------------------------------------------------------------------------
def _tangents(rec: Recorded, batch: tuple[int, ...]) -> dict[int, np.ndarray]:
    return {i: _rng.standard_normal(batch + np.shape(rec.args[i])) for i in rec.traced}


def _pushed(case: Case, ts: dict[int, np.ndarray], nb: int) -> np.ndarray:
    """``sum_i J_i @ t_i`` by differences, batch axes in front."""
    total: Any = 0.0
    for i, t in ts.items():
        jac = jacobians(case)[i]
        x_i = np.ndim(case.args[i])
        moved = np.moveaxis(jac, range(jac.ndim - x_i, jac.ndim), range(x_i))  # x_i + ans
        total = total + _contract(t, moved, x_i)
    return np.asarray(total)


def _ts(rec: Recorded, ts: dict[int, Any]) -> tuple[Any, ...]:
    return tuple(ts.get(i) for i in range(len(rec.args)))


def check_jvp_top(case: Case, traced: list[int], batch: tuple[int, ...]) -> None:
    rec = Recorded(case, traced, nested=False)
    try:
        ts = _tangents(rec, batch)
        with batched(len(batch)):
            got = rec.jvp(_ts(rec, ts))
        loop = _rows(batch, lambda b: rec.jvp(_ts(rec, {i: t[b] for i, t in ts.items()})))
        _close(got, loop, case, f"traced {traced}, batch {batch}, against the loop")
        _close(got, _pushed(case, ts, len(batch)), case, f"batch {batch}, against differences")
        unbatched = rec.jvp(_ts(rec, {i: t[(0,) * len(batch)] for i, t in ts.items()}))
        assert np.shape(raw(unbatched)) == rec.ans_shape
    finally:
        rec.close()


def check_jvp_nested(case: Case, traced: list[int], nb: int) -> None:
    rec = Recorded(case, traced, nested=True)
    batch = (3,) * nb
    try:
        ts0 = _tangents(rec, batch)
        ts = {i: rec.leaf(t) for i, t in ts0.items()}
        with batched(nb):
            r = rec.jvp(_ts(rec, ts))
        assert type(r) is Tracer and r._trace is rec.outer, "the rule was not recorded"
        _close(r, _pushed(case, ts0, nb), case, "value")
        h = _rng.standard_normal((OUTER, *np.shape(raw(r))))
        grads = backward_many(rec.outer, [r._idx], [h], batch=1, keep=True)
        loop = [backward_many(rec.outer, [r._idx], [h[c]], keep=True) for c in range(OUTER)]
        n_ans = len(rec.ans_shape)
        for i in traced:
            for slot, shape, what in [
                (ts[i]._idx, ts0[i].shape, f"tangent {i}"),
                (rec.slots[i], case.args[i].shape, f"arg {i}"),
            ]:
                expected = np.stack([_grad(row, slot, shape) for row in loop])
                got = _grad(grads, slot, (OUTER, *shape))
                _close(got, expected, case, f"{what}: against the loop")
            # linear in the tangent: d <h, J t> / d t_i = h @ J_i
            d_t = _contract(h, jacobians(case)[i], n_ans)
            got = _grad(grads, ts[i]._idx, (OUTER, *ts0[i].shape))
            _close(got, d_t, case, f"tangent {i}: against differences")
        if case.eps < 1e-4:
            for i in traced:
                second: Any = 0.0
                for l in traced:
                    # sum over batch and output of h (x) t_l (x) d2 f / dx_l dx_i
                    x_l = np.ndim(case.args[l])
                    m = np.tensordot(h, ts0[l], axes=(list(range(1, 1 + nb)), list(range(nb))))
                    hess = hessians(case)[(l, i)]  # ans + x_l + x_i
                    second = second + np.tensordot(m, hess, axes=n_ans + x_l)
                got = _grad(grads, rec.slots[i], (OUTER, *case.args[i].shape))
                _close(got, np.asarray(second), case, f"arg {i}: second differences", 1e-6)
    finally:
        rec.close()


@pytest.mark.parametrize("case", CHECKED, ids=[_case_id(c) for c in CHECKED])
def test_batched_tangent_rules(case: Case) -> None:
    for traced in _runs(case):
        for batch in BATCHES:
            check_jvp_top(case, traced, batch)
        for nb in (0, 1):
            check_jvp_nested(case, traced, nb)


def test_every_primitive_has_a_tangent_rule() -> None:
    missing = sorted(p.name for p in PRIMS.values() if p.jvp is None)
    assert not missing, f"primitives without a tangent rule (defjvp): {missing}"


# -- the batch state -----------------------------------------------------------------------------
def test_the_batch_is_per_thread_and_restored_after_a_failing_sweep() -> None:
    seen: dict[str, int] = {}
    ready = threading.Barrier(2)

    def other() -> None:
        ready.wait()
        seen["other"] = BATCH.axes

    thread = threading.Thread(target=other)
    thread.start()
    with batched(1):
        ready.wait()
        thread.join()
    assert seen["other"] == 0 and BATCH.axes == 0

    trace = Trace()
    trace.tape.append(None)
    x = Tracer(np.array([1.0, 2.0]), trace, 0)
    y = P.log(x)
    entry = trace.tape[-1]
    assert entry is not None
    trace.tape[-1] = (entry[0], ("not an array",), None, None, 0)  # a rule that fails
    with pytest.raises(TypeError):
        backward_many(trace, [y._idx], [np.ones((2, 2))], batch=1)
    assert BATCH.axes == 0
    trace.close()
