"""Operators, first part: ``vjp`` (a reusable pullback), ``jvp`` and ``derivative`` on
arrays and trees, with ``Const``, ties, aux outputs, float32, mutation inside ``f``, and
the documented errors. References: a dense finite-difference Jacobian (``J^T u``,
``J v``, a column), plus the adjoint identity between the engine's own vjp and jvp."""

from __future__ import annotations

import numpy as np

import adswitch as ad
from adswitch.errors import ActivityError

from .case import Case, arr
from .operator_functions import (
    apply_layer,
    log_then_write,
    make_dense,
    mutation_args,
    scalar_path,
    tied_args,
    tied_fn,
    tree_args,
    tree_cotangent,
    tree_fn,
    tree_tangents,
    vec_args,
    vec_fn,
    with_aux,
)

F = "operators"
MUT = ("mutation",)
F32 = ("float32",)


CASES = [
    Case(
        "operators.vjp_array",
        F,
        "vjp of a vector function with a Const matrix: the pullback, called with two "
        "cotangents, gives J^T u each time (reusable, nothing cached from the first)",
        vec_fn,
        vec_args,
        entry="vjp",
        seeds=lambda: (arr(320, 3), arr(321, 3)),
    ),
    Case(
        "operators.vjp_tree",
        F,
        "vjp with dict and tuple arguments and a tuple/dict output holding a 0-d array and "
        "a string (None cotangent there): gradient-shaped results, None at non-floats",
        tree_fn,
        tree_args,
        entry="vjp",
        seeds=lambda: (tree_cotangent(322), tree_cotangent(324)),
    ),
    Case(
        "operators.vjp_dataclass",
        F,
        "vjp of a callable dataclass layer (a str field) applied to Const data: the "
        "pullback returns a Dense with None in its str field",
        apply_layer,
        lambda: (make_dense(), ad.Const(arr(326, 4, 3))),
        entry="vjp",
        seeds=lambda: (arr(327, 4, 2),),
    ),
    Case(
        "operators.vjp_tied",
        F,
        "vjp with one array passed at two places: the pullback's total at args[0], None at args[1]",
        tied_fn,
        tied_args,
        entry="vjp",
        seeds=lambda: (arr(328, 3),),
    ),
    Case(
        "operators.vjp_duplicated",
        F,
        "vjp of a Duplicated argument: each pullback call zeroes the shadow and writes "
        "J^T u into it (the last cotangent's), returning the shadow itself",
        vec_fn,
        lambda: (ad.Duplicated(arr(329, 4), arr(330, 4)), ad.Const(arr(301, 3, 4)), arr(302, 3)),
        entry="vjp",
        seeds=lambda: (arr(331, 3), arr(332, 3)),
    ),
    Case(
        "operators.vjp_duplicated_accumulates",
        F,
        "vjp(..., zero=False) of a Duplicated argument with a filled shadow: two pullback "
        "calls add both J^T u into it",
        vec_fn,
        lambda: (ad.Duplicated(arr(333, 4), arr(334, 4)), ad.Const(arr(301, 3, 4)), arr(302, 3)),
        entry="vjp",
        zero=False,
        seeds=lambda: (arr(335, 3), arr(336, 3)),
    ),
    Case(
        "operators.vjp_aux",
        F,
        "vjp with has_aux=True: (y, pullback, aux), aux (arrays, int, str) returned as f "
        "made it and not differentiated",
        with_aux,
        vec_args,
        entry="vjp",
        has_aux=True,
        seeds=lambda: (arr(337, 3),),
    ),
    Case(
        "operators.vjp_float32",
        F,
        "vjp in float32: y and the pullback's results stay float32 and match float64 "
        "differences to float32 accuracy",
        vec_fn,
        lambda: vec_args(np.float32),
        entry="vjp",
        seeds=lambda: (arr(338, 3, dtype=np.float32),),
        requires=F32,
    ),
    Case(
        "operators.vjp_mutation",
        F,
        "vjp of y = log(x); x[0] = s**2; y * x: the write differentiated (the pullback "
        "must use the old x), or MutationError where mutation is not declared",
        log_then_write,
        mutation_args,
        entry="vjp",
        seeds=lambda: (arr(339, 3), arr(340, 3)),
        requires=MUT,
    ),
    Case(
        "operators.vjp_cotangent_shape",
        F,
        "a cotangent of the wrong shape for the pullback: ActivityError naming it",
        vec_fn,
        vec_args,
        entry="vjp",
        seeds=lambda: (arr(341, 4),),
        raises=ActivityError,
    ),
    Case(
        "operators.jvp_array",
        F,
        "jvp of a vector function with a Const matrix (None tangent there): y and J v",
        vec_fn,
        vec_args,
        entry="jvp",
        seeds=lambda: (arr(342, 4), None, arr(343, 3)),
    ),
    Case(
        "operators.jvp_tree",
        F,
        "jvp with dict/tuple primals (None tangents at str and int leaves) and a tree "
        "output: a tangent tree like y, None at its string",
        tree_fn,
        tree_args,
        entry="jvp",
        seeds=tree_tangents,
    ),
    Case(
        "operators.jvp_tied",
        F,
        "jvp with one array at two places and its one tangent at both: the tie moves as "
        "one input (not twice)",
        tied_fn,
        tied_args,
        entry="jvp",
        seeds=lambda: (lambda v: (v, v, None))(arr(344, 3)),
    ),
    Case(
        "operators.jvp_tied_none_later",
        F,
        "jvp with one array at two places, its tangent at the first and None at the "
        "second (the documented way to give a tie its one tangent)",
        tied_fn,
        tied_args,
        entry="jvp",
        seeds=lambda: (arr(344, 3), None, None),
    ),
    Case(
        "operators.jvp_aux",
        F,
        "jvp with has_aux=True: (y, tangent, aux), aux as f made it",
        with_aux,
        vec_args,
        entry="jvp",
        has_aux=True,
        seeds=lambda: (arr(345, 4), None, arr(346, 3)),
    ),
    Case(
        "operators.jvp_float32",
        F,
        "jvp in float32: the tangent stays float32, to float32 accuracy",
        vec_fn,
        lambda: vec_args(np.float32),
        entry="jvp",
        seeds=lambda: (arr(347, 4, dtype=np.float32), None, arr(348, 3, dtype=np.float32)),
        requires=F32,
    ),
    Case(
        "operators.jvp_mutation",
        F,
        "jvp through y = log(x); x[0] = s**2; y * x: the write differentiated, or "
        "MutationError where mutation is not declared",
        log_then_write,
        mutation_args,
        entry="jvp",
        seeds=lambda: (arr(349, 3), np.array(0.6)),
        requires=MUT,
    ),
    Case(
        "operators.jvp_const_tangent",
        F,
        "a tangent given for a Const primal: ActivityError (pass None there)",
        vec_fn,
        vec_args,
        entry="jvp",
        seeds=lambda: (arr(350, 4), arr(351, 3, 4), arr(352, 3)),
        raises=ActivityError,
    ),
    Case(
        "operators.jvp_tie_differing_tangent",
        F,
        "a tied array with a different tangent at its second place: ActivityError (it "
        "has one tangent)",
        tied_fn,
        tied_args,
        entry="jvp",
        seeds=lambda: (arr(353, 3), arr(354, 3), None),
        raises=ActivityError,
    ),
    Case(
        "operators.jvp_duplicated",
        F,
        "a Duplicated primal in jvp: ActivityError saying to pass it plain",
        vec_fn,
        lambda: (ad.Duplicated(arr(355, 4)), ad.Const(arr(301, 3, 4)), arr(302, 3)),
        entry="jvp",
        seeds=lambda: (arr(356, 4), None, arr(357, 3)),
        raises=ActivityError,
    ),
    Case(
        "operators.derivative_float",
        F,
        "derivative in a Python float t with constant array arguments: a dict output "
        "(arrays, 0-d, a string) gets d/dt at its floating leaves, None at the string",
        scalar_path,
        lambda: (0.7, arr(358, 3), arr(359, 3)),
        entry="derivative",
    ),
    Case(
        "operators.derivative_0d",
        F,
        "derivative in a 0-d float32 array with Const arguments: float32 results",
        scalar_path,
        lambda: (
            np.asarray(0.3, np.float32),
            ad.Const(arr(360, 3, dtype=np.float32)),
            ad.Const(arr(361, 3, dtype=np.float32)),
        ),
        entry="derivative",
        requires=F32,
    ),
    Case(
        "operators.derivative_vector_x",
        F,
        "derivative with respect to a vector: ActivityError pointing to jacobian or jvp",
        scalar_path,
        lambda: (arr(362, 3), arr(363, 3), arr(364, 3)),
        entry="derivative",
        raises=ActivityError,
    ),
    Case(
        "operators.derivative_duplicated",
        F,
        "a Duplicated constant argument in derivative: ActivityError saying to pass it plain",
        scalar_path,
        lambda: (0.5, ad.Duplicated(arr(365, 3)), arr(366, 3)),
        entry="derivative",
        raises=ActivityError,
    ),
]
