"""Mutation made safe on autograd's immutable boxes: writes into traced arrays recorded
with numpy's meaning (``writes``), reaching every view and alias of the written memory
(``views``), and the caller's numpy leaves frozen while ``f`` runs, with autograd's raw
failures turned into adswitch errors that say the fix (``translate``)."""
