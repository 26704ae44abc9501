"""The torch engine on first-order gradients: kinds, dtypes, activity, ties, outputs,
shadows, namespace, memory. Oracles: central finite differences and closed forms."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from adswitch_torch import TorchBackend  # noqa: E402

import adswitch as ad  # noqa: E402
from adswitch.spec import CallInfo  # noqa: E402
from tests.engines.torch.test_torch_oracles import FD_TOL, fd_grad  # noqa: E402

TOL: dict[str, Any] = dict(rtol=1e-12, atol=1e-12)


def sin_x(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * x)


def test_numpy_in_numpy_out_matches_finite_differences() -> None:
    x = np.array([0.5, -1.0, 2.0])
    c = np.array([1.0, 2.0, 3.0])

    def f(x: Any, c: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(xp.sin(x) * x * c)

    out = ad.withgradient(f, x, ad.Const(c), backend="torch")
    gx, gc = out.grad
    assert type(gx) is np.ndarray and gx.dtype == np.float64 and gc is None
    np.testing.assert_allclose(gx, fd_grad(lambda v: np.sum(np.sin(v) * v * c), x), **FD_TOL)
    assert type(out.val) is np.float64  # numpy in: a numpy scalar loss, as on every engine
    assert float(out.val) == pytest.approx(np.sum(np.sin(x) * x * c), rel=1e-14)


def test_float32_numpy_gives_float32_gradient() -> None:
    x = np.array([0.5, -1.0], dtype=np.float32)
    (g,) = ad.gradient(sin_x, x, backend="torch")
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_tensor_in_tensor_out_keeps_dtype_and_leaves_user_grad_alone(dtype: str) -> None:
    x = torch.tensor([0.5, -1.0, 2.0], dtype=getattr(torch, dtype), requires_grad=True)
    (g,) = ad.gradient(sin_x, x)  # tensors select the torch engine
    assert isinstance(g, torch.Tensor) and g.dtype == x.dtype and g.device == x.device
    assert not g.requires_grad and g.grad_fn is None
    assert x.grad is None  # the user's tensor is never accumulated into
    xn = x.detach().double().numpy()
    np.testing.assert_allclose(g.double().numpy(), np.cos(xn) * xn + np.sin(xn), rtol=1e-6)


def test_python_float_gets_a_python_float_gradient() -> None:
    x = np.array([1.0, 2.0])

    def f(x: Any, s: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x) * s**2

    gx, gs = ad.gradient(f, x, 3.0, backend="torch")
    assert type(gs) is float and gs == pytest.approx(2 * 3.0 * 3.0, rel=1e-14)
    np.testing.assert_allclose(gx, [9.0, 9.0], **TOL)


def test_unused_leaves_get_zeros_of_their_kind() -> None:
    x, unused = np.array([1.0, 2.0]), torch.zeros(3, dtype=torch.float64)

    def f(x: Any, u: Any) -> Any:
        return ad.array_namespace(x).sum(x**2)

    gx, gu = ad.gradient(f, x, unused, backend="torch")
    np.testing.assert_allclose(gx, 2 * x, **TOL)
    assert isinstance(gu, torch.Tensor) and gu.dtype == torch.float64
    assert torch.equal(gu, torch.zeros(3, dtype=torch.float64))


def test_constant_function_gives_zero_gradients() -> None:
    (g,) = ad.gradient(lambda x: 1.5, np.array([1.0, 2.0]), backend="torch")
    np.testing.assert_array_equal(g, [0.0, 0.0])


def test_tied_array_gets_total_gradient_at_first_occurrence() -> None:
    w = np.array([1.0, -2.0])

    def f(p: Any) -> Any:
        xp = ad.array_namespace(p["a"])
        return xp.sum(p["a"] * 3.0 + p["b"] ** 2)

    (g,) = ad.gradient(f, {"a": w, "b": w}, backend="torch")
    np.testing.assert_allclose(g["a"], 3.0 + 2 * w, **TOL)
    assert g["b"] is None


def test_distinct_parameters_get_distinct_gradient_arrays() -> None:
    # torch hands the very same tensor to both inputs of an addition.
    p, q = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    gp, gq = ad.gradient(lambda p, q: ad.array_namespace(p).sum(p + q), p, q, backend="torch")
    np.testing.assert_array_equal(gp, [1.0, 1.0])
    gp[0] = 99.0
    np.testing.assert_array_equal(gq, [1.0, 1.0])
    assert gp.flags.writeable and gq.strides == (8,)


def test_outputs_are_concrete_in_the_callers_kind() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        y = xp.sin(x)
        return xp.sum(y), y, "label", x

    x = np.array([0.1, 0.2])
    val = ad.withgradient(f, x, backend="torch").val
    assert isinstance(val[1], np.ndarray) and val[2] == "label" and val[3] is x
    np.testing.assert_allclose(val[1], np.sin(x), **TOL)

    xt = torch.tensor([0.1, 0.2], dtype=torch.float64)
    val = ad.withgradient(f, xt).val
    assert isinstance(val[1], torch.Tensor) and not val[1].requires_grad
    assert val[0].grad_fn is None and val[3] is xt


def test_duplicated_tensor_shadow_is_added_into_in_place() -> None:
    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    shadow = torch.full((2,), 100.0, dtype=torch.float64)
    dup = ad.Duplicated(x, shadow)
    (g,) = ad.gradient(lambda x: (x**2).sum(), dup)
    assert g is shadow
    assert torch.equal(shadow, torch.tensor([2.0, 4.0], dtype=torch.float64))
    ad.gradient(lambda x: (x**2).sum(), dup, zero=False)
    assert torch.equal(shadow, torch.tensor([4.0, 8.0], dtype=torch.float64))


def test_shadow_untouched_when_f_raises() -> None:
    shadow = torch.full((2,), 7.0, dtype=torch.float64)

    def f(x: Any) -> Any:
        (x**2).sum()
        raise ValueError("user error")

    with pytest.raises(ValueError, match="user error"):
        ad.gradient(f, ad.Duplicated(torch.ones(2, dtype=torch.float64), shadow))
    assert torch.equal(shadow, torch.full((2,), 7.0, dtype=torch.float64))


def test_const_numpy_array_reaches_f_as_a_tensor_sharing_memory() -> None:
    c = np.array([1.0, 2.0])
    seen = {}

    def f(x: Any, c: Any) -> Any:
        seen["c"] = c
        return ad.array_namespace(x).sum(x * c)

    (gx, _) = ad.gradient(f, np.array([3.0, 4.0]), ad.Const(c), backend="torch")
    assert isinstance(seen["c"], torch.Tensor) and seen["c"].dtype == torch.float64
    assert seen["c"].data_ptr() == c.ctypes.data
    np.testing.assert_allclose(gx, c, **TOL)


def test_read_only_and_reversed_constants_work() -> None:
    c = np.arange(3.0)
    c.flags.writeable = False
    r = np.arange(3.0)[::-1]

    def f(x: Any, c: Any, r: Any) -> Any:
        return ad.array_namespace(x).sum(x * c * r)

    gx = ad.gradient(f, np.ones(3), ad.Const(c), ad.Const(r), backend="torch")[0]
    np.testing.assert_allclose(gx, np.arange(3.0) * np.arange(3.0)[::-1], **TOL)


def test_const_tensor_requiring_grad_is_not_accumulated_into() -> None:
    w = torch.tensor([2.0, 3.0], dtype=torch.float64, requires_grad=True)
    gx, gw = ad.gradient(
        lambda x, w: (x * w).sum(), torch.ones(2, dtype=torch.float64), ad.Const(w)
    )
    assert gw is None and w.grad is None
    assert torch.equal(gx, w.detach())


def test_namespace_creates_float64_by_default() -> None:
    xp = ad.array_namespace(torch.zeros(1))
    assert xp.zeros(3).dtype == torch.float64
    assert xp.ones((2, 2)).dtype == torch.float64
    assert xp.full(2, 0.1).dtype == torch.float64 and xp.full(2, 1).dtype == torch.int64
    assert xp.arange(0.0, 1.0, 0.25).dtype == torch.float64 and xp.arange(3).dtype == torch.int64
    assert xp.linspace(0, 1, 5).dtype == torch.float64 and xp.eye(2).dtype == torch.float64
    assert xp.asarray(0.1).item() == 0.1  # built in float64, not widened from float32
    assert xp.asarray([0.1, 0.2]).dtype == torch.float64
    assert xp.zeros(2, dtype=torch.float32).dtype == torch.float32
    a = np.arange(3.0, dtype=np.float32)
    t = xp.asarray(a)
    assert t.dtype == torch.float32 and t.data_ptr() == a.ctypes.data


def test_numpy_constants_enter_traced_expressions_through_asarray() -> None:
    c = np.array([2.0, 5.0])

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(x * xp.asarray(c) + xp.asarray(0.1) * x)

    (g,) = ad.gradient(f, np.array([1.0, 1.0]), backend="torch")
    np.testing.assert_allclose(g, c + 0.1, **TOL)


def test_may_alias_compares_byte_ranges() -> None:
    backend = TorchBackend()
    backend._engine()
    base = torch.zeros(10, dtype=torch.float64)
    assert backend.may_alias(base, base[2:5])
    assert not backend.may_alias(base[:5], base[5:])
    arr = np.zeros(4)
    assert backend.may_alias(torch.from_numpy(arr)[1:], arr[:2])
    assert not backend.may_alias(torch.zeros(0), base)


def test_view_and_base_as_two_arguments_raise_aliasing_error() -> None:
    base = torch.zeros(4, dtype=torch.float64)
    with pytest.raises(ad.AliasingError):
        ad.gradient(lambda a, b: (a * b).sum() + b.sum(), {"a": base[:2]}, {"b": base[1:3]})


def test_zeros_like_and_add_into_stay_on_the_shadows_device() -> None:
    backend = TorchBackend()
    backend._engine()
    p = torch.ones(3, dtype=torch.float32, requires_grad=True)
    z = backend.zeros_like(p)
    assert z.dtype == torch.float32 and z.device == p.device and not z.requires_grad
    ptr = z.data_ptr()
    backend.add_into(z, torch.tensor([1.0, 2.0, 3.0]))
    assert z.data_ptr() == ptr and z.tolist() == [1.0, 2.0, 3.0]


def test_backend_is_listed_with_its_version_and_capabilities() -> None:
    info = {b.name: b for b in ad.backends()}["torch"]
    assert info.available and info.version == importlib.metadata.version("torch")
    caps = info.capabilities
    assert caps is not None
    assert caps.nested and not caps.mutation and not caps.fresh_buffer_writes
    assert TorchBackend(copy_saved=True).capabilities.mutation
    assert info.install_hint == 'pip install "adswitch[torch]"'


def test_missing_torch_raises_with_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(ad.BackendUnavailableError, match=r'pip install "adswitch\[torch\]"'):
        TorchBackend().version()
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ad.BackendUnavailableError, match=r"adswitch\[torch\]"):
        TorchBackend().value_and_grad(lambda v: (0.0, []), [1.0], [True], CallInfo())


def test_plugin_import_does_not_import_torch() -> None:
    code = "import sys, adswitch_torch.plugin; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tensor_subclass_inputs_take_the_public_backward_path() -> None:
    class Tagged(torch.Tensor):  # type: ignore[name-defined,misc]
        pass

    x = torch.tensor([0.5, -1.0], dtype=torch.float64).as_subclass(Tagged)
    # backend= is explicit: the front end picks engines by the type's own module.
    (g,) = ad.gradient(lambda x: (x**3).sum(), x, backend="torch")
    xn = np.array([0.5, -1.0])
    np.testing.assert_allclose(np.asarray(g.detach()), 3 * xn**2, rtol=1e-14)


def test_float_dtype_torch_lacks_is_refused_not_dropped() -> None:
    x = np.ones(2, dtype=np.longdouble)
    if np.dtype(np.longdouble) == np.float64:
        pytest.skip("longdouble is float64 on this platform")
    with pytest.raises(ad.UnsupportedError, match="float64"):
        ad.gradient(lambda x: ad.array_namespace(x).sum(x), x, backend="torch")


def test_concurrent_calls_from_threads_do_not_mix() -> None:
    from concurrent.futures import ThreadPoolExecutor

    def one(k: int) -> Any:
        x = np.full(3, float(k))

        def outer(x: Any) -> Any:  # nested, so each thread's call stack matters too
            (g,) = ad.gradient(lambda y: ad.array_namespace(y).sum(y**3), x)
            return ad.array_namespace(g).sum(g)

        return ad.gradient(outer, x, backend="torch")[0]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(1, 9)))
    for k, g in enumerate(results, start=1):
        np.testing.assert_allclose(g, np.full(3, 6.0 * k), rtol=1e-14)


@pytest.mark.parametrize("loss", [lambda x: x, lambda x: x.reshape(())], ids=["x", "view"])
def test_gradient_that_is_the_seed_is_the_callers_own(loss: Any) -> None:
    # d loss / d x = 1 for a 0-d x; torch hands back its seed tensor. Writing into one
    # call's gradient must not change what the next call computes.
    x = torch.tensor(3.0, dtype=torch.float64)
    (first,) = ad.gradient(loss, x, backend="torch")
    first += 5.0
    (second,) = ad.gradient(lambda y: 2.0 * y, x, backend="torch")
    (third,) = ad.gradient(loss, x, backend="torch")
    assert (first.item(), second.item(), third.item()) == (6.0, 2.0, 1.0)


def test_sparse_gradient_comes_back_dense() -> None:
    # embedding(sparse=True) makes torch's gradient sparse; closed form: row r of the
    # gradient of sum(W[idx]) counts how often r appears in idx.
    weights = torch.randn(5, 3, dtype=torch.float64)
    idx = torch.tensor([0, 2, 2])

    def f(w: Any) -> Any:
        return torch.nn.functional.embedding(idx, w, sparse=True).sum()

    (g,) = ad.gradient(f, weights, backend="torch")
    assert g.layout == torch.strided
    expected = torch.tensor([1.0, 0.0, 2.0, 0.0, 0.0], dtype=torch.float64)[:, None].expand(5, 3)
    torch.testing.assert_close(g, expected)
