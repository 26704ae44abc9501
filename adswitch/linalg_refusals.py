"""Why an ``xp.linalg`` function has no derivative at a point, and the fix: the messages
the engines' linear-algebra rules refuse with, written once so that every engine says the
same (re-exported by :mod:`adswitch.spec`).

Example:
    >>> linalg_refusal("torch", "slogdet", "the matrix is singular", "keep it regular")
    'torch: xp.linalg.slogdet has no derivative here: the matrix is singular. Fix: keep it regular.'
"""

from __future__ import annotations

__all__ = ["LINALG_REFUSALS", "known_linalg_refusal", "linalg_refusal"]


def linalg_refusal(engine: str, name: str, why: str, fix: str) -> str:
    """The message for ``xp.linalg.<name>`` on ``engine`` at a point where its derivative
    does not exist (or is not computed): ``why``, then the ``fix``."""
    return f"{engine}: xp.linalg.{name} has no derivative here: {why}. Fix: {fix}."


def known_linalg_refusal(engine: str, key: str) -> str:
    """The message of one of :data:`LINALG_REFUSALS` on ``engine``."""
    return linalg_refusal(engine, *LINALG_REFUSALS[key])


# key -> (function, why, fix); the degenerate-point conventions are the README's
# "Linear algebra at degenerate points".
LINALG_REFUSALS: dict[str, tuple[str, str, str]] = {
    "eigh.kink": (
        "eigvalsh (or eigh)",
        "two equal eigenvalues get different cotangents: neither has a derivative of its own "
        "where they meet (the sorted eigenvalues have a kink there)",
        "differentiate a symmetric function of the repeated eigenvalues (their sum), or move away"
        " from the repeated eigenvalue",
    ),
    "eigh.moves_vectors": (
        "eigh",
        "forward mode at a repeated eigenvalue, in a direction that moves the eigenvectors of its"
        " eigenspace -- they are any rotation of one another there, and have no derivative (a jvp"
        " pushes every output of eigh, used or not)",
        "use xp.linalg.eigvalsh for the eigenvalues, reverse mode (ad.gradient) of a symmetric "
        "function of them, or move away from the repeated eigenvalue",
    ),
    "eigh.second": (
        "eigh (or eigvalsh)",
        "a second derivative at a repeated eigenvalue is not computed: the first-order rule drops"
        " the terms between equal eigenvalues, exact to first order only",
        "take second derivatives away from the repeated eigenvalue, or differentiate once there",
    ),
    "eigh.vectors": (
        "eigh",
        "the matrix has a repeated eigenvalue, and f depends on the eigenvectors of its "
        "eigenspace -- they are any rotation of one another there, and their cotangent does not "
        "determine a derivative (sum(V diag(w - 1) V^T) and sum(w) give the same cotangents at "
        "the identity and have different gradients)",
        "differentiate functions of the eigenvalues alone there (xp.linalg.eigvalsh, symmetric in"
        " the repeated ones), write f without the eigenvectors (a matrix function as a polynomial"
        " or series of x), or move away from the repeated eigenvalue",
    ),
    "qr.dependent": (
        "qr",
        "R has a zero on its diagonal (the matrix's columns, or the first min(m, n) of them, are "
        "dependent), and the derivative of qr needs R regular",
        "differentiate qr of a matrix of full rank",
    ),
    "slogdet.singular": (
        "slogdet",
        "the gradient of log|det(x)| is inv(x)^T, infinite at this singular matrix",
        "keep the matrix regular (add a multiple of the identity), or use xp.linalg.det, whose "
        "gradient exists at singular matrices",
    ),
    "svd.complete": (
        "svd",
        "with full_matrices=True, the columns of U (rows of Vh) beyond min(m, n) are any basis of"
        " a complement of the matrix's range, and have no derivative",
        "call xp.linalg.svd(x, full_matrices=False)",
    ),
    "svd.kink": (
        "svdvals (or svd)",
        "two equal singular values get different cotangents: neither has a derivative of its own "
        "where they meet (the sorted singular values have a kink there)",
        "differentiate a symmetric function of the repeated singular values (their sum; "
        "xp.linalg.matrix_norm(x, ord=2) spreads its slope over them), or move away from the "
        "repeated singular value",
    ),
    "svd.moves_vectors": (
        "svd",
        "forward mode at a repeated (or, non-square, a zero) singular value: the singular vectors"
        " are not unique there, and have no derivative (a jvp pushes every output of svd, used or"
        " not)",
        "use xp.linalg.svdvals for the singular values, or move away from the repeated or zero "
        "singular value",
    ),
    "svd.second": (
        "svd (or svdvals, matrix_norm)",
        "a second derivative at a repeated or zero singular value is not computed: the "
        "first-order rule drops the terms between equal singular values, exact to first order "
        "only",
        "take second derivatives away from the repeated or zero singular value, or differentiate "
        "once there",
    ),
    "svd.splits": (
        "svdvals (or svd, matrix_norm)",
        "a forward-mode derivative at a repeated or zero singular value, in a direction that "
        "splits or moves it from 0 (the sorted singular values have a kink there)",
        "use reverse mode (ad.gradient) for a symmetric function of the singular values, or move "
        "away from the repeated or zero singular value",
    ),
    "svd.vectors": (
        "svd",
        "the matrix has a repeated (or, non-square, a zero) singular value, and f depends on its "
        "singular vectors -- they are not unique there, and their cotangent does not determine a "
        "derivative (sum(U diag(s - 1) Vh) and sum(s) give the same cotangents at the identity "
        "and have different gradients)",
        "differentiate functions of the singular values alone there (xp.linalg.svdvals, "
        "xp.linalg.matrix_norm), or move away from the repeated or zero singular value",
    ),
}
