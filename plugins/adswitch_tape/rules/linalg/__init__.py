"""The matrix rules: the gradient rules of the matrix products (``products``), the
primitives of the ``linalg`` factorizations and solvers with their numpy code
(``primitives``), both kinds of their rules (``solvers``, ``factorizations``), what those
rules share (``helpers``) and what is refused at repeated eigen- and singular values
(``spectra``)."""
