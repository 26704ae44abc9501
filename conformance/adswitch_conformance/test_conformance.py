"""The conformance suite as pytest tests (collected by ``pytest --pyargs adswitch_conformance``;
parametrized by :mod:`adswitch_conformance.pytest_plugin`)."""

from __future__ import annotations

from typing import Any

import pytest

from adswitch_conformance.runner import PASS, PLAIN, UNSUPPORTED, ReferenceCache, run_case

_CACHE = ReferenceCache()  # references computed once per case, shared by every engine


def test_case(adswitch_case: Any) -> None:
    backend, case, mode = adswitch_case
    record = run_case(case, backend, cache=_CACHE, mode=mode)
    where = backend if mode == PLAIN else f"{backend} ({mode})"
    if record.outcome == UNSUPPORTED:
        pytest.xfail(f"unsupported on {where}: {record.message}")
    if record.outcome != PASS:
        pytest.fail(f"{record.outcome} on {where}: {record.message}", pytrace=False)
