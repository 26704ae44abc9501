"""``ad.prepare``: the same results as the unprepared operator, strict structure checks
that list every difference, no stale reuse, thread safety, no arrays kept alive.

Oracles: closed forms and the unprepared call on the same arguments (the unprepared
path is itself checked by the conformance suite against finite differences)."""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import numpy as np
import pytest

import adswitch as ad


def loss(params: dict[str, Any], x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.tanh(x @ params["W"] + params["b"]) ** 2)


def make(seed: int) -> tuple[dict[str, Any], np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"W": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}, rng.standard_normal(
        (4, 3)
    )


def closed_form(params: dict[str, Any], x: np.ndarray) -> dict[str, np.ndarray]:
    z = np.tanh(x @ params["W"] + params["b"])
    dz = 2 * z * (1 - z**2)
    return {"W": x.T @ dz, "b": dz.sum(axis=0)}


@pytest.mark.parametrize("backend", ["tape", "autograd", "torch", "jax"])
def test_prepared_gradient_matches_the_closed_form_at_new_values(backend: str) -> None:
    p0, x0 = make(0)
    prep = ad.prepare(ad.gradient, loss, p0, ad.Const(x0), backend=backend)
    for seed in (1, 2):
        p, x = make(seed)
        g, none = prep(p, ad.Const(x))
        assert none is None
        want = closed_form(p, x)
        for key in want:
            np.testing.assert_allclose(np.asarray(g[key]), want[key], rtol=1e-10)


@pytest.mark.filterwarnings("ignore::UserWarning")  # the tape says it re-traces hessian/hvp
def test_every_operator_prepared_equals_unprepared() -> None:
    x = np.array([0.3, -0.2, 0.5])
    y = np.array([1.0, 2.0, -1.0])

    def vec(v: Any) -> Any:
        return ad.array_namespace(v).sin(v) * v

    def scalar(v: Any) -> Any:
        return ad.array_namespace(v).sum(v**3)

    cases: list[tuple[Any, Any, tuple[Any, ...], tuple[Any, ...], dict[str, Any]]] = [
        (ad.withgradient, scalar, (x,), (y,), {}),
        (ad.jacobian, vec, (x,), (y,), {"mode": "forward"}),
        (ad.jacobian, vec, (x,), (y,), {}),
        (ad.hessian, scalar, (x,), (y,), {}),
        (ad.jvp, vec, ((x,), (x,)), ((y,), (x,)), {}),
        (ad.hvp, scalar, ((x,), (x,)), ((y,), (x,)), {}),
        (ad.derivative, lambda t, a: a * t**2, (2.0, x), (3.0, y), {}),
    ]
    for op, f, first, second, kw in cases:
        prep = ad.prepare(op, f, *first, **kw)
        got, want = prep(*second), op(f, *second, **kw)
        _assert_same(got, want)


def test_prepared_vjp_pullback() -> None:
    x = np.array([1.0, 2.0])
    prep = ad.prepare(ad.vjp, lambda v: v * v, x)
    y, pullback = prep(np.array([3.0, 4.0]))
    np.testing.assert_allclose(y, [9.0, 16.0])
    np.testing.assert_allclose(pullback(np.array([1.0, 1.0]))[0], [6.0, 8.0])


def _assert_same(got: Any, want: Any) -> None:
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
    elif isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            _assert_same(got[k], want[k])
    elif want is None:
        assert got is None
    else:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_every_difference_is_listed_by_key_path() -> None:
    p, x = make(0)
    prep = ad.prepare(ad.gradient, loss, p, ad.Const(x))
    bad = {"W": p["W"].astype(np.float32), "b": np.zeros(3)}
    with pytest.raises(ad.PreparationError) as caught:
        prep(bad, x)
    text = str(caught.value)
    assert "args[0]['W']" in text and "float32" in text
    assert "args[0]['b']" in text and "(3,)" in text
    assert "args[1] was prepared Const, is plain" in text
    assert "Prepare again" in text
    with pytest.raises(ad.PreparationError, match="another structure"):
        prep({"W": p["W"]}, ad.Const(x))


def test_ties_must_stay_as_prepared() -> None:
    w = np.ones(2)

    def f(a: Any, b: Any) -> Any:
        return ad.array_namespace(a).sum(a * b)

    tied = ad.prepare(ad.gradient, f, w, w)
    v = np.array([1.0, 2.0])
    g = tied(v, v)  # another array, tied the same way: the total at the first place
    np.testing.assert_allclose(g[0], 2 * v)
    assert g[1] is None
    with pytest.raises(ad.PreparationError, match="tied"):
        tied(np.ones(2), np.ones(2))
    untied = ad.prepare(ad.gradient, f, np.ones(2), np.ones(2))
    with pytest.raises(ad.PreparationError, match="a tie the prepared call did not have"):
        untied(w, w)


def test_tree_arguments_checked_on_every_call() -> None:
    # Trees without ties take the prepared call's quick check: whatever it cannot pass
    # is listed as the full check lists it.
    p, x = make(0)
    prep = ad.prepare(ad.gradient, loss, p, ad.Const(x))
    q, _ = make(1)
    np.testing.assert_allclose(
        prep(q, ad.Const(x))[0]["W"], ad.gradient(loss, q, ad.Const(x))[0]["W"]
    )
    with pytest.raises(ad.PreparationError, match=r"args\[0\] has another structure"):
        prep([q["W"], q["b"]], ad.Const(x))
    with pytest.raises(ad.PreparationError, match=r"args\[0\]\['b'\] was prepared as numpy"):
        prep({"W": q["W"], "b": 1.0}, ad.Const(x))
    with pytest.raises(ad.PreparationError, match="args\\[0\\] was prepared plain, is Duplicated"):
        prep(ad.Duplicated(q, ad.make_zero(q)), ad.Const(x))


def test_duplicated_shadows_are_checked_and_written_each_call() -> None:
    p, x = make(0)
    first = ad.Duplicated(p)
    prep = ad.prepare(ad.gradient, loss, first, ad.Const(x))
    p2, _ = make(3)
    dup = ad.Duplicated(p2)
    result = prep(dup, ad.Const(x))
    assert result[0] is dup.dval
    np.testing.assert_allclose(dup.dval["W"], closed_form(p2, x)["W"])
    assert np.all(first.dval["W"] == 0)  # preparing ran nothing: the example's shadow untouched
    with pytest.raises(ad.ActivityError, match="dval"):
        prep(ad.Duplicated(p2, {"W": np.zeros((3, 2)), "b": np.zeros(2, np.float32)}), ad.Const(x))


@pytest.mark.filterwarnings("ignore::UserWarning")  # jax says it runs the branchy f eagerly
def test_hygiene_captured_state_and_value_dependent_branches() -> None:
    scale = np.array([1.0, 1.0])

    def f(v: Any) -> Any:
        xp = ad.array_namespace(v)
        if bool(v[0] > 0):  # a value-dependent branch
            return xp.sum(scale * v**2)
        return xp.sum(scale * v**3)

    for backend in ("tape", "jax"):
        scale[:] = 1.0
        prep = ad.prepare(ad.gradient, f, np.array([1.0, 2.0]), backend=backend)
        np.testing.assert_allclose(prep(np.array([1.0, 2.0]))[0], [2.0, 4.0])
        scale[:] = 3.0  # a captured array mutated between calls
        np.testing.assert_allclose(prep(np.array([1.0, 2.0]))[0], [6.0, 12.0])
        # the other branch of a value-dependent `if`
        np.testing.assert_allclose(prep(np.array([-1.0, 2.0]))[0], [9.0, 36.0])


def test_threads_share_one_prepared_call() -> None:
    p, x = make(0)
    prep = ad.prepare(ad.gradient, loss, p, ad.Const(x))
    inputs = [make(seed) for seed in range(8)]
    results: dict[int, Any] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(20):
                results[i] = prep(inputs[i][0], ad.Const(inputs[i][1]))[0]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, (pi, xi) in enumerate(inputs):
        np.testing.assert_allclose(results[i]["W"], closed_form(pi, xi)["W"], rtol=1e-10)


def test_no_array_kept_alive() -> None:
    example = np.ones(3)
    later = np.ones(3)
    ref_example, ref_later = weakref.ref(example), weakref.ref(later)
    prep = ad.prepare(ad.gradient, lambda v: ad.array_namespace(v).sum(v * v), example)
    prep(later)
    del example, later
    gc.collect()
    assert ref_example() is None and ref_later() is None
    assert prep is not None


def test_prepare_needs_an_operator_and_its_own_keywords() -> None:
    with pytest.raises(ad.UsageError, match="operator"):
        ad.prepare(len, loss, np.ones(2))
    with pytest.raises(ad.UsageError, match="takes no keyword mode"):
        ad.prepare(ad.gradient, loss, np.ones(2), mode="forward")


def test_prepared_where_it_is_called() -> None:
    prep = ad.prepare(ad.gradient, lambda v: ad.array_namespace(v).sum(v * v), np.ones(2))

    def outer(x: Any) -> Any:
        (g,) = prep(x)
        return ad.array_namespace(g).sum(g)

    with pytest.raises(ad.PreparationError, match="prepared at top level"):
        ad.gradient(outer, np.ones(2))
