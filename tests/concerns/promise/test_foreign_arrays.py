"""Masked arrays, np.matrix and pandas objects are refused before f runs, on every
engine, differentiated or Const, with an UnsupportedError naming the argument's key path
and the fix (issue 19, item 3): numpy computes on them differently from the engines'
arrays, which silently dropped the mask (the tape's gradient of sum(x*x) at a masked
array was [2, 1, 6], fitting neither function) or raised raw errors (jax, autograd)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from adswitch.errors import AdswitchError, PreparationError, UnsupportedError

ENGINES = [b.name for b in ad.backends() if b.available]
pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")


def _sum_sq(x: Any) -> Any:
    return ad.array_namespace(x).sum(x * x)


class _FakePandas:
    """Stands for a pandas object (pandas need not be installed): what adswitch looks at
    is the type's module, a dtype and a shape, and that numpy converts it."""

    def __init__(self, values: list[float]) -> None:
        self._values = np.asarray(values)
        self.shape = self._values.shape
        self.dtype = self._values.dtype

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._values

    def to_numpy(self) -> np.ndarray:
        return self._values.copy()


class Series(_FakePandas):
    __module__ = "pandas.core.series"


class DataFrame:
    """A DataFrame has no ``dtype``: it is an opaque object to the tree walker."""

    __module__ = "pandas.core.frame"

    def __init__(self) -> None:
        self.values = np.ones((2, 2))


def _masked() -> np.ma.MaskedArray:
    return np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False])


def _snapshot(x: Any) -> tuple[Any, ...]:
    if isinstance(x, np.ma.MaskedArray):
        return (x.data.copy(), np.ma.getmaskarray(x).copy(), x.flags.writeable, type(x))
    if isinstance(x, np.ndarray):
        return (np.asarray(x).copy(), x.flags.writeable, type(x))
    return (np.asarray(x).copy(), type(x))


def _same(before: tuple[Any, ...], after: tuple[Any, ...]) -> bool:
    return len(before) == len(after) and all(
        np.array_equal(b, a) if isinstance(b, np.ndarray) else b == a for b, a in zip(before, after)
    )


def _refused(call: Callable[[], Any], path: str, fix: str, obj: Any) -> None:
    before = _snapshot(obj)
    with pytest.raises(UnsupportedError) as info:
        call()
    message = str(info.value)
    assert message.startswith(path + " is "), message
    assert fix in message, message
    assert "every engine" in message
    assert _same(before, _snapshot(obj)), "the caller's object changed"


FOREIGN = [
    ("masked", _masked, "x.filled(value)"),
    ("matrix", lambda: np.matrix([[1.0, 2.0, 3.0]]), "np.asarray(x)"),
    ("series", lambda: Series([1.0, 2.0, 3.0]), "s.to_numpy()"),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("kind", "make", "fix"), FOREIGN, ids=[k for k, _, _ in FOREIGN])
def test_refused_differentiated_on_every_engine(
    engine: str, kind: str, make: Any, fix: str
) -> None:
    x = make()
    called = []

    def f(v: Any) -> Any:
        called.append(1)
        return _sum_sq(v)

    _refused(lambda: ad.gradient(f, x, backend=engine), "args[0]", fix, x)
    assert not called, "f ran before the refusal"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("kind", "make", "fix"), FOREIGN, ids=[k for k, _, _ in FOREIGN])
def test_refused_as_const_and_inside_trees(engine: str, kind: str, make: Any, fix: str) -> None:
    x = make()
    w = np.array([0.5, -1.0, 2.0])

    def f(w: Any, c: Any) -> Any:
        return ad.array_namespace(w).sum(w * w)

    # A Const one too: the engines would convert it to its data (the mask dropped).
    _refused(lambda: ad.gradient(f, w, ad.Const(x), backend=engine), "args[1]", fix, x)
    tree = {"w": w, "data": [x]}
    _refused(
        lambda: ad.gradient(lambda t: _sum_sq(t["w"]), tree, backend=engine),
        "args[0]['data'][0]",
        fix,
        x,
    )
    assert np.array_equal(w, [0.5, -1.0, 2.0])


@pytest.mark.parametrize("engine", ["tape", "autograd", "jax", "torch"])
def test_every_operator_refuses(engine: str) -> None:
    x = _masked()
    v = np.ones(3)
    calls: list[Callable[[], Any]] = [
        lambda: ad.withgradient(_sum_sq, x, backend=engine),
        lambda: ad.jacobian(lambda a: a * 2.0, x, backend=engine),
        lambda: ad.hessian(_sum_sq, x, backend=engine),
        lambda: ad.hvp(_sum_sq, (x,), (v,), backend=engine),
        lambda: ad.jvp(_sum_sq, (x,), (v,), backend=engine),
        lambda: ad.vjp(_sum_sq, x, backend=engine),
        lambda: ad.prepare(ad.gradient, _sum_sq, x, backend=engine),
    ]
    for call in calls:
        _refused(call, "args[0]", "np.asarray(x)", x)


@pytest.mark.parametrize("engine", ["tape", "autograd", "jax"])
def test_prepared_call_given_a_masked_array(engine: str) -> None:
    x = np.array([1.0, 2.0, 3.0])
    prepared = ad.prepare(ad.gradient, _sum_sq, x, backend=engine)
    np.testing.assert_allclose(prepared(x)[0], 2 * x)  # closed form: d sum(x^2) = 2x
    m = _masked()
    with pytest.raises(PreparationError, match=r"args\[0\] was prepared as"):
        prepared(m)
    assert np.array_equal(np.ma.getmaskarray(m), [False, True, False])


@pytest.mark.parametrize("engine", ["tape", "torch"])
def test_a_dataframe_is_refused_with_to_numpy(engine: str) -> None:
    df = DataFrame()
    w = np.ones(2)
    _refused(
        lambda: ad.gradient(lambda w, d: _sum_sq(w), w, df, backend=engine),
        "args[1]",
        "df.to_numpy()",
        df.values,
    )
    # Alone: nothing to differentiate, and the fix names to_numpy too.
    with pytest.raises(AdswitchError, match=r"to_numpy\(\)"):
        ad.gradient(lambda d: 0.0, df, backend=engine)


@pytest.mark.parametrize("engine", ["tape", "autograd", "torch", "jax"])
def test_the_fixes_work(engine: str) -> None:
    """What the messages say to do gives the right gradient (closed form 2x of the data
    the fix hands over)."""
    m = _masked()
    filled = m.filled(0.0)
    np.testing.assert_allclose(ad.gradient(_sum_sq, filled, backend=engine)[0], 2 * filled)
    data = np.asarray(np.matrix([[1.0, 2.0, 3.0]]))
    np.testing.assert_allclose(ad.gradient(_sum_sq, data, backend=engine)[0], 2 * data)
    s = Series([1.0, -2.0])
    np.testing.assert_allclose(ad.gradient(_sum_sq, s.to_numpy(), backend=engine)[0], [2.0, -4.0])
