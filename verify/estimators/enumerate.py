r"""Exact expectations of UORO-family estimators by enumerating every noise pattern.

For a noise law with a finite, equiprobable support (Rademacher: ±1) and few
enough noise coordinates K in the first ``steps`` steps (n·t·r for UORO, t·r for
preactivation UORO), every one of the :math:`|\mathrm{support}|^K` patterns is
equally likely, so the expectation of any quantity of the run is the plain mean
over all patterns. The patterns become the **sample dimension**: the estimator is
run once with M = :math:`|\mathrm{support}|^K` samples, its noise source replaced by
a :class:`~verify.estimators.uoro.Tabulated` table holding pattern m in sample m.

This turns UORO's Proposition 1 (uoro-tallec-ollivier.md App. A),
:math:`E[\tilde s_t\otimes\tilde\theta_t] = \partial s_t/\partial\theta` and
:math:`E\tilde g_t = \partial\ell_t/\partial\theta`, into a deterministic equality
checked to float64 round-off (DESIGN.md "Numerical policy": "For tiny state sizes
the expectation over all Rademacher sign patterns can be enumerated exactly").
The law that is enumerated is the estimator's own (its ``noise.support``): a
mutant with ν ∈ {0, 1} is enumerated over {0, 1}ᴷ, so its bias shows.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import torch

from verify._validate import require_positive_int
from verify.errors import InvalidArgument
from verify.estimators.online import check_problem_theta
from verify.estimators.uoro import NoiseSource
from verify.problem import Problem

__all__ = ["Enumerable", "EnumeratedExpectation", "enumerate_expectation", "sign_patterns"]

#: default ceiling on the number of patterns (samples) one enumeration may run
MAX_PATTERNS = 2**16


class Enumerable(Protocol):
    """What :func:`enumerate_expectation` needs from an estimator (the UORO family has it)."""

    name: str

    @property
    def noise(self) -> NoiseSource: ...

    def noise_shape(self, problem: Problem) -> tuple[int, ...]: ...

    def noise_draws(self, steps: int) -> int: ...

    def with_noise(self, noise: NoiseSource) -> Any: ...

    def influence_estimate(self, problem: Problem, state: Any) -> torch.Tensor: ...


class EnumeratedExpectation(NamedTuple):
    """Exact expectations over all noise patterns.

    ``gradients`` (steps, p): :math:`E\\tilde g_t`, t = 1..steps. ``influence``
    (steps, *B, n, p): the expectation of the estimator's influence estimate held in
    the state after step t (for UORO-T it refers to the last block boundary, see
    ``influence_steps``: the step whose :math:`\\partial s/\\partial\\theta` it estimates).
    ``patterns``: how many patterns were averaged; ``coordinates``: K.
    ``gradients_abs``/``influence_abs``: the means of the absolute values (same
    shapes), the magnitudes that cancel in the mean (for round-off budgets).
    """

    gradients: torch.Tensor
    influence: torch.Tensor
    influence_steps: tuple[int, ...]
    patterns: int
    coordinates: int
    gradients_abs: torch.Tensor
    influence_abs: torch.Tensor


def sign_patterns(
    support: tuple[float, ...], coordinates: int, dtype: torch.dtype = torch.float64, device: str = "cpu"
) -> torch.Tensor:
    """All ``len(support) ** coordinates`` patterns, shape (patterns, coordinates), in lexicographic order."""
    k = len(support)
    M = k**coordinates
    idx = torch.arange(M, device=device)
    digits = torch.stack([(idx // k**j) % k for j in range(coordinates)], dim=1)
    values = torch.tensor(support, dtype=dtype, device=device)
    return values[digits]


def enumerate_expectation(
    estimator: Enumerable,
    problem: Problem,
    theta: torch.Tensor,
    *,
    steps: int | None = None,
    max_patterns: int = MAX_PATTERNS,
) -> EnumeratedExpectation:
    """Exact expectation of an enumerable estimator's g̃_t and influence estimate, t = 1..steps.

    Raises :class:`InvalidArgument` when the noise law is not discrete
    (``noise.support is None``) or the patterns would exceed ``max_patterns``
    (naming the count). Runs in the problem's dtype (use float64).
    """
    theta = check_problem_theta(problem, theta)
    steps = problem.T if steps is None else require_positive_int("steps", steps)
    if steps > problem.T:
        raise InvalidArgument("steps", steps, f"the problem has T={problem.T} steps")
    support = estimator.noise.support
    if support is None:
        raise InvalidArgument(
            "estimator.noise", type(estimator.noise).__name__, "a continuous noise law cannot be enumerated"
        )
    shape = tuple(estimator.noise_shape(problem))
    per_draw = 1
    for s in shape:
        per_draw *= s
    draws = estimator.noise_draws(steps)
    K = draws * per_draw
    M = len(support) ** K
    if M > max_patterns:
        raise InvalidArgument(
            "steps/problem size",
            f"{len(support)}^{K} = {M} noise patterns",
            f"exceeds max_patterns={max_patterns}; use fewer steps or a smaller state",
        )
    pats = sign_patterns(support, K, dtype=problem.dtype, device=str(problem.device))  # (M, K)
    table = pats.reshape(M, draws, *shape).transpose(0, 1)  # (draws, M, *shape): draw i of pattern m
    est = estimator.with_noise(estimator.noise.tabulated(table))
    rng = torch.Generator(device="cpu").manual_seed(0)  # never consumed by a tabulated source
    state = est.init(problem, theta, rng, samples=M)
    grads, infl, grads_abs, infl_abs = [], [], [], []
    block = getattr(estimator, "block", 1)
    for t in range(1, steps + 1):
        state, g = est.step(problem, theta, state, t, rng)
        grads.append(g.mean(0))  # every pattern has probability 1/M
        grads_abs.append(g.abs().mean(0))
        I = est.influence_estimate(problem, state)
        infl.append(I.mean(0))
        infl_abs.append(I.abs().mean(0))
    inf_steps = tuple((t // block) * block for t in range(1, steps + 1))
    return EnumeratedExpectation(
        torch.stack(grads), torch.stack(infl), inf_steps, M, K, torch.stack(grads_abs), torch.stack(infl_abs)
    )
