"""The rules layer: the primitives, their gradient and tangent rules, the rules' helpers.

``primitives`` defines every primitive (its numpy code, what its tape entries keep;
``indexing`` holds the indexing primitives' code and what they know of keys);
``helpers`` holds what the rules share (shapes, ``unbroadcast``, ``expand``, ``align``,
the batch axes); the tables ``elementwise``, ``shapes``, ``linalg`` and ``reductions``
give each primitive its gradient rules with ``defvjp``, ``forward_elementwise`` and
``forward_arrays`` its tangent rule with ``defjvp``; ``matrix_primitives`` holds the
``linalg`` factorizations and solvers, ``matrix_solvers`` and ``matrix_factorizations``
both kinds of their rules. Importing any module of this
package registers every rule.
"""

from . import (
    elementwise,
    forward_arrays,
    forward_elementwise,
    linalg,
    matrix_factorizations,
    matrix_solvers,
    reductions,
    shapes,
)

__all__ = [
    "elementwise", "forward_arrays", "forward_elementwise", "linalg", "matrix_factorizations",
    "matrix_solvers", "reductions", "shapes",
]  # fmt: skip
