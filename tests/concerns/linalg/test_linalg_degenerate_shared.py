"""The degenerate-point checks that every engine whose ``xp.linalg`` follows the same
conventions must pass -- one test per check, parametrised by engine (before: a copy of
each test in the torch and the jax file). The checks and their oracles live in
``tests.support.singular_det_cases`` and ``tests.support.spectral_degenerate_cases``:
``det`` at singular matrices against the cofactor matrix by minors and its exact unit
differences; repeated eigen- and singular values against closed forms and finite
differences of numpy; refusals by their messages.

The tape and autograd follow other conventions in places (the tape refuses ``det``'s
second derivative at a singular matrix and reads ``eigh``'s lower triangle only; their
messages are worded otherwise): their own files test them, and where the numbers must
agree across every engine, the conformance suite does (``linalg``, ``kinks``).
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


def _engine(name: str) -> object:
    missing = importlib.util.find_spec(name) is None
    return pytest.param(name, marks=pytest.mark.skipif(missing, reason=f"{name} not installed"))


ENGINES = [_engine("torch"), _engine("jax")]
# (the message each engine's eigh refusal for a stack gives)
STACK_MESSAGE = {"torch": r"linalg\.eigh .*repeated eigenvalue.*Fix:", "jax": r"linalg\.eig.*Fix:"}


@pytest.fixture(params=ENGINES)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each engine; on jax every call here compiles (a fallback to eager mode, a Python
    branch on a traced value in a rule, would fail the test)."""
    name: str = request.param
    if name != "jax":
        yield name
        return
    from adswitch_jax.notices import JaxFallbackWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", JaxFallbackWarning)
        yield name


# -- det at singular matrices --------------------------------------------------------------
@pytest.mark.parametrize("point", sorted(SINGULAR_POINTS))
def test_det_at_singular_matrices_first_and_second_order(point: str, backend: str) -> None:
    check_det_at_singular_matrices_first_and_second_order(point, backend)


def test_det_of_a_stack_mixing_singular_and_regular_matrices(backend: str) -> None:
    check_det_of_a_stack_mixing_singular_and_regular_matrices(backend)


def test_slogdet_at_a_singular_matrix_is_refused(backend: str) -> None:
    check_slogdet_at_a_singular_matrix_is_refused(backend)


# -- eigh at a repeated eigenvalue ---------------------------------------------------------
def test_eigenvector_functions_of_a_stack_and_their_batched_jacobian(backend: str) -> None:
    check_eigenvector_functions_of_a_stack_and_their_batched_jacobian(
        backend, STACK_MESSAGE[backend]
    )


def test_symmetric_functions_of_repeated_eigenvalues(backend: str) -> None:
    check_symmetric_functions_of_repeated_eigenvalues(backend)


@pytest.mark.parametrize("f", ["projector", "eigvalsh"])
def test_second_derivatives_at_a_repeated_eigenvalue_are_refused(f: str, backend: str) -> None:
    check_second_derivatives_at_a_repeated_eigenvalue_are_refused(f, backend)


@pytest.mark.parametrize("case", sorted(REPEATED_POINTS))
def test_functions_of_the_eigenvectors_at_a_repeated_eigenvalue_are_refused(
    case: str, backend: str
) -> None:
    check_functions_of_the_eigenvectors_at_a_repeated_eigenvalue_are_refused(case, backend)


def test_functions_of_the_eigenvectors_at_regular_points_are_computed(backend: str) -> None:
    check_functions_of_the_eigenvectors_at_regular_points_are_computed(backend)


def test_functions_of_the_eigenvalues_at_a_repeated_one(backend: str) -> None:
    check_functions_of_the_eigenvalues_at_a_repeated_one(backend)


# -- svd at repeated and zero singular values ----------------------------------------------
def test_functions_of_repeated_and_zero_singular_values_alone(backend: str) -> None:
    check_functions_of_repeated_and_zero_singular_values_alone(backend)


def test_functions_of_the_singular_vectors_at_a_repeated_singular_value_are_refused(
    backend: str,
) -> None:
    check_functions_of_the_singular_vectors_at_a_repeated_singular_value_are_refused(backend)


def test_functions_of_singular_values_at_repeated_and_zero_ones(backend: str) -> None:
    check_functions_of_singular_values_at_repeated_and_zero_ones(backend)


def test_second_derivatives_at_repeated_singular_values_are_refused(backend: str) -> None:
    check_second_derivatives_at_repeated_singular_values_are_refused(backend)
