"""Mutation on the tape (seed 003): recorded writes give the finite-difference gradient;
writes that would corrupt a gradient raise ``MutationError``; the caller's arrays end as
a plain call of ``f`` leaves them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import MutationError, UnsupportedError
from tests.engines.tape.test_tape_support import check_gradient


def _xp(*arrays: Any) -> Any:
    return ad.array_namespace(*arrays)


# -- the seed's examples, against their closed forms ----------------------------------------
def test_seed_log_then_fill_gives_one_over_x() -> None:
    def f(x: Any) -> Any:
        xp = _xp(x)
        y = xp.log(x)
        x[...] = 0
        return xp.sum(y + x)

    x = np.array([1.0, 2.0, 3.0])
    (g,) = ad.gradient(f, x, backend="tape")
    np.testing.assert_allclose(g, [1.0, 0.5, 1.0 / 3.0])
    np.testing.assert_array_equal(x, [0.0, 0.0, 0.0])  # as a plain call leaves it


def test_seed_matmul_then_fill() -> None:
    def f(x: Any, y: Any, z: Any) -> Any:
        xp = _xp(x)
        xy = x @ y
        y[...] = z
        return xp.sum(xy + y)

    x, y = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([5.0, 6.0])
    gx, gy, gz = ad.gradient(f, x, y, 7.0, backend="tape")
    np.testing.assert_allclose(gx, [[5.0, 6.0], [5.0, 6.0]])
    np.testing.assert_allclose(gy, [4.0, 6.0])
    assert gz == 2.0 and isinstance(gz, float)
    np.testing.assert_array_equal(y, [7.0, 7.0])


def test_seed_setindex_then_read() -> None:
    def f(x: Any, y: Any) -> Any:
        x[0] = y**2
        return _xp(x).sum(x * y)

    x = np.array([1.0, 2.0, 3.0])
    gx, gy = ad.gradient(f, x, 4.0, backend="tape")
    np.testing.assert_allclose(gx, [0.0, 4.0, 4.0])
    assert gy == 53.0
    np.testing.assert_array_equal(x, [16.0, 2.0, 3.0])


def test_seed_fill_a_fresh_buffer() -> None:
    def f(x: Any, s: Any) -> Any:
        xp = _xp(x)
        buf = xp.zeros_like(x)
        buf[...] = s
        return xp.sum(buf * x)

    gx, gs = ad.gradient(f, np.array([1.0, 2.0, 3.0]), 2.0, backend="tape")
    np.testing.assert_allclose(gx, [2.0, 2.0, 2.0])
    assert gs == 6.0


# -- in-place operators and writes, against finite differences -----------------------------
INPLACE = {
    "+=": lambda x, y: x.__iadd__(y),
    "-=": lambda x, y: x.__isub__(y),
    "*=": lambda x, y: x.__imul__(y),
    "/=": lambda x, y: x.__itruediv__(y),
    "**=": lambda x, y: x.__ipow__(y),
}


@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_operators_are_recorded(op: str) -> None:
    def f(x: Any, y: Any) -> Any:
        xp = _xp(x)
        before = xp.sin(x)  # reads x before the write
        INPLACE[op](x, y)
        return xp.sum(before * x + x)

    check_gradient(f, np.array([0.5, 1.5, 2.0]), np.array([1.2, 0.7, 1.1]))


def test_inplace_matmul() -> None:
    def f(x: Any, w: Any) -> Any:
        x @= w
        return _xp(x).sum(x * x)

    check_gradient(f, np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([[0.3, 1.0], [2.0, -0.4]]))


def test_writes_in_a_loop() -> None:
    def f(x: Any) -> Any:
        xp = _xp(x)
        out = xp.zeros_like(x)
        for i in range(1, x.shape[0]):
            out[i] = out[i - 1] * x[i] + x[i - 1]
        x[1:] = out[1:] * 2.0
        return xp.sum(x * out)

    check_gradient(f, np.array([0.5, 1.5, -2.0, 0.7]))


def test_writing_a_list_of_traced_values() -> None:
    def f(x: Any) -> Any:
        x[0:2] = [x[2] * 2.0, x[0] ** 2]
        return _xp(x).sum(x * x)

    check_gradient(f, np.array([0.5, 1.5, -2.0]))


def test_advanced_index_write() -> None:
    def f(x: Any, v: Any) -> Any:
        x[np.array([0, 3])] = v * 2.0
        x[x > 1.0] = 0.5
        return _xp(x).sum(x**2)

    check_gradient(f, np.array([0.5, 1.5, -2.0, 0.7]), np.array([0.1, 0.4]))


def test_views_see_writes_and_write_through() -> None:
    # numpy semantics: a basic-indexing view aliases its base; the oracle is the plain
    # numpy call, which has exactly those semantics.
    def f(x: Any) -> Any:
        xp = _xp(x)
        v = x[1:3]
        x[1] = x[0] * 3.0  # v must see this
        s = xp.sum(v * v)
        v[...] = v * 2.0  # and x must see this
        w = x[::2]
        w += 1.0
        return s + xp.sum(x * x)

    check_gradient(f, np.array([0.5, 1.5, -2.0, 0.7]))


VIEW_MAKERS = {
    "reshape": lambda x: _xp(x).reshape(x, (2, 3)),
    ".T": lambda x: _xp(x).reshape(x, (2, 3)).T,
    "flip": lambda x: _xp(x).flip(x),
    "expand_dims": lambda x: _xp(x).expand_dims(x, axis=0),
    "permute_dims": lambda x: _xp(x).permute_dims(_xp(x).reshape(x, (3, 2)), (1, 0)),
    "unstack": lambda x: _xp(x).unstack(_xp(x).reshape(x, (2, 3)))[1],
}


@pytest.mark.parametrize("name", sorted(VIEW_MAKERS))
def test_numpy_views_write_through_and_see_writes(name: str) -> None:
    # The oracle is the plain numpy call, where each of these results is a view.
    def f(x: Any) -> Any:
        xp = _xp(x)
        v = VIEW_MAKERS[name](x)
        x[0] = x[5] * 3.0  # the view sees this
        first = xp.sum(v * v)
        v *= 2.0  # and x sees this
        return first + xp.sum(x * xp.arange(6.0))

    check_gradient(f, np.array([0.5, 1.5, -2.0, 0.7, 1.1, -0.3]))


def test_writing_into_a_broadcast_view_raises_like_numpy() -> None:
    def f(x: Any) -> Any:
        b = _xp(x).broadcast_to(x, (2, 3))
        b[0, 0] = 1.0
        return _xp(x).sum(b)

    with pytest.raises(ValueError, match="read-only"):
        ad.gradient(f, np.ones(3), backend="tape")


def test_tied_argument_written_through_one_alias() -> None:
    def f(a: Any, b: Any) -> Any:
        a[0] = 3.0 * b[1]
        return _xp(a).sum(a * b)

    x = np.array([1.0, 2.0])
    ga, gb = ad.gradient(f, x, x, backend="tape")
    # a is b: L = (3 x1)^2 + x1^2, so dL/dx = [0, 20 x1]; the total sits at the first place.
    np.testing.assert_allclose(ga, [0.0, 40.0])
    assert gb is None
    np.testing.assert_array_equal(x, [6.0, 2.0])


def test_write_into_an_unsaved_const_array_is_plain_numpy() -> None:
    def f(x: Any, c: Any) -> Any:
        c[0] = 5.0
        return _xp(x).sum(x * c)

    c = np.array([1.0, 2.0])
    gx, gc = ad.gradient(f, np.array([3.0, 4.0]), ad.Const(c), backend="tape")
    np.testing.assert_allclose(gx, [5.0, 2.0])
    assert gc is None
    np.testing.assert_array_equal(c, [5.0, 2.0])
    assert c.flags.writeable


def test_withgradient_value_is_the_final_state() -> None:
    def f(x: Any) -> Any:
        xp = _xp(x)
        x *= 2.0
        return xp.sum(x), x

    x = np.array([1.0, 2.0])
    (loss, aux), (g,) = ad.withgradient(f, x, backend="tape")
    assert loss == 6.0
    np.testing.assert_array_equal(aux, [2.0, 4.0])
    assert type(aux) is np.ndarray
    np.testing.assert_allclose(g, [2.0, 2.0])
    np.testing.assert_array_equal(x, [2.0, 4.0])


# -- writes that would corrupt a gradient: MutationError with the fix ----------------------
def test_write_into_a_saved_const_array_raises() -> None:
    def f(x: Any, c: Any) -> Any:
        y = x * c
        c[0] = 10.0
        return _xp(x).sum(y)

    c = np.array([1.0, 2.0])
    with pytest.raises(MutationError, match=r"`c`.*multiply.*copy"):
        ad.gradient(f, np.array([3.0, 4.0]), ad.Const(c), backend="tape")
    assert c.flags.writeable  # the lock is released


def test_write_into_a_view_of_a_saved_const_array_raises() -> None:
    def f(x: Any, c: Any) -> Any:
        y = x * c
        head = c[:1]
        head[0] = 10.0
        return _xp(x).sum(y)

    with pytest.raises(MutationError, match=r"`(head|c)`.*multiply"):
        ad.gradient(f, np.array([3.0, 4.0]), ad.Const(np.array([1.0, 2.0])), backend="tape")


def test_an_inner_call_does_not_release_what_the_outer_call_saved() -> None:
    def outer(w: Any, x: Any) -> Any:
        xp = _xp(w)
        (gx,) = ad.gradient(lambda v: xp.sum((v @ w) ** 2), x)  # the outer call saves x
        x[0, 0] = 5.0  # after the inner call: x must still be locked
        return xp.sum(gx)

    x = np.array([[1.0, 2.0]])
    with pytest.raises(MutationError, match="`x`"):
        ad.gradient(outer, np.array([[1.0], [0.5]]), ad.Const(x), backend="tape")
    assert x.flags.writeable


def test_write_into_a_differentiated_array_through_a_closure_raises() -> None:
    x = np.array([1.0, 2.0])

    def f(v: Any) -> Any:
        y = _xp(v).sin(v)
        x[0] = 0.0  # the same array, not through the tracer
        return _xp(v).sum(y)

    with pytest.raises(MutationError, match="differentiated argument"):
        ad.gradient(f, x, backend="tape")
    np.testing.assert_array_equal(x, [1.0, 2.0])
    assert x.flags.writeable


@pytest.mark.parametrize("how", ["item", "ellipsis", "iadd"])
def test_writing_a_traced_value_into_a_numpy_array_raises(how: str) -> None:
    def f(x: Any) -> Any:
        buf = np.zeros(2)
        if how == "item":
            buf[0] = x[0]
        elif how == "ellipsis":
            buf[...] = x
        else:
            buf += x
        return _xp(x).sum(x)

    with pytest.raises(MutationError, match="zeros_like"):
        ad.gradient(f, np.array([1.0, 2.0]), backend="tape")


def test_float_of_a_traced_value_raises() -> None:
    # a conversion to a Python number, not a write: UnsupportedError naming the user's line
    with pytest.raises(UnsupportedError, match=r"Python number.*float.*test_tape_mutation"):
        ad.gradient(lambda x: float(_xp(x).sum(x)), np.array([1.0]), backend="tape")


def test_repeated_indices_in_a_traced_write_raise() -> None:
    def f(x: Any) -> Any:
        x[np.array([0, 0])] = x[1] * 2.0
        return _xp(x).sum(x)

    with pytest.raises(UnsupportedError, match="repeated indices"):
        ad.gradient(f, np.array([1.0, 2.0]), backend="tape")


def test_a_tracer_kept_from_an_earlier_call_raises() -> None:
    kept: list[Any] = []

    def first(x: Any) -> Any:
        kept.append(x * 2.0)
        return _xp(x).sum(x)

    def second(x: Any) -> Any:
        return _xp(x).sum(x * kept[0])

    ad.gradient(first, np.array([1.0]), backend="tape")
    with pytest.raises(MutationError, match="already returned"):
        ad.gradient(second, np.array([1.0]), backend="tape")


def test_user_errors_pass_through_and_arrays_are_restored() -> None:
    c = np.array([1.0, 2.0])

    def f(x: Any, c: Any) -> Any:
        y = x * c
        x[0] = 9.0
        raise KeyError("boom")
        return y

    x = np.array([1.0, 2.0])
    with pytest.raises(KeyError, match="boom"):
        ad.gradient(f, x, ad.Const(c), backend="tape")
    assert c.flags.writeable and x.flags.writeable
    np.testing.assert_array_equal(x, [9.0, 2.0])  # as the plain call left it
