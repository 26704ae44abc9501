"""Sparse Jacobians under an engine's own compiler (``jax.jit``): where the values cannot
be read, the result cannot be built on the host -- but an engine that decompresses on its
own device (the ``sparse_gather`` hook of ``adswitch.spec.Backend``) gathers the traced
pushforwards into its sparse matrix, with the pattern's indices as constants: the whole
sparse Jacobian is then one traced program.

Served: one differentiated bare array, one array output, ``check=False``, at depth 0, on
an engine whose compiler traces adswitch calls (``"jit"`` in ``Capabilities.under``) and
whose ``sparse_gather`` takes traced parts. Everything else is a ``UsageError`` naming the
fix, before ``f`` runs where it can be known then.
"""

from __future__ import annotations

from typing import Any

from adswitch.call import Started
from adswitch.errors import UsageError
from adswitch.plan import CONST
from adswitch.sparse.native import traced

__all__ = ["refuse", "refuse_check", "refuse_layout", "refuse_unserved"]

_OUTSIDE = (
    "call it outside the transform (jax.jit/vmap/grad, torch.func...: the host path, "
    "scipy.sparse or the engine's matrix), or use the dense ad.jacobian (no sparsity=) there"
)


def refuse(started: Started) -> bool:
    """Whether the call's differentiated leaves are traced (their values unreadable), or
    the ``UsageError`` of a sparse Jacobian that cannot be one there.

    Inside a differentiated adswitch function (depth > 0) it is refused whatever the
    leaves: a constant to the enclosing derivative. Traced, it
    needs an engine that decompresses traced parts on its own device and one plain bare
    array argument (the output's kind is known once ``f`` ran: :func:`refuse_layout`).
    """
    plan, engine = started.plan, started.engine
    leaves = [leaf for leaf, a in zip(plan.leaves, plan.active) if a]
    if started.depth:
        raise UsageError(
            "a sparse ad.jacobian (sparsity=...) inside a function adswitch differentiates "
            "would be a constant to the enclosing derivative (its matrix is assembled outside "
            "the differentiated program): call it outside differentiated functions, or use "
            "the dense ad.jacobian (no sparsity=) there."
        )
    if not any(traced(leaf) for leaf in leaves):
        return False
    if not serves_traced(engine):
        raise UsageError(
            f"a sparse ad.jacobian (sparsity=...) on {engine.name!r} builds its sparse "
            "matrices on the host, which no engine traces: under a trace only an engine that "
            "decompresses on its own device can give one (backend='jax' inside jax.jit); "
            f"{_OUTSIDE}."
        )
    plain = [p for p in plan.args if p.kind != CONST]
    if len(leaves) != 1 or len(plain) != 1 or plain[0].treedef is not None:
        raise UsageError(
            "a sparse ad.jacobian (sparsity=...) of several differentiated arguments (or a "
            "tree) builds its blocks on the host, which no engine traces: inside jax.jit pass "
            "one differentiated array (join the arguments into one, its pattern "
            f"ad.sparsity(f, x) of the joined function), or {_OUTSIDE}."
        )
    return True


def serves_traced(engine: Any) -> bool:
    """The engine decompresses traced parts: it has ``sparse_gather`` and runs inline
    under its own compiler (``"jit"`` in ``Capabilities.under``: jax). (torch has the hook
    too, but under ``torch.func`` its sparse tensors cannot be built from batched values.)
    """
    under = getattr(engine.capabilities, "under", ())
    return getattr(engine, "sparse_gather", None) is not None and "jit" in under


def refuse_check(operator: str = "ad.jacobian") -> UsageError:
    """``check=True`` under a trace: the comparison needs the dense values."""
    what = "Hessian" if operator == "ad.hessian" else "Jacobian"
    return UsageError(
        f"a sparse {operator} with check=True compares with the dense {what}'s values, "
        "which a trace (jax.jit/vmap/grad) does not have: check the pattern once outside "
        "the transform (check=True there), and call it with check=False inside."
    )


def refuse_layout() -> UsageError:
    """A tree (or several) output under a trace: blocks are cut on the host."""
    return UsageError(
        "a sparse ad.jacobian (sparsity=...) of a function returning a tree (or a tuple) "
        "builds its blocks on the host, which no engine traces: inside jax.jit return one "
        f"array (concatenate the outputs), or {_OUTSIDE}."
    )


def refuse_unserved(engine: Any) -> UsageError:
    """The engine's ``sparse_gather`` declined a traced part (several devices, too many
    entries for int32 places...)."""
    return UsageError(
        f"a sparse ad.jacobian (sparsity=...) under a trace: {engine.name!r} could not "
        "decompress these traced pushforwards on its device (sharded or too large), and the "
        f"host path cannot read traced values: {_OUTSIDE}."
    )
