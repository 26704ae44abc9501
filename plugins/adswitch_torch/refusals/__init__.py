"""What torch would get silently wrong, or report in its own terms, turned into adswitch
errors that say the fix: torch's errors about in-place writes into differentiated or
saved values and about numpy mixing, translated (``errors``), and the process-wide
patches of ``torch.Tensor`` methods (``tensor_patches``) that refuse float conversions
and ``numpy()`` of values being differentiated and give ``**`` the exact rule, with
their off switch ``ADSWITCH_TORCH_TENSOR_PATCHES=0``."""
