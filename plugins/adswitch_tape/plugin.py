"""Placeholder: the tape engine plugin is being written."""
