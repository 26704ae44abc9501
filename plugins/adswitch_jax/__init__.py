"""adswitch_jax: the jax engine plugin for adswitch (backend name ``"jax"``).

See :mod:`adswitch_jax.plugin` for what it does and its limitations. Importing this package
does not import jax.
"""

from adswitch_jax.notices import JaxFallbackWarning

__all__ = ["JaxFallbackWarning"]
