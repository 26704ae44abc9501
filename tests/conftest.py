"""Shared fixtures: a finite-difference engine and a fresh registry per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adswitch import registry
from tests.support.fd_engine import FiniteDifferenceBackend


@pytest.fixture
def fd() -> FiniteDifferenceBackend:
    return FiniteDifferenceBackend()


@pytest.fixture
def fresh_registry() -> Iterator[registry.Registry]:
    """A registry that loads no entry point, installed as the default for one test."""
    fresh = registry.Registry(load_entry_points=False)
    previous = registry.set_default_registry(fresh)
    try:
        yield fresh
    finally:
        registry.set_default_registry(previous)
