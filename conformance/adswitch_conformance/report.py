"""Reports: one JSON record per (engine, mode, case), and a cases x engines matrix with
totals. A column is one engine in one mode: ``tape`` for plain calls, ``tape (prepared)``
for calls through ``ad.prepare``."""

from __future__ import annotations

import json
import platform
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .case import FAMILIES, Case
from .runner import OUTCOMES, PLAIN, PREPARED, Record

__all__ = [
    "column",
    "differences",
    "to_json",
    "write_json",
    "matrix_markdown",
    "summary_markdown",
    "totals",
]

_CELL = {"pass": "pass", "unsupported": "unsupported", "WRONG": "**WRONG**", "ERROR": "**ERROR**"}


def column(record: Record) -> str:
    """The report column of ``record``: its engine, with `` (prepared)`` in that mode.

    Example:
        >>> column(Record("tape", "a", "pass", 0.1, mode="prepared"))
        'tape (prepared)'
    """
    return record.backend if record.mode == PLAIN else f"{record.backend} ({record.mode})"


def _columns(records: Sequence[Record]) -> list[tuple[str, str, str]]:
    """(label, engine, mode) per column, in the order the records came."""
    seen = dict.fromkeys((column(r), r.backend, r.mode) for r in records)
    return list(seen)


def totals(records: Sequence[Record], backend: str, mode: str | None = None) -> Counter[str]:
    """How many cases of each outcome ``backend`` got (in ``mode``; ``None``: any mode).

    Example:
        >>> totals([Record("tape", "a", "pass", 0.1)], "tape")["pass"]
        1
    """
    return Counter(r.outcome for r in records if r.backend == backend and mode in (None, r.mode))


def differences(records: Sequence[Record]) -> list[tuple[str, str, str, str]]:
    """``(engine, case, plain outcome, prepared outcome)`` wherever an (engine, case) run
    in both modes got different outcomes.

    Example:
        >>> differences([Record("tape", "a", "pass", 0.1),
        ...              Record("tape", "a", "WRONG", 0.1, mode="prepared")])
        [('tape', 'a', 'pass', 'WRONG')]
    """
    prepared = {(r.backend, r.case): r.outcome for r in records if r.mode == PREPARED}
    return [
        (r.backend, r.case, r.outcome, prepared[r.backend, r.case])
        for r in records
        if r.mode == PLAIN
        and (r.backend, r.case) in prepared
        and prepared[r.backend, r.case] != r.outcome
    ]


def to_json(records: Sequence[Record], versions: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON report: metadata, the modes run, totals and seconds per column, one
    record per (engine, mode, case), and (both modes run) where their outcomes differ.

    Example:
        >>> report = to_json([Record("tape", "a", "pass", 0.1)])
        >>> report["records"][0]["outcome"], report["records"][0]["mode"], report["modes"]
        ('pass', 'plain', ['plain'])
    """
    columns = _columns(records)
    report: dict[str, Any] = {
        "python": platform.python_version(),
        "versions": versions or {},
        "modes": list(dict.fromkeys(r.mode for r in records)),
        "totals": {
            label: {o: totals(records, b, m)[o] for o in OUTCOMES} for label, b, m in columns
        },
        "seconds": {
            label: round(sum(r.seconds for r in records if column(r) == label), 3)
            for label, _, _ in columns
        },
        "records": [{**r.as_dict(), "seconds": round(r.seconds, 4)} for r in records],
    }
    if len(report["modes"]) > 1:
        report["differences"] = [
            {"backend": b, "case": c, PLAIN: plain, PREPARED: prep}
            for b, c, plain, prep in differences(records)
        ]
    return report


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
    """A Markdown table, one row per case and one column per engine (and mode, see
    :func:`column`), with totals, ready to embed in the README.

    Example:
        >>> from adswitch_conformance.cases import catalogue
        >>> case = catalogue()[0]
        >>> table = matrix_markdown([Record("tape", case.id, "WRONG", 0.1)], [case])
        >>> "**WRONG**" in table.splitlines()[2]
        True
    """
    columns = _columns(records)
    outcome = {(column(r), r.case): r.outcome for r in records}
    versions = versions or {}
    head = [
        column(Record(f"{b} {versions[b]}" if versions.get(b) else b, "", "", 0.0, mode=m))
        for _, b, m in columns
    ]
    lines = ["| case | family | " + " | ".join(head) + " |", "|---|---|" + "---|" * len(columns)]
    for case in cases:
        if not any((label, case.id) in outcome for label, _, _ in columns):
            continue
        cells = [_CELL.get(outcome.get((label, case.id), ""), "") for label, _, _ in columns]
        lines.append(f"| `{case.id}` | {case.family} | " + " | ".join(cells) + " |")
    for name in OUTCOMES:
        cells = [str(totals(records, b, m)[name]) for _, b, m in columns]
        lines.append(f"| **{name} (total)** | | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(counts: Counter[str]) -> str:
    parts = [f"{counts[name]} {name}" for name in OUTCOMES if counts[name]]
    return ", ".join(parts) if parts else "-"


def summary_markdown(records: Sequence[Record], cases: Sequence[Case]) -> str:
    """A compact table, one row per family: outcome counts per engine (and mode).

    Example:
        >>> from adswitch_conformance.cases import catalogue
        >>> case = catalogue()[0]
        >>> print(summary_markdown([Record("tape", case.id, "pass", 0.1)], [case]))
        | family | tape |
        |---|---|
        | basics (1) | 1 pass |
        <BLANKLINE>
    """
    columns = _columns(records)
    lines = [
        "| family | " + " | ".join(label for label, _, _ in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for family in FAMILIES:
        ids = {c.id for c in cases if c.family == family}
        if not ids:
            continue
        cells = [
            _cell(Counter(r.outcome for r in records if column(r) == label and r.case in ids))
            for label, _, _ in columns
        ]
        lines.append(f"| {family} ({len(ids)}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
