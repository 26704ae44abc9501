"""adswitch_jax."""
