"""``xp.linalg`` for jax arrays: ``jax.numpy.linalg`` with derivative rules that are right
-- or an ``UnsupportedError`` that says the fix -- where jax's own are silently wrong
(``namespace`` assembles it): ``eigh`` and ``eigvalsh`` at repeated eigenvalues (``eigh``),
``svd``, ``svdvals`` and the spectral ``matrix_norm`` orders at repeated and zero singular
values (``svd``), ``slogdet``, ``qr`` and ``vector_norm`` where jax's rules give ``inf``,
NaN or ``1/eps`` (``guarded``); what they share: the tolerance telling repeated values from
distinct ones and its masks (``spectra``), and the refusals decided inside compiled
programs and raised on the host (``checks``)."""
