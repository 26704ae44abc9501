"""A prepared gradient's shortcut (``adswitch.shortcut``, jax's ``prepared_shortcut``)
gives what the full path gives, or steps aside: on repeated calls with new values, after
a capture changed (a global array, a closure cell, a global list's item), for another
shape, a tie, a wrapper or a numpy leaf in place of a jax array, dicts in another key
order, and inside ``jax.jit``. Oracle: ``jax.grad`` of the same function at the same
values (and the closed form where the capture changed)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import PreparationError

jax = pytest.importorskip("jax")
jnp = jax.numpy

SCALE = [jnp.ones(3, dtype=jnp.float32)]
OFFSET = jnp.zeros(3, dtype=jnp.float32)


def _loss(x: Any, c: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * x * c)


def _from_globals(x: Any) -> Any:
    return jnp.sum((x * SCALE[0] + OFFSET) ** 2)


def _mlp(p: dict[str, Any], x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.tanh(x @ p["W"] + p["b"]) ** 2)


def _warm(prep: Any, *args: Any) -> None:
    for _ in range(4):  # (jax remembers a function's walk from its second call on)
        prep(*args)


def _close(a: Any, b: Any) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _f32(*shape: int, seed: int = 0) -> Any:
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape), dtype=jnp.float32)


def test_repeated_calls_with_new_values_match_jax_grad() -> None:
    x, c = _f32(5), _f32(5, seed=1)
    prep = ad.prepare(ad.gradient, _loss, x, ad.Const(c), backend="jax")
    _warm(prep, x, ad.Const(c))
    assert prep._shortcut is not None  # the shortcut is taken from here on
    oracle = jax.grad(_loss)
    for seed in range(5):
        x, c = _f32(5, seed=10 + seed), _f32(5, seed=20 + seed)
        got = prep(x, ad.Const(c))
        assert len(got) == 2 and got[1] is None
        assert type(got[0]) is type(x)
        _close(got[0], oracle(x, c))
    assert prep._shortcut is not None


def test_a_dict_argument_is_keyed_as_given_and_matches_jax_grad() -> None:
    p = {"W": _f32(4, 3), "b": _f32(3, seed=2)}
    x = _f32(6, 4, seed=3)
    prep = ad.prepare(ad.gradient, _mlp, p, ad.Const(x), backend="jax")
    _warm(prep, p, ad.Const(x))
    assert prep._shortcut is not None
    q = {"W": _f32(4, 3, seed=4), "b": _f32(3, seed=5)}
    got, none = prep(q, ad.Const(x))
    want = jax.grad(_mlp)(q, x)
    assert none is None and list(got) == ["W", "b"]
    for key in q:
        _close(got[key], want[key])
    # the same keys in another order: the full path, keyed in the order given
    r = {"b": q["b"], "W": q["W"]}
    got = prep(r, ad.Const(x))[0]
    assert list(got) == ["b", "W"]
    for key in q:
        _close(got[key], want[key])


def test_a_changed_global_or_list_item_is_never_run_stale() -> None:
    global OFFSET
    x = _f32(3)
    prep = ad.prepare(ad.gradient, _from_globals, x, backend="jax")
    _warm(prep, x)
    assert prep._shortcut is not None
    saved_scale, saved_offset = SCALE[0], OFFSET
    try:
        SCALE[0] = jnp.full(3, 3.0, dtype=jnp.float32)  # an item replaced in place
        _close(prep(x)[0], 2 * (3 * x) * 3)
        OFFSET = jnp.full(3, 1.0, dtype=jnp.float32)  # a global rebound
        _close(prep(x)[0], 2 * (3 * x + 1) * 3)
    finally:
        SCALE[0], OFFSET = saved_scale, saved_offset
    _close(prep(x)[0], 2 * x)


def test_a_changed_closure_cell_is_never_run_stale() -> None:
    w = jnp.ones(3, dtype=jnp.float32)

    def f(x: Any) -> Any:
        return jnp.sum(x * w)

    x = _f32(3)
    prep = ad.prepare(ad.gradient, f, x, backend="jax")
    _warm(prep, x)
    assert prep._shortcut is not None
    w = jnp.full(3, 2.0, dtype=jnp.float32)
    _close(prep(x)[0], w)
    w = jnp.full(3, -1.0, dtype=jnp.float32)
    _close(prep(x)[0], w)


def test_another_shape_or_wrapper_is_refused_as_without_the_shortcut() -> None:
    x, c = _f32(5), _f32(5, seed=1)
    prep = ad.prepare(ad.gradient, _loss, x, ad.Const(c), backend="jax")
    _warm(prep, x, ad.Const(c))
    with pytest.raises(PreparationError):
        prep(_f32(6), ad.Const(_f32(6)))
    with pytest.raises(PreparationError):
        prep(x, c)  # Const dropped: another activity
    _close(prep(x, ad.Const(c))[0], jax.grad(_loss)(x, c))


def test_a_numpy_leaf_gets_numpy_back_as_without_the_shortcut() -> None:
    x, c = _f32(5), _f32(5, seed=1)
    prep = ad.prepare(ad.gradient, _loss, x, ad.Const(c), backend="jax")
    _warm(prep, x, ad.Const(c))
    with pytest.raises(PreparationError):  # another leaf type: a signature of its own
        prep(np.asarray(x), ad.Const(c))


def test_a_tie_takes_the_full_path() -> None:
    def two(a: Any, b: Any) -> Any:
        return jnp.sum(a * b)

    a, b = _f32(3), _f32(3, seed=1)
    prep = ad.prepare(ad.gradient, two, a, b, backend="jax")
    _warm(prep, a, b)
    assert prep._shortcut is not None
    got = prep(a, b)
    _close(got[0], b)
    _close(got[1], a)
    tied = ad.gradient(two, a, a, backend="jax")
    try:
        again = prep(a, a)
    except PreparationError:
        return  # the full path refuses a tie the preparation did not have: as it should
    assert len(again) == len(tied)
    for mine, theirs in zip(again, tied):
        if theirs is None:
            assert mine is None
        else:
            _close(mine, theirs)


def test_inside_jax_jit_the_transform_stages_the_call() -> None:
    x, c = _f32(5), _f32(5, seed=1)
    prep = ad.prepare(ad.gradient, _loss, x, ad.Const(c), backend="jax")
    _warm(prep, x, ad.Const(c))
    step = jax.jit(lambda x, c: prep(x, ad.Const(c))[0])
    _close(step(x, c), jax.grad(_loss)(x, c))
    _close(prep(x, ad.Const(c))[0], jax.grad(_loss)(x, c))


def test_a_prepared_call_inside_another_call_is_refused_as_without_the_shortcut() -> None:
    x = _f32(3)

    def inner(x: Any) -> Any:
        return jnp.sum(jnp.sin(x) * x)

    prep = ad.prepare(ad.gradient, inner, x, backend="jax")
    _warm(prep, x)
    assert prep._shortcut is not None

    def outer(x: Any) -> Any:
        return jnp.sum(prep(x)[0] ** 2)

    with pytest.raises(PreparationError, match="Prepare it where you call it"):
        ad.gradient(outer, x, backend="jax")


def test_jacobian_hessian_and_withgradient_take_it_too_and_match_jax() -> None:
    def residual(x: Any, c: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sin(x) * c + x[::-1] ** 2

    x, c = _f32(4), _f32(4, seed=1)
    for mode in ("forward", "reverse"):
        prep = ad.prepare(ad.jacobian, residual, x, ad.Const(c), mode=mode, backend="jax")
        _warm(prep, x, ad.Const(c))
        assert prep._shortcut is not None
        y = _f32(4, seed=7)
        got = prep(y, ad.Const(c))
        _close(got[0], jax.jacrev(residual)(y, c))
        assert got[1] is None
    hess = ad.prepare(ad.hessian, _loss, x, ad.Const(c), backend="jax")
    _warm(hess, x, ad.Const(c))
    assert hess._shortcut is not None
    _close(hess(x, ad.Const(c))[0][0], jax.hessian(_loss)(x, c))
    both = ad.prepare(ad.withgradient, _loss, x, ad.Const(c), backend="jax")
    _warm(both, x, ad.Const(c))
    assert both._shortcut is not None
    val, grad = both(x, ad.Const(c))
    _close(val, _loss(x, c))
    _close(grad[0], jax.grad(_loss)(x, c))


def test_unsorted_dict_keys_come_back_in_the_callers_order() -> None:
    # (jax.jit gives dicts back with sorted keys; the shortcut rebuilds the caller's)
    p = {"b": _f32(3, seed=2), "W": _f32(4, 3)}
    x = _f32(6, 4, seed=3)
    prep = ad.prepare(ad.gradient, _mlp, p, ad.Const(x), backend="jax")
    _warm(prep, p, ad.Const(x))
    assert prep._shortcut is not None
    got = prep(p, ad.Const(x))[0]
    assert list(got) == ["b", "W"]
    want = jax.grad(_mlp)(p, x)
    for key in p:
        _close(got[key], want[key])


def test_a_numpy_closure_array_changed_in_place_is_never_run_stale() -> None:
    w = np.ones(3, dtype=np.float32)

    def f(x: Any) -> Any:
        return jnp.sum(x * w)

    x = _f32(3)
    prep = ad.prepare(ad.gradient, f, x, backend="jax")
    _warm(prep, x)
    w[:] = 5.0
    _close(prep(x)[0], np.full(3, 5.0))


def test_numpy_float64_calls_take_it_and_give_writable_numpy_back() -> None:
    x = np.random.default_rng(0).normal(size=5)
    c = np.random.default_rng(1).normal(size=5)
    prep = ad.prepare(ad.gradient, _loss, x, ad.Const(c), backend="jax")
    _warm(prep, x, ad.Const(c))
    assert prep._shortcut is not None
    with jax.enable_x64(True):
        want = np.asarray(jax.grad(_loss)(x, c))
    got = prep(x, ad.Const(c))[0]
    assert type(got) is np.ndarray and got.dtype == np.float64 and got.flags.writeable
    np.testing.assert_allclose(got, want, rtol=1e-13)
    c[:] = 2.0  # a Const's values changed in place: an input, read afresh
    with jax.enable_x64(True):
        want = np.asarray(jax.grad(_loss)(x, c))
    np.testing.assert_allclose(prep(x, ad.Const(c))[0], want, rtol=1e-13)
    jac = ad.prepare(ad.jacobian, lambda v: v[::-1] * v, x, backend="jax")
    _warm(jac, x)
    assert jac._shortcut is not None
    np.testing.assert_allclose(jac(x)[0], np.diag(x[::-1]) + np.diag(x)[:, ::-1], rtol=1e-13)
