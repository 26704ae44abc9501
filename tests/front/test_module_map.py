"""``docs/modules.md`` lists every module with its concern, and is current."""

from __future__ import annotations

from tests.support.module_map import PAGE, render


def test_the_module_map_is_current() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/modules.md is stale: run `python -m tests.support.module_map` from the "
        "repository root"
    )


def test_every_module_says_its_concern() -> None:
    empty = [line for line in render().splitlines() if line.endswith("|  |")]
    assert empty == [], f"modules without a docstring: {empty}"
