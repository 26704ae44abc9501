"""`adswitch conformance`: listing, filtering, reports, exit status; and the pytest plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from adswitch_conformance.cli import main
from fd_engine import FiniteDifferenceBackend
from test_conformance_runner import Skewed

import adswitch as ad


@pytest.fixture
def engines(fresh_registry: Any) -> Any:
    fresh_registry.add(FiniteDifferenceBackend())
    fresh_registry.add(Skewed())
    return fresh_registry


def test_list_prints_every_selected_case(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list", "-k", "seed003"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) >= 3 and all(line.startswith("mutation.seed003_") for line in lines)


def test_run_writes_json_and_markdown_and_exits_0(
    engines: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    argv = [
        "--backend",
        "fd",
        "-k",
        "basics.exp",
        "--json",
        str(out_json),
        "--markdown",
        str(out_md),
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    report = json.loads(out_json.read_text())
    assert [(r["backend"], r["case"], r["outcome"]) for r in report["records"]] == [
        ("fd", "basics.exp_log", "pass")
    ]
    assert set(report["records"][0]) >= {"backend", "case", "outcome", "seconds", "message"}
    assert out_md.read_text() == captured.out  # the matrix goes to stdout too
    assert "| `basics.exp_log` | basics | pass |" in captured.out
    assert "fd " in captured.err  # progress on stderr


def test_wrong_results_exit_1_and_are_named(
    engines: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--backend", "fd", "--backend", "skewed", "-k", "ops.dot"]) == 1
    captured = capsys.readouterr()
    assert "WRONG skewed ops.dot_closed_form" in captured.err
    assert "| **WRONG (total)** | | 0 | 1 |" in captured.out


def test_unknown_engine_is_reported(engines: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--backend", "nonesuch", "-k", "ops.dot"]) == 1
    assert "unknown engine 'nonesuch'" in capsys.readouterr().err


def test_default_runs_every_available_engine(
    engines: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["-k", "basics.exp_log"])
    available = [b.name for b in ad.backends() if b.available]
    header = capsys.readouterr().out.splitlines()[0]
    assert all(name in header for name in available)


def _pytest(*args: str) -> subprocess.CompletedProcess[str]:
    # The one-liner a third party runs: no ini file of ours (-c devnull), the plugin found
    # through its entry point.
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-c",
            os.devnull,
            "--pyargs",
            "adswitch_conformance",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_pytest_plugin_is_inert_without_the_option() -> None:
    result = _pytest()
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 skipped" in result.stdout


def test_pytest_plugin_runs_cases_on_an_engine() -> None:
    available = [b.name for b in ad.backends() if b.available]
    if not available:
        pytest.skip("no engine installed")
    result = _pytest("--adswitch-backend", available[0], "-k", "exp_log or output_vector")
    assert result.returncode == 0, result.stdout[-2000:]
    assert "2 passed" in result.stdout
