"""adswitch_torch."""
