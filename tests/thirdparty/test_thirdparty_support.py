"""Harness for the third-party library tests (``test_thirdparty_scipy.py``,
``test_thirdparty_sklearn.py``): each library runs in a subprocess of its own.

scipy reads ``SCIPY_ARRAY_API`` once, when it is first imported, and
``sklearn.set_config(array_api_dispatch=True)`` is global state, so neither can be
switched on inside the pytest process without depending on, or leaking into, the other
tests. A test module therefore runs *itself* as a script (``python test_thirdparty_x.py
OUT``) with ``SCIPY_ARRAY_API=1``: that worker imports the library, takes the gradient
of every case on every engine, computes central finite differences of the library's own
numpy call, and writes it all to ``OUT`` (JSON). The test module's pytest side never
imports the library; it checks the worker's numbers against closed forms computed here
in plain numpy and against the finite differences.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import adswitch as ad
from tests.support.fd_oracle import central_fd

__all__ = [
    "ENGINES", "Loss", "check_close", "cell_params", "run_worker", "worker_main",
]  # fmt: skip

#: The engines every case runs on; ``torch-copy_saved`` is torch with
#: ``TorchBackend(copy_saved=True)``, the documented way around torch's refusal of
#: in-place writes into values it saved.
ENGINES = ("tape", "torch", "jax", "autograd")
COPY_SAVED = "torch-copy_saved"

#: A case for the worker: the scalar loss (written against ``ad.array_namespace``) and
#: its input; ``nested`` losses call ``ad.gradient`` inside, so their finite differences
#: are taken in the test (of the closed-form inner gradient) instead of in the worker.
Loss = tuple[Callable[[Any], Any], np.ndarray, bool]

_WORKER_TIMEOUT_S = 600


def run_worker(script: str, out_dir: Path) -> dict[str, Any]:
    """Run ``script`` as the worker (``SCIPY_ARRAY_API=1``) and return what it wrote."""
    out = out_dir / "results.json"
    env = {**os.environ, "SCIPY_ARRAY_API": "1"}
    # the worker imports the shared helpers as ``tests.support...``: the repository root
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, script, str(out)],
        capture_output=True,
        text=True,
        timeout=_WORKER_TIMEOUT_S,
        env=env,
    )
    if done.returncode != 0 or not out.exists():
        raise AssertionError(f"the worker {script} failed:\n{done.stdout}\n{done.stderr}")
    results: dict[str, Any] = json.loads(out.read_text())
    return results


def _engine_available(engine: str) -> bool:
    module = {"tape": "numpy", "torch": "torch", "jax": "jax", "autograd": "autograd"}[
        engine.partition("-")[0]
    ]
    return importlib.util.find_spec(module) is not None


def _backend(engine: str) -> Any:
    if engine == COPY_SAVED:
        from adswitch_torch import TorchBackend

        return TorchBackend(copy_saved=True)
    return engine


def _attempt(loss: Callable[[Any], Any], x0: np.ndarray, engine: str) -> dict[str, Any]:
    if not _engine_available(engine):
        return {"unavailable": True}
    try:
        grad = ad.gradient(loss, x0.copy(), backend=_backend(engine))[0]
    except Exception as exc:
        return {
            "error": type(exc).__name__,
            "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc))[-4000:],
        }
    return {"grad": np.asarray(grad, dtype=np.float64).tolist()}


def worker_main(losses: Callable[[], dict[str, Loss]], out: str) -> None:
    """The worker's body: every case on every engine (and torch with ``copy_saved``)."""
    warnings.simplefilter("ignore")  # libraries' and engines' notes, not results
    results: dict[str, Any] = {}
    for name, (loss, x0, nested) in losses().items():
        entry: dict[str, Any] = {}
        entry["fd"] = None if nested else central_fd(loss, x0).tolist()
        for engine in (*ENGINES, COPY_SAVED):
            entry[engine] = _attempt(loss, x0, engine)
        results[name] = entry
    Path(out).write_text(json.dumps(results))


def cell_params(
    expected: dict[str, dict[str, str]], known_wrong: dict[tuple[str, str], str]
) -> list[Any]:
    """``(case, engine, outcome)`` parameters; a cell in ``known_wrong`` (a number that is
    off, not an error) is a strict xfail with the reason, so that a fix is noticed."""
    params = []
    for case, row in expected.items():
        for engine in ENGINES:
            marks = []
            if (case, engine) in known_wrong:
                marks.append(pytest.mark.xfail(strict=True, reason=known_wrong[case, engine]))
            cell = pytest.param(case, engine, row[engine], id=f"{case}-{engine}", marks=marks)
            params.append(cell)
    return params


def check_close(got: Any, want: np.ndarray, *, rtol: float, atol: float, what: str) -> None:
    """``got`` (nested lists from JSON) equals ``want``, element by element."""
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def cell_of(results: dict[str, Any], case: str, engine: str) -> dict[str, Any]:
    """What the worker recorded for ``case`` on ``engine`` (skips an engine not installed)."""
    cell: dict[str, Any] = results[case][engine]
    if cell.get("unavailable"):
        pytest.skip(f"{engine} is not installed")
    return cell


def fd_of(
    results: dict[str, Any], case: str, nested_fd: dict[str, Callable[[], Any]]
) -> np.ndarray:
    """The worker's central differences of the library's own numpy call for ``case`` --
    or, for a nested case (a derivative inside), ``nested_fd[case]()`` computed here."""
    fd = results[case]["fd"]
    return np.asarray(nested_fd[case]() if fd is None else fd)
