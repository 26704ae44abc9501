"""Array-like arguments that numpy computes on differently from the engines' arrays, and
so are refused before ``f`` runs, on every engine, differentiated or ``Const``:

* ``np.ma.MaskedArray``: each engine computes on its data and drops the mask -- silently
  and differently (the tape's gradient fitted neither the masked nor the unmasked
  function; torch's was the unmasked one; jax and autograd raised raw errors). A
  ``Const`` masked array is refused too: the engines convert it to its data, so ``f``
  would see the masked entries' values where numpy would ignore them.
* ``np.matrix``: keeps two axes through every operation and makes ``*`` a matrix
  product, which the engines' arrays do not, so ``f`` would compute another function.
* pandas objects (``Series``, ``DataFrame``, ``Index``...): not arrays an engine traces;
  their labels and alignment would be lost. Detected by the type's module, so pandas is
  never imported here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError
from adswitch.leaves import describe

__all__ = ["foreign_array", "is_pandas"]

_EVERY_ENGINE = "adswitch refuses it on every engine, differentiated or as ad.Const"


def is_pandas(value: Any) -> bool:
    """Whether ``value`` is a pandas object (without importing pandas)."""
    return type(value).__module__.partition(".")[0] == "pandas"


def foreign_array(leaf: Any, where: str) -> UnsupportedError | None:
    """The refusal for a masked array, ``np.matrix`` or pandas object at key path
    ``where`` (e.g. ``args[0]['W']``), naming the fix; ``None`` for anything else."""
    if isinstance(leaf, np.ma.MaskedArray):
        return UnsupportedError(
            f"{where} is a numpy masked array (np.ma.MaskedArray of shape {leaf.shape}); "
            f"{_EVERY_ENGINE}: the engines compute on its data and would silently drop the "
            "mask (a differentiated one's gradient would be neither the masked nor the "
            "unmasked function's; f would see a Const one's masked entries' values). "
            "Fix: pass x.filled(value) (masked entries replaced by value) or np.asarray(x) "
            "(the data, the mask dropped); to keep the mask, pass it too, "
            "ad.Const(np.ma.getmaskarray(x)), and apply it in f with xp.where."
        )
    if isinstance(leaf, np.matrix):
        return UnsupportedError(
            f"{where} is an np.matrix of shape {leaf.shape}; {_EVERY_ENGINE}: np.matrix "
            "keeps two axes through every operation and makes `*` a matrix product, which "
            "the engines' arrays do not, so f would compute another function than on numpy. "
            "Fix: pass np.asarray(x), and write matrix products with `@`."
        )
    if is_pandas(leaf):
        return UnsupportedError(
            f"{where} is {describe(leaf)}; {_EVERY_ENGINE}: pandas objects are not arrays "
            "the engines trace (their index and labels would be lost). Fix: pass "
            "s.to_numpy() (a DataFrame: df.to_numpy(), or a dict of columns, "
            "{name: df[name].to_numpy() for name in df})."
        )
    return None
