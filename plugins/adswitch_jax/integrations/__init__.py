"""adswitch's hooks onto jax's own mechanisms and libraries: the user rules as
``jax.custom_vjp`` / ``jax.custom_jvp`` and ``stop_gradient`` (``custom``), host rules
through ``jax.pure_callback`` (``host``), ``jax.checkpoint`` (``checkpoint``), jax's pytree
nodes as containers of adswitch's tree walker (``pytrees``), and flax ``nnx`` modules, whose
writes into Variables would be lost (``nnx``)."""
