"""The Array API namespace over ``autograd.numpy``, for autograd's traced arrays.

``ArrayBox.__array_namespace__`` returns ``autograd.numpy``, which has numpy's names
(``concatenate``, ``transpose``, ``arcsin``...) rather than the standard's. This module
is what ``ad.array_namespace(x)`` returns for a traced ``x`` under the ``"autograd"``
engine: the standard's names, each mapped onto an autograd-differentiable primitive (or
a composition of them). Functions autograd cannot differentiate raise
``UnsupportedError`` naming the function when given a traced array, and work as numpy
does on plain arrays. Every function also accepts plain numpy arrays and Python scalars,
which are constants. Inside an adswitch trace the creation functions (``zeros``,
``ones``, ``empty``, ``full``, their ``*_like`` forms, ``asarray(..., copy=True)``) return
traced arrays that may be written (``buf[i] = v``; see ``writes.py``).

Non-smooth points follow autograd: ``abs``'s and ``sign``'s derivative at 0 is 0;
``max``/``min`` reductions share the gradient equally among tied maxima; ``maximum``/
``minimum`` split it half and half on ties; ``clip`` passes the gradient where the value
is strictly inside the bounds and 0 where it is clipped or sits on a bound. ``prod`` is
exact at zero elements (autograd's own rule gives ``nan`` there).

``pow`` (and ``**`` on traced values inside adswitch calls) is exact for nested
derivatives in a traced exponent, where autograd's own rule is not (see :mod:`.xp.power`).

This module only gathers the names; each section of the standard has its own module,
where its functions are defined: ``xp.creation``, ``xp.dtypes`` (data types and data type
functions), ``xp.elementwise``, ``xp.indexing``, ``xp.linear_algebra``,
``xp.manipulation``, ``xp.searching``, ``xp.sets``, ``xp.sorting``, ``xp.statistics`` and
``xp.utility``; constants and inspection are here. The extensions are sub-namespaces:
``xp.linalg`` (every function differentiated, to any order, with the
degenerate points documented there) and ``xp.fft``; ``xp.special``
(not the standard's) is where scipy's Array API dispatch looks for
``expit``, ``logit``, ``erf``... A name this namespace lacks (``xp.arccos``,
``xp.linalg.norm``: numpy's spellings) raises ``adswitch.numpy_names.MissingFunctionError``
naming the standard's equivalent -- an ``UnsupportedError`` that is also an
``AttributeError``, so ``hasattr(xp, name)`` stays False.

Inside an adswitch trace traced arrays are the engine's ``GuardedBox`` es, whose
``__array_namespace__`` is this module (autograd's own boxes answer ``autograd.numpy``),
and the creation functions -- ``asarray`` of a numpy constant included -- make floating
arrays of that type too, so code that asks ``array_api_compat.array_namespace`` of its
arrays sees one namespace. Integer and boolean results stay numpy arrays (no gradient).

Example:
    >>> import numpy as np
    >>> import adswitch_autograd.namespace as xp
    >>> xp.concat([xp.asarray([1.0]), xp.ones(2)])
    array([1., 1., 1.])
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from adswitch.spec import array_methods, missing_function

from .tracing.boxes import GuardedBox
from .xp import (
    fft,  # noqa: F401  (the standard's extensions: sub-namespaces)
    linalg,  # noqa: F401
    special,  # noqa: F401  (not the standard's: for scipy's dispatch)
)
from .xp.creation import *  # noqa: F403
from .xp.dtypes import *  # noqa: F403
from .xp.elementwise import *  # noqa: F403
from .xp.indexing import *  # noqa: F403
from .xp.linear_algebra import *  # noqa: F403
from .xp.manipulation import *  # noqa: F403
from .xp.searching import *  # noqa: F403
from .xp.sets import *  # noqa: F403
from .xp.sorting import *  # noqa: F403
from .xp.statistics import *  # noqa: F403
from .xp.utility import *  # noqa: F403

__array_api_version__ = "2023.12"

e, pi, inf, nan, newaxis = math.e, math.pi, math.inf, math.nan, None


def __array_namespace_info__() -> Any:
    """The inspection object of the underlying numpy namespace (CPU only)."""
    return np.__array_namespace_info__()


def __getattr__(name: str) -> Any:
    # numpy's spellings (``xp.arccos``, ``xp.concatenate``) get the standard's name, any
    # other name an AdswitchError that is also an AttributeError (adswitch.numpy_names)
    raise missing_function(
        "autograd",
        name,
        otherwise="Fix: express it with the Array API's functions, or choose another "
        "engine (backend='torch' or 'jax').",
    )


def _attach_methods() -> None:
    """Traced arrays get the habitual methods autograd's boxes lack (``x.dot(y)``...),
    and an error naming the ``xp`` function for any other name (the adapter kit's)."""
    for name, method in array_methods(sys.modules[__name__], "autograd").items():
        if name == "__getattr__" or not hasattr(GuardedBox, name):
            setattr(GuardedBox, name, method)


_attach_methods()
