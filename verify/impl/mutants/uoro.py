r"""The UORO-family mutant catalog of the statistical checks.

The checks are in :mod:`verify.checks.uoro_statistics`, :mod:`verify.checks.uoro_variance` and
:mod:`verify.checks.uoro_mutants`.

Every mutant is a plausible bug in an implementation of Algorithm 1 of Tallec &
Ollivier (uoro-tallec-ollivier.md), its variants (§3: rank r, UORO-T), the
preactivation-space UORO or the REINFORCE estimator of Cooijmans & Martens
(uoro-variance-cooijmans-martens.md). ``impl`` is a factory with the keyword
hyperparameters of the class it breaks (``part(rank=2)``; ``impl`` is the UORO family's
default with that part replaced), ``visible_to`` names the claims whose checks must report
FAIL on it (the kill table of the claim
``uoro.mutants-caught`` runs exactly those).

The ten mutants of :mod:`verify.impl.mutants.estimators` (issue 3) are reused under
their names, with this module's claims added to ``visible_to``; six more noise and
normalizer bugs, a rank-r bug, a preactivation bug and a REINFORCE bug are new.

Three classes (DESIGN.md, "Notes from reading the papers"):

* **biased** -- the mean is wrong: the statistical unbiasedness test sees them
  (``uoro.unbiased-statistical``) and so does the conformance check;
* **mean-invisible** -- unbiasedness holds for *any* positive ν-independent ρ₀ and
  any positive even ρ₁ (App. A): an inverted ρ₀ ratio, ρ₀ ≡ 1 (issue 3's
  "previous step" rule returns the previous *returned* value, which starts at 1,
  so it is ρ₀ ≡ 1), ρ₁ ≡ 1, ρ₁ without its square root. Only
  ``uoro.algorithm-1-conformance`` (tabulated noise against an independent
  evaluation of the formulas) and ``uoro.variance-matches-algorithm-1`` (two-sample
  test on second moments) can see them;
* **law-of-the-noise** -- a coin with P(+1) = 0.6, ν reused, ν shared by all samples
  or all pairs: the noise-law part of the conformance check tests the draws
  (support {±1}, fairness, independence across coordinates, steps, samples, pairs).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field

import torch

from verify.estimators.uoro import (
    UORO,
    IIDNoise,
    NoiseSource,
    NormalizerInputs,
    PreactivationUORO,
    Rademacher,
    Tabulated,
    WrappedNoise,
    pair_norm,
)
from verify.impl import reinforce_estimator
from verify.impl.mutants import Mutant
from verify.impl.mutants import estimators as issue3
from verify.impl.mutants.estimators import ZeroOne

__all__ = [
    "CONFORMANCE",
    "MUST_NOT_FAIL",
    "MUTANTS",
    "PREACTIVATION",
    "RANK_UNBIASED",
    "RANK_VARIANCE",
    "REINFORCE",
    "UNBIASED",
    "VARIANCE",
    "BiasedCoin",
    "SharedAcrossPairs",
    "SharedAcrossSamples",
    "UniformNoise",
    "get",
    "rho1_no_sqrt",
]

UNBIASED = "uoro.unbiased-statistical"
RANK_UNBIASED = "uoro.rank-unbiased"
CONFORMANCE = "uoro.algorithm-1-conformance"
VARIANCE = "uoro.variance-matches-algorithm-1"
RANK_VARIANCE = "uoro.rank-variance"
PREACTIVATION = "uoro.preactivation"
REINFORCE = "uoro.reinforce-link"


# ------------------------------------------------------------------------- noise
@dataclass(frozen=True)
class BiasedCoin(IIDNoise):
    """Signs with P(+1) = 0.6 (``torch.rand(...) < 0.6`` instead of 0.5): E ν ≠ 0, E ννᵀ ≠ I."""

    p_plus: float = 0.6
    support: tuple[float, ...] | None = (-1.0, 1.0)

    def sample(self, rng: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        u = torch.rand(shape, generator=rng, device=rng.device, dtype=torch.float64)
        return 2.0 * (u < self.p_plus).to(torch.float64) - 1.0


@dataclass(frozen=True)
class UniformNoise(IIDNoise):
    """ν uniform on [−1, 1] (``2*rand − 1`` instead of signs): E ννᵀ = I/3, the new terms shrink by 3."""

    support: tuple[float, ...] | None = None

    def sample(self, rng: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        return 2.0 * torch.rand(shape, generator=rng, device=rng.device, dtype=torch.float64) - 1.0


@dataclass(frozen=True)
class SharedAcrossSamples(WrappedNoise):
    """One ν per step broadcast to all M samples (the sample dimension forgotten in the draw).

    Each sample is still an unbiased UORO run, but the M "independent" draws of one
    call are one draw repeated: the unbiasedness test's independence premise fails
    (issue 39: INCONCLUSIVE naming it, its design effect is the call's size -- the call,
    not the draw, is the unit), and Algorithm 1's conformance FAILs it.
    """

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
        one = self.inner.draw(rng, (1, *shape[1:]), dtype, device, index, previous[:1])
        return one.expand(shape).clone()

    def tabulated(self, table: torch.Tensor) -> NoiseSource:
        return Tabulated(table, self.support)


@dataclass(frozen=True)
class SharedAcrossPairs(WrappedNoise):
    """Rank-r UORO whose r pairs share one ν per step (the pair dimension forgotten in the draw).

    Every pair is an unbiased UORO run, so the average is unbiased, but the pairs are
    identical: the variance does not fall as 1/r. Only a variance check can see it.
    """

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
        one = self.inner.draw(rng, (shape[0], 1, *shape[2:]), dtype, device, index, previous[:, :1])
        return one.expand(shape).clone()

    def tabulated(self, table: torch.Tensor) -> NoiseSource:
        return SharedAcrossPairs(self.inner.tabulated(table[:, :, :1]))  # pair 0 of each draw, for every pair


# ------------------------------------------------------------------- normalizers
def rho1_no_sqrt(z: NormalizerInputs) -> torch.Tensor:
    """ρ₁ = ‖δθ_g‖/(‖ν‖ + ε) + ε without the square root (positive and even in ν: unbiased)."""
    return pair_norm(z.delta_theta_g) / (pair_norm(z.nu) + z.eps) + z.eps


# ------------------------------------------------------------ preactivation UORO
def _preact_zero_one(**kwargs: object) -> PreactivationUORO:
    return PreactivationUORO(noise=ZeroOne(), label="uoro-preact[noise-zero-one]", **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- catalog
def _reuse(name: str, extra: tuple[str, ...]) -> Mutant:
    m = issue3.get(name)
    return dataclasses.replace(m, visible_to=tuple(dict.fromkeys((*m.visible_to, *extra))))


def _uoro(label: str, **fields: object) -> functools.partial[UORO]:
    return functools.partial(UORO, label=f"uoro[{label}]", **fields)  # type: ignore[arg-type]


MUTANTS: tuple[Mutant, ...] = (
    # --- issue 3's mutants (verify.impl.mutants.estimators), with the checks of this module added
    _reuse("uoro.noise-zero-one", (UNBIASED, CONFORMANCE)),
    _reuse("uoro.rho0-one-factor", (UNBIASED, CONFORMANCE)),
    _reuse("uoro.rho1-asymmetric", (UNBIASED, CONFORMANCE)),
    _reuse("uoro.no-delta-theta", (UNBIASED, CONFORMANCE)),
    _reuse("uoro.noise-reused", (UNBIASED, CONFORMANCE)),
    _reuse("uoro.theta-tilde-scaled", (UNBIASED, CONFORMANCE)),
    _reuse("uoro.noise-gaussian-variance", (UNBIASED, CONFORMANCE)),
    _reuse("uoro.rho0-inverted", (CONFORMANCE, VARIANCE)),
    _reuse("uoro.rho0-previous-step", (CONFORMANCE, VARIANCE)),
    _reuse("uoro.rho1-constant", (CONFORMANCE, VARIANCE)),
    # --- new
    Mutant(
        "uoro.noise-shared-across-samples",
        SharedAcrossSamples.__doc__ or "",
        "uoro",
        "uoro",
        _uoro("noise-shared-across-samples", noise=SharedAcrossSamples()),
        (CONFORMANCE,),
    ),
    Mutant(
        "uoro.noise-biased-coin",
        BiasedCoin.__doc__ or "",
        "uoro",
        "uoro",
        _uoro("noise-biased-coin", noise=BiasedCoin()),
        (CONFORMANCE,),
    ),
    Mutant(
        "uoro.noise-uniform",
        UniformNoise.__doc__ or "",
        "uoro",
        "uoro",
        _uoro("noise-uniform", noise=UniformNoise()),
        (UNBIASED, CONFORMANCE),
    ),
    Mutant(
        "uoro.rho1-no-sqrt",
        rho1_no_sqrt.__doc__ or "",
        "uoro",
        "uoro",
        _uoro("rho1-no-sqrt", rho1=rho1_no_sqrt),
        (CONFORMANCE, VARIANCE),
    ),
    Mutant(
        "uoro.rho1-one-factor",
        "ρ₁ applied to s̃ only (δθ_g not divided by ρ₁): the new term ν⊗νᵀ∂F/∂θ is scaled by ρ₁.",
        "uoro",
        "uoro",
        _uoro("rho1-one-factor", rho1_on="state"),
        (UNBIASED, CONFORMANCE),
    ),
    Mutant(
        "uoro.rho0-theta-only",
        "θ̃ divided by ρ₀ but ∂F/∂s·s̃ not multiplied by it: the carried term is scaled by 1/ρ₀.",
        "uoro",
        "uoro",
        _uoro("rho0-theta-only", rho0_on="theta"),
        (UNBIASED, CONFORMANCE),
    ),
    Mutant(
        "uoro.rank-shared-noise",
        SharedAcrossPairs.__doc__ or "",
        "uoro",
        "uoro",
        _uoro("rank-shared-noise", noise=SharedAcrossPairs()),
        (RANK_VARIANCE, CONFORMANCE),
    ),
    Mutant(
        "uoro-preact.noise-zero-one",
        "Preactivation-space UORO with τ drawn from {0, 1} instead of ±1 (E τ² = 1/2, E τ ≠ 0).",
        "uoro",
        "preactivation",
        _preact_zero_one,
        (PREACTIVATION,),
    ),
    Mutant(
        "reinforce.no-inverse-sigma",
        "REINFORCE whose score omits the 1/σ of ∇ log N(h̄; h, σ²I) = u/σ: it vanishes instead of tending to UORO.",
        "uoro",
        "reinforce",
        functools.partial(reinforce_estimator, inverse_sigma=False),
        (REINFORCE,),
    ),
)


#: The other side of the kill table (issue 14): **unbiased** mutants and the unbiasedness tests that must
#: *not* FAIL them (PASS or INCONCLUSIVE). A FAIL there is a false alarm of the statistics engine.
#: High variance (a variance anomaly, not bias): a stale or inverted ρ₀; near-identical variance: ρ₁ ≡ 1,
#: ρ₁ without its square root; rank-r UORO whose pairs share ν (variance not divided by r).
MUST_NOT_FAIL: dict[str, tuple[str, ...]] = {
    "uoro.rho0-previous-step": (UNBIASED,),  # E q ×1e13 (exact enumeration: bias ≤ 1.3e-10, round-off)
    "uoro.rho0-inverted": (UNBIASED,),  # E q ×6.7e13
    "uoro.rho1-constant": (UNBIASED,),  # E q ×2-3
    "uoro.rho1-no-sqrt": (UNBIASED,),  # E q ×1.3: near-identical
    "uoro.rank-shared-noise": (RANK_UNBIASED,),  # rank-r variance not divided by r
}


def get(name: str) -> Mutant:
    """The mutant called ``name`` (KeyError otherwise)."""
    for m in MUTANTS:
        if m.name == name:
            return m
    raise KeyError(name)
