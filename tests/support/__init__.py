"""Shared test helpers (no tests): the finite-difference engine and oracles, case tables,
subprocess children."""
