"""Reports: one JSON record per (engine, case), and a cases x engines matrix with totals."""

from __future__ import annotations

import json
import platform
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .case import FAMILIES, Case
from .runner import OUTCOMES, Record

__all__ = ["to_json", "write_json", "matrix_markdown", "summary_markdown", "totals"]

_CELL = {"pass": "pass", "unsupported": "unsupported", "WRONG": "**WRONG**", "ERROR": "**ERROR**"}


def totals(records: Sequence[Record], backend: str) -> Counter[str]:
    """How many cases of each outcome ``backend`` got.

    Example:
        >>> totals([Record("tape", "a", "pass", 0.1)], "tape")["pass"]
        1
    """
    return Counter(r.outcome for r in records if r.backend == backend)


def to_json(records: Sequence[Record], versions: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON report: metadata, per-engine totals and one record per (engine, case).

    Example:
        >>> to_json([Record("tape", "a", "pass", 0.1)])["records"][0]["outcome"]
        'pass'
    """
    backends = list(dict.fromkeys(r.backend for r in records))
    return {
        "python": platform.python_version(),
        "versions": versions or {},
        "totals": {b: {o: totals(records, b)[o] for o in OUTCOMES} for b in backends},
        "seconds": {
            b: round(sum(r.seconds for r in records if r.backend == b), 3) for b in backends
        },
        "records": [{**r.as_dict(), "seconds": round(r.seconds, 4)} for r in records],
    }


def write_json(
    path: str | Path, records: Sequence[Record], versions: dict[str, str] | None = None
) -> None:
    """Write :func:`to_json` to ``path``.

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "r.json")
        >>> write_json(path, [Record("tape", "a", "pass", 0.1)])
        >>> '"backend": "tape"' in open(path).read()
        True
    """
    Path(path).write_text(json.dumps(to_json(records, versions), indent=2) + "\n")


def matrix_markdown(
    records: Sequence[Record], cases: Sequence[Case], versions: dict[str, str] | None = None
) -> str:
    """A Markdown table, one row per case and one column per engine, with totals,
    ready to embed in the README.

    Example:
        >>> from adswitch_conformance.cases import catalogue
        >>> case = catalogue()[0]
        >>> table = matrix_markdown([Record("tape", case.id, "WRONG", 0.1)], [case])
        >>> "**WRONG**" in table.splitlines()[2]
        True
    """
    backends = list(dict.fromkeys(r.backend for r in records))
    outcome = {(r.backend, r.case): r.outcome for r in records}
    versions = versions or {}
    head = [f"{b} {versions[b]}" if versions.get(b) else b for b in backends]
    lines = ["| case | family | " + " | ".join(head) + " |", "|---|---|" + "---|" * len(backends)]
    for case in cases:
        if not any((b, case.id) in outcome for b in backends):
            continue
        cells = [_CELL.get(outcome.get((b, case.id), ""), "") for b in backends]
        lines.append(f"| `{case.id}` | {case.family} | " + " | ".join(cells) + " |")
    for name in OUTCOMES:
        cells = [str(totals(records, b)[name]) for b in backends]
        lines.append(f"| **{name} (total)** | | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(counts: Counter[str]) -> str:
    parts = [f"{counts[name]} {name}" for name in OUTCOMES if counts[name]]
    return ", ".join(parts) if parts else "-"


def summary_markdown(records: Sequence[Record], cases: Sequence[Case]) -> str:
    """A compact table, one row per family: outcome counts per engine.

    Example:
        >>> from adswitch_conformance.cases import catalogue
        >>> case = catalogue()[0]
        >>> print(summary_markdown([Record("tape", case.id, "pass", 0.1)], [case]))
        | family | tape |
        |---|---|
        | basics (1) | 1 pass |
        <BLANKLINE>
    """
    backends = list(dict.fromkeys(r.backend for r in records))
    lines = ["| family | " + " | ".join(backends) + " |", "|---|" + "---|" * len(backends)]
    for family in FAMILIES:
        ids = {c.id for c in cases if c.family == family}
        if not ids:
            continue
        cells = [
            _cell(Counter(r.outcome for r in records if r.backend == b and r.case in ids))
            for b in backends
        ]
        lines.append(f"| {family} ({len(ids)}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
