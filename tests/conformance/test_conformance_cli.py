"""`adswitch conformance`: listing, filtering, reports, exit status; and the pytest plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from adswitch_conformance.cli import LEGEND, main

import adswitch as ad
from adswitch.errors import BackendUnavailableError
from tests.conformance.test_conformance_runner import Skewed
from tests.support.fd_engine import FiniteDifferenceBackend


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


class NotInstalled(FiniteDifferenceBackend):
    """An engine whose plugin is there but whose library is not."""

    name = "missing"
    install_hint = 'pip install "adswitch[missing]"'

    def version(self) -> str:
        raise BackendUnavailableError(f"engine 'missing' is not installed: {self.install_hint}")


class Torch(FiniteDifferenceBackend):
    name = "torch"


@pytest.fixture
def more_engines(engines: Any) -> Any:
    engines.add(NotInstalled())
    engines.add(Torch())
    return engines


def test_unknown_engine_stops_before_running_anything(
    more_engines: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--backend", "fd", "--backend", "nonesuch"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no matrix: nothing ran
    assert LEGEND not in captured.err and "runs in" not in captured.err
    assert "unknown engine 'nonesuch'\n" in captured.err  # no far-fetched suggestion
    listing = "installed engines: 'fd', 'skewed', 'torch' (found but not installed: 'missing')"
    assert listing in captured.err


@pytest.mark.parametrize("typed", ["Torch", "pytorch", "TORCH", "torhc"])
def test_near_miss_suggests_the_engine(
    more_engines: Any, capsys: pytest.CaptureFixture[str], typed: str
) -> None:
    assert main(["--backend", typed]) == 2
    assert f"unknown engine {typed!r} (did you mean 'torch'?)" in capsys.readouterr().err


def test_engine_not_installed_stops_with_its_install_command(
    more_engines: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--backend", "missing", "-k", "ops.dot"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "engine 'missing' is unavailable" in captured.err
    assert 'pip install "adswitch[missing]"' in captured.err


def test_no_matching_case_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-k", "no-such-case-id"]) == 2
    assert "no case id contains 'no-such-case-id'" in capsys.readouterr().err


def test_progress_has_a_legend(engines: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--backend", "fd", "-k", "basics.exp_log"]) == 0
    err = capsys.readouterr().err
    assert err.startswith(LEGEND + "\n")
    for mark, outcome in ((".", "pass"), ("u", "unsupported"), ("W", "WRONG"), ("E", "ERROR")):
        assert f"{mark} {outcome}" in LEGEND


def test_help_is_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for markup in ("``", ":func:", ":class:", ":meth:", ".. "):
        assert markup not in text
    assert LEGEND in text and "exit status" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def _cli(*args: str, stdout: Any, stderr: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "adswitch.cli", "conformance", *args],
        stdout=stdout,
        stderr=stderr,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def _closed_pipe() -> int:
    """The write end of a pipe whose reader is already gone (``| head`` after its lines)."""
    read, write = os.pipe()
    os.close(read)
    return write


def test_list_into_a_closed_pipe_exits_quietly() -> None:
    write = _closed_pipe()
    try:
        process = _cli("--list", stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert err == ""  # no BrokenPipeError traceback


def test_run_into_a_closed_pipe_finishes_and_writes_its_report(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    write = _closed_pipe()
    try:
        process = _cli(
            "--backend", "tape", "-k", "basics.exp_log", "--json", str(report),
            stdout=write, stderr=subprocess.PIPE,
        )  # fmt: skip
    finally:
        os.close(write)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "Traceback" not in err and "tape ." in err
    assert json.loads(report.read_text())["records"][0]["outcome"] == "pass"


def test_progress_into_a_closed_pipe_still_prints_the_matrix() -> None:
    write = _closed_pipe()
    try:
        process = _cli(
            "--backend", "tape", "-k", "basics.exp_log", stdout=subprocess.PIPE, stderr=write
        )
    finally:
        os.close(write)
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 0
    assert "| `basics.exp_log` | basics | pass |" in out


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


def test_the_summary_comes_last_with_counts_and_every_non_pass_by_name(
    engines: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # capsys keeps the two streams apart; the order is the one a terminal shows, since
    # both are flushed at every write: the table (stdout) first, the verdict (stderr) after.
    assert main(["--backend", "fd", "--backend", "skewed", "-k", "ops.dot"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "verdict: FAIL (1 WRONG or ERROR)"
    counts = [line for line in err if line.startswith(("fd:", "skewed:"))]
    assert counts == [
        "fd: 1 pass, 0 unsupported, 0 WRONG, 0 ERROR",
        "skewed: 0 pass, 0 unsupported, 1 WRONG, 0 ERROR",
    ]
    wrong = [line for line in err if line.startswith("  WRONG skewed ops.dot_closed_form")]
    assert len(wrong) == 1 and err.index(wrong[0]) > err.index(counts[-1])


def test_the_suite_imports_only_the_public_api() -> None:
    # A third party's suite could use only these; so does the shipped one.
    import ast

    import adswitch_conformance

    allowed = {"adswitch", "adswitch.errors", "adswitch.spec"}
    found: dict[str, str] = {}
    for path in Path(adswitch_conformance.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] == "adswitch" and name not in allowed:
                    found[name] = path.name
    assert found == {}
