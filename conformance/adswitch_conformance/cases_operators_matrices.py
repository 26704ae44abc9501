"""Operators, second part: ``jacobian`` (every mode), ``hessian`` and ``hvp`` on arrays
and trees, with ``Const``, ties, aux outputs, float32, mutation inside ``f`` and the
documented errors. References: dense finite-difference Jacobians and mixed second
differences of the loss (Hessians), or closed forms."""

from __future__ import annotations

import numpy as np

import adswitch as ad
from adswitch.errors import ActivityError, MutationError, UsageError

from .case import Case, arr, pos
from .operator_functions import (
    apply_layer,
    dense_loss,
    dict_tie,
    dict_tie_args,
    dict_tie_loss,
    dict_tie_loss_args,
    log_then_write,
    log_then_write_loss,
    logsumexp,
    logsumexp_hessian,
    loss2,
    loss2_args,
    loss_with_aux,
    make_dense,
    mutation_args,
    scaled_vec,
    tied_args,
    tied_loss,
    tree_args,
    tree_fn,
    tree_loss,
    tree_loss_args,
    vec_args,
    vec_fn,
    with_aux,
)

F = "operators"
NESTED = ("nested",)  # second derivatives differentiate the engine's own gradient
F32 = ("float32",)

_TREE_JAC = "the dict/tuple arguments and tree output of vjp_tree: jacrev's layout"

CASES = [
    Case(
        "operators.jacobian_array",
        F,
        "jacobian of a vector function of an array, a Const matrix, a bias and a Python "
        "float: blocks y.shape + x.shape per argument, None at the Const",
        scaled_vec,
        lambda: (*vec_args(), 1.25),
        entry="jacobian",
    ),
    *[
        Case(
            f"operators.jacobian_{mode}",
            F,
            f"jacobian mode={mode!r} on {_TREE_JAC} (every mode gives the same numbers)",
            tree_fn,
            tree_args,
            entry="jacobian",
            mode=mode,
        )
        for mode in ("reverse", "forward", "auto")
    ],
    Case(
        "operators.jacobian_dataclass",
        F,
        "jacobian of a callable dataclass layer on Const data: Dense trees of blocks "
        "(4, 2) + leaf shape, None in the str field",
        apply_layer,
        lambda: (make_dense(), ad.Const(arr(413, 4, 3))),
        entry="jacobian",
    ),
    Case(
        "operators.jacobian_tied",
        F,
        "jacobian with the same array under 'enc' and 'dec': the total block at 'enc', "
        "None at 'dec'",
        dict_tie,
        dict_tie_args,
        entry="jacobian",
    ),
    Case(
        "operators.jacobian_aux",
        F,
        "jacobian with has_aux=True: (jacobian of y, aux as f made it)",
        with_aux,
        vec_args,
        entry="jacobian",
        has_aux=True,
    ),
    Case(
        "operators.jacobian_float32",
        F,
        "jacobian in float32: float32 blocks, to float32 accuracy",
        vec_fn,
        lambda: vec_args(np.float32),
        entry="jacobian",
        requires=F32,
    ),
    Case(
        "operators.jacobian_mutation",
        F,
        "jacobian of y = log(x); x[0] = s**2; y * x: the write differentiated in every "
        "row, or MutationError where mutation is not declared",
        log_then_write,
        mutation_args,
        entry="jacobian",
        requires=("mutation",),
    ),
    Case(
        "operators.jacobian_duplicated",
        F,
        "a Duplicated argument in jacobian: ActivityError saying to pass it plain",
        vec_fn,
        lambda: (ad.Duplicated(arr(414, 4)), ad.Const(arr(415, 3, 4)), arr(416, 3)),
        entry="jacobian",
        raises=ActivityError,
    ),
    Case(
        "operators.jacobian_bad_mode",
        F,
        "jacobian with mode='sideways': UsageError listing the modes",
        vec_fn,
        vec_args,
        entry="jacobian",
        mode="sideways",
        raises=UsageError,
    ),
    Case(
        "operators.hessian_array",
        F,
        "hessian of a loss of two arrays coupled through a Const matrix: H[a][b] blocks "
        "incl. the cross blocks, None for the Const",
        loss2,
        loss2_args,
        entry="hessian",
        requires=NESTED,
    ),
    Case(
        "operators.hessian_tree",
        F,
        "hessian of a dict of parameters (arrays, a Python float, a str): tree of trees, "
        "None at the str",
        tree_loss,
        tree_loss_args,
        entry="hessian",
        requires=NESTED,
    ),
    Case(
        "operators.hessian_dataclass",
        F,
        "hessian of a loss of a callable dataclass layer: Dense of Dense blocks",
        dense_loss,
        lambda: (make_dense(), ad.Const(arr(417, 4, 3))),
        entry="hessian",
        requires=NESTED,
    ),
    Case(
        "operators.hessian_tied",
        F,
        "hessian with one array passed twice: the total block at H[0][0], None at H[0][1] and H[1]",
        tied_loss,
        tied_args,
        entry="hessian",
        requires=NESTED,
    ),
    Case(
        "operators.hessian_aux",
        F,
        "hessian of f returning (loss, aux): the aux ignored, the loss's Hessian",
        loss_with_aux,
        loss2_args,
        entry="hessian",
        requires=NESTED,
    ),
    Case(
        "operators.hessian_closed_form",
        F,
        "hessian of a stable logsumexp(a x) (max-shifted): closed form "
        "diag(a)(diag(p) - p p^T)diag(a)",
        logsumexp,
        lambda: (arr(418, 4), ad.Const(pos(419, 4))),
        entry="hessian",
        closed_form=logsumexp_hessian,
        requires=NESTED,
    ),
    Case(
        "operators.hessian_float32",
        F,
        "hessian in float32: float32 blocks, to float32 accuracy",
        loss2,
        lambda: loss2_args(np.float32),
        entry="hessian",
        requires=(*NESTED, *F32),
    ),
    Case(
        "operators.hessian_mutation",
        F,
        "hessian through y = log(x); x[0] = s**2: the write differentiated twice, or a "
        "MutationError (a write into an argument of the inner gradient)",
        log_then_write_loss,
        mutation_args,
        entry="hessian",
        requires=(*NESTED, "mutation"),
        also_ok=(MutationError,),
    ),
    Case(
        "operators.hessian_duplicated",
        F,
        "a Duplicated argument in hessian: ActivityError saying to pass it plain",
        loss2,
        lambda: (ad.Duplicated(arr(420, 3)), arr(421, 3), ad.Const(arr(422, 3, 3))),
        entry="hessian",
        raises=ActivityError,
    ),
    Case(
        "operators.hvp_array",
        F,
        "hvp of a loss of two arrays and a Const: H v placed like gradient, None at Const",
        loss2,
        loss2_args,
        entry="hvp",
        seeds=lambda: (arr(423, 3), arr(424, 3), None),
        requires=NESTED,
    ),
    Case(
        "operators.hvp_tree",
        F,
        "hvp of a dict of parameters (None tangents at the str): a dict like the primal",
        tree_loss,
        tree_loss_args,
        entry="hvp",
        seeds=lambda: ({"W": arr(425, 2, 2), "b": arr(426, 2), "scale": 0.5, "name": None}, None),
        requires=NESTED,
    ),
    Case(
        "operators.hvp_tied",
        F,
        "hvp with the same array under 'enc' and 'dec', its tangent at 'enc' and None at "
        "'dec': the total H v at 'enc', None at 'dec'",
        dict_tie_loss,
        dict_tie_loss_args,
        entry="hvp",
        seeds=lambda: ({"enc": arr(427, 2, 2), "b": arr(428, 2), "dec": None},),
        requires=NESTED,
    ),
    Case(
        "operators.hvp_duplicated",
        F,
        "hvp(..., zero=False) twice into a Duplicated argument with a filled shadow: "
        "2 H v added, the result is the shadow",
        loss2,
        lambda: (ad.Duplicated(arr(429, 3), arr(430, 3)), arr(431, 3), ad.Const(arr(405, 3, 3))),
        entry="hvp",
        zero=False,
        repeat_same=2,
        seeds=lambda: (arr(432, 3), arr(433, 3), None),
        requires=NESTED,
    ),
    Case(
        "operators.hvp_tie_differing_tangent",
        F,
        "hvp with a tied array given two different tangents: ActivityError",
        tied_loss,
        tied_args,
        entry="hvp",
        seeds=lambda: (arr(434, 3), arr(435, 3), None),
        raises=ActivityError,
        requires=NESTED,
    ),
]
