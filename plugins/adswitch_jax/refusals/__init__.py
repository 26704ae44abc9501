"""What jax would get silently wrong, or report in its own terms, turned into adswitch
errors that say the fix: in-place operators whose numpy meaning jax cannot follow -- on
views, on the caller's numpy arrays (``inplace``) --, conversions of a differentiated value
to a Python number in the eager fallback (``conversions``), and jax's own exceptions
translated (``errors``). Imported only once jax is in use."""
