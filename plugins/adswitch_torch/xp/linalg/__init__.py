"""``xp.linalg`` for torch tensors: ``array_api_compat.torch.linalg`` with derivative
rules that are right -- or an ``UnsupportedError`` that says the fix -- where torch's own
are silently wrong (``namespace`` assembles it): ``det`` at singular matrices (``det``),
``eigh`` and ``eigvalsh`` at repeated eigenvalues (``eigh``), ``svd``, ``svdvals`` and
the spectral ``matrix_norm`` orders at repeated and zero singular values (``svd``, the
torch Functions and where they take over; ``svd_derivatives``, the gradient and tangent
formulas at those degenerate points), ``slogdet``, ``qr`` and ``cholesky`` where torch's
rules give ``inf``, NaN or ``1/eps`` (``guarded``); and what they share: the tolerance
telling repeated values from distinct ones, masked gaps, the vmap rule and the refusals
(``support``)."""
