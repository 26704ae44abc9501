"""The example third-party engine (examples/adswitch-dual)."""
