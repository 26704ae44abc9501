"""The HIPS autograd engine only."""
