"""A prepared sparse Jacobian's or Hessian's shortcut on jax (``adswitch.shortcut``, the
jax ``prepared_shortcut`` hook; a Jacobian's colors' seeds constants of its program, a
Hessian's an input: ``adswitch.sparse.seeds``) gives what the full path gives to
rounding -- a ``BCOO`` equal to the dense oracle -- or steps aside: after a captured
global changed, for another shape, for a numpy leaf in place of a jax array, and inside
``jax.jit``. Oracles: ``jax.jacfwd`` and
``jax.hessian`` of the same function at the same values, and central differences."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch import shortcut_template
from adswitch.errors import PreparationError
from adswitch.sparse.examples import brusselator

jax = pytest.importorskip("jax")
jnp = jax.numpy
sparse = pytest.importorskip("jax.experimental.sparse")

N = 4  # (the Brusselator's grid: 2 N^2 = 32 unknowns)
SCALE = [jnp.full(8, 2.0, dtype=jnp.float32)]


def _bruss(u: Any) -> Any:
    return brusselator(u, N)


def _scaled(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sin(x) * SCALE[0] + x * xp.concat([x[1:], x[:1]])


def _rosen(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _prepared(op: Any, f: Any, x: Any) -> Any:
    prep = ad.prepare(op, f, x, sparsity="detect", backend="jax")
    assert prep._shortcut_tries is not None  # (a sparse operator seeks a shortcut)
    for _ in range(4):  # (jax remembers a function's walk from its second call on)
        prep(x)
    return prep


def _x(size: int, seed: int = 0) -> Any:
    values = np.random.default_rng(seed).uniform(0.5, 1.5, size)
    return jnp.asarray(values, dtype=jnp.float32)


def _dense(m: Any) -> np.ndarray:
    assert type(m) is sparse.BCOO, type(m)
    return np.asarray(m.todense())


def _close(got: Any, want: Any) -> None:
    np.testing.assert_allclose(_dense(got), np.asarray(want), rtol=2e-5, atol=1e-3)


def test_jacobian_is_one_dispatch_and_matches_jacfwd() -> None:
    x = _x(2 * N * N)
    prep = _prepared(ad.jacobian, _bruss, x)
    made = prep._shortcut
    assert made is not None
    oracle = jax.jacfwd(_bruss)
    for seed in range(3):
        x = _x(2 * N * N, seed=10 + seed)
        _close(prep(x), oracle(x))
    assert prep._shortcut is made  # (taken each time, not dropped)


def test_jacobian_matches_central_differences() -> None:
    x = _x(2 * N * N, seed=3)
    prep = _prepared(ad.jacobian, _bruss, x)
    u, eps = np.asarray(x, dtype=np.float64), 1e-4
    fd = np.stack(
        [
            (brusselator(u + eps * e, N) - brusselator(u - eps * e, N)) / (2 * eps)
            for e in np.eye(u.size)
        ],
        axis=1,
    )
    np.testing.assert_allclose(_dense(prep(x)), fd, rtol=1e-4, atol=5e-2)


def test_hessian_is_one_dispatch_and_matches_jax_hessian() -> None:
    x = _x(12)
    prep = _prepared(ad.hessian, _rosen, x)
    assert prep._shortcut is not None
    oracle = jax.hessian(_rosen)
    for seed in range(3):
        x = _x(12, seed=20 + seed)
        _close(prep(x), oracle(x))
    assert prep._shortcut is not None


def test_a_changed_global_is_not_run_stale() -> None:
    x = _x(8)
    try:
        prep = _prepared(ad.jacobian, _scaled, x)
        assert prep._shortcut is not None
        SCALE[0] = jnp.full(8, -3.0, dtype=jnp.float32)
        _close(prep(x), jax.jacfwd(_scaled)(x))  # (the new scale, not the traced one)
    finally:
        SCALE[0] = jnp.full(8, 2.0, dtype=jnp.float32)


def test_another_shape_takes_the_full_path() -> None:
    prep = _prepared(ad.jacobian, _bruss, _x(2 * N * N))
    assert prep._shortcut is not None
    with pytest.raises(PreparationError, match="shape"):
        prep(_x(2 * N * N + 2))
    x = _x(2 * N * N, seed=5)
    _close(prep(x), jax.jacfwd(_bruss)(x))  # (and the prepared shape still right)


def test_a_numpy_leaf_gets_the_full_paths_error() -> None:
    x = _x(2 * N * N)
    fresh = ad.prepare(ad.jacobian, _bruss, x, sparsity="detect", backend="jax")
    with pytest.raises(PreparationError) as full_error:
        fresh(np.asarray(x))
    prep = _prepared(ad.jacobian, _bruss, x)
    assert prep._shortcut is not None
    with pytest.raises(PreparationError) as error:
        prep(np.asarray(x))
    assert str(error.value) == str(full_error.value)


def test_inside_jit_the_full_path_stages_it() -> None:
    x = _x(2 * N * N)
    prep = _prepared(ad.jacobian, _bruss, x)
    assert prep._shortcut is not None
    x2 = _x(2 * N * N, seed=7)
    got = jax.jit(lambda v: prep(v))(x2)
    _close(got, jax.jacfwd(_bruss)(x2))
    hess = _prepared(ad.hessian, _rosen, _x(12))
    x3 = _x(12, seed=8)
    _close(jax.jit(lambda v: hess(v))(x3), jax.hessian(_rosen)(x3))


def test_sparse_results_compare_by_structure_and_values_to_rounding() -> None:
    def bcoo(data: list[float], rows: list[int], dtype: Any = jnp.float32) -> Any:
        coords = jnp.asarray([[r, 0] for r in rows], dtype=jnp.int32)
        return sparse.BCOO((jnp.asarray(data, dtype=dtype), coords), shape=(3, 2))

    a = bcoo([1.0, 2.0], [0, 2])
    template = shortcut_template.template(a)
    assert template is not None
    assert shortcut_template.same(template, a, bcoo([1.0, 2.0], [0, 2]))
    assert not shortcut_template.same(template, a, bcoo([1.0, 2.0], [0, 1]))
    assert not shortcut_template.same(template, a, bcoo([1.0, 2.0], [0, 2], jnp.float16))
    # (one ulp: the folded seeds' rounding; 8 eps of the largest entry: a stale program)
    one_ulp = float(np.nextafter(np.float32(2), np.float32(3)))
    assert shortcut_template.same(template, a, bcoo([1.0, one_ulp], [0, 2]))
    eps = float(np.finfo(np.float32).eps)
    off = 2.0 + 2.0 * eps * (shortcut_template.ROUNDING_ULPS + 4)
    assert not shortcut_template.same(template, a, bcoo([1.0, off], [0, 2]))
    assert not shortcut_template.same(template, a, bcoo([1.0, float("nan")], [0, 2]))
    assert not shortcut_template.same(template, a, bcoo([1.0, float("inf")], [0, 2]))
    assert shortcut_template.same(
        template, bcoo([float("nan"), 2.0], [0, 2]), bcoo([float("nan"), 2.0], [0, 2])
    )
    scipy_sparse = pytest.importorskip("scipy.sparse")
    assert shortcut_template.template(scipy_sparse.csr_array(np.eye(2))) is None
