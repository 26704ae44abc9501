"""The torch engine's two off switches, each in a fresh process (both are read at import):
``ADSWITCH_TORCH_PRIVATE_API=0`` (the public torch API instead of its private fast paths,
:mod:`adswitch_torch.private_api`) and ``ADSWITCH_TORCH_TENSOR_PATCHES=0`` (``torch.Tensor``
left unpatched, :mod:`adswitch_torch.refusals.tensor_patches`). With either off, the
numbers are the same: gradients, Jacobians (a batch of backward passes), jvps and custom
rules are checked against ``loss.backward()`` on plain torch and central finite
differences. Also here: the plugin's sub-packages keep their layers (the primitives never
import the plugin module, the private API module imports nothing of the plugin).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = ROOT / "plugins" / "adswitch_torch"

# Runs in the child process: every figure against an oracle computed there without adswitch.
CHILD = r"""
import os
import numpy as np
import torch
import adswitch as ad
from adswitch_torch import private_api
from adswitch_torch.refusals import tensor_patches

private_off = os.environ.get("ADSWITCH_TORCH_PRIVATE_API") == "0"
patches_off = os.environ.get("ADSWITCH_TORCH_TENSOR_PATCHES") == "0"
assert private_api.ENABLED is not private_off
assert tensor_patches.ENABLED is not patches_off
if private_off:
    assert private_api.engine_run_backward() is None
    assert private_api.vmap_levels() is None


def f(x):
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * x ** 2) + xp.prod(xp.tanh(x))


def g(x):
    xp = ad.array_namespace(x)
    return xp.sin(x) * xp.roll(x, 1)


def fd(fun, x, h=1e-6):
    # central differences of a scalar (or vector) function, column by column
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        cols.append((np.asarray(fun(x + e)) - np.asarray(fun(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


x_np = np.array([0.3, -1.2, 0.7, 2.0])

# gradient: against loss.backward() on plain torch
x_t = torch.tensor(x_np, requires_grad=True)
(torch.sum(torch.sin(x_t) * x_t ** 2) + torch.prod(torch.tanh(x_t))).backward()
(grad,) = ad.gradient(f, torch.tensor(x_np), backend="torch")
np.testing.assert_allclose(grad.numpy(), x_t.grad.numpy(), rtol=1e-12, atol=1e-14)
(grad,) = ad.gradient(f, x_np.copy(), backend="torch")
np.testing.assert_allclose(grad, x_t.grad.numpy(), rtol=1e-12, atol=1e-14)

# a Jacobian in reverse mode (a batch of backward passes) and forward mode: against FD
g_np = lambda v: np.sin(v) * np.roll(v, 1)
expected = fd(g_np, x_np)
(jac,) = ad.jacobian(g, x_np.copy(), backend="torch", mode="reverse")
np.testing.assert_allclose(jac, expected, rtol=1e-7, atol=1e-8)
(jac,) = ad.jacobian(g, x_np.copy(), backend="torch", mode="forward")
np.testing.assert_allclose(jac, expected, rtol=1e-7, atol=1e-8)
v = np.array([1.0, 0.5, -2.0, 0.25])
_, tangent = ad.jvp(g, (x_np.copy(),), (v,), backend="torch")
np.testing.assert_allclose(tangent, expected @ v, rtol=1e-7, atol=1e-8)

# a custom rule (the eager Function path): softmax from its own bwd, against FD of lse
def lse_value(x):
    xp = ad.array_namespace(x)
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m)))


def lse_fwd(x):
    out = lse_value(x)
    return out, (x, out)


def lse_bwd(res, g):
    x, out = res
    return (g * ad.array_namespace(x).exp(x - out),)


lse = ad.custom_vjp(lse_value)
lse.defvjp(lse_fwd, lse_bwd)
lse_np = lambda v: np.log(np.sum(np.exp(v)))
(grad,) = ad.gradient(lse, torch.tensor(x_np), backend="torch")
np.testing.assert_allclose(grad.numpy(), fd(lse_np, x_np), rtol=1e-7, atol=1e-8)

# the patches: on, float() of a differentiated value is refused; off, torch's own method
def with_float(x):
    return x * float(x[0])

try:
    ad.gradient(lambda x: ad.array_namespace(x).sum(with_float(x)), torch.tensor(x_np),
                backend="torch")
    refused = False
except ad.errors.UnsupportedError:
    refused = True
assert refused is not patches_off, refused
assert hasattr(torch.Tensor.item, "__wrapped__") is not patches_off
print("OK")
"""


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"ADSWITCH_TORCH_PRIVATE_API": "0"},
        {"ADSWITCH_TORCH_TENSOR_PATCHES": "0"},
        {"ADSWITCH_TORCH_PRIVATE_API": "0", "ADSWITCH_TORCH_TENSOR_PATCHES": "0"},
    ],
    ids=["both-on", "private-api-off", "tensor-patches-off", "both-off"],
)
def test_the_same_numbers_with_each_switch_off(env: dict[str, str]) -> None:
    child_env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ADSWITCH_TORCH_PRIVATE_API", "ADSWITCH_TORCH_TENSOR_PATCHES")
    }
    child_env.update(env)
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        env=child_env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.strip().endswith("OK"), done.stdout


def _package_imports(file: Path) -> set[str]:
    """The ``adswitch_torch`` modules ``file`` imports, as paths under the package."""
    here = file.relative_to(PLUGIN).with_suffix("").parts
    package = list(here if file.name == "__init__.py" else here[:-1])
    if package and package[-1] == "__init__":
        package.pop()
    found: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)] + (
                node.module.split(".") if node.module else []
            )
            found.add(".".join(base))
            found.update(".".join([*base, alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("adswitch_torch."):
            found.add(node.module.removeprefix("adswitch_torch."))  # type: ignore[union-attr]
    return found


def test_the_plugin_module_sits_on_top_and_private_api_at_the_bottom() -> None:
    """``plugin`` (the entry point) is imported by no module but the package's own
    ``__init__``; ``private_api`` and ``tensor_patches`` are each the one place of their
    concern; ``private_api`` imports nothing of the plugin."""
    files = sorted(PLUGIN.rglob("*.py"))
    for file in files:
        imports = _package_imports(file)
        name = file.relative_to(PLUGIN).as_posix()
        if name != "__init__.py":
            assert "plugin" not in imports, f"{name} imports the plugin module"
        if name == "private_api.py":
            assert not imports, f"private_api imports {imports}"
    for sub in ("primitives", "compose", "refusals", "integrations", "xp", "xp/linalg"):
        init = PLUGIN / sub / "__init__.py"
        assert init.exists() and ast.get_docstring(ast.parse(init.read_text())), sub
    assert not [f.name for f in PLUGIN.glob("_*.py") if f.name != "__init__.py"]


def test_private_torch_apis_only_in_private_api() -> None:
    """``torch._C``, ``torch._functorch``, ``_engine_run_backward`` and ``torch.utils.
    _pytree`` are named in code only by :mod:`adswitch_torch.private_api`."""
    private = ("_C", "_functorch", "_engine_run_backward", "_pytree", "_maybe_load_decompositions")
    bad = []
    for file in sorted(PLUGIN.rglob("*.py")):
        if file.name == "private_api.py":
            continue
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in private:
                bad.append(f"{file.relative_to(PLUGIN)}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.ImportFrom) and (
                (node.module or "").startswith(("torch._", "torch.utils._", "torch.autograd.graph"))
                or any(a.name in private for a in node.names)
            ):
                bad.append(f"{file.relative_to(PLUGIN)}:{node.lineno} from {node.module}")
    assert not bad, "private torch APIs outside private_api:\n" + "\n".join(bad)
