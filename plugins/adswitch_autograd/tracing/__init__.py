"""What a traced array is and how one run of ``f`` is traced: adswitch's levels on
autograd's trace stack (``levels``), the run every primitive shares (``run``), the box
types (``boxes``) and the array object attached to them (``box_methods``: the rest of the
Array API's array object; ``operators``: writes and ``**``)."""
