"""The conformance suite as pytest tests (collected by ``pytest --pyargs adswitch_conformance``;
parametrized by :mod:`adswitch_conformance.pytest_plugin`)."""

from __future__ import annotations

from typing import Any

import pytest

from adswitch_conformance.runner import PASS, UNSUPPORTED, ReferenceCache, run_case

_CACHE = ReferenceCache()  # references computed once per case, shared by every engine


def test_case(adswitch_case: Any) -> None:
    backend, case = adswitch_case
    record = run_case(case, backend, cache=_CACHE)
    if record.outcome == UNSUPPORTED:
        pytest.xfail(f"unsupported on {backend}: {record.message}")
    if record.outcome != PASS:
        pytest.fail(f"{record.outcome} on {backend}: {record.message}", pytrace=False)
