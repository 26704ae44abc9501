"""Writes inside ``f`` under autograd, with numpy's semantics: each read sees the value at
the time of the read, views and aliases see later writes, the caller's arrays end as a
plain call leaves them. Checked against central finite differences of the same numpy
code (never autograd against itself). What cannot be followed raises a MutationError /
UnsupportedError naming the engine, the operation and the fix."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.fd_oracle import central_fd

pytest.importorskip("autograd")

import adswitch as ad
from adswitch.errors import MutationError, UnsupportedError

B = "autograd"


def xp_of(*arrays: Any) -> Any:
    return ad.array_namespace(*arrays)


# ---- one-argument cases: f(x) with x a float array -----------------------------------


def log_then_fill(x: Any) -> Any:  # seed 003: 1/x (Zygote: 1/x + 1)
    y = xp_of(x).log(x)
    x[...] = 0.0
    return xp_of(x).sum(y + x)


def argument_plus_equals(x: Any) -> Any:
    x += 1.0
    x *= x
    return xp_of(x).sum(x)


def write_through_argument_view(x: Any) -> Any:
    head = x[:2]
    head *= 3.0
    return xp_of(x).sum(x**2)


def alias_sees_inplace(x: Any) -> Any:
    y = x * 1.0 + 0.25
    alias = y
    before = y * y
    y += x
    y /= 2.0
    y **= 2.0
    y -= x
    return xp_of(x).sum(alias * 2.0 + before)


def fill_fresh(x: Any) -> Any:
    xp = xp_of(x)
    buf = xp.zeros_like(x)
    buf[...] = xp.sin(x[0])
    return xp.sum(buf**2 * x)


def assemble(x: Any) -> Any:
    xp = xp_of(x)
    buf = xp.zeros((3,), dtype=x.dtype)
    buf[0] = x[0] * x[1]
    buf[1] = x[0] + x[1]
    buf[2] = buf[0] * buf[1]  # reads see the values written so far
    return xp.sum(xp.sin(buf))


def slices(x: Any) -> Any:
    xp = xp_of(x)
    buf = xp.ones((2, 4), dtype=x.dtype)
    buf[0, :] = xp.exp(x)
    buf[1, 1:3] = x[:2] ** 2
    return xp.sum(buf**2)


def recurrence(x: Any) -> Any:
    xp = xp_of(x)
    buf = xp.empty((4, 2))
    buf[0] = x[:2]
    for i in range(1, 4):
        buf[i] = buf[i - 1] * x[i] + 1.0
    return xp.sum(buf)


def overwrite(x: Any) -> Any:
    xp = xp_of(x)
    buf = xp.full((4,), 2.0)
    y = xp.sum(buf * x)  # reads the old value
    buf[1:3] = x[2:] * 3.0
    buf[np.array([0, 3])] = x[:2]
    return y + xp.sum(buf**2)


def copy_then_write(x: Any) -> Any:
    xp = xp_of(x)
    buf = xp.asarray(x, copy=True)
    buf += x**2
    buf[0] -= x[3]  # Python reads buf[0], subtracts, writes it back
    return xp.sum(buf * x)


def row_view_sees_write(x: Any) -> Any:
    xp = xp_of(x)
    buf = xp.zeros((2, 2))
    row = buf[0]
    before = xp.sum(row * x[:2])
    buf[0, 1] = x[0] * x[3]
    return before + xp.sum(row * x[2:])


def transpose_and_reshape_views(x: Any) -> Any:
    xp = xp_of(x)
    buf = xp.ones((2, 2))
    t = buf.T
    r = xp.reshape(buf, (4,))
    p = xp.permute_dims(buf, (1, 0))
    rev = buf[:, ::-1]
    buf[0, 1] = x[1] ** 2
    buf[1] = x[2:]
    return xp.sum(t * x[:2]) + xp.sum(r * x) + xp.sum(p[0] * rev[1])


def view_of_view(x: Any) -> Any:
    xp = xp_of(x)
    buf = xp.zeros((4,))
    v = buf[1:]
    w = v[1:]
    buf[2] = x[0] * 5.0
    w[1] = x[1]  # writes buf[3] through two views
    return xp.sum(v * x[1:]) + xp.sum(buf)


def write_through_row(x: Any) -> Any:
    xp = xp_of(x)
    buf = xp.ones((2, 2))
    row = buf[0]
    row[1] = x[0]
    buf[1] += x[2:]  # Python calls += on the view buf[1], then writes it back
    return xp.sum(buf * buf) + xp.sum(row)


def const_copy(x: Any) -> Any:
    xp = xp_of(x)
    c = xp.asarray(np.array([1.0, 2.0, 3.0, 4.0]), copy=True)
    c[2] = x[0] ** 3
    return xp.sum(c * x)


def float32_buffer(x: Any) -> Any:
    xp = xp_of(x)
    buf = xp.zeros((4,), dtype=xp.float32)
    buf[:] = x * 2.0
    return xp.sum(buf**2)


CASES = [
    log_then_fill, argument_plus_equals, write_through_argument_view, alias_sees_inplace,
    fill_fresh, assemble, slices, recurrence, overwrite, copy_then_write, row_view_sees_write,
    transpose_and_reshape_views, view_of_view, write_through_row, const_copy, float32_buffer,
]  # fmt: skip


@pytest.mark.parametrize("body", CASES, ids=[c.__name__ for c in CASES])
def test_writes_match_numpy(body: Any) -> None:
    x0 = np.array([0.3, 0.7, 0.4, 1.1])
    x = x0.copy()
    (grad,) = ad.gradient(body, x, backend=B)
    plain = x0.copy()
    body(plain)  # numpy itself: the caller's array must end the same way
    np.testing.assert_allclose(x, plain, rtol=1e-12)
    if body is float32_buffer:  # float32 rounding defeats FD: closed form of sum((2x)^2)
        np.testing.assert_allclose(grad, 8.0 * x0, rtol=1e-6)
        return
    expected = central_fd(lambda v: float(body(v.copy())), x0)
    np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-8)


def test_seed_003_matmul_then_fill_closed_form() -> None:
    def f(x: Any, y: Any, z: Any) -> Any:
        xy = x @ y
        y[...] = z
        return xp_of(x).sum(xy + y)

    x, y = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([5.0, 6.0])
    gx, gy, gz = ad.gradient(f, x, y, 7.0, backend=B)
    np.testing.assert_allclose(gx, [[5.0, 6.0], [5.0, 6.0]])
    np.testing.assert_allclose(gy, [4.0, 6.0])
    assert gz == pytest.approx(2.0) and type(gz) is float
    np.testing.assert_array_equal(y, [7.0, 7.0])


def test_seed_003_write_then_read_closed_form() -> None:
    def f(x: Any, y: Any) -> Any:
        x[0] = y**2
        return xp_of(x).sum(x * y)

    x = np.array([1.0, 2.0, 3.0])
    gx, gy = ad.gradient(f, x, 4.0, backend=B)
    np.testing.assert_allclose(gx, [0.0, 4.0, 4.0])
    assert gy == pytest.approx(53.0)
    np.testing.assert_array_equal(x, [16.0, 2.0, 3.0])


def test_duplicated_argument_written_shadow_and_caller_array() -> None:
    def f(x: Any) -> Any:
        y = x * x
        x[0] = 0.0
        return xp_of(x).sum(y) + xp_of(x).sum(x * 3.0)

    x0 = np.array([1.5, -2.0, 0.5])
    dup = ad.Duplicated(x0.copy())
    ad.gradient(f, dup, backend=B)
    np.testing.assert_allclose(dup.dval, [2 * 1.5, 2 * -2.0 + 3, 2 * 0.5 + 3])
    np.testing.assert_array_equal(dup.val, [0.0, -2.0, 0.5])


def test_nested_gradient_through_buffer_writes() -> None:
    def inner_grad(a: Any) -> Any:
        return ad.gradient(assemble, a)[0]

    def outer(a: Any) -> Any:
        return xp_of(a).sum(inner_grad(a) ** 2)

    x = np.array([0.3, 0.7])

    def numeric_inner(v: np.ndarray) -> np.ndarray:
        return central_fd(lambda w: float(assemble(w)), v, step=1e-5)

    (got,) = ad.gradient(outer, x, backend=B)
    expected = central_fd(lambda v: float(np.sum(numeric_inner(v) ** 2)), x, step=1e-4)
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def test_buffers_are_plain_numpy_outside_and_in_outputs() -> None:
    from adswitch_autograd import namespace as xp

    assert type(xp.zeros(3)) is np.ndarray and type(xp.full((2,), 1.0)) is np.ndarray

    def f(a: Any) -> Any:
        buf = xp_of(a).zeros_like(a)
        buf[0] = a[0]
        return xp_of(a).sum(buf), buf

    (_, buf), _ = ad.withgradient(f, np.array([2.0, 3.0]), backend=B)
    assert type(buf) is np.ndarray
    np.testing.assert_array_equal(buf, [2.0, 0.0])


def test_integer_and_boolean_buffers_stay_numpy_for_indexing() -> None:
    def f(a: Any) -> Any:
        xp = xp_of(a)
        mask = xp.zeros(a.shape, dtype=xp.bool)
        mask[1] = True
        idx = xp.zeros((1,), dtype=xp.int64)
        return xp.sum(a[mask]) + xp.sum(xp.take(a, idx))

    (g,) = ad.gradient(f, np.array([1.0, 2.0, 3.0]), backend=B)
    np.testing.assert_array_equal(g, [1.0, 1.0, 0.0])


def test_inputs_are_writable_again_and_unwritten_ones_untouched() -> None:
    x, c = np.ones(2), np.ones(2)
    ad.gradient(lambda a, k: xp_of(a).sum(a * k), x, ad.Const(c), backend=B)
    assert x.flags.writeable and c.flags.writeable
    base = np.ones(4)
    ad.gradient(lambda a, k: xp_of(a).sum(a), np.ones(1), ad.Const(base[1:]), backend=B)
    assert base.flags.writeable and base[1:].flags.writeable


# ---- what cannot be followed: refused, clearly, with the caller's data intact ------------


def _fix_named(error: BaseException) -> None:
    text = str(error)
    assert "autograd" in text and "Fix:" in text


@pytest.mark.parametrize("kind", ["const-float", "const-int-index"])
def test_write_into_a_constant_argument_is_refused(kind: str) -> None:
    # Unguarded, autograd would use the overwritten values in the backward pass:
    # d/dx sum(x * c) would come out as 0 instead of c.
    x = np.array([1.0, 2.0, 3.0])
    c = np.array([4.0, 5.0, 6.0]) if kind == "const-float" else np.array([2, 0, 1])

    def f(a: Any, k: Any) -> Any:
        y = a * k if kind == "const-float" else xp_of(a).take(a, k) * a
        k[...] = 0
        return xp_of(a).sum(y)

    arg = ad.Const(c) if kind == "const-float" else c
    before = c.copy()
    with pytest.raises(MutationError, match="numpy arguments") as info:
        ad.gradient(f, x, arg, backend=B)
    _fix_named(info.value)
    assert isinstance(info.value.__cause__, ValueError)
    np.testing.assert_array_equal(c, before)
    assert c.flags.writeable and x.flags.writeable


def test_traced_value_into_plain_numpy_array() -> None:
    def f(a: Any) -> Any:
        buf = np.zeros(3)  # numpy's own, not the namespace's: cannot hold a traced value
        buf[...] = xp_of(a).sin(a)
        return xp_of(a).sum(buf)

    with pytest.raises(MutationError, match="numpy_buffer") as info:
        ad.gradient(f, np.ones(3), backend=B)
    _fix_named(info.value)
    assert isinstance(info.value.__cause__, ValueError)


def test_numpy_array_plus_equals_traced() -> None:
    def f(a: Any) -> Any:
        acc = np.zeros(3)
        acc += a
        return xp_of(a).sum(acc)

    with pytest.raises(MutationError, match="numpy_array") as info:
        ad.gradient(f, np.ones(3), backend=B)
    assert isinstance(info.value.__cause__, TypeError)


def test_nested_call_writing_its_argument_is_refused() -> None:
    def outer(a: Any) -> Any:
        def inner(y: Any) -> Any:
            y[0] = 1.0
            return xp_of(y).sum(y)

        return ad.gradient(inner, a * 1.0)[0].sum()

    x = np.ones(2)
    with pytest.raises(MutationError, match="nested") as info:
        ad.gradient(outer, x, backend=B)
    _fix_named(info.value)
    np.testing.assert_array_equal(x, [1.0, 1.0])


def test_read_only_argument_write_is_refused() -> None:
    x = np.ones(2)
    x.flags.writeable = False

    def f(a: Any) -> Any:
        a[0] = 2.0
        return xp_of(a).sum(a)

    with pytest.raises(MutationError, match="read-only"):
        ad.gradient(f, x, backend=B)
    assert not x.flags.writeable


def test_view_of_non_contiguous_argument_is_refused_not_guessed() -> None:
    x = np.asfortranarray(np.arange(4.0).reshape(2, 2))

    def f(a: Any) -> Any:
        col = a[:, 0]
        a[1, 0] = 7.0  # numpy would show it in `col`
        return xp_of(a).sum(col)

    with pytest.raises(MutationError, match="cannot follow"):
        ad.gradient(f, x, backend=B)
    np.testing.assert_array_equal(x, [[0.0, 1.0], [2.0, 3.0]])


def test_duplicate_fancy_index_and_traced_index_are_refused() -> None:
    def dup(a: Any) -> Any:
        buf = xp_of(a).zeros((3,))
        buf[np.array([0, 0])] = a
        return xp_of(a).sum(buf)

    with pytest.raises(MutationError, match="more than once"):
        ad.gradient(dup, np.ones(2), backend=B)

    def traced_index(a: Any) -> Any:
        buf = xp_of(a).zeros((3,))
        buf[a[0]] = 1.0
        return xp_of(a).sum(buf * a[1])

    with pytest.raises(UnsupportedError, match="traced index"):
        ad.gradient(traced_index, np.zeros(2), backend=B)


def test_inner_value_written_into_outer_buffer_is_refused() -> None:
    def outer(a: Any) -> Any:
        buf = xp_of(a).zeros((2,))

        def inner(y: Any) -> Any:
            buf[0] = y[0]  # would leak the inner trace into the outer buffer
            return xp_of(y).sum(y)

        ad.gradient(inner, a)
        return xp_of(a).sum(buf * a)

    with pytest.raises(MutationError, match="nested"):
        ad.gradient(outer, np.ones(2), backend=B)


def test_float_of_traced_value_is_unsupported() -> None:
    def f(a: Any) -> Any:
        return float(xp_of(a).sum(a))

    # the box refuses the conversion itself, naming the user's line and the fix
    with pytest.raises(UnsupportedError, match=r"float.*test_autograd_mutation\.py:\d+.*Fix"):
        ad.gradient(f, np.ones(2), backend=B)


def test_unrelated_user_errors_are_not_translated() -> None:
    def f(a: Any) -> Any:
        raise TypeError("my own type error")

    with pytest.raises(TypeError, match="my own type error") as info:
        ad.gradient(f, np.ones(2), backend=B)
    assert not isinstance(info.value, MutationError | UnsupportedError)


def test_error_after_a_write_leaves_caller_array_and_shadow_untouched() -> None:
    x = np.array([1.0, 2.0])
    dup = ad.Duplicated(x, np.full(2, 5.0))

    def f(a: Any) -> Any:
        a[0] = 9.0
        raise KeyError("boom")

    with pytest.raises(KeyError):
        ad.gradient(f, dup, backend=B)
    np.testing.assert_array_equal(x, [1.0, 2.0])
    np.testing.assert_array_equal(dup.dval, [5.0, 5.0])


def test_inplace_follows_numpy_casting_rule() -> None:
    def f(a: Any) -> Any:
        y = a * 1.0
        y += 1j  # numpy: UFuncTypeError (same_kind); a silent cast would drop 1j
        return xp_of(a).sum(y)

    with pytest.raises(TypeError, match="same_kind"):
        ad.gradient(f, np.ones(2), backend=B)
