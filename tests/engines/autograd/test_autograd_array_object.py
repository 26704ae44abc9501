"""The autograd engine's traced arrays as the Array API's array object: conversions to
Python numbers where no gradient is dropped and refusals naming the fix where one would
be, DLPack, the operators autograd's boxes lack, copies that are copies now that traced
arrays can be written -- and what the standard's suite found in the namespace, kept
fixed."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import MutationError, UnsupportedError

pytest.importorskip("autograd")

B = "autograd"
X = np.random.default_rng(11).uniform(-2.0, 2.0, (3, 4))


def _xp(x: Any) -> Any:
    return ad.array_namespace(x)


def _namespace() -> Any:
    from adswitch_autograd import namespace

    return namespace


def _box_types() -> tuple[type, ...]:
    from adswitch_autograd.tracing.boxes import GuardedBox

    return (GuardedBox,)


def _raw(x: Any) -> Any:
    while hasattr(x, "_value") and hasattr(x, "_node"):
        x = x._value
    return x


# -- conversions ------------------------------------------------------------------------
def test_integer_and_boolean_arrays_convert_inside_f_at_any_depth() -> None:
    def inner(y: Any) -> Any:
        xp = _xp(y)
        i = xp.argmax(y)
        traced_int = (y * 10.0).astype(np.int64)  # numpy's method: a traced integer array
        assert isinstance(traced_int, _box_types())
        assert isinstance(xp.astype(y, xp.int64), np.ndarray)  # the namespace's: numpy's
        assert int(traced_int[2]) == 30 and operator.index(traced_int[0]) == 10
        assert [10, 20, 30][traced_int[0] // 10] == 20 and list(range(traced_int[0] // 5)) == [0, 1]
        assert int(i) == 2 and bool(xp.any(y > 2.5)) and not bool(xp.all(y > 2.5))
        assert bool(y[0] > 0.5) and bool(xp.astype(y[0] > 0.5, xp.float64))
        assert float(traced_int[1]) == 20.0 and complex(traced_int[1]) == 20
        assert float(xp.asarray(2.5)) == 2.5 and float(xp.zeros(())) == 0.0  # constants
        return xp.sum(y * y)

    def outer(x: Any) -> Any:
        (g,) = ad.gradient(inner, x)
        return _xp(g).sum(g) + inner(x)

    (g,) = ad.gradient(outer, np.array([1.0, 2.0, 3.0]), backend=B)
    np.testing.assert_allclose(g, 2.0 + 2.0 * np.array([1.0, 2.0, 3.0]))


@pytest.mark.parametrize(
    ("how", "convert"),
    [
        ("float", float),
        ("int", int),
        ("complex", complex),
        ("math", math.exp),
        ("dunder", lambda v: v.__float__()),
    ],
)
def test_a_traced_float_converted_to_a_python_number_is_refused_naming_the_line(
    how: str, convert: Callable[[Any], Any]
) -> None:
    def f(x: Any) -> Any:
        y = _xp(x).sum(x)
        convert(y)  # the line the error must name
        return y

    line = r"Python number.*test_autograd_array_object\.py:\d+.*xp"
    with pytest.raises(UnsupportedError, match=line):
        ad.gradient(f, np.array([1.0, 2.0]), backend=B)


def test_a_constant_that_a_traced_value_was_written_into_is_no_longer_convertible() -> None:
    def f(x: Any) -> Any:
        buf = _xp(x).zeros(())
        assert float(buf) == 0.0
        buf[...] = x[0]
        float(buf)
        return _xp(x).sum(x)

    with pytest.raises(UnsupportedError, match="Python number"):
        ad.gradient(f, np.array([1.0, 2.0]), backend=B)


def test_writing_a_traced_float_into_a_numpy_array_is_still_a_mutation_error() -> None:
    def f(x: Any) -> Any:
        buf = np.zeros(2)
        buf[0] = x[0]
        return _xp(x).sum(x)

    with pytest.raises(MutationError, match="numpy_buffer"):
        ad.gradient(f, np.array([1.0, 2.0]), backend=B)


def test_dlpack_exports_constants_and_refuses_traced_values() -> None:
    def f(x: Any) -> Any:
        xp = _xp(x)
        const = xp.asarray(np.array([1.0, 2.0]))
        np.testing.assert_array_equal(np.from_dlpack(const), [1.0, 2.0])
        assert x.__dlpack_device__() == (1, 0)
        assert xp.from_dlpack(x) is x  # its own arrays stay traced
        np.from_dlpack(x)
        return xp.sum(x)

    with pytest.raises(UnsupportedError, match="__dlpack__"):
        ad.gradient(f, np.array([1.0, 2.0]), backend=B)


# -- what the standard's suite found, kept fixed ------------------------------------------
def test_finfo_and_iinfo_take_dtypes_and_arrays_inside_f() -> None:
    def f(x: Any) -> Any:
        xp = _xp(x)
        for arg in (xp.float32, x.dtype, x):
            info = xp.finfo(arg)
            assert isinstance(info.eps, float) and isinstance(info.max, float)
        assert xp.finfo(xp.float32).eps == float(np.finfo(np.float32).eps)
        assert xp.iinfo(xp.astype(x, xp.int16)).max == np.iinfo(np.int16).max
        assert xp.iinfo(xp.uint8).bits == 8 and xp.can_cast(x, xp.complex128)
        return xp.sum(x)

    ad.gradient(f, np.ones(2), backend=B)


def test_bitwise_operators_and_their_in_place_forms_on_traced_integers() -> None:
    a, b = np.array([5, 3, 12], dtype=np.int16), np.array([1, 2, 3], dtype=np.int16)

    def f(x: Any) -> Any:
        xp = _xp(x)
        ta, tb = (x * a).astype(np.int16), (x * b).astype(np.int16)  # traced: x is ones
        for op in ("&", "|", "^", "<<", ">>"):
            got = eval(f"ta {op} tb")
            np.testing.assert_array_equal(np.asarray(_raw(got)), eval(f"a {op} b"), err_msg=op)
            assert _raw(got).dtype == np.int16
            t = (x * a).astype(np.int16)
            alias = t
            exec(f"t {op}= 1", {}, {"t": t})
            np.testing.assert_array_equal(_raw(alias), eval(f"a {op} 1"), err_msg=f"{op}=")
        np.testing.assert_array_equal(~ta, ~a)
        np.testing.assert_array_equal(2 << tb, 2 << b)
        with pytest.raises(TypeError):
            x & 1  # floating: numpy's refusal
        return xp.sum(x)

    ad.gradient(f, np.ones(3), backend=B)


def test_copies_are_copies_for_traced_arrays() -> None:
    # +x, astype(x, same dtype) and asarray(x, copy=True) are new arrays (numpy's
    # semantics), which matters now that traced arrays can be written
    def f(x: Any) -> Any:
        xp = _xp(x)
        for copy in (+x, xp.positive(x), xp.astype(x, x.dtype), xp.asarray(x, copy=True)):
            copy[0] = 100.0
        assert xp.astype(x, x.dtype, copy=False) is x
        with pytest.raises(ValueError, match="copy"):
            xp.asarray(x, dtype=xp.float32, copy=False)
        return xp.sum(x * x)

    (g,) = ad.gradient(f, np.array([1.0, 2.0]), backend=B)
    np.testing.assert_array_equal(g, [2.0, 4.0])


def test_signatures_take_the_standards_keywords() -> None:
    xp = _namespace()
    np.testing.assert_array_equal(xp.all(X > 0, axis=1, keepdims=True),
                                  np.all(X > 0, axis=1, keepdims=True))  # fmt: skip
    assert xp.expand_dims(X, axis=0).shape == (1, 3, 4) and xp.expand_dims(X, -1).shape == (3, 4, 1)
    with pytest.raises(IndexError):
        xp.expand_dims(X, axis=3)
    with pytest.raises(TypeError):
        xp.argmax(X, 1)  # axis is keyword-only
    assert xp.sum(np.array([1, 2], np.int8)).dtype == np.int64
    assert xp.max(X, axis=(0, 1)) == X.max() and xp.min(X, keepdims=True).shape == (1, 1)


def test_copysign_keeps_float32_and_vecdot_small_integers() -> None:
    xp = _namespace()
    f32 = np.array([1.0, -2.0], np.float32)
    assert xp.copysign(f32, -f32).dtype == np.float32

    def f(x: Any) -> Any:
        assert _xp(x).copysign(x, -x).dtype == np.float32
        return _xp(x).sum(_xp(x).copysign(x, -x))

    (g,) = ad.gradient(f, f32, backend=B)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [-1.0, -1.0])  # |x| with the opposite sign: -x
    a = np.array([[1, 2], [3, 4]], dtype=np.uint8)
    out = xp.vecdot(a, a)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [5, 25])
    with pytest.raises(ValueError, match="length"):
        xp.vecdot(np.ones((2, 3)), np.ones((2, 1)))


def test_functions_without_a_gradient_rule_refuse_traced_arrays() -> None:
    def f(x: Any) -> Any:
        _xp(x).fft.hfft(x)
        return _xp(x).sum(x)

    with pytest.raises(UnsupportedError, match=r"hfft.*Fix:"):
        ad.gradient(f, np.ones(4), backend=B)


def test_descending_sorts_are_stable() -> None:
    xp = _namespace()
    x = np.array([1.0, 3.0, 1.0, 3.0, 2.0])
    np.testing.assert_array_equal(xp.argsort(x, descending=True), [1, 3, 4, 0, 2])

    def f(v: Any) -> Any:
        return _xp(v).sum(_xp(v).sort(v, descending=True) * np.arange(5.0))

    (g,) = ad.gradient(f, x.copy(), backend=B)
    # tied entries share their places' weights (the kink convention): 3s (0 + 1) / 2,
    # 1s (3 + 4) / 2
    np.testing.assert_array_equal(g, [3.5, 0.5, 3.5, 0.5, 2.0])
