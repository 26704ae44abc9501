"""The degenerate-point checks that every engine whose ``xp.linalg`` follows the same
conventions must pass -- one test per check, parametrised by engine (before: a copy of
each test in the torch and the jax file). The checks and their oracles live in
``tests.support.singular_det_cases`` and ``tests.support.spectral_degenerate_cases``:
``det`` at singular matrices against the cofactor matrix by minors and its exact unit
differences; repeated eigen- and singular values against closed forms and finite
differences of numpy; refusals by their messages.

Each test runs on the engines that follow its convention: all four where they agree
(functions of the eigenvectors of a stack, symmetric functions of repeated eigenvalues,
the eigenvectors at regular points, functions of repeated and zero singular values), the
tape too where it agrees with torch and jax (``slogdet``, second derivatives at a
repeated eigenvalue). Where they differ -- the tape and autograd refuse ``det``'s second
derivative at a singular matrix, the tape reads ``eigh``'s lower triangle only, the
refusals are worded otherwise -- each engine's own file tests its convention, and where
the numbers must agree across every engine the conformance suite does (``linalg``,
``kinks``).
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Iterator

import pytest

from tests.support.singular_det_cases import (
    SINGULAR_POINTS,
    check_det_at_singular_matrices_first_and_second_order,
    check_det_of_a_stack_mixing_singular_and_regular_matrices,
    check_slogdet_at_a_singular_matrix_is_refused,
)
from tests.support.spectral_degenerate_cases import (
    REPEATED_POINTS,
    check_eigenvector_functions_of_a_stack_and_their_batched_jacobian,
    check_functions_of_repeated_and_zero_singular_values_alone,
    check_functions_of_singular_values_at_repeated_and_zero_ones,
    check_functions_of_the_eigenvalues_at_a_repeated_one,
    check_functions_of_the_eigenvectors_at_a_repeated_eigenvalue_are_refused,
    check_functions_of_the_eigenvectors_at_regular_points_are_computed,
    check_functions_of_the_singular_vectors_at_a_repeated_singular_value_are_refused,
    check_second_derivatives_at_a_repeated_eigenvalue_are_refused,
    check_second_derivatives_at_repeated_singular_values_are_refused,
    check_symmetric_functions_of_repeated_eigenvalues,
)


def _engines(*names: str) -> list[object]:
    """The engines as parameters, each skipped where its library is not installed (the
    tape is adswitch's own)."""
    return [
        pytest.param(
            name,
            marks=pytest.mark.skipif(
                importlib.util.find_spec("adswitch_tape" if name == "tape" else name) is None,
                reason=f"{name} not installed",
            ),
        )
        for name in names
    ]


ENGINES = _engines("torch", "jax")  # (the tape's and autograd's own files: their conventions)
WITH_TAPE = _engines("torch", "jax", "tape")
EVERY = _engines("torch", "jax", "tape", "autograd")
# (the message each engine's eigh refusal for a stack gives)
STACK_MESSAGE = {
    "torch": r"linalg\.eigh .*repeated eigenvalue.*Fix:",
    "jax": r"linalg\.eig.*Fix:",
    "tape": r"linalg\.eig.*repeated eigenvalue.*Fix:",
    "autograd": r"linalg\.eig.*repeated eigenvalue.*Fix:",
}


@pytest.fixture(autouse=True)
def compiled_on_jax(request: pytest.FixtureRequest) -> Iterator[None]:
    """On jax every call here compiles (a fallback to eager mode, a Python branch on a
    traced value in a rule, would fail the test)."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or callspec.params.get("backend") != "jax":
        yield
        return
    from adswitch_jax.notices import JaxFallbackWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", JaxFallbackWarning)
        yield


# -- det at singular matrices --------------------------------------------------------------
@pytest.mark.parametrize("point", sorted(SINGULAR_POINTS))
@pytest.mark.parametrize("backend", ENGINES)
def test_det_at_singular_matrices_first_and_second_order(point: str, backend: str) -> None:
    check_det_at_singular_matrices_first_and_second_order(point, backend)


@pytest.mark.parametrize("backend", ENGINES)
def test_det_of_a_stack_mixing_singular_and_regular_matrices(backend: str) -> None:
    check_det_of_a_stack_mixing_singular_and_regular_matrices(backend)


@pytest.mark.parametrize("backend", WITH_TAPE)
def test_slogdet_at_a_singular_matrix_is_refused(backend: str) -> None:
    check_slogdet_at_a_singular_matrix_is_refused(backend)


# -- eigh at a repeated eigenvalue ---------------------------------------------------------
@pytest.mark.parametrize("backend", EVERY)
def test_eigenvector_functions_of_a_stack_and_their_batched_jacobian(backend: str) -> None:
    check_eigenvector_functions_of_a_stack_and_their_batched_jacobian(
        backend, STACK_MESSAGE[backend]
    )


@pytest.mark.parametrize("backend", EVERY)
def test_symmetric_functions_of_repeated_eigenvalues(backend: str) -> None:
    check_symmetric_functions_of_repeated_eigenvalues(backend)


@pytest.mark.parametrize("f", ["projector", "eigvalsh"])
@pytest.mark.parametrize("backend", WITH_TAPE)
def test_second_derivatives_at_a_repeated_eigenvalue_are_refused(f: str, backend: str) -> None:
    check_second_derivatives_at_a_repeated_eigenvalue_are_refused(f, backend)


@pytest.mark.parametrize("case", sorted(REPEATED_POINTS))
@pytest.mark.parametrize("backend", ENGINES)
def test_functions_of_the_eigenvectors_at_a_repeated_eigenvalue_are_refused(
    case: str, backend: str
) -> None:
    check_functions_of_the_eigenvectors_at_a_repeated_eigenvalue_are_refused(case, backend)


@pytest.mark.parametrize("backend", EVERY)
def test_functions_of_the_eigenvectors_at_regular_points_are_computed(backend: str) -> None:
    check_functions_of_the_eigenvectors_at_regular_points_are_computed(backend)


@pytest.mark.parametrize("backend", ENGINES)
def test_functions_of_the_eigenvalues_at_a_repeated_one(backend: str) -> None:
    check_functions_of_the_eigenvalues_at_a_repeated_one(backend)


# -- svd at repeated and zero singular values ----------------------------------------------
@pytest.mark.parametrize("backend", ENGINES)
def test_functions_of_repeated_and_zero_singular_values_alone(backend: str) -> None:
    check_functions_of_repeated_and_zero_singular_values_alone(backend)


@pytest.mark.parametrize("backend", ENGINES)
def test_functions_of_the_singular_vectors_at_a_repeated_singular_value_are_refused(
    backend: str,
) -> None:
    check_functions_of_the_singular_vectors_at_a_repeated_singular_value_are_refused(backend)


@pytest.mark.parametrize("backend", EVERY)
def test_functions_of_singular_values_at_repeated_and_zero_ones(backend: str) -> None:
    check_functions_of_singular_values_at_repeated_and_zero_ones(backend)


@pytest.mark.parametrize("backend", ENGINES)
def test_second_derivatives_at_repeated_singular_values_are_refused(backend: str) -> None:
    check_second_derivatives_at_repeated_singular_values_are_refused(backend)
