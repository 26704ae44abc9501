"""The rules layer: the primitives, their gradient and tangent rules, the rules' helpers.

``primitives`` defines every primitive (its numpy code, what its tape entries keep;
``indexing`` holds the indexing primitives' code and what they know of keys);
``helpers`` holds what the rules share (shapes, ``unbroadcast``, ``expand``, ``align``,
the batch axes); the tables ``elementwise``, ``shapes`` and ``reductions`` give each
primitive its gradient rules with ``defvjp``, ``forward_elementwise`` and
``forward_arrays`` its tangent rule with ``defjvp``; ``linalg/`` holds the matrix rules
(``products``: the matrix products' gradient rules; ``primitives``: the ``linalg``
factorizations and solvers, ``solvers`` and ``factorizations`` both kinds of their
rules). Importing any module of this package registers every rule.
"""

from . import elementwise, forward_arrays, forward_elementwise, reductions, shapes
from .linalg import factorizations, products, solvers

__all__ = [
    "elementwise", "factorizations", "forward_arrays", "forward_elementwise", "products",
    "reductions", "shapes", "solvers",
]  # fmt: skip
