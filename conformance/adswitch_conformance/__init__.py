"""adswitch's conformance suite: documented edge cases, checked on every engine.

Run it with ``adswitch conformance`` (see :mod:`adswitch_conformance.cli`), from pytest
with ``pytest --pyargs adswitch_conformance --adswitch-backend NAME``, or from Python::

    from adswitch_conformance import catalogue, run_suite
    records = run_suite(catalogue(), ["tape"])

The names below load on first use: this package also hosts a pytest plugin that every
pytest run imports, and that must stay cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Case",
    "DEFAULT_TOL",
    "FAMILIES",
    "catalogue",
    "run_case",
    "run_suite",
    "Record",
    "OUTCOMES",
    "PASS",
    "UNSUPPORTED",
    "WRONG",
    "ERROR",
    "PLAIN",
    "PREPARED",
]

_HOME = {
    "Case": ".case",
    "DEFAULT_TOL": ".case",
    "FAMILIES": ".case",
    "catalogue": ".cases",
    "run_case": ".runner",
    "run_suite": ".runner",
    "Record": ".runner",
    "OUTCOMES": ".runner",
    "PASS": ".runner",
    "UNSUPPORTED": ".runner",
    "WRONG": ".runner",
    "ERROR": ".runner",
    "PLAIN": ".runner",
    "PREPARED": ".runner",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
