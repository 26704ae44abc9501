"""Placeholder: the jax engine plugin is being written."""
