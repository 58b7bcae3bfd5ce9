r"""Problem builders and hypothesis strategies (public API for users' test suites).

Plain builders (deterministic given a ``torch.Generator``):

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
>>> from verify.strategies import problems
>>> @given(problems(cells=("elman-tanh",)))
... def test_my_gradient(case):
...     problem, theta = case.problem, case.theta
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import torch
from hypothesis import strategies as st

from verify._validate import (
    COMPLEX_DTYPES,
    REAL_DTYPES,
    require_batch_shape,
    require_finite_number,
    require_fits_memory,
    require_generator,
    require_positive_int,
)
from verify.cells import Cell, ElmanCell, GRUCell, InfluenceBalancingCell, LinearCell, LSTMCell
from verify.errors import InvalidArgument
from verify.losses import LinearReadout, SelectReadout, SoftmaxCrossEntropy, SquaredError
from verify.problem import Problem

__all__ = [
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

CELL_KINDS = ("elman-tanh", "elman-relu", "linear", "lstm", "gru")
LOSS_KINDS = ("squared-error", "cross-entropy")


class ProblemCase(NamedTuple):
    """A drawn problem with its parameter vector and the seed that made it."""

    problem: Problem
    theta: torch.Tensor
    seed: int
    kind: str

    def __repr__(self) -> str:  # shown by hypothesis on failure
        return f"ProblemCase({self.problem.describe()}, seed={self.seed})"


def make_cell(kind: str, n: int, d: int) -> Cell:
    """A cell by kind name; for ``lstm`` n is the hidden size H (state size 2H)."""
    if kind == "elman-tanh":
        return ElmanCell(n, d, "tanh")
    if kind == "elman-relu":
        return ElmanCell(n, d, "relu")
    if kind == "linear":
        return LinearCell(n, d)
    if kind == "lstm":
        return LSTMCell(n, d)
    if kind == "gru":
        return GRUCell(n, d)
    raise InvalidArgument("kind", kind, f"unknown cell kind; known: {', '.join(CELL_KINDS)}")


def _require_dtype(dtype: object) -> None:
    if dtype not in REAL_DTYPES + COMPLEX_DTYPES:
        raise InvalidArgument("dtype", dtype, f"must be a floating dtype, one of {[str(d) for d in REAL_DTYPES]}")


def problem_nbytes(cell: Cell, k: int, T: int, batch: Sequence[int] = ()) -> tuple[int, int]:
    """Estimated bytes of a random problem and θ before building it: (parameters, data).

    Conservative: three float64 copies of θ (drawn, flattened, converted) and of the
    inputs, targets and s₀ (drawn in float64, converted, validated).
    """
    p = sum(math.prod(shape) for _, shape in cell.param_shapes()) + k * cell.observed_size + k
    nb = math.prod(batch)
    data = T * nb * (cell.input_size + k) + nb * cell.state_size
    return 3 * 8 * p, 3 * 8 * data


def _require_problem_memory(cell: Cell, k: int, T: int, batch: tuple[int, ...]) -> None:
    params, data = problem_nbytes(cell, k, T, batch)
    name: str
    value: object
    if params >= data:  # the parameter count (~n^2 + n d) drives it
        name, value = ("d", cell.input_size) if cell.input_size > cell.observed_size else ("n", cell.observed_size)
    elif T >= math.prod(batch):
        name, value = "T", T
    else:
        name, value = "batch", batch
    p = params // 24
    require_fits_memory(
        name, value, params + data, f"{cell.describe()} with k={k}, T={T}, batch={batch} (p = {p} parameters)"
    )


def clip_spectral_norm(W: torch.Tensor, lam: float) -> torch.Tensor:
    """W with its singular values clipped to at most ``lam`` (so ‖W‖₂ ≤ λ); batches of matrices too."""
    if not isinstance(W, torch.Tensor) or W.dim() < 2:
        raise InvalidArgument("W", W if not isinstance(W, torch.Tensor) else f"tensor of shape {tuple(W.shape)}",
                              "must be a matrix (or a batch of matrices)")  # fmt: skip
    lam = require_finite_number("lam", lam, minimum=0.0)
    U, S, Vh = torch.linalg.svd(W)
    out: torch.Tensor = (U * S.clamp(max=lam).unsqueeze(-2)) @ Vh
    return out


def random_problem(
    kind: str,
    *,
    n: int = 4,
    d: int = 3,
    T: int = 10,
    k: int = 2,
    loss: str = "squared-error",
    batch: Sequence[int] = (),
    generator: torch.Generator,
    scale: float = 0.9,
    dtype: torch.dtype = torch.float64,
) -> tuple[Problem, torch.Tensor]:
    """A random well-conditioned problem of the given kind and θ (see module docstring).

    Bad input is an :class:`~verify.errors.InvalidArgument` naming the argument: sizes
    ``n``, ``T``, ``k`` ≥ 1 and ``d`` ≥ 0, every ``batch`` dimension ≥ 1, a finite
    ``scale`` ≥ 0, a floating ``dtype``, a ``torch.Generator``, and sizes whose
    estimated memory (:func:`problem_nbytes`) exceeds half the available memory
    (refused before anything is allocated).
    """
    if loss not in LOSS_KINDS:
        raise InvalidArgument("loss", loss, f"must be one of {LOSS_KINDS}")
    T = require_positive_int("T", T)
    k = require_positive_int("k", k)
    if loss == "cross-entropy" and k < 2:
        raise InvalidArgument("k", k, "cross-entropy needs at least 2 classes")
    B = require_batch_shape("batch", batch)
    scale = require_finite_number("scale", scale, minimum=0.0)
    _require_dtype(dtype)
    require_generator("generator", generator)
    cell = make_cell(kind, n, d)
    _require_problem_memory(cell, k, T, B)
    x = torch.randn(T, *B, d, generator=generator, dtype=torch.float64)
    s0 = 0.1 * torch.randn(*B, cell.state_size, generator=generator, dtype=torch.float64)
    readout = LinearReadout(cell.observed_size, k)
    if loss == "squared-error":
        y = torch.randn(T, *B, k, generator=generator, dtype=torch.float64)
        problem = Problem(cell, readout, SquaredError(), x.to(dtype), y.to(dtype), s0.to(dtype))
    else:
        labels = torch.randint(0, k, (T, *B), generator=generator)
        problem = Problem(cell, readout, SoftmaxCrossEntropy(), x.to(dtype), labels, s0.to(dtype))
    theta = problem.init_theta(generator, scale=scale)
    return problem, theta


def contractive_problem(
    kind: str,
    *,
    lam: float,
    n: int = 4,
    d: int = 3,
    T: int = 30,
    k: int = 2,
    input_bound: float = 1.0,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float64,
) -> tuple[Problem, torch.Tensor]:
    r"""A λ-contractive Elman-tanh or linear problem (Miller & Hardt §6.1-6.2).

    :math:`\|W\|_2 = \lambda` exactly (singular values of a Gaussian matrix clipped
    to λ, then the largest set to λ), no bias, :math:`s_0 = 0`, inputs drawn on the
    sphere of radius ``input_bound`` (:math:`\|x_t\| = B_x`), squared-error loss.
    """
    if kind not in ("elman-tanh", "linear"):
        raise InvalidArgument("kind", kind, "contractive problems are 'elman-tanh' or 'linear'")
    lam = require_finite_number("lam", lam, minimum=0.0, maximum=1.0, exclusive=True)
    T = require_positive_int("T", T)
    k = require_positive_int("k", k)
    input_bound = require_finite_number("input_bound", input_bound, minimum=0.0, exclusive=True)
    _require_dtype(dtype)
    require_generator("generator", generator)
    cell = make_cell(kind, n, d)
    _require_problem_memory(cell, k, T, ())
    W = torch.randn(n, n, generator=generator, dtype=torch.float64)
    U_, S, Vh = torch.linalg.svd(W)
    S = S.clamp(max=lam)
    S[0] = lam
    W = (U_ * S) @ Vh
    U = torch.randn(n, d, generator=generator, dtype=torch.float64) / d**0.5
    x = torch.randn(T, d, generator=generator, dtype=torch.float64)
    x = input_bound * x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    y = torch.randn(T, k, generator=generator, dtype=torch.float64)
    problem = Problem(cell, LinearReadout(n, k), SquaredError(), x.to(dtype), y.to(dtype), torch.zeros(n, dtype=dtype))
    V = torch.randn(k, n, generator=generator, dtype=torch.float64) / n**0.5
    theta = problem.layout.flatten(
        {
            "cell.W": W,
            "cell.U": U,
            "cell.b": torch.zeros(n, dtype=torch.float64),
            "readout.V": V,
            "readout.c": torch.zeros(k, dtype=torch.float64),
        }
    ).to(dtype)
    return problem, theta


def influence_balancing_problem(
    n: int = 23, p: int = 10, T: int = 300, theta: float = 0.5, dtype: torch.dtype = torch.float64
) -> tuple[Problem, torch.Tensor]:
    r"""The influence-balancing task of UORO §4: eq. (8) dynamics, loss ½(s¹ − 1)² (eq. (9))."""
    T = require_positive_int("T", T)
    theta = require_finite_number("theta", theta)
    _require_dtype(dtype)
    cell = InfluenceBalancingCell(n, p)
    # the step builds the dense n x n matrix A of eq. (8); the data are T x n states
    require_fits_memory("n", n, 8 * 3 * (n * n + (T + 1) * n), f"the influence-balancing problem (n={n}, T={T})")
    problem = Problem(
        cell,
        SelectReadout((0,)),
        SquaredError(),
        torch.zeros(T, 0, dtype=dtype),
        torch.ones(T, 1, dtype=dtype),
        torch.zeros(n, dtype=dtype),
    )
    return problem, torch.tensor([theta], dtype=dtype)


# ----------------------------------------------------------------- hypothesis
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
    _require_dtype(dtype)
    for kind in cells:  # the largest draw must fit in memory
        _require_problem_memory(make_cell(kind, max_n, max_d), max_k, max_T, (2,) if batch else ())
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
        _require_problem_memory(make_cell(kind, max_n, max_d), 2, max_T, ())
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
