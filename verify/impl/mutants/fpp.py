"""Broken FPP implementations: each must make the check it is visible to FAIL.

* ``fpp.eq7-penalty-sign`` -- eq. (7) with ``+λ(s_i − ŝ_i)`` inside the bracket
  that multiplies ∇ŝ_i (the sign slip the paper's notation invites); replaces
  :func:`verify.fpp.objective.eq7_gradients`.
* ``fpp.sampler-exclusive-endpoint`` -- i ~ uniform{T..n−1}: ``randint(T, n)``
  with an exclusive upper bound, so the newest transition is never sampled;
  replaces the sampler (:func:`~verify.fpp.objective.sample_indices`;
  :func:`exclusive_endpoint_distribution` is the law it really draws from).
* ``fpp.multiplier-full-loss-adjoint`` -- the multiplier target of Thm 2 taken as
  the adjoint of s_i for ALL losses ℓ_i..ℓ_n instead of the later ones only;
  replaces :func:`verify.fpp.kkt.lemma1_multipliers`.
* ``fpp.multiplier-unscaled`` -- compares λ(s_i − ŝ_i) with λ_i instead of λ_i/n
  (forgets that eq. (11)'s penalty is not divided by n); replaces
  :func:`verify.fpp.kkt.lemma1_multipliers`.

The broken *learners* of the §5 reproductions' negative controls are not parts of an
:class:`~verify.impl.FPPImpl` a user replaces: they are named in a sweep cell and
live with the harness that runs them (:mod:`verify.fpp.broken_learners`).
"""

from __future__ import annotations

import torch
from torch.func import grad

from verify._func import vjp
from verify.fpp.kkt import full_loss_adjoints, lemma1_multipliers
from verify.fpp.objective import prediction_loss, unroll_window
from verify.impl.mutants import Mutant
from verify.model.problem import Problem

__all__ = [
    "MUTANTS",
    "eq7_penalty_sign",
    "exclusive_endpoint_distribution",
    "exclusive_endpoint_indices",
    "full_loss_multipliers",
    "unscaled_multipliers",
]


def eq7_penalty_sign(
    problem: Problem,
    T: int,
    lam: float,
    theta: torch.Tensor,
    s_start: torch.Tensor,
    s_end: torch.Tensor,
    window: torch.Tensor,
    target: torch.Tensor,
    weights: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eq. (7) with the wrong sign on λ(s_i − ŝ_i) in the bracket (∇_W and ∇_{s_{i−T}} are wrong)."""
    s_hat, pull = vjp(lambda th, s: unroll_window(problem, th, s, window), theta, s_start)
    g_ell_theta, g_ell_s = grad(
        lambda th, s: (weights * prediction_loss(problem, th, s, target)).sum(), argnums=(0, 1)
    )(theta, s_hat)
    w_resid = weights[:, None] * (s_end - s_hat)
    bracket = g_ell_s + lam * w_resid  # MUTANT: + instead of −
    g_theta_cell, g_start = pull(bracket)
    return g_theta_cell + g_ell_theta, g_start, lam * w_resid


def exclusive_endpoint_indices(n: int, T: int, size: tuple[int, ...] | int, generator: torch.Generator) -> torch.Tensor:
    """i ~ uniform{T..n−1}: ``torch.randint(T, n)`` forgets that the upper bound is exclusive."""
    shape = (size,) if isinstance(size, int) else tuple(size)
    return torch.randint(T, n, shape, generator=generator)  # MUTANT: n instead of n + 1


def exclusive_endpoint_distribution(n: int, T: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The distribution the mutant sampler really draws from (uniform on T..n−1)."""
    support = torch.arange(T, n)
    return support, torch.full((support.numel(),), 1.0 / max(support.numel(), 1), dtype=torch.float64)


def full_loss_multipliers(problem: Problem, theta: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
    """Multiplier target = minus the adjoint of s_i for ℓ_i..ℓ_n (includes the step's own loss)."""
    return full_loss_adjoints(problem, theta, states)


def unscaled_multipliers(problem: Problem, theta: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
    """Lemma 1's multipliers times n: the check then compares λ(s_i − ŝ_i) with λ_i (no 1/n)."""
    return lemma1_multipliers(problem, theta, states) * problem.T


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "fpp.eq7-penalty-sign",
        "eq. (7) with +λ(s_i − ŝ_i) in the bracket of ∇_W L_i and ∇_{s_{i−T}} L_i",
        "fpp",
        "eq7_gradients",
        eq7_penalty_sign,
        ("fpp.gradient-eq7", "fpp.lemma3-unbiased", "fpp.stationarity"),
    ),
    Mutant(
        "fpp.sampler-exclusive-endpoint",
        "k ~ uniform{T..n−1} (exclusive upper bound): the newest transition is never sampled",
        "fpp",
        "sampler",
        exclusive_endpoint_indices,
        ("fpp.lemma3-unbiased",),
    ),
    Mutant(
        "fpp.multiplier-full-loss-adjoint",
        "Thm 2 multiplier target = adjoint of s_i for all losses l_i..l_n, not the later ones only",
        "fpp",
        "multipliers",
        full_loss_multipliers,
        ("fpp.kkt-recovery", "fpp.prop2-kkt-equivalence"),
    ),
    Mutant(
        "fpp.multiplier-unscaled",
        "Thm 2 multiplier target lambda_i instead of lambda_i / n (eq. (11)'s penalty is not divided by n)",
        "fpp",
        "multipliers",
        unscaled_multipliers,
        ("fpp.kkt-recovery",),
    ),
)
