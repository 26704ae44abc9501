"""adswitch_conformance."""
