"""Placeholder: the torch engine plugin is being written."""
