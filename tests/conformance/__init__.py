"""The shipped conformance suite's own machinery (runner, CLI, references, catalogue)."""
