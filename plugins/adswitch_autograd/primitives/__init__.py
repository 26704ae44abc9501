"""The engine's primitives on HIPS autograd's core: ``value_and_grad`` (``engine``), reverse
mode with a kept graph (``reverse``, over the backward ``sweeps``), forward mode
(``forward``, over the tangent nodes of ``pushforward``), the results in the contract's
form (``results``), and the ``Backend`` hooks for user rules (``custom``) and
``checkpoint``."""
