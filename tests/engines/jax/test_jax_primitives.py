"""The jax engine's primitives called directly, as the engine contract has them: batched and
unbatched ``vjp`` pullbacks, ``vjp_apply`` seeds, ``jvp`` tangents (an identity basis
baked in, any other batch passed as values), result kinds and dtypes.

Oracles: closed forms in numpy.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from adswitch_jax.plugin import JaxBackend  # noqa: E402
from adswitch_jax.primitives import engine as _engine  # noqa: E402
from adswitch_jax.programs.basis import identity_basis  # noqa: E402

from adswitch.spec import CallInfo, Structure  # noqa: E402

# The label among the outputs cannot leave a compiled program (said once, on purpose).
pytestmark = pytest.mark.filterwarnings("ignore::adswitch_jax.notices.JaxFallbackWarning")
ENGINE = JaxBackend()


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    _engine.reset()


class Outputs:
    """An ``OutputFn``: ``(x, s) -> (sin(x) * s, s**2)`` plus a label, both differentiated
    outputs floating (the second a Python float when ``s`` is one)."""

    output_structure: Hashable = "two outputs and a label"

    def __call__(self, values: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        x, s, label = values
        xp = jnp if isinstance(x, jax.Array) else np
        y = xp.sin(x) * s
        return [y, s**2], [y, s**2, label]

    def reuse(self, structure: Hashable) -> None:
        assert structure == self.output_structure


def f_of(x: Any, s: Any) -> Any:  # what the cache keys on (CallInfo.func)
    return x, s


def info(entry: str = "vjp", batched: bool = False) -> CallInfo:
    structure = Structure(key=("outputs", entry), func=f_of, entry=entry)
    return CallInfo(entry=entry, func=f_of, batched=batched, structure=structure)


X, S = np.array([0.3, -1.2, 2.0]), 1.5
LEAVES, ACTIVE = [X, S, "label"], [True, True, False]


def jacobians(x: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray, float]:
    """d(sin(x) s)/dx (diagonal), d(sin(x) s)/ds, d(s^2)/ds."""
    return np.diag(np.cos(x) * s), np.sin(x), 2 * s


def test_vjp_pullback_single_and_batched() -> None:
    for _ in range(2):  # compiled, then from the cache
        out, pullback = ENGINE.vjp(Outputs(), LEAVES, ACTIVE, info())
        np.testing.assert_allclose(out[0], np.sin(X) * S)
        assert out[2] == "label" and type(out[0]) is np.ndarray
        jx, js, jss = jacobians(X, S)
        u, w = np.array([1.0, 2.0, -1.0]), 3.0
        gx, gs, none = pullback([u, w])
        assert none is None and isinstance(gs, float)
        np.testing.assert_allclose(gx, jx.T @ u)
        assert gs == pytest.approx(js @ u + jss * w)
        U, W = np.stack([u, 2 * u]), np.array([w, 0.0])
        gx, gs, _ = pullback([U, W], batched=True)
        np.testing.assert_allclose(gx, U @ jx)
        assert type(gs) is np.ndarray and gs.shape == (2,)  # a Python float leaf, batched
        np.testing.assert_allclose(gs, U @ js + jss * W)


def test_vjp_apply_seed_batched_is_the_jacobian() -> None:
    def seed(diffs: Sequence[Any]) -> list[Any]:  # the identity over both outputs (3 + 1)
        eye = np.eye(4)
        return [eye[:, :3], eye[:, 3]]

    out, (gx, gs, _) = ENGINE.vjp_apply(Outputs(), LEAVES, ACTIVE, seed, info("jacobian", True))
    jx, js, jss = jacobians(X, S)
    np.testing.assert_allclose(gx, np.vstack([jx, np.zeros(3)]))
    np.testing.assert_allclose(gs, np.append(js, jss))
    assert out[1] == pytest.approx(S**2)


@pytest.mark.parametrize("primitive", ["vjp_apply", "jvp"])
def test_outputs_not_wanted_come_back_as_shapes_and_dtypes(primitive: str) -> None:
    # CallInfo.wants_outputs=False: the program does not return f's outputs; the caller
    # gets stand-ins with their shapes and dtypes, and the same derivatives.
    eye = np.eye(4)
    jx, js, jss = jacobians(X, S)
    for wanted in (True, False, False):  # (the third: from the cache)
        call = CallInfo(
            structure=Structure(key=("outputs", "jacobian"), func=f_of, entry="jacobian"),
            entry="jacobian",
            func=f_of,
            batched=True,
            wants_outputs=wanted,
        )
        if primitive == "vjp_apply":
            out, (gx, gs, _) = ENGINE.vjp_apply(
                Outputs(), LEAVES, ACTIVE, lambda d: [eye[:, :3], eye[:, 3]], call
            )
            np.testing.assert_allclose(gx, np.vstack([jx, np.zeros(3)]))
            np.testing.assert_allclose(gs, np.append(js, jss))
        else:
            out, (ty, tss) = ENGINE.jvp(
                Outputs(), LEAVES, ACTIVE, [eye[:, :3], eye[:, 3], None], call
            )
            np.testing.assert_allclose(ty, np.vstack([jx, js]))
            np.testing.assert_allclose(tss, np.array([0, 0, 0, jss]))
        if wanted:
            np.testing.assert_allclose(out[0], np.sin(X) * S)
        else:
            assert not isinstance(out[0], (np.ndarray, jax.Array))
            assert (tuple(out[0].shape), out[0].dtype) == ((3,), np.float64)
            assert tuple(out[1].shape) == ()


@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_jvp_batched_tangents_identity_or_not(scale: float) -> None:
    # The identity basis is baked into the program; any other batch must be read as values.
    eye = np.eye(4)
    tangents = [scale * eye[:, :3], scale * eye[:, 3], None]
    assert (identity_basis(tangents[:2]) is not None) == (scale == 1.0)
    _, (ty, tss) = ENGINE.jvp(Outputs(), LEAVES, ACTIVE, tangents, info("jacobian", True))
    jx, js, jss = jacobians(X, S)
    np.testing.assert_allclose(ty, scale * np.vstack([jx, js]))
    np.testing.assert_allclose(tss, scale * np.array([0, 0, 0, jss]))


def test_jvp_unbatched_float32_jax_arrays() -> None:
    x = jnp.asarray(X, dtype=jnp.float32)
    _, (ty, tss) = ENGINE.jvp(
        Outputs(), [x, S, "label"], ACTIVE, [jnp.ones(3, jnp.float32), 0.5, None], info("jvp")
    )
    assert isinstance(ty, jax.Array) and ty.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(ty), np.cos(X) * S + np.sin(X) * 0.5, atol=1e-6)
    assert float(tss) == pytest.approx(2 * S * 0.5)


def test_identity_basis_is_exact() -> None:
    eye = np.eye(5)
    parts = [eye[:, :2].reshape(5, 2), eye[:, 2:].reshape(5, 1, 3)]
    assert identity_basis(parts) == (
        5,
        ((0, 2, (2,), np.dtype(np.float64)), (2, 3, (1, 3), np.dtype(np.float64))),
    )
    for row, col, value in ((0, 0, -1.0), (1, 0, np.nextafter(0.0, 1.0)), (4, 1, -0.0)):
        changed = [p.copy() for p in parts]
        changed[0][row, col] = value
        assert identity_basis(changed) is None
    assert identity_basis([eye[:, :2]]) is None  # not every row covered
    assert identity_basis([eye.astype(np.int64)]) is None  # not floating
    assert identity_basis([np.eye(3, dtype=np.float32)]) is not None
