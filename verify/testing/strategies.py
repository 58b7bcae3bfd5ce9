r"""Hypothesis strategies over the problem builders (public API for users' test suites).

The plain builders live in :mod:`verify.model.builders` and are re-exported here:

* :func:`make_cell` -- a cell by kind name (``CELL_KINDS``).
* :func:`random_problem` -- a random, well-conditioned problem and θ.
* :func:`contractive_problem` -- an Elman-tanh or linear problem whose recurrent
  matrix has spectral norm exactly ``lam`` (< 1) by singular-value clipping, with
  no bias and :math:`s_0 = 0` (Miller & Hardt's setting, §2), inputs with
  :math:`\|x_t\| \le B_x`.
* :func:`clip_spectral_norm` -- singular-value clipping of a matrix.

Hypothesis strategies (draw sizes and a seed; the data come from the seed):

* :func:`problems` -- problems over cells, losses, sizes and optional batch.
* :func:`contractive_problems` -- contractive instances with λ in a range.

>>> from hypothesis import given
>>> from verify.testing.strategies import problems
>>> @given(problems(cells=("elman-tanh",)))
... def test_my_gradient(case):
...     problem, theta = case.problem, case.theta
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from hypothesis import strategies as st

from verify._validate import require_finite_number, require_positive_int
from verify.errors import InvalidArgument
from verify.model.builders import (
    CELL_KINDS,
    LOSS_KINDS,
    ProblemCase,
    clip_spectral_norm,
    contractive_problem,
    influence_balancing_problem,
    make_cell,
    random_problem,
    require_dtype,
    require_problem_memory,
)

__all__ = [  # the builders are re-exported: a user's test suite imports everything from here
    "CELL_KINDS",
    "LOSS_KINDS",
    "ProblemCase",
    "clip_spectral_norm",
    "contractive_problem",
    "contractive_problems",
    "influence_balancing_problem",
    "make_cell",
    "problems",
    "random_problem",
]


def _require_kinds(name: str, value: object, known: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise InvalidArgument(name, value, f"must be a non-empty sequence of {tuple(known)}")
    bad = [v for v in value if v not in known]
    if bad:
        raise InvalidArgument(name, value, f"unknown {bad}; known: {', '.join(known)}")
    return tuple(value)


def problems(
    cells: Sequence[str] = CELL_KINDS,
    losses: Sequence[str] = LOSS_KINDS,
    max_n: int = 5,
    max_d: int = 3,
    max_T: int = 12,
    max_k: int = 3,
    batch: bool = False,
    dtype: torch.dtype = torch.float64,
) -> st.SearchStrategy[ProblemCase]:
    """Random well-conditioned problems: cell kind, loss, sizes, optional batch of 1-2.

    The arguments are validated when the strategy is built (an
    :class:`~verify.errors.InvalidArgument` naming the argument), not at the first draw.
    """
    cells = _require_kinds("cells", cells, CELL_KINDS)
    losses = _require_kinds("losses", losses, LOSS_KINDS)
    max_n = require_positive_int("max_n", max_n)
    max_d = require_positive_int("max_d", max_d)
    max_T = require_positive_int("max_T", max_T)
    max_k = require_positive_int("max_k", max_k, 2 if "cross-entropy" in losses else 1)
    require_dtype(dtype)
    for kind in cells:  # the largest draw must fit in memory
        require_problem_memory(make_cell(kind, max_n, max_d), max_k, max_T, (2,) if batch else ())
    return _problems(cells, losses, max_n, max_d, max_T, max_k, bool(batch), dtype)


@st.composite
def _problems(
    draw: Any,
    cells: Sequence[str],
    losses: Sequence[str],
    max_n: int,
    max_d: int,
    max_T: int,
    max_k: int,
    batch: bool,
    dtype: torch.dtype,
) -> ProblemCase:
    kind = draw(st.sampled_from(tuple(cells)))
    loss = draw(st.sampled_from(tuple(losses)))
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    T = draw(st.integers(1, max_T))
    k = draw(st.integers(2 if loss == "cross-entropy" else 1, max_k))
    B = (draw(st.integers(1, 2)),) if batch and draw(st.booleans()) else ()
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    problem, theta = random_problem(kind, n=n, d=d, T=T, k=k, loss=loss, batch=B, generator=gen, dtype=dtype)
    return ProblemCase(problem, theta, seed, kind)


def contractive_problems(
    lam_min: float = 0.3,
    lam_max: float = 0.95,
    cells: Sequence[str] = ("elman-tanh", "linear"),
    max_n: int = 6,
    max_d: int = 3,
    min_T: int = 10,
    max_T: int = 40,
    input_bound: float = 1.0,
) -> st.SearchStrategy[ProblemCase]:
    """λ-contractive instances (‖W‖₂ = λ ∈ [lam_min, lam_max]) for the truncation bounds.

    Validated when built: 0 < lam_min ≤ lam_max < 1, 1 ≤ min_T ≤ max_T, sizes ≥ 1,
    ``input_bound`` finite > 0.
    """
    lam_min = require_finite_number("lam_min", lam_min, minimum=0.0, maximum=1.0, exclusive=True)
    lam_max = require_finite_number("lam_max", lam_max, minimum=0.0, maximum=1.0, exclusive=True)
    if lam_max < lam_min:
        raise InvalidArgument("lam_max", lam_max, f"must be >= lam_min={lam_min}")
    cells = _require_kinds("cells", cells, ("elman-tanh", "linear"))
    max_n = require_positive_int("max_n", max_n)
    max_d = require_positive_int("max_d", max_d)
    min_T = require_positive_int("min_T", min_T)
    max_T = require_positive_int("max_T", max_T, min_T)
    input_bound = require_finite_number("input_bound", input_bound, minimum=0.0, exclusive=True)
    for kind in cells:
        require_problem_memory(make_cell(kind, max_n, max_d), 2, max_T, ())
    return _contractive_problems(lam_min, lam_max, cells, max_n, max_d, min_T, max_T, input_bound)


@st.composite
def _contractive_problems(
    draw: Any,
    lam_min: float,
    lam_max: float,
    cells: Sequence[str],
    max_n: int,
    max_d: int,
    min_T: int,
    max_T: int,
    input_bound: float,
) -> ProblemCase:
    kind = draw(st.sampled_from(tuple(cells)))
    lam = draw(st.floats(lam_min, lam_max))
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    T = draw(st.integers(min_T, max_T))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    problem, theta = contractive_problem(kind, lam=lam, n=n, d=d, T=T, input_bound=input_bound, generator=gen)
    return ProblemCase(problem, theta, seed, kind)
