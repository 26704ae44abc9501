"""adswitch's hooks onto torch's own mechanisms and libraries: ``torch.nn.Module``
arguments, their parameters as leaves (``modules``) seen through a functional view
inside ``f`` (``module_view``), the parameters' ``.grad`` as ``Duplicated`` shadows
(``grad_shadows``), ``DistributedDataParallel``'s averaged gradients (``ddp``), jax
arrays as torch leaves and jax gradients out (``jax_arrays``),
``torch.utils.checkpoint`` (``checkpoint``), and the user rules as
``torch.autograd.Function`` s -- new-style, for ``torch.func`` (``custom``), and the
old-style eager fast path outside any transform (``custom_eager``)."""
