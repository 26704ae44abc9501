"""The autograd plugin's registration: lazy import, honest metadata, clear unavailability."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("autograd")

import adswitch as ad


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_plugin_module_does_not_import_autograd() -> None:
    out = _run(
        """
        import sys
        import adswitch_autograd.plugin as p
        backend = p.adswitch_backend()
        print(backend.version(), backend.owns(1.0), "autograd" in sys.modules)
        """
    )
    version, owns, imported = out.split()
    assert version.count(".") >= 1 and owns == "False" and imported == "False"


def test_missing_autograd_gives_install_hint() -> None:
    out = _run(
        """
        import importlib.abc, importlib.metadata, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "autograd" or name.startswith("autograd."):
                    raise ImportError(f"No module named {name!r}")
                return None

        sys.meta_path.insert(0, Block())
        real = importlib.metadata.version
        def version(name):
            if name == "autograd":
                raise importlib.metadata.PackageNotFoundError(name)
            return real(name)
        importlib.metadata.version = version

        from adswitch.errors import BackendUnavailableError
        from adswitch.spec import CallInfo
        from adswitch_autograd.plugin import AutogradBackend
        backend = AutogradBackend()
        for call in (backend.version, lambda: backend.value_and_grad(None, [], [], CallInfo()),
                     lambda: backend.namespace([])):
            try:
                call()
            except BackendUnavailableError as exc:
                assert 'pip install "adswitch[autograd]"' in str(exc), exc
                # the reason is in the message; no chained import traceback in front of it
                assert isinstance(exc, ImportError) and exc.__suppress_context__
                print("ok")
        """
    )
    assert out.split() == ["ok", "ok", "ok"]


def test_listed_with_honest_capabilities() -> None:
    (info,) = [b for b in ad.backends() if b.name == "autograd"]
    assert info.available and info.install_hint == 'pip install "adswitch[autograd]"'
    caps = info.capabilities
    assert caps is not None
    assert caps.nested and caps.mutation and caps.fresh_buffer_writes and caps.numpy_operands
    assert caps.devices == ("cpu",) and caps.array_kinds == ("numpy",)


def test_owns_autograd_boxes_only() -> None:
    from adswitch_autograd.plugin import AutogradBackend
    from autograd import grad

    backend = AutogradBackend()
    seen: list[bool] = []

    def f(x: object) -> object:
        seen.append(backend.owns(x))
        return x * 2.0  # type: ignore[operator]

    grad(f)(1.0)
    assert seen == [True]
    assert not backend.owns(np.ones(2)) and not backend.owns(1.0)
