"""adswitch_tape."""
