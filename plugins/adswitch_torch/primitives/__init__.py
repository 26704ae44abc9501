"""The engine's primitives and how one call runs: the tensors a call differentiates,
``f`` run on them with its in-place writes checked and its results handed back
(``trace``), the caller's kinds moved to tensors and back (``convert``), torch's grad
mode forced on around every differentiation (``grad_mode``), the per-thread state of a
forward-AD jvp and the tangents tensors carry in it (``forward_mode``), the backward
passes without ``torch.autograd.grad``'s per-call overhead (``backward``), a backward
pass along cotangents, batched or not (``pull``), the primitives themselves --
``value_and_grad`` (``call``), ``vjp``/``vjp_apply`` (``reverse``), ``jvp``
(``forward``) -- the results in the caller's kinds (``results``), a prepared gradient's
shortcut past every layer (``shortcut``), and sparse results as torch's sparse matrices
(``sparse``). Inside ``torch.func`` transforms the primitives are those of
:mod:`adswitch_torch.compose`."""
