"""The Array API namespace's functions over autograd, one module per section of the
standard (``creation``, ``dtypes``, ``elementwise``, ``indexing``, ``linear_algebra``,
``manipulation``, ``searching``, ``sets``, ``sorting``, ``statistics``, ``utility``), the
extensions ``linalg`` (a package: the namespace and its rules) and ``fft``, scipy's
``special``, and what they share (``support``; ``power`` and ``kinks``: adswitch's
derivative conventions where autograd's rules differ). ``adswitch_autograd.namespace``
gathers them."""
