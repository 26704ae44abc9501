"""The finite-difference engine."""
