"""What adswitch's Array API namespace for jax (:mod:`adswitch_jax.namespace`) changes in
``jax.numpy``: adswitch's convention at kinks and ties for ``abs``, ``sort``, ``pow``
(``kinks``, over the seeded product that keeps zero seeds at 0 where a slope is infinite:
``seeded``), and the ``linalg`` extension with derivative rules right, or refused, where
jax's are silently wrong (the package ``linalg``)."""
