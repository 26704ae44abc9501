"""adswitch_torch: the torch engine of adswitch (``backend="torch"``).

Importing this package does not import torch; torch is imported on first use
(``FunctionalModule`` is built then, too).

Example:
    >>> import adswitch_torch
    >>> adswitch_torch.TorchBackend().name
    'torch'
"""

from typing import Any

from .integrations.modules import functional_module, grad_shadow
from .plugin import TorchBackend

__all__ = ["FunctionalModule", "TorchBackend", "functional_module", "grad_shadow"]


def __getattr__(name: str) -> Any:
    if name == "FunctionalModule":
        from .integrations import modules

        return modules.FunctionalModule
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
