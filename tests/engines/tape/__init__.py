"""The built-in tape engine only."""
