"""Sparse Jacobians and Hessians: detection, coloring, compressed evaluation, results."""
