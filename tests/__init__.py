"""adswitch's tests, by concern (see tests/README.md)."""
