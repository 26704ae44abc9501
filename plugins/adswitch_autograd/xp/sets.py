"""The Array API's set functions (``unique_*``): numpy's on plain arrays, refused when traced.

autograd has no derivative rule for them; given a traced array each raises
``UnsupportedError`` naming itself.
"""

from __future__ import annotations

import numpy as np

from .support import unsupported

__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]

unique_values = unsupported("unique_values", np.unique_values)
unique_all = unsupported("unique_all", np.unique_all)
unique_counts = unsupported("unique_counts", np.unique_counts)
unique_inverse = unsupported("unique_inverse", np.unique_inverse)
