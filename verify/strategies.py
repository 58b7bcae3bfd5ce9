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

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch
from hypothesis import strategies as st

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


def clip_spectral_norm(W: torch.Tensor, lam: float) -> torch.Tensor:
    """W with its singular values clipped to at most ``lam`` (so ‖W‖₂ ≤ λ); batches of matrices too."""
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
    """A random well-conditioned problem of the given kind and θ (see module docstring)."""
    if loss not in LOSS_KINDS:
        raise InvalidArgument("loss", loss, f"must be one of {LOSS_KINDS}")
    cell = make_cell(kind, n, d)
    B = tuple(batch)
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
    if not (0.0 < lam < 1.0):
        raise InvalidArgument("lam", lam, "contraction factor must lie in (0, 1)")
    cell = make_cell(kind, n, d)
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
    cell = InfluenceBalancingCell(n, p)
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
@st.composite
def problems(
    draw: Any,
    cells: Sequence[str] = CELL_KINDS,
    losses: Sequence[str] = LOSS_KINDS,
    max_n: int = 5,
    max_d: int = 3,
    max_T: int = 12,
    max_k: int = 3,
    batch: bool = False,
    dtype: torch.dtype = torch.float64,
) -> ProblemCase:
    """Random well-conditioned problems: cell kind, loss, sizes, optional batch of 1-2."""
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


@st.composite
def contractive_problems(
    draw: Any,
    lam_min: float = 0.3,
    lam_max: float = 0.95,
    cells: Sequence[str] = ("elman-tanh", "linear"),
    max_n: int = 6,
    max_d: int = 3,
    min_T: int = 10,
    max_T: int = 40,
    input_bound: float = 1.0,
) -> ProblemCase:
    """λ-contractive instances (‖W‖₂ = λ ∈ [lam_min, lam_max]) for the truncation bounds."""
    kind = draw(st.sampled_from(tuple(cells)))
    lam = draw(st.floats(lam_min, lam_max))
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    T = draw(st.integers(min_T, max_T))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    problem, theta = contractive_problem(kind, lam=lam, n=n, d=d, T=T, input_bound=input_bound, generator=gen)
    return ProblemCase(problem, theta, seed, kind)
