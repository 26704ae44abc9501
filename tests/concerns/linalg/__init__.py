"""Linear algebra at degenerate points (repeated eigen/singular values, singular matrices)."""
