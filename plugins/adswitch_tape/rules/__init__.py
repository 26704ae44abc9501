"""The rules layer: the primitives, their gradient rules and the rules' helpers.

``primitives`` defines every primitive (its numpy code, what its tape entries keep);
``helpers`` holds what the rules share (shapes, ``unbroadcast``, ``expand``); the tables
``elementwise``, ``shapes``, ``linalg`` and ``reductions`` give each primitive its rules
with ``defvjp``. Importing any module of this package registers every rule.
"""

from . import elementwise, linalg, reductions, shapes

__all__ = ["elementwise", "linalg", "reductions", "shapes"]
