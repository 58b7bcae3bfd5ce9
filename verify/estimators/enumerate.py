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

Any estimator with the noise hook of :mod:`verify.estimators.noise` can be enumerated
(a user's included). The result is exact only if *all* randomness flows through the
hook: before enumerating, the estimator runs twice on the same table with different
generators (:func:`verify.estimators.noise.check_leak`); when the runs differ -- a
random start, a draw of its own -- the enumeration is refused (InvalidArgument)
instead of returning a wrong "exact" expectation. The influence estimate is
optional (``influence`` is then None).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import torch

from verify._validate import require_positive_int
from verify.errors import InvalidArgument
from verify.estimators.noise import check_leak, require_noise_hook, tabulated
from verify.estimators.online import check_problem_theta
from verify.estimators.uoro import NoiseSource
from verify.model.problem import Problem

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


class EnumeratedExpectation(NamedTuple):
    """Exact expectations over all noise patterns.

    ``gradients`` (steps, p): :math:`E\\tilde g_t`, t = 1..steps. ``influence``
    (steps, *B, n, p; None for an estimator without ``influence_estimate``): the
    expectation of the estimator's influence estimate held in the state after step t (for UORO-T it
    refers to the last block boundary, see
    ``influence_steps``: the step whose :math:`\\partial s/\\partial\\theta` it estimates).
    ``patterns``: how many patterns were averaged; ``coordinates``: K.
    ``gradients_abs``/``influence_abs``: the means of the absolute values (same
    shapes), the magnitudes that cancel in the mean (for round-off budgets).
    """

    gradients: torch.Tensor
    influence: torch.Tensor | None
    influence_steps: tuple[int, ...]
    patterns: int
    coordinates: int
    gradients_abs: torch.Tensor
    influence_abs: torch.Tensor | None


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


def _noise_table(
    estimator: Enumerable, problem: Problem, steps: int, max_patterns: int
) -> tuple[torch.Tensor, int, int]:
    """Every noise pattern of ``steps`` steps as a (draws, M, *shape) table; M patterns of K signs each."""
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
    return table, M, K


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
    (``noise.support is None``), the patterns would exceed ``max_patterns``
    (naming the count) or the estimator draws randomness outside its noise hook
    (two runs with different generators disagree); :class:`~verify.errors.NotApplicable`
    without the hook. Runs in the problem's dtype (use float64).
    """
    require_noise_hook(estimator, "enumerate_expectation")
    theta = check_problem_theta(problem, theta)
    steps = problem.T if steps is None else require_positive_int("steps", steps)
    if steps > problem.T:
        raise InvalidArgument("steps", steps, f"the problem has T={problem.T} steps")
    table, M, K = _noise_table(estimator, problem, steps, max_patterns)
    check_leak(estimator, problem, theta, table, steps, what="the enumerated expectation")
    est = tabulated(estimator, table)
    rng = torch.Generator(device="cpu").manual_seed(0)  # never consumed by a tabulated source
    state = est.init(problem, theta, rng, samples=M)
    grads, infl, grads_abs, infl_abs = [], [], [], []
    block = getattr(estimator, "block", 1)
    influence = getattr(est, "influence_estimate", None)
    for t in range(1, steps + 1):
        state, g = est.step(problem, theta, state, t, rng)
        grads.append(g.mean(0))  # every pattern has probability 1/M
        grads_abs.append(g.abs().mean(0))
        if influence is not None:
            I = influence(problem, state)
            infl.append(I.mean(0))
            infl_abs.append(I.abs().mean(0))
    inf_steps = tuple((t // block) * block for t in range(1, steps + 1))
    return EnumeratedExpectation(
        torch.stack(grads),
        torch.stack(infl) if infl else None,
        inf_steps,
        M,
        K,
        torch.stack(grads_abs),
        torch.stack(infl_abs) if infl_abs else None,
    )
