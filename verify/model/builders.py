r"""Plain problem builders (deterministic given a ``torch.Generator``); the hypothesis strategies use them.

* :func:`make_cell` -- a cell by kind name (``CELL_KINDS``).
* :func:`random_problem` -- a random, well-conditioned problem and θ.
* :func:`contractive_problem` -- an Elman-tanh or linear problem whose recurrent
  matrix has spectral norm exactly ``lam`` (< 1) by singular-value clipping, with
  no bias and :math:`s_0 = 0` (Miller & Hardt's setting, §2), inputs with
  :math:`\|x_t\| \le B_x`.
* :func:`influence_balancing_problem` -- Tallec & Ollivier's influence-balancing problem.
* :func:`clip_spectral_norm` -- singular-value clipping of a matrix.
* :func:`leaky_problem` -- leaky rate units (Murray 2019) with a recurrent matrix of a given spectral radius.

The hypothesis strategies over them are in :mod:`verify.testing.strategies`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

from verify._validate import (
    COMPLEX_DTYPES,
    REAL_DTYPES,
    require_batch_shape,
    require_finite_number,
    require_fits_memory,
    require_generator,
    require_positive_int,
)
from verify.errors import InvalidArgument
from verify.model.cells import Cell, ElmanCell, GRUCell, InfluenceBalancingCell, LeakyElmanCell, LinearCell, LSTMCell
from verify.model.losses import LinearReadout, SelectReadout, SoftmaxCrossEntropy, SquaredError
from verify.model.problem import Problem

__all__ = [
    "CELL_KINDS",
    "LOSS_KINDS",
    "LabeledProblem",
    "ProblemCase",
    "clip_spectral_norm",
    "contractive_problem",
    "influence_balancing_problem",
    "leaky_problem",
    "make_cell",
    "problem_nbytes",
    "random_problem",
    "require_dtype",
    "require_problem_memory",
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


@dataclass(frozen=True, eq=False)
class LabeledProblem:
    """A fixture problem with its label (kind, sizes, loss ...) and parameter vector: one case of a check's suite.

    Compared and hashed by identity (``eq=False``): a case is a cache key of the computations on it."""

    label: str
    problem: Problem
    theta: torch.Tensor


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


def require_dtype(dtype: object) -> None:
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


def require_problem_memory(cell: Cell, k: int, T: int, batch: tuple[int, ...]) -> None:
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
    require_dtype(dtype)
    require_generator("generator", generator)
    cell = make_cell(kind, n, d)
    require_problem_memory(cell, k, T, B)
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
    require_dtype(dtype)
    require_generator("generator", generator)
    cell = make_cell(kind, n, d)
    require_problem_memory(cell, k, T, ())
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
    require_dtype(dtype)
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


def leaky_problem(
    *,
    n: int = 4,
    d: int = 2,
    T: int = 10,
    k: int = 2,
    alpha: float = 0.5,
    radius: float = 0.9,
    generator: torch.Generator,
    activation: str = "tanh",
) -> tuple[Problem, torch.Tensor]:
    r"""Leaky rate units (:class:`~verify.model.cells.LeakyElmanCell`), linear readout, squared error, and θ.

    W is a Gaussian matrix rescaled to spectral radius ``radius`` (max |eigenvalue|; ``radius = 0``: W = 0,
    no recurrent interaction -- the limit in which RFLO is exact), U, b, the readout, inputs, targets and
    :math:`s_0` Gaussian (float64). Bad input names the argument (:class:`~verify.errors.InvalidArgument`).
    """
    n, T, k = require_positive_int("n", n), require_positive_int("T", T), require_positive_int("k", k)
    d = require_positive_int("d", d)
    radius = require_finite_number("radius", radius, minimum=0.0)
    require_generator("generator", generator)
    cell = LeakyElmanCell(n, d, activation=activation, alpha=alpha)  # type: ignore[arg-type]
    problem = Problem(
        cell,
        LinearReadout(n, k),
        SquaredError(),
        torch.randn(T, d, generator=generator, dtype=torch.float64),
        torch.randn(T, k, generator=generator, dtype=torch.float64),
        0.5 * torch.randn(n, generator=generator, dtype=torch.float64),
    )
    theta = problem.init_theta(generator)
    W = torch.randn(n, n, generator=generator, dtype=torch.float64)
    rho = float(torch.linalg.eigvals(W).abs().max())
    theta[problem.layout["cell.W"].slice] = (W * (radius / rho)).reshape(-1)
    return problem, theta


# ----------------------------------------------------------------- hypothesis
