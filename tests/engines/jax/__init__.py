"""The jax engine only (jit, vmap, caches, pytrees, nnx...)."""
