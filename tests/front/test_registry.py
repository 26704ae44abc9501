"""The plugin registry: pluggy hooks, lazy one-by-one loading, broken plugins isolated."""

from __future__ import annotations

import subprocess
import sys
import types
from importlib.metadata import EntryPoint

import numpy as np
import pytest

import adswitch as ad
from adswitch import registry as registry_module
from adswitch.spec import BackendBase, hookimpl
from tests.support.fd_engine import FiniteDifferenceBackend


def plugin_module(name: str, backend: object) -> types.ModuleType:
    module = types.ModuleType(name)

    @hookimpl
    def adswitch_backend() -> object:
        return backend

    module.adswitch_backend = adswitch_backend  # type: ignore[attr-defined]
    return module


def test_pluggy_plugin_registration() -> None:
    reg = registry_module.Registry(load_entry_points=False)
    engine = FiniteDifferenceBackend()
    reg.register_plugin(plugin_module("good", engine), name="fd")
    assert reg.get("fd") is engine
    assert [i.name for i in reg.infos()] == ["fd"]


def test_plugin_without_hook_is_refused() -> None:
    reg = registry_module.Registry(load_entry_points=False)
    with pytest.raises(ad.AdswitchError, match="implements no adswitch_backend hook"):
        reg.register_plugin(types.ModuleType("empty"), name="empty")


def test_broken_entry_point_is_listed_unavailable_and_others_work(monkeypatch) -> None:
    good = plugin_module("goodplugin", FiniteDifferenceBackend())
    monkeypatch.setitem(sys.modules, "goodplugin", good)
    points = [
        EntryPoint("broken", "no_such_module_xyz", "adswitch.backends"),
        EntryPoint("fd", "goodplugin", "adswitch.backends"),
    ]
    monkeypatch.setattr(registry_module, "entry_points", lambda group: points)
    reg = registry_module.Registry()
    infos = {i.name: i for i in reg.infos()}
    assert not infos["broken"].available
    assert "ModuleNotFoundError" in (infos["broken"].reason or "")
    assert infos["fd"].available and infos["fd"].version == "test"
    with pytest.raises(ad.BackendUnavailableError, match="failed to load"):
        reg.get("broken")


def test_disabled_plugins_are_not_loaded(monkeypatch) -> None:
    monkeypatch.setitem(
        sys.modules, "goodplugin", plugin_module("goodplugin", FiniteDifferenceBackend())
    )
    points = [EntryPoint("fd", "goodplugin", "adswitch.backends")]
    monkeypatch.setattr(registry_module, "entry_points", lambda group: points)
    monkeypatch.setenv("ADSWITCH_DISABLE_PLUGINS", "fd")
    assert registry_module.Registry().names() == []


def test_version_errors_become_unavailable_with_install_hint() -> None:
    class Crashing(BackendBase):
        name = "crashing"
        install_hint = "pip install crashing"

        def version(self) -> str:
            raise RuntimeError("metadata broken")

    reg = registry_module.Registry(load_entry_points=False)
    reg.add(Crashing())
    (info,) = reg.infos()
    assert not info.available and "pip install crashing" in (info.reason or "")


def test_builtin_engines_are_registered_by_entry_point() -> None:
    names = {b.name for b in ad.backends()}
    assert {"tape", "torch", "jax", "autograd"} <= names


def test_import_adswitch_imports_no_engine() -> None:
    code = (
        "import sys, adswitch as ad\n"
        "ad.backends()\n"
        "import numpy as np\n"
        "ad.make_zero({'a': np.ones(2)})\n"
        "print(sorted(m for m in ('torch', 'jax', 'jaxlib', 'autograd') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_array_namespace_of_numpy_is_numpy() -> None:
    assert ad.array_namespace(np.ones(2), 3.0, None) is np
    assert ad.array_namespace() is np


def test_array_namespace_unknown_type_says_install() -> None:
    class Foreign:
        shape = (2,)
        dtype = np.dtype(float)

    Foreign.__module__ = "foreignlib"
    with pytest.raises(
        ad.AdswitchError, match="no installed engine owns arrays of type foreignlib"
    ):
        ad.array_namespace(Foreign())


def test_cli_backends_lists_engines() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "adswitch.cli", "backends"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "tape" in out.stdout and "available" in out.stdout
