"""adswitch's finite-difference engine (``backend="fd"``): black-box code, cross-checks."""
