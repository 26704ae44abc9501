"""A call leaves every flag of every caller array as it found it, whatever the array's
base (issue 19, item 4).

The tape locks the arrays its backward pass reads (``writeable=False``) and autograd
freezes its numpy arguments; numpy refuses to make some arrays writeable again (an array
scipy wraps around C memory, a view of a torch tensor, a view whose base was made
read-only after it). Real clients hand over exactly these: scipy's MINPACK and ODEPACK
callbacks, torch ``DataLoader`` batches. Oracles: analytic roots and Jacobians, scipy
run with the analytic Jacobian, closed-form gradients, and the flags before the call.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.integrate as si
import scipy.optimize as so

import adswitch as ad

torch = pytest.importorskip("torch")

ENGINES = ["tape", "autograd"]
_FLAGS = ("writeable", "owndata", "c_contiguous", "f_contiguous", "aligned", "writebackifcopy")


def flags(a: Any) -> list[tuple[Any, ...]]:
    """Every flag of ``a`` and of each array it views (the whole chain of bases)."""
    out = []
    while isinstance(a, np.ndarray):
        out.append((*(getattr(a.flags, f) for f in _FLAGS), id(a)))
        a = a.base
    out.append((type(a).__name__,))
    return out


def _checked(engine: str, fn: Callable[[Any], Any], jac_of: Callable[[Any], Any]) -> Any:
    """A Jacobian callback for scipy: the engine's Jacobian, checked against the analytic
    one and checked to leave scipy's array as it was."""
    calls = []

    def jac(x: np.ndarray, *rest: Any) -> np.ndarray:
        before = flags(x)
        J = np.asarray(ad.jacobian(lambda y: fn(y, *rest), x, backend=engine)[0])
        assert flags(x) == before, (before, flags(x))
        np.testing.assert_allclose(J, jac_of(x, *rest), rtol=1e-12, atol=1e-12)
        calls.append(before)
        return J

    jac.calls = calls  # type: ignore[attr-defined]
    return jac


def _F(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.stack([x[0] ** 2 + x[1] ** 2 - 4.0, x[0] - x[1]])


def _JF(x: np.ndarray) -> np.ndarray:
    return np.array([[2 * x[0], 2 * x[1]], [1.0, -1.0]])


def _plain_F(x: np.ndarray) -> np.ndarray:
    return np.array([x[0] ** 2 + x[1] ** 2 - 4.0, x[0] - x[1]])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("method", ["hybr", "lm"])
def test_scipy_root(engine: str, method: str) -> None:
    jac = _checked(engine, _F, _JF)
    got = so.root(_plain_F, [1.0, 0.5], jac=jac, method=method)
    want = so.root(_plain_F, [1.0, 0.5], jac=_JF, method=method)
    assert got.success and jac.calls
    np.testing.assert_allclose(got.x, [np.sqrt(2.0)] * 2, rtol=1e-10)
    np.testing.assert_allclose(got.x, want.x, rtol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_scipy_fsolve(engine: str) -> None:
    jac = _checked(engine, _F, _JF)
    got = so.fsolve(_plain_F, [1.0, 0.5], fprime=jac)
    assert jac.calls
    np.testing.assert_allclose(got, [np.sqrt(2.0)] * 2, rtol=1e-10)
    np.testing.assert_allclose(got, so.fsolve(_plain_F, [1.0, 0.5], fprime=_JF), rtol=1e-12)


def _robertson(y: Any) -> Any:  # the classic stiff system: LSODA switches to its BDF side
    xp = ad.array_namespace(y)
    a, b, c = 0.04 * y[0], 1e4 * y[1] * y[2], 3e7 * y[1] ** 2
    return xp.stack([-a + b, a - b - c, c])


def _robertson_jac(y: np.ndarray) -> np.ndarray:
    return np.array(
        [
            [-0.04, 1e4 * y[2], 1e4 * y[1]],
            [0.04, -1e4 * y[2] - 6e7 * y[1], -1e4 * y[1]],
            [0.0, 6e7 * y[1], 0.0],
        ]
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_solve_ivp_lsoda(engine: str) -> None:
    jac = _checked(engine, _robertson, _robertson_jac)
    y0, span = [1.0, 0.0, 0.0], (0.0, 40.0)
    got = si.solve_ivp(
        lambda t, y: _robertson(y), span, y0, method="LSODA", jac=lambda t, y: jac(y)
    )
    want = si.solve_ivp(
        lambda t, y: _robertson(y), span, y0, method="LSODA", jac=lambda t, y: _robertson_jac(y)
    )
    assert got.success and jac.calls
    np.testing.assert_allclose(got.y[:, -1], want.y[:, -1], rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("engine", ENGINES)
def test_odeint_dfun(engine: str) -> None:
    jac = _checked(engine, _robertson, _robertson_jac)
    ts = np.array([0.0, 0.4, 4.0, 40.0])
    got = si.odeint(lambda y, t: _robertson(y), [1.0, 0.0, 0.0], ts, Dfun=lambda y, t: jac(y))
    want = si.odeint(
        lambda y, t: _robertson(y), [1.0, 0.0, 0.0], ts, Dfun=lambda y, t: _robertson_jac(y)
    )
    assert jac.calls
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)


def _loss(w: Any, X: Any, y: Any) -> Any:
    xp = ad.array_namespace(w, X)
    r = X @ w - y
    return xp.sum(r * r)


@pytest.mark.parametrize("engine", ENGINES)
def test_dataloader_batches(engine: str) -> None:
    from torch.utils.data import DataLoader, TensorDataset

    gen = torch.Generator().manual_seed(0)
    data = TensorDataset(
        torch.randn(12, 3, dtype=torch.float64, generator=gen),
        torch.randn(12, dtype=torch.float64, generator=gen),
    )
    w = np.array([0.5, -1.0, 2.0])
    for xb, yb in DataLoader(data, batch_size=4):
        X, y = xb.numpy(), yb.numpy()
        before = flags(X), flags(y)
        gw = ad.gradient(_loss, w, ad.Const(X), ad.Const(y), backend=engine)[0]
        gX = ad.gradient(lambda X, y=y: _loss(w, X, y), X, backend=engine)[0]
        assert (flags(X), flags(y)) == before
        r = X @ w - y
        np.testing.assert_allclose(gw, 2 * X.T @ r, rtol=1e-12)
        np.testing.assert_allclose(gX, 2 * np.outer(r, w), rtol=1e-12)
        X[0, 0] = 7.0  # still the caller's to write, and still the tensor's memory
        assert xb[0, 0].item() == 7.0


def _unusual() -> dict[str, np.ndarray]:
    """Arrays whose base is not a plain owning array, each writeable."""
    owner = np.arange(8.0)
    early = owner[1:]  # a view taken before its base was made read-only
    owner.flags.writeable = False
    return {
        "torch.numpy()": torch.arange(6.0, dtype=torch.float64).numpy(),
        "from_numpy round trip": torch.from_numpy(np.linspace(0.0, 1.0, 6)).numpy(),
        "torch view .numpy()": torch.arange(12.0, dtype=torch.float64)[::2].numpy(),
        "np.frombuffer(bytearray)": np.frombuffer(bytearray(np.arange(6.0).tobytes())),
        "view of frombuffer": np.frombuffer(bytearray(np.arange(7.0).tobytes()))[1:],
        "memoryview base": np.asarray(memoryview(bytearray(np.ones(6).tobytes())).cast("d")),
        "ctypes buffer": np.ctypeslib.as_array((ctypes.c_double * 6)()),
        "view made before its base was made read-only": early,
        "view of such a view": early[1:][::2],
    }


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", list(_unusual()))
def test_unusual_bases(engine: str, kind: str) -> None:
    a = _unusual()[kind]
    a[...] = np.arange(1.0, a.size + 1.0)
    before, values = flags(a), a.copy()
    w = np.linspace(-1.0, 1.0, a.size)
    g_leaf = ad.gradient(lambda x: ad.array_namespace(x).sum(x * x * w), a, backend=engine)[0]
    g_const = ad.gradient(lambda v: ad.array_namespace(v).sum(v * v * a), w, backend=engine)[0]
    J = ad.jacobian(lambda x: x * x, a, backend=engine)[0]
    assert flags(a) == before
    np.testing.assert_array_equal(a, values)
    np.testing.assert_allclose(g_leaf, 2 * values * w, rtol=1e-12)
    np.testing.assert_allclose(g_const, 2 * w * values, rtol=1e-12)
    np.testing.assert_allclose(J, np.diag(2 * values), rtol=1e-12)
    a[0] = -3.0  # writeable as before
    assert a[0] == -3.0


@pytest.mark.parametrize("engine", ENGINES)
def test_write_into_unlockable_leaf_refused(engine: str) -> None:
    """Writes into the caller's array behind an argument are still refused, also where
    the array could not be locked (the tape and autograd then read a private copy)."""
    a = torch.arange(4.0, dtype=torch.float64).numpy()
    before = flags(a)

    def f(x: Any) -> Any:
        a[0] = 100.0  # through the closure, not through the traced x
        return ad.array_namespace(x).sum(x * x)

    could_not = {"tape": "could not be locked", "autograd": "could not be made read-only"}
    with pytest.raises(ad.MutationError, match=could_not[engine]):
        ad.gradient(f, a, backend=engine)
    assert flags(a) == before


def test_write_into_unlockable_constant_refused() -> None:
    C = torch.arange(1.0, 4.0, dtype=torch.float64).numpy()
    before = flags(C)

    def f(w: Any) -> Any:
        s = ad.array_namespace(w).sum(w * C)
        C[...] = 0.0  # would change what the backward pass reads
        return s

    with pytest.raises(ad.MutationError, match="constant argument"):
        ad.gradient(f, np.ones(3), backend="tape")
    assert flags(C) == before


def test_write_into_lockable_constant_still_refused_at_the_write() -> None:
    C = np.arange(1.0, 4.0)

    def f(w: Any) -> Any:
        s = ad.array_namespace(w).sum(w * C)
        C[0] = 0.0
        return s

    with pytest.raises(ad.MutationError, match="`C`"):
        ad.gradient(f, np.ones(3), backend="tape")
    assert C.flags.writeable and C.flags.owndata


def test_view_released_while_its_base_is_held() -> None:
    """Two calls (threads, or nested calls): one locks a view and its base, the other the
    base; the first to end cannot make the view writeable yet -- it must be, once the base
    is released, not left read-only."""
    from adswitch_tape.core.trace import Trace

    base = np.ones(4)
    view = base[1:]
    first, second = Trace(), Trace()
    first.guard(view, "a constant")
    second.guard(base, "a constant")
    first.close()  # base still held by the second call
    assert not base.flags.writeable
    second.close()
    assert view.flags.writeable and base.flags.writeable
