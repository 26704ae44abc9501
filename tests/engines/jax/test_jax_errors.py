"""The jax engine's errors: mutation translated with the fix, user errors unchanged, shadows
untouched, a missing jax reported with the install command, no jax import until used."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from adswitch_jax.plugin import JaxBackend  # noqa: E402

import adswitch as ad  # noqa: E402
from adswitch.errors import BackendUnavailableError, MutationError, UnsupportedError  # noqa: E402


def seed_003(x: Any) -> Any:
    """``y = log(x); x[...] = 0; sum(y + x)``: the right gradient is ``1/x``, never ``2/x``."""
    xp = ad.array_namespace(x)
    y = xp.log(x)
    x[...] = 0
    return xp.sum(y + x)


def test_mutating_an_argument_is_translated_and_declared() -> None:
    assert JaxBackend.capabilities.mutation is False
    x = np.array([1.0, 2.0, 3.0])
    dx = np.full(3, 7.0)
    with pytest.raises(MutationError, match=r"jax engine.*x = x\.at\[idx\]\.set\(v\)") as info:
        ad.gradient(seed_003, ad.Duplicated(x, dx), backend="jax")
    assert isinstance(info.value.__cause__, TypeError)
    assert "immutable" in str(info.value.__cause__)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])  # nothing lost
    np.testing.assert_array_equal(dx, np.full(3, 7.0))


def test_write_into_fresh_buffer_is_translated() -> None:
    assert JaxBackend.capabilities.fresh_buffer_writes is False

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        buf = xp.zeros_like(x)
        buf[0] = xp.sum(x**2)
        return xp.sum(buf * x)

    with pytest.raises(MutationError, match=r"\.at\[idx\]\.set"):
        ad.gradient(f, np.array([1.0, 2.0]), backend="jax")


def test_the_fix_the_message_names_works() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        buf = xp.zeros_like(x).at[0].set(xp.sum(x**2))  # [x0^2 + x1^2, 0]
        return xp.sum(buf * x)  # x0^3 + x0 x1^2

    x = np.array([1.0, 2.0])
    (g,) = ad.gradient(f, x, backend="jax")
    np.testing.assert_allclose(g, [3 * 1.0 + 4.0, 2 * 1.0 * 2.0])


def test_traced_value_into_numpy_buffer_is_translated() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        buf = np.zeros(2)
        buf[0] = x[0]
        return xp.sum(x * buf[0])

    with pytest.raises(MutationError, match=r"numpy array.*Fix") as info:
        ad.gradient(f, np.array([1.0, 2.0]), backend="jax")
    assert isinstance(info.value.__cause__, ValueError)


def test_numpy_conversion_inside_f_is_translated() -> None:
    def f(x: Any) -> Any:
        return float(np.sum(np.asarray(x) ** 2))

    with pytest.raises(UnsupportedError, match=r"jax engine.*numpy.*array_namespace") as info:
        ad.gradient(f, np.array([1.0, 2.0]), backend="jax")
    assert isinstance(info.value.__cause__, jax.errors.TracerArrayConversionError)


def test_user_exception_passes_unchanged_and_shadow_survives() -> None:
    class Boom(ValueError):
        pass

    def f(x: Any) -> Any:
        raise Boom("from the user")

    x, dx = np.ones(2), np.array([4.0, 5.0])
    with pytest.raises(Boom, match="from the user"):
        ad.gradient(f, ad.Duplicated(x, dx), backend="jax")
    np.testing.assert_array_equal(dx, [4.0, 5.0])


def test_missing_jax_is_unavailable_with_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.metadata.version

    def fake_version(name: str) -> str:
        if name in ("jax", "jaxlib"):
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "version", fake_version)
    with pytest.raises(BackendUnavailableError, match=r'pip install "adswitch\[jax\]"'):
        JaxBackend().version()


def test_namespace_is_jax_numpy_for_arrays_and_tracers() -> None:
    seen: list[Any] = []

    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        seen.append(xp)
        return xp.sum(x)

    xp = ad.array_namespace(jnp.ones(2), np.ones(2))
    ad.gradient(f, np.array([1.0, 2.0]), backend="jax")
    assert seen == [xp]
    # jax.numpy's own objects, but for linalg (adswitch_jax.namespace)
    assert xp.__name__ == "jax.numpy" and xp.sum is jnp.sum and xp.float64 is jnp.float64
    assert xp.linalg is not jnp.linalg and xp.linalg.det is jnp.linalg.det


def _run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_plugin_does_not_import_jax_until_used() -> None:
    result = _run_python(
        """
        import sys
        import adswitch as ad
        import adswitch_jax.plugin
        [b for b in ad.backends() if b.name == "jax"]
        assert "jax" not in sys.modules, "jax imported too early"
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_sharded_input_keeps_its_sharding() -> None:
    result = _run_python(
        """
        import numpy as np, jax, jax.numpy as jnp
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        import adswitch as ad
        if len(jax.devices()) < 2:
            print("skip"); raise SystemExit(0)
        mesh = Mesh(np.array(jax.devices()[:2]), ("d",))
        sharding = NamedSharding(mesh, P("d"))
        x = jax.device_put(jnp.arange(8.0), sharding)
        def f(x):
            xp = ad.array_namespace(x)
            return xp.sum(x ** 2)
        (g,) = ad.gradient(f, x)
        assert g.sharding.is_equivalent_to(x.sharding, x.ndim), g.sharding
        np.testing.assert_allclose(np.asarray(g), 2 * np.arange(8.0))
        print("ok")
        """,
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        JAX_PLATFORMS="cpu",
    )
    assert result.returncode == 0, result.stderr
    if result.stdout.strip() == "skip":
        pytest.skip("jax did not create two CPU devices")
    assert result.stdout.strip() == "ok"


def test_inplace_operator_through_a_view_is_refused() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        head = x[:2]
        head *= 3.0  # numpy: writes x[:2]; jax would silently rebind head
        return xp.sum(x**2)

    x, dx = np.array([0.5, -1.0, 2.0]), np.full(3, 4.0)
    with pytest.raises(MutationError, match=r"jax engine.*slice.*view.*\.at\[:2\]\.multiply"):
        ad.gradient(f, ad.Duplicated(x, dx), backend="jax")
    np.testing.assert_array_equal(dx, np.full(3, 4.0))
    assert not hasattr(jax.core.Tracer, "__imul__")  # jax's classes are left as they were


def test_inplace_operator_on_numpy_argument_is_refused_also_nested() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        x *= 2.0  # numpy changes the caller's array
        return xp.sum(x**2)

    with pytest.raises(MutationError, match="argument given as a numpy array"):
        ad.gradient(f, np.array([1.0, 2.0]), backend="jax")

    def outer(x: Any) -> Any:
        xp = ad.array_namespace(x)
        return xp.sum(ad.gradient(f, x)[0])

    with pytest.raises(MutationError, match="argument given as a numpy array"):
        ad.gradient(outer, np.array([1.0, 2.0]), backend="jax")


def test_inplace_operators_on_fresh_arrays_work() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        y = x * 2.0
        y += x  # 3x
        y *= 3.0  # 9x
        y -= 1.0  # 9x - 1
        return xp.sum(y**2)

    x = np.array([0.5, -1.0, 2.0])
    (g,) = ad.gradient(f, x, backend="jax")
    np.testing.assert_allclose(g, 18 * (9 * x - 1), rtol=1e-12)


def test_inplace_operator_on_jax_argument_follows_jax() -> None:
    def f(x: Any) -> Any:
        xp = ad.array_namespace(x)
        x += 1.0  # jax arrays in: a plain call rebinds x, as jax always does
        return xp.sum(x**2)

    x = jnp.asarray([1.0, 2.0])
    (g,) = ad.gradient(f, x)
    np.testing.assert_allclose(np.asarray(g), 2 * (np.asarray(x) + 1))
