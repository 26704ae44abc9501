"""adswitch_autograd."""
