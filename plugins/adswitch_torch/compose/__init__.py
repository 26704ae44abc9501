"""The primitives inside torch's functional transforms (``torch.func.grad``, ``vjp``,
``jvp``, ``vmap``, ``jacrev``, ``jacfwd``, ``hessian``), where the values ``f`` sees are
functorch's wrapped tensors: ``value_and_grad``, ``vjp``, ``vjp_apply`` and ``jvp`` as
``torch.func``'s own transforms (``transforms``), and what one such primitive runs ``f``
on -- its values and primals, ``f`` run with torch's refusals translated, the results
in the caller's kinds (``inner_call``)."""
