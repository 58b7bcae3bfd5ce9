r"""Broken online estimators: plausible bugs in RTRL, truncated BPTT and the UORO family.

Each :class:`~verify.impl.mutants.Mutant` replaces an estimator factory of the
implementation under test (:mod:`verify.impl`: ``rtrl.rtrl``, ``truncation.tbptt``,
``uoro.uoro``); its ``part`` is a factory with the same keyword hyperparameters as
the class it breaks (``part(rank=2)`` works for a UORO mutant), returning an object
that follows the estimator contract. ``visible_to`` lists the
claims whose checks must report FAIL on it; tests/estimators/test_mutants.py runs
each of them and requires FAIL.

UORO's unbiasedness (Prop. 1) is invariant to any positive ν-independent ρ₀ and
any positive even ρ₁ (DESIGN.md, "Notes from reading the papers"), so the mutants
``uoro.rho0-inverted``, ``uoro.rho0-previous-step`` and ``uoro.rho1-constant`` are
unbiased: no expectation check can see them (``visible_to=()``; the exact
enumeration ``uoro.exact-expectation`` runs them as *positive* controls that must
PASS). They need a conformance or variance check. ``uoro.noise-gaussian-variance``
is biased but continuous, so it cannot be enumerated; a statistical test sees it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import torch

from verify.estimators.rtrl import RTRL
from verify.estimators.tbptt import TBPTT
from verify.estimators.uoro import (
    UORO,
    IIDNoise,
    NoiseSource,
    NormalizerInputs,
    Rademacher,
    WrappedNoise,
    pair_norm,
    paper_rho1,
)
from verify.impl.mutants import Mutant
from verify.model.problem import Problem

__all__ = [
    "MUTANTS",
    "Gaussian",
    "RTRLWithoutImmediateTerm",
    "Reused",
    "TBPTTOffByOne",
    "ZeroOne",
    "rho0_inverted",
    "rho0_previous_step",
    "rho1_asymmetric",
    "rho1_constant",
]


# ------------------------------------------------------------------------ RTRL
@dataclass(frozen=True)
class RTRLWithoutImmediateTerm(RTRL):
    r"""RTRL that forgets the immediate term :math:`\partial F/\partial\theta` of eq. (4).

    :math:`J_t = \partial_s F\,J_{t-1}` only: the influence stays 0 from :math:`J_0 = 0`,
    so only the readout's own gradient survives.
    """

    def transition_jacobians(
        self, problem: Problem, theta: torch.Tensor, s: torch.Tensor, x: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        s_next, J_s, J_th = super().transition_jacobians(problem, theta, s, x)
        return s_next, J_s, torch.zeros_like(J_th)


# ----------------------------------------------------------------------- TBPTT
@dataclass(frozen=True)
class TBPTTOffByOne(TBPTT):
    """Truncated BPTT whose window is one step short (k − 1 transitions differentiated; needs k ≥ 2)."""

    def window_start(self, t: int) -> int:
        return max(t - self.k + 1, 0)


# ------------------------------------------------------------------- UORO noise
@dataclass(frozen=True)
class ZeroOne(IIDNoise):
    """ν with independent coordinates uniform on {0, 1} (a wrong noise law: E[ν] ≠ 0, E[ννᵀ] ≠ I)."""

    support: tuple[float, ...] | None = (0.0, 1.0)

    def sample(self, rng: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.randint(0, 2, shape, generator=rng, device=rng.device)


@dataclass(frozen=True)
class Gaussian(IIDNoise):
    """ν ~ N(0, std² I): unbiased only for std = 1 (E[ννᵀ] = std² I)."""

    std: float = 2.0
    support: tuple[float, ...] | None = None

    def sample(self, rng: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        return self.std * torch.randn(shape, generator=rng, device=rng.device, dtype=torch.float64)


@dataclass(frozen=True)
class Reused(WrappedNoise):
    """Draws ν once and reuses it at every later step (temporal cross-terms no longer cancel)."""

    inner: NoiseSource = field(default_factory=Rademacher)

    def draw(
        self,
        rng: torch.Generator,
        shape: tuple[int, ...],
        dtype: torch.dtype,
        device: torch.device,
        index: int,
        previous: torch.Tensor,
    ) -> torch.Tensor:
        if index == 0:
            return self.inner.draw(rng, shape, dtype, device, index, previous)
        return previous

    def tabulated(self, table: torch.Tensor) -> NoiseSource:
        return Reused(self.inner.tabulated(table))


# -------------------------------------------------------------- UORO normalizers
def rho1_asymmetric(z: NormalizerInputs) -> torch.Tensor:
    """ρ₁ · 2^{ν₁}: positive, but not even in ν (breaks the ν → −ν symmetry of App. A)."""
    first = z.nu.flatten(2)[..., 0]
    return paper_rho1(z) * torch.pow(2.0, first)


def rho0_inverted(z: NormalizerInputs) -> torch.Tensor:
    """ρ₀ with the ratio inverted: sqrt(‖∂F s̃‖ / (‖θ̃‖ + ε)) + ε (positive, ν-independent: unbiased)."""
    return torch.sqrt(pair_norm(z.s_forward) / (pair_norm(z.theta_tilde) + z.eps)) + z.eps


def rho0_previous_step(z: NormalizerInputs) -> torch.Tensor:
    """Algorithm 1's ρ₀ of the previous reduction (1 at the first): one step stale, still ν-independent: unbiased."""
    return z.prev_rho0


def rho1_constant(z: NormalizerInputs) -> torch.Tensor:
    """ρ₁ ≡ 1 (even in ν: unbiased)."""
    return torch.ones_like(z.prev_rho1)


# ------------------------------------------------------------------- catalog
_EXPECTATION = ("uoro.exact-expectation",)

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "rtrl.no-immediate-term",
        RTRLWithoutImmediateTerm.__doc__ or "",
        "rtrl",
        "rtrl",
        RTRLWithoutImmediateTerm,
        ("rtrl.exact", "rtrl.influence-balancing", "rtrl.online-convergence"),
    ),
    Mutant(
        "tbptt.off-by-one",
        TBPTTOffByOne.__doc__ or "",
        "truncation",
        "tbptt",
        TBPTTOffByOne,
        ("rtrl.truncated-bptt", "rtrl.influence-balancing", "truncation.tbptt-gradient-bound"),
    ),
    Mutant(
        "uoro.noise-zero-one",
        ZeroOne.__doc__ or "",
        "uoro",
        "uoro",
        functools.partial(UORO, noise=ZeroOne(), label="uoro[noise-zero-one]"),
        _EXPECTATION,
    ),
    Mutant(
        "uoro.rho0-one-factor",
        "ρ₀ applied to s̃ only (θ̃ not divided by ρ₀): the product s̃⊗θ̃ is scaled by ρ₀.",
        "uoro",
        "uoro",
        functools.partial(UORO, rho0_on="state", label="uoro[rho0-one-factor]"),
        _EXPECTATION,
    ),
    Mutant(
        "uoro.rho1-asymmetric",
        rho1_asymmetric.__doc__ or "",
        "uoro",
        "uoro",
        functools.partial(UORO, rho1=rho1_asymmetric, label="uoro[rho1-asymmetric]"),
        _EXPECTATION,
    ),
    Mutant(
        "uoro.no-delta-theta",
        "g̃ = (δs·s̃)θ̃ without the δθ term of Algorithm 1.",
        "uoro",
        "uoro",
        functools.partial(UORO, include_delta_theta=False, label="uoro[no-delta-theta]"),
        _EXPECTATION,
    ),
    Mutant(
        "uoro.noise-reused",
        Reused.__doc__ or "",
        "uoro",
        "uoro",
        functools.partial(UORO, noise=Reused(), label="uoro[noise-reused]"),
        _EXPECTATION,
    ),
    Mutant(
        "uoro.theta-tilde-scaled",
        "θ̃ multiplied by 2 at every reduction (s̃⊗θ̃ off by 2^t).",
        "uoro",
        "uoro",
        functools.partial(UORO, theta_tilde_scale=2.0, label="uoro[theta-tilde-scaled]"),
        _EXPECTATION,
    ),
    Mutant(
        "uoro.noise-gaussian-variance",
        (Gaussian.__doc__ or "") + " (std = 2; continuous: not enumerable, a statistical check sees it)",
        "uoro",
        "uoro",
        functools.partial(UORO, noise=Gaussian(2.0), label="uoro[noise-gaussian-variance]"),
        (),
    ),
    Mutant(
        "uoro.rho0-inverted",
        rho0_inverted.__doc__ or "",
        "uoro",
        "uoro",
        functools.partial(UORO, rho0=rho0_inverted, label="uoro[rho0-inverted]"),
        (),
    ),
    Mutant(
        "uoro.rho0-previous-step",
        rho0_previous_step.__doc__ or "",
        "uoro",
        "uoro",
        functools.partial(UORO, rho0=rho0_previous_step, label="uoro[rho0-previous-step]"),
        (),
    ),
    Mutant(
        "uoro.rho1-constant",
        rho1_constant.__doc__ or "",
        "uoro",
        "uoro",
        functools.partial(UORO, rho1=rho1_constant, label="uoro[rho1-constant]"),
        (),
    ),
)


def get(name: str) -> Mutant:
    """The mutant called ``name`` (KeyError otherwise)."""
    for m in MUTANTS:
        if m.name == name:
            return m
    raise KeyError(name)
