"""adswitch's Array API namespace for torch tensors, in ``array_api_compat``'s shape:
``array_api_compat.torch`` with float64 defaults and the exact ``pow`` (``namespace``),
adswitch's convention at kinks and ties for ``abs``, ``sqrt``, ``sort`` and the like
(``kinks``), and the ``linalg`` extension with derivative rules right, or refused,
where torch's are silently wrong (the package ``linalg``)."""
