"""The case catalogue: one module per family, `cases_<family>.py`."""

from __future__ import annotations

import dataclasses

from .case import Case

__all__ = ["catalogue"]


def catalogue() -> list[Case]:
    """Every case, family by family (imports the family modules on first use).

    Example:
        >>> len(catalogue()) >= 60
        True
    """
    from . import (
        cases_activity,
        cases_basics,
        cases_checkpoint,
        cases_host,
        cases_hygiene,
        cases_kinks,
        cases_linalg,
        cases_linalg_degenerate,
        cases_linalg_factorizations,
        cases_mutation,
        cases_nested,
        cases_operators,
        cases_operators_matrices,
        cases_operators_nested,
        cases_ops,
        cases_rules,
        cases_sparse,
        cases_sparse_hessian,
        cases_ties,
        cases_trees,
    )

    cases: list[Case] = []
    # Every case of the linalg family needs the namespace's linalg extension (an engine
    # without it refuses with UnsupportedError, as declared).
    linalg = {cases_linalg, cases_linalg_factorizations, cases_linalg_degenerate}
    for module in (
        cases_basics,
        cases_ops,
        cases_trees,
        cases_activity,
        cases_ties,
        cases_kinks,
        cases_nested,
        cases_mutation,
        cases_hygiene,
        cases_operators,
        cases_operators_matrices,
        cases_operators_nested,
        cases_linalg,
        cases_linalg_factorizations,
        cases_linalg_degenerate,
        cases_rules,
        cases_checkpoint,
        cases_host,
        cases_sparse,
        cases_sparse_hessian,
    ):
        if module in linalg:
            cases.extend(
                dataclasses.replace(c, requires=("linalg", *c.requires)) for c in module.CASES
            )
        else:
            cases.extend(module.CASES)
    return cases
