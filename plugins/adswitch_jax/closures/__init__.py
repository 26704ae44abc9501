"""What ``f`` reads besides its arguments, so that a compiled program is never run stale:
``f`` described by its code and what it reads -- closure, defaults, globals, recursively
into its helpers -- as a cache key, its floating arrays lifted to inputs (``captures``,
over the globals a function's code names: ``reads``), that walk remembered between calls
while every read is the same object (``recall``), jax's traced values swapped in for the
lifted arrays while jax traces ``f`` (``swaps``), and the check that what a program baked
in from objects and global arrays is unchanged since it was traced (``baked``). No jax
import here."""
