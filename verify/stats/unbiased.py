r"""Unbiasedness tests for vector-valued stochastic estimators, with stated error rates.

Question: does an estimator :math:`\hat g` (M i.i.d. draws :math:`X_1..X_M \in \mathbb R^p`)
have mean equal to a known truth g (from the float64 references)? DESIGN.md,
"Numerical policy": three verdicts, two error rates, one bias tolerance.

* **FAIL** -- bias detected. For an unbiased estimator the probability of FAIL is
  ≤ α (default 1e-3 per claim).
* **PASS** -- a *certified bias bound*: the test returns a confidence ball
  :math:`\{\mu: \|\mu-\bar X\| \le r\}` at level 1 − β and PASSes only when the
  whole ball lies inside :math:`\{\mu: \|\mu - g\| < \delta\|g\|\}`, i.e. when

  .. math::
      B := \|\bar X - g\| + r < \delta\,\|g\| .

  On the event :math:`\|\bar X-\mu\|\le r` (probability ≥ 1 − β) the triangle
  inequality gives :math:`\|E\hat g - g\| \le B`, so
  :math:`P(\text{PASS and } \|E\hat g-g\|\ge\delta\|g\|) \le \beta`. This is a
  bound on the **full vector bias in the Euclidean norm**, not on K
  projections: r comes from a norm concentration inequality for the whole
  vector (Laurent & Massart 2000, Lemma 1, applied to the eigenvalues of the
  sample covariance), see :mod:`verify.stats.bounds`. The achieved region (B,
  r, and B/‖g‖) is part of every result.
* **INCONCLUSIVE** -- the budget ran out first (or a premise of the
  approximation is in doubt, see "heavy tails").

Mechanisms
----------
*Fixed-sample* (:func:`fixed_sample_test`, :func:`planned_test`): the FAIL side is
a family of K + 3 tests of :math:`H_0: |v^\top(E X - g)| \le \tau(v)` for every unit v
(τ: the round-off budget of :mod:`verify.stats.roundoff` -- a deviation within the
truth's and the draws' round-off is not bias), combined by a weighted Bonferroni split
fixed in advance: **α/4 per kind of test** -- Hotelling's T², the K directions (Holm's
step-down, or Bonferroni, inside their share; α/2 when Hotelling does not apply), the
deterministic coordinates, the unresolved directions. A share whose test does not apply
is not spent, so an estimator whose draws are noisy in every direction is FAILed with
probability about α/2 (the calibration suite, :mod:`verify.stats.calibration`, measures it):

* *mean shift along noisy directions*: Student-t tests of the projections
  :math:`u_k^\top(X-g)` on K random unit directions (drawn before the data), and
  Hotelling's :math:`T^2 = M \sum_j z_j'^2/(\hat\lambda_j + e)` on the resolved range of
  the sample covariance (:math:`\frac{M-r}{r(M-1)}T^2 \sim F(r, M-r)`, used when
  M > r + 1), with :math:`z_j' = \max(|\hat v_j^\top \bar Y| - \tau(\hat v_j), 0)`;
* *deterministic offset beyond round-off*: the coordinates whose variance is within
  round-off of their magnitude (:math:`S_{kk}\le\tau_k^2`, e.g. UORO's readout
  gradient) and the directions the float64 eigen-decomposition cannot resolve
  (:math:`\hat\lambda_j \le 10e`, :math:`e = 8\,d\,u\,\hat\lambda_{\max}`), each tested
  against its budget plus its own standard error (Bonferroni inside the group).

The PASS side uses the ball above with :math:`r = a_\beta(S)/\sqrt M` and the round-off
budget τ added: :math:`B = \|\bar X - g\| + r + \tau`. :func:`planned_test` first
draws a pilot, asks :mod:`verify.stats.planner` for M, then tests M fresh draws.

*Sequential, anytime-valid* (:func:`sequential_test`): draws in growing batches and
after every batch evaluates **time-uniform** boundaries (confidence sequences),
so stopping as soon as the verdict is clear keeps both error rates: Robbins'
normal-mixture boundary per direction and per deterministic coordinate, a
Mahalanobis mixture on the resolved range and one on the unresolved directions
(the same α/4 shares: α/(4K) per direction, α/(4p) per deterministic coordinate), and
the vector normal-mixture radius for the ball (at β), see :mod:`verify.stats.bounds`.

*One story per verdict.* A FAIL names its evidence (mean shift along noisy
directions, or deterministic offset beyond the round-off budget) and certifies
nothing; a PASS certifies :math:`\|E\hat g - g\| \le B` (round-off budget included
and reported); an INCONCLUSIVE says why. A **variance anomaly** -- a covariance so
large for the mean it estimates that certifying δ would take ≥ ``anomaly_ratio``
(default 10³) times the budget of draws (e.g. UORO with a stale ρ₀: variance ×1e13)
-- is reported as such (INCONCLUSIVE, "variance anomaly"), never as bias; the
sequential test stops there (``stop_on_anomaly``).

*Large p* (p > ``dense_max``, default 512): the p×p scatter is not formed
(diagonal mode of :mod:`verify.stats.moments`): the FAIL side is the K directions and
the deterministic coordinates, the ball uses tr S, an upper estimate of
:math:`\sqrt{\operatorname{tr}\Sigma^2}` (from independent quadruples of draws) in
place of λ_max and the Frobenius norm (:class:`~verify.stats.bounds.Spectrum`).

Assumptions (stated, and tested in ``tests/stats``)
---------------------------------------------------
No test of a mean is possible without an assumption on the tails (Bahadur &
Savage 1956: over all distributions with a mean, every test has power ≤ its
level). Ours: **the draws are i.i.d. with finite covariance**; the error rates
are then those of the Gaussian approximation of :math:`\bar X` with the plug-in
covariance S -- exact for Gaussian draws, asymptotic (M → ∞, multivariate CLT;
for the sequential test the asymptotic confidence sequences of Waudby-Smith,
Arbour, Sinha, Kennedy & Ramdas 2021) otherwise. UORO's draws are bounded (finite
T, Rademacher noise: 2^{nT} outcomes), so every moment exists.

Premises before verdicts (issue 22, :mod:`verify.stats.premises`): every premise is checked before the test
may FAIL as well as before it may PASS. *Heavy tails*: the tail diagnostic measures the largest single draw's
share of the trace of the scatter matrix (for finite variance it tends to 0 as M grows; measured, p = 10,
Student-t coordinates, 40 seeds: median share 0.6 for Cauchy, 0.3 for 1.5 degrees of freedom, 0.15 for 2,
0.01-0.03 for 3); above ``max_tail_share`` (default 0.1) no Gaussian test may reject and no PASS is issued.
*Skew*: a two-sided test at level a is used only where the second-order Edgeworth term of its statistic is at
most a (the sample skewness along each random direction; for Hotelling/Mahalanobis the most skewed whitened
direction at level a/r); otherwise it cannot reject, and the INCONCLUSIVE says so. *Flat draws*: coordinates
and directions with no variation beyond round-off are deterministic only if the estimator declares it
(``event_floor``), bounded by an unseen-event term if it declares ``draw_radius``, and otherwise carry no
evidence either way (the direction tests leave their mean out). A PASS also needs M ≥ ``min_samples`` (1000).
Issue 39 adds three premises, checked the same way (a failed one is INCONCLUSIVE, naming it, never FAIL or PASS):
*an infinite variance in one coordinate or tested direction* -- Hill's tail index below 2 together with one draw
carrying more than ``max_tail_share`` of that coordinate's scatter (not diluted by the others, as the trace share
is); *independence of the draws* -- the draws are kept in groups (each sampler call; a given sample: consecutive
blocks); :func:`planned_test` draws its pilot and its test draws, and :func:`sequential_test` its first batch, in
:data:`SPLIT_CALLS` calls of equal size, so calls can be compared from the first verdict on. The call is the unit:
the between-call variation gives a design effect D ≥ 1 (:func:`design_effect`; Kish's, for draws that share an
offset within a call) by which every variance of a look is multiplied; D is itself estimated, on (G − 1)·r degrees
of freedom (G groups, r resolved directions), so the fixed-sample subtests (:func:`fixed_sample_test`,
:func:`planned_test`) refer their t and F statistics to that many degrees of freedom where it is fewer than the
draws' own, as a t-test on the G group means would (without it, 8 blocks of a shared-offset sample underestimated
D and FAILed 5 in 2000 correct samples at α = 1e-3); a rejection whose between-group
variation is significant at level α is INCONCLUSIVE naming the premise; no verdict comes from fewer than
:data:`MIN_CALLS` calls (and the sequential test does not stop on a variance anomaly before then: a FAIL must stay
possible);
*resolution* -- the unresolved-directions subtest never FAILs (directions that vary on rare sign patterns only are
a premise on the draws, not a bias). *Scale*: every statistic is computed on the draws and the truth multiplied by
a power of two (exact) that brings ‖g‖ (or ``reference_norm``) into [0.5, 1), and reported back in the user's
units, so squares neither underflow (1e-155 … 1e-300) nor overflow; :mod:`verify.stats.premises` has the details
and ``python -m verify.bench.premises`` the measurements.
The calibration suite (:mod:`verify.stats.calibration`) measures both rates with rare-event, skewed, lattice,
heavy-tailed and ill-conditioned draws.

Families: J quantities tested on the same draws (e.g. several time steps) split
α and β J ways (Bonferroni), so the family-wise rates are ≤ α and ≤ β.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch

from verify._validate import (
    MAX_SEED,
    require_finite,
    require_positive,
    require_positive_int,
    require_probability,
    validate_seed,
)
from verify.errors import InvalidArgument
from verify.stats import dist
from verify.stats.bounds import (
    Spectrum,
    best_mixture_rho,
    mahalanobis_mixture_threshold,
    norm_quantile_bound,
    normal_mixture_halfwidth,
    vector_mixture_radius,
)
from verify.stats.moments import U64, Batch, Moments, empty_moments, fold_batch, update_moments
from verify.stats.multiple import adjusted_pvalues
from verify.stats.planner import SamplePlan, plan_from_pilot
from verify.stats.premises import (
    BLOCKS_PER_CALL,
    INDEPENDENCE_LEVEL,
    TAIL_INDEX_MIN,
    Groups,
    Reservoir,
    ball_skew_allowance,
    between_within,
    declared_flat,
    empty_groups,
    empty_reservoir,
    groups_add,
    groups_add_one,
    max_skewness,
    reservoir_add,
    shrink_deviations,
    skew_allowance,
    skewness_along,
    tail_index,
    unseen_flat_mass,
    unseen_mass,
    weighted_skewness,
)
from verify.stats.roundoff import (
    DEFAULT_TRUTH_RTOL,
    DEFAULT_ULPS,
    RESOLVE_FACTOR,
    coordinate_budget,
    deterministic_coordinates,
    draw_rms,
    eigen_floor,
    symmetric_eigh,
)
from verify.verdict import Verdict

__all__ = [
    "TARGET_SHARE",
    "QuantityResult",
    "Sampler",
    "SubTest",
    "TestOptions",
    "UnbiasednessResult",
    "fixed_sample_test",
    "pilot_plan",
    "plan_quantity",
    "planned_test",
    "sequential_test",
    "validate_seed",
]

#: ``sampler(m, generator)`` -> m i.i.d. draws: a tensor (m, p) or a sequence of J tensors (m, p_j). What a sampler
#: must guarantee (issue 39): the draws of one call are i.i.d. and independent of every other call's -- no state or
#: random offset shared by the draws of a call -- and it must accept any m >= 1 (a request is split into
#: :data:`SPLIT_CALLS` calls). Checked, not assumed: the calls are compared (between- vs within-call variation,
#: :mod:`verify.stats.premises`); where they differ the call is the unit (:func:`design_effect`) and a verdict that
#: rests on the premise is INCONCLUSIVE naming it; no verdict is given before two calls. Optional (issue 42):
#: ``sampler.draw_calls(sizes, generator)``, the draws of the calls ``sampler(m, generator)`` for ``m`` in ``sizes``
#: one after the other, rows in call order, in one pass (:func:`_draw` folds each call as its own group).
Sampler = Callable[[int, torch.Generator], torch.Tensor | Sequence[torch.Tensor]]

#: the mixture boundaries are tuned for this fraction of the fixed-sample plan (about where the sequential
#: test stops: 0.4-0.6 of the plan in the UORO claims; ``--plan`` expects an unbiased estimator's stop there)
TARGET_SHARE = 0.5
_TARGET_FRAC = TARGET_SHARE

#: evidence of a FAIL, by subtest family
MEAN_SHIFT = "mean shift along noisy directions"
DETERMINISTIC = "deterministic offset beyond the round-off budget"
#: the seeds the engine accepts: the one limit of the CLI and the API (:data:`verify._validate.MAX_SEED`)
SEED_RANGE = (0, MAX_SEED)


@dataclass(frozen=True)
class TestOptions:
    """Error rates, tolerance and mechanism settings of an unbiasedness test.

    ``alpha``: false-FAIL rate for an unbiased estimator (per call, split over the
    J quantities). ``beta``: probability that a PASS certificate is wrong.
    ``delta``: PASS requires the certified bias bound below δ·‖g‖. ``directions``:
    K random projections. ``correction``: ``"holm"`` or ``"bonferroni"`` (among the K directions).
    ``miss``: planner's probability that a correct estimator misses PASS (default β).
    ``roundoff_ulps`` (κ) and ``truth_rtol``: the round-off model of
    :mod:`verify.stats.roundoff` (each draw coordinate may carry κ units of round-off of
    its magnitude; the truth is accurate to truth_rtol·‖g‖). ``min_samples`` /
    ``max_tail_share``: premises of a PASS. ``dense_max``: above this dimension the
    p×p covariance is not formed (diagonal mode). ``anomaly_ratio``: a plan above this
    multiple of the budget is a variance anomaly (INCONCLUSIVE); ``stop_on_anomaly``:
    the sequential test stops there.

    What the estimator **declares** about its draws (:mod:`verify.stats.premises`; nothing by default):
    ``event_floor`` p -- along any coordinate or direction in which the estimator is not almost surely
    constant, a draw differs from its typical value with probability ≥ p (2⁻ⁿ for a function of one
    step's n Rademacher signs; 1 for continuous noise): then enough flat draws make a coordinate
    deterministic. ``draw_radius`` R -- every draw has ‖X − g‖₂ ≤ R: then an event not yet seen is
    bounded, and a certificate covers it (:func:`~verify.stats.premises.unseen_mass`). Without either, a
    coordinate or direction that shows no variation is neither certified nor evidence of bias.
    """

    __test__ = False  # not a pytest test class

    alpha: float = 1e-3
    beta: float = 1e-3
    delta: float = 0.02
    directions: int = 16
    correction: str = "holm"
    hotelling: bool = True
    miss: float | None = None
    roundoff_ulps: float = DEFAULT_ULPS
    truth_rtol: float = DEFAULT_TRUTH_RTOL
    min_samples: int = 1000
    max_tail_share: float = 0.1
    dense_max: int = 512
    anomaly_ratio: float = 1e3
    stop_on_anomaly: bool = True
    event_floor: float | None = None
    draw_radius: float | None = None

    def __post_init__(self) -> None:
        require_probability("alpha", self.alpha)
        require_probability("beta", self.beta)
        require_positive("delta", self.delta)
        require_positive_int("directions", self.directions, minimum=0)
        if self.correction not in ("holm", "bonferroni"):
            raise InvalidArgument("correction", self.correction, "must be 'holm' or 'bonferroni'")
        if self.miss is not None:
            require_probability("miss", self.miss)
        require_positive("roundoff_ulps", self.roundoff_ulps)
        require_positive("truth_rtol", self.truth_rtol)
        require_positive_int("min_samples", self.min_samples, minimum=2)
        require_probability("max_tail_share", self.max_tail_share)
        require_positive_int("dense_max", self.dense_max, minimum=1)
        if not (isinstance(self.anomaly_ratio, (int, float)) and self.anomaly_ratio >= 1):
            raise InvalidArgument("anomaly_ratio", self.anomaly_ratio, "must be a number >= 1")
        if self.event_floor is not None and not (
            isinstance(self.event_floor, (int, float)) and 0.0 < self.event_floor <= 1.0
        ):
            raise InvalidArgument("event_floor", self.event_floor, "must be a probability in (0, 1] or None")
        if self.draw_radius is not None:
            require_positive("draw_radius", self.draw_radius)

    @property
    def miss_rate(self) -> float:
        return self.beta if self.miss is None else self.miss


@dataclass(frozen=True)
class SubTest:
    """One test of the FAIL family: its statistic, threshold (sequential) and p-value (fixed)."""

    __test__ = False

    name: str
    statistic: float
    pvalue: float
    rejected: bool
    threshold: float | None = None
    premise: str = ""
    """Non-empty: a premise of this test failed (skew, heavy tail), so it may not reject; says which."""

    @property
    def evidence(self) -> str:
        """What a rejection of this subtest is evidence of."""
        return DETERMINISTIC if self.name.startswith(("deterministic", "unresolved")) else MEAN_SHIFT


@dataclass(frozen=True)
class QuantityResult:
    """The verdict on one quantity (one truth vector) with the confidence region achieved."""

    name: str
    verdict: Verdict
    samples: int
    truth_norm: float
    bias_norm: float
    """‖X̄ − g‖, the estimated bias."""
    radius: float
    """Radius r of the 1 − β_j confidence ball around X̄."""
    bias_bound: float
    """Bound on ‖E ĝ − g‖: ‖X̄ − g‖ + r + round-off budget (a certificate only on PASS)."""
    relative_bound: float
    """bias_bound / ‖g‖ (PASS needs < δ)."""
    subtests: tuple[SubTest, ...]
    tail_share: float
    rank: int
    reason: str = ""
    roundoff_budget: float = 0.0
    """τ: the truth's and the draws' round-off budget (:mod:`verify.stats.roundoff`), part of bias_bound."""
    variance_anomaly: bool = False
    mean_error: torch.Tensor | None = field(default=None, compare=False, repr=False)
    """X̄ − g per coordinate (the user's units): where a FAIL's bias lies (a per-block diagnosis reads it)."""
    design_effect: float = 1.0
    """D >= 1: the factor the draws' covariance was multiplied by for draws correlated within a sampler call
    (:func:`design_effect`; 1: none seen)."""

    @property
    def evidence(self) -> str:
        """FAIL only: what was detected (mean shift along noisy directions / deterministic offset), by subtest."""
        rej = [s for s in self.subtests if s.rejected]
        out = []
        for kind in (MEAN_SHIFT, DETERMINISTIC):
            names = [s.name for s in rej if s.evidence == kind]
            if names:
                out.append(f"{kind} ({_compact(names, self.subtests)})")
        return "; ".join(out)

    def to_data(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict.value,
            "samples": self.samples,
            "truth_norm": self.truth_norm,
            "bias_norm": self.bias_norm,
            "relative_bias_estimate": self.bias_norm / self.truth_norm,
            "radius": self.radius,
            "bias_bound": self.bias_bound,
            "relative_bound": self.relative_bound,
            "certified": self.verdict is Verdict.PASS,
            "roundoff_budget": self.roundoff_budget,
            "relative_roundoff_budget": self.roundoff_budget / self.truth_norm,
            "tail_share": self.tail_share,
            "rank": self.rank,
            "reason": self.reason,
            "evidence": self.evidence,
            "variance_anomaly": self.variance_anomaly,
            "rejected": [s.name for s in self.subtests if s.rejected],
            "design_effect": self.design_effect,
        }


@dataclass(frozen=True)
class UnbiasednessResult:
    """Outcome of an unbiasedness test of J quantities (see module docstring)."""

    verdict: Verdict
    method: str
    alpha: float
    beta: float
    delta: float
    samples_used: int
    samples_planned: int | None
    quantities: tuple[QuantityResult, ...]
    reason: str = ""
    looks: tuple[tuple[int, float], ...] = ()
    plan: SamplePlan | None = None
    wall_time: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def relative_bound(self) -> float:
        """The worst relative bias bound over the quantities (the δ achieved; a certificate only on PASS)."""
        return max(q.relative_bound for q in self.quantities)

    @property
    def relative_roundoff_budget(self) -> float:
        """The largest round-off budget τ/‖g‖ over the quantities."""
        return max(q.roundoff_budget / q.truth_norm for q in self.quantities)

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS

    @property
    def failed(self) -> bool:
        return self.verdict is Verdict.FAIL

    @property
    def variance_anomaly(self) -> bool:
        return any(q.variance_anomaly for q in self.quantities)

    def summary(self) -> str:
        """One story per verdict: a FAIL names its evidence, a PASS its certificate, an INCONCLUSIVE its reason."""
        planned = f" (planned {self.samples_planned})" if self.samples_planned is not None else ""
        head = f"{self.verdict.value} [{self.method}] after {self.samples_used} draws{planned}: "
        worst = max(self.quantities, key=lambda q: q.relative_bound)
        if self.verdict is Verdict.FAIL:
            failed = [q for q in self.quantities if q.verdict is Verdict.FAIL]
            head += f"bias detected at alpha={self.alpha:g} in " + "; ".join(
                f"{q.name}: {q.evidence}, estimated bias {q.bias_norm / q.truth_norm:.3g}*||g|| "
                f"(round-off budget {q.roundoff_budget / q.truth_norm:.2g}*||g||)"
                for q in failed
            )
            diagnosis = self.extra.get("diagnosis")
            return f"{head}; {diagnosis}" if diagnosis else head
        if self.verdict is Verdict.PASS:
            head += (
                f"certified ||E g^ - g|| <= {self.relative_bound:.3g}*||g|| at 1-beta={1 - self.beta:g} "
                f"(delta={self.delta:g}, alpha={self.alpha:g}; round-off budget "
                f"{self.relative_roundoff_budget:.2g}*||g|| included); worst quantity {worst.name}: "
                f"estimated bias {worst.bias_norm / worst.truth_norm:.3g}*||g||"
            )
        else:
            head += (
                f"no bias detected at alpha={self.alpha:g}; no certificate: the bound reached is "
                f"{self.relative_bound:.3g}*||g|| vs delta={self.delta:g} (worst quantity {worst.name}, estimated "
                f"bias {worst.bias_norm / worst.truth_norm:.3g}*||g||)"
            )
        if self.reason:
            head += f"; {self.reason}"
        return head

    def to_data(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "method": self.method,
            "alpha": self.alpha,
            "beta": self.beta,
            "delta": self.delta,
            "samples_used": self.samples_used,
            "samples_planned": self.samples_planned,
            "relative_bound": self.relative_bound,
            "certified": self.passed,
            "relative_roundoff_budget": self.relative_roundoff_budget,
            "variance_anomaly": self.variance_anomaly,
            "quantities": [q.to_data() for q in self.quantities],
            "looks": [list(lk) for lk in self.looks],
            "reason": self.reason,
            **self.extra,
        }


def _compact(rejected: list[str], subs: tuple[SubTest, ...]) -> str:
    dirs = [n for n in rejected if n.startswith("direction-")]
    n_dirs = sum(1 for s in subs if s.name.startswith("direction-"))
    parts = [n for n in rejected if not n.startswith("direction-")]
    if dirs:
        parts.append(f"{len(dirs)}/{n_dirs} directions")
    return ", ".join(parts)


# ------------------------------------------------------------------ plumbing
def _as_list(x: torch.Tensor | Sequence[torch.Tensor], name: str) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)) and x and all(isinstance(t, torch.Tensor) for t in x):
        return list(x)
    raise InvalidArgument(name, type(x).__name__, "must be a tensor or a non-empty sequence of tensors")


def _check_generator(generator: object) -> torch.Generator:
    if not isinstance(generator, torch.Generator):
        raise InvalidArgument("generator", type(generator).__name__, "must be a torch.Generator")
    return generator


def _safe_norm(v: torch.Tensor) -> float:
    """‖v‖₂ without underflow or overflow: v is rescaled by a power of two (exact) before squaring."""
    top = float(v.abs().max()) if v.numel() else 0.0
    if not top > 0 or not math.isfinite(top):
        return top
    e = math.frexp(top)[1]
    w = torch.from_numpy(np.ldexp(v.detach().cpu().to(torch.float64).numpy(), -e))  # exact, no 2^-e formed
    return math.ldexp(float(torch.linalg.vector_norm(w)), e)


def _unit_scale(norm: float) -> float:
    """The power of two c with c·norm in [0.5, 1): multiplying by it is exact, and every statistic of the test is
    computed on the rescaled draws (no square underflows at 1e-170, none overflows at 1e+170; issue 39)."""
    return math.ldexp(1.0, -math.frexp(norm)[1])


def _prepare_truths(
    truth: torch.Tensor | Sequence[torch.Tensor], reference_norm: float | Sequence[float] | None
) -> tuple[list[torch.Tensor], list[float], list[float]]:
    """The truths and their norms rescaled by a power of two each (exact), and the scales: (truths, norms, scales)."""
    truths = []
    for j, g in enumerate(_as_list(truth, "truth")):
        if g.dim() != 1 or g.numel() == 0:
            raise InvalidArgument(f"truth[{j}]", f"tensor of shape {tuple(g.shape)}", "expected a vector (p,)")
        if g.is_complex() or not g.is_floating_point():
            raise InvalidArgument(f"truth[{j}]", f"dtype {g.dtype}", "must be real floating point")
        require_finite(f"truth[{j}]", g)
        truths.append(g.detach().to(device="cpu", dtype=torch.float64))
    if reference_norm is None:
        norms = [_safe_norm(g) for g in truths]
    else:
        rn = [reference_norm] * len(truths) if isinstance(reference_norm, (int, float)) else list(reference_norm)
        if len(rn) != len(truths):
            raise InvalidArgument("reference_norm", rn, f"need one value per truth ({len(truths)})")
        norms = [require_positive("reference_norm", v) for v in rn]
    for j, nrm in enumerate(norms):
        if not nrm > 0:
            raise InvalidArgument(
                f"truth[{j}]",
                "vector of zero norm",
                "the bias bound delta*||g|| is relative to ||g||, which is 0 here: a relative bound is "
                "undefined; pass reference_norm=<scale> to certify ||E g^ - g|| < delta*scale instead",
            )
    scales = [_unit_scale(nrm) for nrm in norms]
    return (
        [g * c for g, c in zip(truths, scales, strict=True)],
        [n * c for n, c in zip(norms, scales, strict=True)],
        scales,
    )


def _names(names: Sequence[str] | None, j: int) -> list[str]:
    if names is None:
        return [f"q{i}" for i in range(j)] if j > 1 else ["estimate"]
    out = list(names)
    if len(out) != j:
        raise InvalidArgument("names", out, f"need one name per quantity ({j})")
    return out


def _directions(p: int, k: int, gen: torch.Generator) -> torch.Tensor:
    u = torch.randn(k, p, generator=gen, dtype=torch.float64)
    out: torch.Tensor = u / torch.linalg.vector_norm(u, dim=1, keepdim=True).clamp(min=1e-300)
    return out


class _Acc(NamedTuple):
    """One quantity's running statistics: moments of Y = X − g and of its K projections u_kᵀY."""

    mom: Moments
    proj: Moments
    dirs: torch.Tensor  # (K, p)
    res: Reservoir  # a systematic subsample of Y for the shape premises (:mod:`verify.stats.premises`)
    groups: Groups  # per-call blocks of the coordinates (dense mode) and projections: the independence premise
    scale: float = 1.0  # the power of two the draws and the truth were multiplied by (:func:`_unit_scale`)


def _new_acc(truth: torch.Tensor, dirs: torch.Tensor, opts: TestOptions, scale: float = 1.0) -> _Acc:
    p = truth.numel()
    dense = p <= opts.dense_max
    return _Acc(
        empty_moments(p, diagonal=not dense), empty_moments(dirs.shape[0]), dirs, empty_reservoir(p),
        empty_groups((p if dense else 0) + int(dirs.shape[0])), scale,
    )  # fmt: skip


def _new_accs(
    truths: Sequence[torch.Tensor], dirs: Sequence[torch.Tensor], opts: TestOptions, scales: Sequence[float]
) -> list[_Acc]:
    return [_new_acc(g, d, opts, c) for g, d, c in zip(truths, dirs, scales, strict=True)]


def _fold(
    acc: _Acc,
    x: torch.Tensor,
    truth: torch.Tensor,
    name: str,
    *,
    overflow_ok: bool = False,
    blocks: int = 1,
    calls: int = 1,
) -> _Acc:
    """Fold draws ``x`` (k, p) into ``acc``; ``blocks``: the groups of the independence premise they make
    (a sampler call: 1, the call; ``calls`` calls of equal size: one per call; a given sample of unknown calls:
    consecutive blocks); ``calls``: the sampler calls they came from."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != acc.mom.p:
        return acc._replace(mom=update_moments(acc.mom, x, truth, name=name))  # raises the right error
    if x.is_complex() or not x.is_floating_point():
        return acc._replace(mom=update_moments(acc.mom, x, truth, name=name))
    # rescaled by a power of two (exact) before any square: once for the moments, projections and premises
    y = torch.add(-truth, x.detach().to(device="cpu", dtype=torch.float64), alpha=acc.scale)  # scale·x - truth
    # one cheap pass in the common case: finite column sums mean every entry of y, hence of x, is finite (an inf or a
    # NaN propagates into its sum); only otherwise the NaN/inf analysis (issue 42: two isfinite passes were ~1/5 of
    # it). The column sums serve the fold's mean.
    sums = y.sum(0)
    col_sum: torch.Tensor | None = sums
    if not math.isfinite(float(sums.sum())):
        col_sum = None  # finite draws whose sums overflow: the fold computes its own
        finite = bool(torch.isfinite(x).all())
        if not finite and overflow_ok and not bool(torch.isnan(x).any()):
            # an estimator's draws that overflow float64 (no NaN): its variance is beyond the arithmetic -- recorded
            # as overflowed moments, which the tests turn into a variance anomaly (INCONCLUSIVE), never bias
            return acc._replace(mom=_overflowed(acc.mom, int(x.shape[0])))
        if not finite:
            require_finite(name, x)  # raises, naming the NaN
        if not bool(torch.isfinite(y).all()):  # finite draws that overflow once rescaled: variance beyond float64
            return acc._replace(mom=_overflowed(acc.mom, int(x.shape[0])))
    mom, batch = fold_batch(acc.mom, y, float(torch.finfo(x.dtype).eps) / 2.0, col_sum)
    res = reservoir_add(acc.res, y)
    if acc.dirs.shape[0] == 0 or x.shape[0] == 0:
        return acc._replace(mom=mom, res=res, groups=_add_groups(acc, y, None, blocks, calls, (batch, None)))
    proj_y = y @ acc.dirs.T
    proj, pbatch = fold_batch(acc.proj, proj_y)
    groups = _add_groups(acc, y, proj_y, blocks, calls, (batch, pbatch))
    return acc._replace(mom=mom, proj=proj, res=res, groups=groups)


def _overflowed(mom: Moments, k: int) -> Moments:
    """``mom`` after ``k`` more draws whose second moments overflow float64 (scatter and largest deviation inf)."""
    return mom._replace(n=mom.n + k, scatter=torch.full_like(mom.scatter, math.inf), max_dev2=math.inf)


def _add_groups(
    acc: _Acc,
    y: torch.Tensor,
    proj_y: torch.Tensor | None,
    blocks: int,
    calls: int = 1,
    batches: tuple[Batch, Batch | None] | None = None,
) -> Groups:
    """One call's draws as consecutive groups of the independence premise (coordinates in dense mode, projections);
    one group is taken from the fold's ``batches`` (the draws' and the projections' :class:`Batch`), not recomputed."""
    coords = acc.groups.mean.shape[1] > (0 if proj_y is None else int(proj_y.shape[1]))
    if blocks == 1 and batches is not None:
        kept = ([batches[0]] if coords else []) + ([batches[1]] if batches[1] is not None else [])
        mean = torch.cat([b.mean for b in kept]) if kept else y.new_zeros(0)  # none kept: the call is still counted
        m2 = torch.cat([b.m2 for b in kept]) if kept else y.new_zeros(0)
        return groups_add_one(acc.groups, int(y.shape[0]), mean, m2, calls=calls)
    parts = [y] if coords else []
    if proj_y is not None:
        parts.append(proj_y)
    if not parts:  # no series kept (diagonal mode, no directions): the call is still counted
        parts = [y[:, :0]]
    return groups_add(acc.groups, torch.cat(parts, dim=1), blocks=blocks, calls=calls)


def _draw(
    sampler: Sampler, m: int, gen: torch.Generator, truths: list[torch.Tensor], accs: list[_Acc], chunk: int
) -> list[_Acc]:
    """Draw ``m`` draws in calls of ``chunk`` and fold each call as one group of the independence premise.

    A sampler with ``draw_calls(sizes, generator)`` (the toolkit's fused samplers) returns the draws of those calls
    made one after the other in one pass; its calls of equal size are folded together, one group per call.
    """
    sizes = [min(chunk, m - lo) for lo in range(0, m, chunk)]
    together = getattr(sampler, "draw_calls", None)
    accs = list(accs)
    if not callable(together) or len(sizes) < 2 or chunk < 2:
        for k in sizes:
            accs = _fold_calls(accs, _check_call(sampler(k, gen), k, truths), 1, truths)
        return accs
    out = _check_call(together(sizes, gen), m, truths)
    lo = 0
    for size, run in itertools.groupby(sizes):
        calls = len(list(run))
        accs = _fold_calls(accs, [x[lo : lo + size * calls] for x in out], calls, truths)
        lo += size * calls
    return accs


def _check_call(out: object, k: int, truths: list[torch.Tensor]) -> list[torch.Tensor]:
    """A sampler's output for ``k`` requested draws as a list of (k, p_j) tensors, or an error naming it."""
    xs = _as_list(out, "sampler(...) output")  # type: ignore[arg-type]
    if len(xs) != len(truths):
        raise InvalidArgument("sampler(...) output", f"{len(xs)} tensors", f"expected one per truth ({len(truths)})")
    for j, x in enumerate(xs):
        if x.dim() != 2 or x.shape[0] != k:
            raise InvalidArgument(
                f"sampler(...) output[{j}]",
                f"tensor of shape {tuple(x.shape)}",
                f"expected ({k}, {truths[j].numel()}) for {k} requested draws",
            )
    return xs


def _fold_calls(accs: list[_Acc], xs: list[torch.Tensor], calls: int, truths: list[torch.Tensor]) -> list[_Acc]:
    """Fold the draws ``xs`` (one tensor per truth) of ``calls`` calls of equal size (in call order), one group per
    call."""
    return [
        _fold(a, x, g, f"sampler(...) output[{j}]", overflow_ok=True, blocks=calls, calls=calls)
        for j, (a, x, g) in enumerate(zip(accs, xs, truths, strict=True))
    ]


# ------------------------------------------------------------ round-off geometry
@dataclass(frozen=True)
class _Geometry:
    """The covariance seen through the round-off model of :mod:`verify.stats.roundoff`.

    Coordinates whose variance is within round-off of their magnitude are *deterministic*
    (``det``); the rest (the *noisy block*, dense mode) is eigen-decomposed, and its
    directions are *resolved* (eigenvalue above 10× the floor e) or *unresolved*.
    """

    spectrum: torch.Tensor | Spectrum  # variances for the ball and the planner (all p; floors added)
    tau: torch.Tensor  # (p,) per-coordinate budget of the draws' mean
    tau_truth: float  # the truth's budget (any direction)
    budget: float  # ‖τ‖ + τ_g: the whole vector's budget (added to the certified bound)
    det: torch.Tensor  # (p,) bool: deterministic coordinates
    var: torch.Tensor  # (p,) sample variances S_kk
    lam: torch.Tensor  # (d,) eigenvalues of the noisy block (empty in diagonal mode)
    z: torch.Tensor  # (d,) V^T Ybar on the block
    tau_dir: torch.Tensor  # (d,) budget along each eigenvector
    floor: float  # e: resolution of the block's eigenvalues
    resolved: torch.Tensor  # (d,) bool
    floor_testable: bool  # the unresolved directions carry evidence (resolved rank <= M - 2)
    proj_err: torch.Tensor  # (p,) round-off of one projection u^T Y per unit |u_k|
    idx: torch.Tensor  # (d,) the noisy coordinates (dense mode)
    vec: torch.Tensor  # (d, d) eigenvectors of the noisy block (dense mode)
    flat_dirs: torch.Tensor | None = None  # (d,) bool: unresolved directions the draws show no variation along

    @property
    def eig(self) -> torch.Tensor:
        """The variances used by the ball (dense mode; diagonal mode: the coordinate variances)."""
        return self.spectrum if isinstance(self.spectrum, torch.Tensor) else self.var.clamp(min=0.0)

    @property
    def rank(self) -> int:
        return int(self.resolved.sum())

    @property
    def flat(self) -> torch.Tensor:
        """(d,) bool: the directions of the noisy block with no variation (unresolved, and flat where measured)."""
        un = ~self.resolved if self.floor_testable else torch.zeros_like(self.resolved)
        return un if self.flat_dirs is None else un & self.flat_dirs

    @property
    def flat_count(self) -> tuple[int, int]:
        """(coordinates, directions) showing no variation: deterministic-looking coordinates, flat directions."""
        return int(self.det.sum()), int(self.flat.sum())

    def measured(self, res: Reservoir) -> _Geometry:
        """The unresolved directions measured on the draws themselves: a projection's spread resolves variance far
        below the eigen-decomposition's floor (round-off u·‖y‖ per draw, not u·λ_max), so a direction that does
        vary (an ill-conditioned but noisy estimator) is not taken for flat."""
        un = ~self.resolved
        if not self.floor_testable or not bool(un.any()) or res.data.shape[0] < 2:
            return self
        proj = res.data[:, self.idx] @ self.vec[:, un]
        spread = proj.std(0)
        budget = self.vec[:, un].abs().T @ self.tau[self.idx]
        flat = torch.zeros_like(un)
        flat[un] = spread <= budget
        return dataclasses.replace(self, flat_dirs=flat)

    def varied_rank(self, n: int) -> int:
        """The dimension in which the draws vary (dense: the resolved rank; diagonal: the noisy coordinates)."""
        if self.lam.numel():
            r = int(self.lam.numel()) - int(self.flat.sum())
        else:
            r = int((~self.det).sum())
        return min(r, max(n - 1, 0))


_NO_IDX = torch.zeros(0, dtype=torch.long)
_NO_VEC = torch.zeros(0, 0, dtype=torch.float64)


def _geometry(m: Moments, truth: torch.Tensor | None = None, opts: TestOptions | None = None) -> _Geometry:
    o = opts or TestOptions()
    g = torch.zeros(m.p, dtype=torch.float64) if truth is None else truth
    gnorm = float(torch.linalg.vector_norm(g))
    tau = coordinate_budget(m, g, o.roundoff_ulps)
    tau_truth = o.truth_rtol * gnorm
    budget = float(torch.linalg.vector_norm(tau)) + tau_truth
    var = m.variances().clamp(min=0.0)
    det = deterministic_coordinates(m, tau)
    proj_err = (m.p + 2) * U64 * (draw_rms(m, g) + g.abs())
    empty = torch.zeros(0, dtype=torch.float64)
    if m.diagonal:
        frob = math.sqrt(m.frobenius2_upper())
        spec = Spectrum(float(var.sum()), frob, max(frob, float(var.max())), m.p)
        return _Geometry(
            spec, tau, tau_truth, budget, det, var, empty, empty, empty, 0.0,
            torch.zeros(0, dtype=torch.bool), False, proj_err, _NO_IDX, _NO_VEC,
        )  # fmt: skip
    noisy = ~det
    idx = noisy.nonzero().flatten()
    d = int(idx.numel())
    if d == 0:
        return _Geometry(
            var, tau, tau_truth, budget, det, var, empty, empty, empty, 0.0,
            torch.zeros(0, dtype=torch.bool), False, proj_err, _NO_IDX, _NO_VEC,
        )  # fmt: skip
    block = m.covariance()[idx][:, idx]
    lam, vec_ = symmetric_eigh(block)
    assert vec_ is not None
    vec = vec_
    lam = lam.clamp(min=0.0)
    e = eigen_floor(float(lam.max()), d)
    resolved = lam > RESOLVE_FACTOR * e
    z = vec.T @ m.mean[idx]
    tau_dir = vec.abs().T @ tau[idx] + tau_truth
    r = int(resolved.sum())
    full = torch.cat([var[det], lam + e])
    return _Geometry(
        full, tau, tau_truth, budget, det, var, lam, z, tau_dir, e, resolved, r <= m.n - 2, proj_err, idx, vec
    )


def _shrink(z: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """max(|z| − τ, 0): the distance from z to the interval null [−τ, τ] (per component)."""
    return (z.abs() - tau).clamp(min=0.0)


def _exact_or_normal_p(excess: torch.Tensor, sd: torch.Tensor) -> torch.Tensor:
    """Two-sided normal p-values of excesses over the budget; exact (0 or 1) where the s.d. is 0."""
    out = torch.ones_like(excess)
    pos = sd > 0
    out[pos] = torch.as_tensor(2.0 * dist.norm_sf((excess[pos] / sd[pos]).numpy()), dtype=torch.float64)
    out[~pos & (excess > 0)] = 0.0
    return out


def _bonferroni_subtest(name: str, excess: torch.Tensor, sd: torch.Tensor, budget: torch.Tensor) -> SubTest:
    pv = _exact_or_normal_p(excess, sd)
    k = int(pv.numel())
    i = int(torch.argmin(pv))
    return SubTest(f"{name}(k={k})", float(excess[i] + budget[i]), min(1.0, k * float(pv[i])), False, float(budget[i]))


def _direction_stats(acc: _Acc, geo: _Geometry, shape: _Shape) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per direction: mean of u^T Y, its sample variance, and its round-off budget τ(u).

    When the flat part is not declared deterministic its mean is left out (u^T of it is no evidence: an unseen
    event may pay it; the flat tests judge it against their allowance).
    """
    if acc.dirs.shape[0] == 0 or acc.proj.n < 2:
        z = torch.zeros(acc.dirs.shape[0], dtype=torch.float64)
        return z, z, z
    tau_u = acc.dirs.abs() @ (geo.tau + geo.proj_err) + geo.tau_truth
    mean = acc.proj.mean
    if shape.flat in ("unknown", "radius"):
        mean = mean - acc.dirs @ shape.flat_mean
    return mean, acc.proj.variances().clamp(min=0.0), tau_u


def _pass_premises(m: Moments, opts: TestOptions) -> str:
    if m.n < opts.min_samples:
        return f"M={m.n} < min_samples={opts.min_samples} (CLT premise of a PASS)"
    return _tail_premise(m, opts)


def _tail_premise(m: Moments, opts: TestOptions) -> str:
    share = m.tail_share()
    if share > opts.max_tail_share:
        return (
            f"heavy tail: one draw carries {share:.1%} of the total scatter (> {opts.max_tail_share:.0%}); "
            "the Gaussian approximation is not trusted, no PASS and no FAIL from it"
        )
    return ""


class _Shape(NamedTuple):
    """The premises of one evaluation (:mod:`verify.stats.premises`): what the draws support."""

    flat: str  # the part with no observed variation: "" (none), "declared", "radius" or "unknown"
    flat_note: str  # unknown/radius: what was not seen and what it may carry
    t_fail: float  # radius: unseen mass at the FAIL side's share
    t_pass: float  # radius: unseen mass at beta/2
    tail: str  # heavy-tail premise failed: why ("" holds)
    gamma_dirs: Callable[[], torch.Tensor]  # (K,) sample skewness along u_1..u_K (computed on demand)
    gamma_max: Callable[[], float]  # the largest sample skewness over whitened directions (computed on demand)
    gamma_ball: Callable[[], float]  # the variance-weighted skewness of the noisiest directions (on demand)
    rank: int  # the dimension of the noisy part (Bonferroni over its whitened directions)
    flat_mean: torch.Tensor  # (p,) the flat part of Ȳ (flat coordinates, unresolved directions)
    coord_tail: Callable[[], str]  # a noisy coordinate whose tail index is below 2: why ("" holds; on demand)
    dir_tail: Callable[[], torch.Tensor]  # (K,) Hill's tail index along u_1..u_K (on demand)
    indep: Callable[[], str]  # the independence premise failed or is unchecked: why ("" holds; on demand)

    def shared(self) -> str:
        """The premises every Gaussian test and the certificate share: no heavy tail (the total scatter's share and
        each coordinate's tail index) and independent draws."""
        return self.tail or self.indep() or self.coord_tail()

    def flat_allowance(self, radius: float | None) -> float:
        """Extra budget of the flat part's FAIL tests: what an unseen event (mass ≤ t) within radius R can shift."""
        if self.flat == "radius" and radius is not None and self.t_fail < 1.0:
            return self.t_fail * radius / (1.0 - self.t_fail)
        return 0.0 if self.flat in ("", "declared") else math.inf

    def direction(self, k: int, n: int, level: float) -> str:
        """The premise of the Gaussian test along u_k at one-sided ``level``: no heavy tail, skew allowed."""
        pre = self.shared()
        if pre:
            return pre
        tails = self.dir_tail()
        a = float(tails[k]) if k < tails.numel() else math.inf
        if a < TAIL_INDEX_MIN:
            return (
                f"direction-{k}: tail index ~ {a:.2g} (Hill), variance not finite (needs > {TAIL_INDEX_MIN:g}); "
                "a Gaussian test along it may not FAIL"
            )
        gd = self.gamma_dirs()
        g = float(gd[k]) if k < gd.numel() else 0.0
        return _skew_note(g, n, level, f"direction-{k}")

    def ball(self, n: int, beta: float) -> str:
        """The premise of a certificate at ``beta``: independent draws, every coordinate's and tested direction's
        variance finite, and the skewness its radius feels within the one-sided allowance."""
        pre = self.indep() or self.coord_tail()
        if pre:
            return pre
        tails = self.dir_tail()
        if tails.numel() and float(tails.min()) < TAIL_INDEX_MIN:
            k = int(torch.argmin(tails))
            return f"direction-{k}: tail index ~ {float(tails[k]):.2g} (Hill), variance not finite, so no PASS"
        g = self.gamma_ball()
        allow = ball_skew_allowance(n, beta)
        if g <= allow:
            return ""
        return (
            f"skew: the noisiest directions' variance-weighted skewness is {g:.3g}; a certificate at beta={beta:.2g} "
            f"on M={n} draws needs <= {allow:.3g} (first Edgeworth term, one-sided), so no PASS yet"
        )

    def joint(self, n: int, level: float) -> str:
        """The premise of a joint Gaussian test (Hotelling, the ball) at ``level`` split over the whitened
        directions: no heavy tail, and the most skewed whitened direction within the allowance."""
        pre = self.shared()
        if pre:
            return pre
        return _skew_note(self.gamma_max(), n, level / max(self.rank, 1), "the most skewed whitened direction")


def _skew_note(g: float, n: int, level: float, what: str) -> str:
    allow = skew_allowance(n, level)
    if abs(g) <= allow:
        return ""
    return (
        f"skew: the draws' skewness along {what} is {g:.3g}; a Gaussian test at level {level:.2g} on M={n} "
        f"draws needs |skewness| <= {allow:.3g} (Edgeworth), so it may not FAIL"
    )


def _shape(acc: _Acc, geo: _Geometry, opts: TestOptions, alpha: float, beta: float, min_calls: int = 1) -> _Shape:
    """Flat part (declared, bounded by a declared radius, or unknown), heavy tail, skewness of the noisy part."""
    m = acc.mom
    n = m.n
    k_c, k_d = geo.flat_count
    flat, note, t_fail, t_pass = "", "", 0.0, 0.0
    if k_c + k_d:
        t_fail = _unseen(geo, n, alpha / 8.0)
        t_pass = _unseen(geo, n, beta / 2.0)
        what = _flat_what(k_c, k_d)
        seen = _seen_variation(geo, m, acc.res)
        if declared_flat(n, opts.event_floor, min(alpha, beta)):
            flat = "declared"
        elif opts.draw_radius is not None:
            flat = "radius"
            note = (
                f"{seen} in {what} over M={n} draws: an unseen event of probability <= {t_pass:.2g} within "
                f"the declared radius {opts.draw_radius / acc.scale:.3g} may shift the mean by <= "
                f"{t_pass:.2g}*(R + bound), "
                "included in the certified bound"
            )
        else:
            flat = "unknown"
            note = (
                f"{seen} in {what} over M={n} draws of a stochastic estimator: an unseen event of "
                f"probability up to {t_pass:.2g} could carry any bias there, so they are neither certified nor "
                "evidence of bias (declare the estimator's event_floor or draw_radius, or draw more)"
            )
    # the shape statistics only matter where a test would reject or a PASS is in reach: computed on demand, once
    gdirs = functools.lru_cache(maxsize=1)(lambda: skewness_along(acc.res, acc.dirs))
    white = functools.lru_cache(maxsize=1)(lambda: _whitened(acc, geo))
    search = functools.lru_cache(maxsize=1)(lambda: max_skewness(white()[0], white()[1]))
    ball = functools.lru_cache(maxsize=1)(lambda: weighted_skewness(white()[0], white()[2]))
    ctail = functools.lru_cache(maxsize=1)(lambda: _coordinate_tails(acc, geo, opts.max_tail_share))
    dtail = functools.lru_cache(maxsize=1)(lambda: _direction_tails(acc, opts.max_tail_share))
    level = max(alpha, INDEPENDENCE_LEVEL)
    indep = functools.lru_cache(maxsize=1)(lambda: _independence(acc, geo, min_calls, level))
    return _Shape(
        flat, note, t_fail, t_pass, _tail_premise(m, opts), gdirs, search, ball, _noisy_rank(geo),
        _flat_mean(m.mean, geo), ctail, dtail, indep,
    )  # fmt: skip


#: the per-coordinate and per-direction tail indices are estimated on at least this many kept draws
MIN_TAIL_DRAWS = 1000


def _seen_variation(geo: _Geometry, m: Moments, res: Reservoir) -> str:
    """How the flat part looked (issue 39): variation within the round-off allowance of the draws' dtype, or none
    at all (and then, for draws coarser than float64, that their dtype cannot show a finer variation)."""
    dtype = {2.0**-53: "float64", 2.0**-24: "float32", 2.0**-11: "float16", 2.0**-8: "bfloat16"}.get(
        m.unit_roundoff, "the draws' dtype"
    )
    kept = res.data[:, geo.det]
    varied = bool((kept.amax(0) > kept.amin(0)).any()) if kept.shape[0] else bool((geo.var[geo.det] > 0).any())
    if varied:  # the kept draws differ (a sample variance > 0 can be the arithmetic's alone when all draws are equal)
        return f"variation only within the round-off allowance of {dtype} draws (unit round-off {m.unit_roundoff:.2g})"
    if m.unit_roundoff > U64:
        return (
            f"no variation (the draws are {dtype}: a variation below its unit round-off {m.unit_roundoff:.2g} "
            "of their magnitude cannot show)"
        )
    return "no variation"


def _coordinate_tails(acc: _Acc, geo: _Geometry, max_share: float) -> str:
    """The variance premise per noisy coordinate (issue 39), named where it fails: see :func:`_infinite`."""
    data = acc.res.data
    if data.shape[0] < MIN_TAIL_DRAWS:
        return ""
    idx = (~geo.det).nonzero().flatten()
    if idx.numel() == 0:
        return ""
    a, share = _infinite(data[:, idx], max_share)
    bad = (a < TAIL_INDEX_MIN).nonzero().flatten()
    if bad.numel() == 0:
        return ""
    order = bad[torch.argsort(a[bad])][:3]
    names = ", ".join(
        f"coordinate {int(idx[i])}: tail index ~ {float(a[i]):.2g} (one draw {float(share[i]):.0%} of its scatter)"
        for i in order
    )
    more = f" (and {int(bad.numel()) - 3} more)" if bad.numel() > 3 else ""
    return (
        f"{names}{more}, variance not finite (Hill's index < {TAIL_INDEX_MIN:g} and one draw > {max_share:.0%} of the "
        f"coordinate's scatter, on {int(data.shape[0])} draws): no Gaussian test that loads on it may FAIL, and no PASS"
    )


def _infinite(z: torch.Tensor, max_share: float) -> tuple[torch.Tensor, torch.Tensor]:
    r"""(tail index, one draw's share) per column of ``z``; the index is +inf where the share is at most ``max_share``.

    Two symptoms of an infinite variance, both required (issue 39): Hill's index below 2
    (:func:`~verify.stats.premises.tail_index`) and the largest squared deviation carrying more than ``max_share``
    of the column's sum of squares (O'Brien 1980, *J. Appl. Probab.* 17: :math:`\max_i X_i^2/\sum_i X_i^2 \to 0`
    a.s. iff :math:`E X^2 < \infty`). Either alone misreads finite-variance laws at n ≈ 2000 (Student-t₃, a
    contaminated normal, lognormal σ = 1: ``python -m verify.bench.premises``); both together flag the smallest
    index of 22 such coordinates in 0 % (Gaussian, exponential) to 22 % (t₃) to 64 % (lognormal σ = 1) of 200
    samples, and a centred Pareto(1.5) coordinate in 98 % (exponential and Gaussian never).
    """
    d = z - z.mean(0)
    d2 = d * (d / d.abs().amax(0).clamp(min=1e-300))  # rescaled before squaring (the share is a ratio)
    share = d2.amax(0) / d2.sum(0).clamp(min=1e-300)
    a = tail_index(z)
    return torch.where(share > max_share, a, torch.full_like(a, math.inf)), share


def _direction_tails(acc: _Acc, max_share: float) -> torch.Tensor:
    """(K,) the variance premise along the tested directions (:func:`_infinite`; +inf holds or too few draws)."""
    k = int(acc.dirs.shape[0])
    if k == 0 or acc.res.data.shape[0] < MIN_TAIL_DRAWS:
        return torch.full((k,), math.inf, dtype=torch.float64)
    return _infinite(acc.res.data @ acc.dirs.T, max_share)[0]


def _pooled_between(gr: Groups, geo: _Geometry, budget: torch.Tensor) -> tuple[float, int, float] | None:
    r"""The group means' deviations whitened on the resolved range: :math:`\sum_g n_g \|\Lambda^{-1/2}V^\top
    (\bar y_g - \bar y)\|^2` ~ χ²((G − 1)·r) for i.i.d. draws (the joint counterpart of the per-series tests, as
    Hotelling's T² is of the directions). (statistic, dof, p) or None without groups or resolved directions."""
    G = int(gr.size.numel())
    r = geo.rank
    if G < 2 or r == 0 or not geo.lam.numel():
        return None
    n = float(gr.size.sum())
    mean = gr.mean[:, : int(geo.det.numel())]
    vec = geo.vec[:, geo.resolved]
    # the round-off allowance is shrunk off along each direction (|v|^T tau), not per coordinate: a coordinate-wise
    # shrink changes a deviation's direction and leaks the large-variance part into the small-variance directions
    # (with float32's allowance that alone inflated the statistic -- chi2 689 on 448 dof on i.i.d. draws)
    dev = (mean - (gr.size[:, None] * mean).sum(0) / n)[:, geo.idx] @ vec
    w = shrink_deviations(dev, vec.abs().T @ budget[geo.idx]) / torch.sqrt(geo.lam[geo.resolved] + geo.floor)
    stat = float((gr.size * (w * w).sum(1)).sum())
    dof = (G - 1) * r
    return stat, dof, float(dist.chi2_sf(stat, dof))


def design_effect(acc: _Acc, geo: _Geometry) -> float:
    r"""The cluster-robust variance factor D >= 1 of the draws' mean (issue 39: the sampler call as the unit).

    Model: draws of call g share an offset of covariance :math:`\rho\Sigma` beside their own noise
    :math:`\Sigma` (:math:`\rho = 0`: independent draws). The pooled between-call statistic
    (:func:`_pooled_between`, whitened by :math:`\Sigma`'s estimate on the r resolved directions) has
    expectation :math:`(G-1) r + \rho\, r\,(N - \sum_g n_g^2/N)`, and the mean's covariance is
    :math:`\Sigma/N \cdot (1 + \rho \sum_g n_g^2 / N)` (the design effect of Kish 1965, *Survey Sampling*,
    §5.4, for unequal clusters). So :math:`\hat\rho = \max(0, (\chi^2 - (G-1)r) / (r (N - \sum n_g^2/N)))` and
    D = :math:`1 + \hat\rho \sum n_g^2/N`; every test of the look then uses :math:`D\,\hat\Sigma`
    (:func:`_inflated`). For independent draws D - 1 is of order :math:`\sqrt{2/((G-1)r)}` half the time and 0
    otherwise (conservative: wider intervals); with :data:`SPLIT_CALLS` calls per request it has the degrees of
    freedom to estimate the offsets' share. 1 where there is no pooled statistic (diagonal mode, one group, no
    resolved direction).
    """
    gr = acc.groups
    k = int(acc.dirs.shape[0])
    if int(gr.mean.shape[1]) != acc.mom.p + k:  # diagonal mode: no coordinate series kept
        return 1.0
    pooled = _pooled_between(gr, geo, geo.tau)
    if pooled is None:
        return 1.0
    stat, dof, _ = pooled
    n = float(gr.size.sum())
    s2 = float((gr.size * gr.size).sum())
    spread = (n - s2 / n) * geo.rank
    if spread <= 0.0 or stat <= dof:
        return 1.0
    return 1.0 + (stat - dof) / spread * s2 / n


def _design_dof(acc: _Acc, geo: _Geometry) -> int | None:
    r"""The degrees of freedom of the design effect's estimate, (G - 1)·r (:func:`design_effect`), or None where none
    is estimated (diagonal mode, one group, no resolved direction).

    Under the offset model of :func:`design_effect` with equal groups the pooled statistic is
    :math:`D\,\chi^2_{(G-1)r}`, so :math:`\hat D = \chi^2/((G-1)r)` scatters as a variance estimate on (G - 1)·r
    degrees of freedom, and a mean divided by :math:`\sqrt{\hat D\hat\sigma^2/N}` is Student's t on that many
    (Satterthwaite 1946, *Biometrics Bulletin* 2(6), for the general case): the fixed-sample subtests use it where it
    is below the draws' M - 1 (issue 39). Clipping :math:`\hat D` at 1 only widens the intervals."""
    G = int(acc.groups.size.numel())
    k = int(acc.dirs.shape[0])
    if int(acc.groups.mean.shape[1]) != acc.mom.p + k or G < 2 or geo.rank == 0:
        return None
    return (G - 1) * geo.rank


#: a design effect from which a verdict other than PASS names the premise (for independent draws D - 1 is about
#: sqrt(2 / ((G - 1) r)) or zero: a few per cent with :data:`SPLIT_CALLS` calls, 10-20 % with 8 blocks)
NOTED_DESIGN_EFFECT = 1.5


def _with_design_effect(decided: tuple[Verdict, str], deff: float, calls: int) -> tuple[Verdict, str]:
    """(verdict, reason) with the independence premise named where the design effect changed the look (issue 39)."""
    verdict, reason = decided
    if verdict is Verdict.PASS or deff < NOTED_DESIGN_EFFECT:
        return decided
    note = (
        f"draws not independent: the means of the {calls} sampler calls vary more than the draws within the calls "
        f"allow (e.g. an offset shared by the draws of one call): design effect D = {deff:.3g}, the draws' mean "
        "varies D times as much as independent draws' would, and every variance of this look is multiplied by D "
        "(the call as the unit)"
    )
    return verdict, f"{reason}; {note}" if reason else note


def _inflated(acc: _Acc, factor: float) -> _Acc:
    """``acc`` with the draws' and the projections' scatter multiplied by ``factor`` (:func:`design_effect`)."""
    return acc._replace(
        mom=acc.mom._replace(scatter=acc.mom.scatter * factor),
        proj=acc.proj._replace(scatter=acc.proj.scatter * factor),
    )


def _robust(acc: _Acc, truth: torch.Tensor, opts: TestOptions) -> tuple[_Acc, _Geometry, float]:
    """The look's accumulator and geometry with the design effect applied (:func:`design_effect`), and D."""
    geo = _geometry(acc.mom, truth, opts).measured(acc.res)
    D = design_effect(acc, geo)
    if D <= 1.0:
        return acc, geo, 1.0
    acc = _inflated(acc, D)
    return acc, _geometry(acc.mom, truth, opts).measured(acc.res), D


def _independence(acc: _Acc, geo: _Geometry, min_calls: int, level: float) -> str:
    """The independence premise (issue 39): draws from at least ``min_calls`` sampler calls, and group means that vary
    no more than the draws within the groups allow (:func:`~verify.stats.premises.between_within`)."""
    gr = acc.groups
    n = acc.mom.n
    if gr.calls < min_calls:
        return (
            f"independence across sampler calls unchecked: all {n} draws come from {gr.calls} call(s) (an offset "
            f"shared within one call is indistinguishable from bias), so no verdict before draws from {min_calls} calls"
        )
    p = acc.mom.p
    k = int(acc.dirs.shape[0])
    dense = int(gr.mean.shape[1]) == p + k
    proj_ok = acc.proj.variances() > 0 if k and acc.proj.n >= 2 else torch.zeros(k, dtype=torch.bool)
    mask = torch.cat([~geo.det, proj_ok]) if dense else proj_ok
    tested = int(mask.sum())
    if tested == 0 or gr.size.numel() < 2:
        return ""
    # round-off budgets of the group means (coordinates: κ units of the draws' magnitude; directions: through |u|)
    tau_dirs = acc.dirs.abs() @ (geo.tau + geo.proj_err) if k else torch.zeros(0, dtype=torch.float64)
    budget = torch.cat([geo.tau, tau_dirs]) if dense else tau_dirs
    if k:  # a direction whose spread is within its round-off carries no evidence either way
        proj_ok = proj_ok & (acc.proj.variances().clamp(min=0.0).sqrt() > RESOLVE_FACTOR * tau_dirs)
        mask = torch.cat([~geo.det, proj_ok]) if dense else proj_ok
        tested = int(mask.sum())
        if tested == 0:
            return ""
    pooled = _pooled_between(gr, geo, geo.tau) if dense else None
    if pooled is not None and pooled[2] <= level / 2.0:
        stat, dof, pval = pooled
        return (
            f"draws not independent: the means of {int(gr.size.numel())} groups ({gr.calls} sampler call(s)"
            f"{'' if gr.calls > 1 else ', consecutive blocks'}) vary more than the draws within them allow (whitened "
            f"between-group chi2 = {stat:.4g} on {dof} dof, p = {pval:.2g} <= {level / 2:g}); e.g. an "
            "offset shared by the draws of one call: no FAIL and no PASS (each call's draws must be i.i.d. and "
            "independent of the other calls')"
        )
    f, pv = between_within(gr, mask, budget)
    i = int(torch.argmin(pv))
    if float(pv[i]) * tested > level / 2.0:
        return ""
    what = f"coordinate {i}" if dense and i < p else f"direction-{i - (p if dense else 0)}"
    return (
        f"draws not independent: the means of {int(gr.size.numel())} groups (consecutive blocks of {gr.calls} "
        f"sampler call(s)) along {what} vary {float(f[i]):.3g}x more than the draws within them allow (one-way "
        f"ANOVA p = {float(pv[i]):.2g}, Bonferroni over {tested} at {level / 2:g}); e.g. an offset shared "
        "by the draws of one call: no FAIL and no PASS (each call's draws must be i.i.d. and independent of the "
        "other calls')"
    )


def _flat_what(k_c: int, k_d: int) -> str:
    """'3 coordinate(s) and 2 direction(s)': the flat part in words."""
    return " and ".join(x for x in (f"{k_c} coordinate(s)" if k_c else "", f"{k_d} direction(s)" if k_d else "") if x)


def _noisy_rank(geo: _Geometry) -> int:
    """The dimension of the noisy part the whitened subsample has (resolved directions; diagonal: noisy coordinates)."""
    return int(geo.resolved.sum()) if geo.lam.numel() else int((~geo.det).sum())


def _whitened(acc: _Acc, geo: _Geometry) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The subsample on the noisy part, whitened (resolved eigen-directions / noisy coordinates), and the starts
    of the skewness search: the Hotelling direction, the top eigen-directions, four fixed pseudo-random ones."""
    y = acc.res.data
    if geo.lam.numel():
        res = geo.resolved
        sd = torch.sqrt(geo.lam[res] + geo.floor)
        w = (y[:, geo.idx] @ geo.vec[:, res]) / sd
        hot = geo.z[res] / sd
    else:
        noisy = ~geo.det
        sd = torch.sqrt(geo.var[noisy]).clamp(min=1e-300)
        w = y[:, noisy] / sd
        hot = acc.mom.mean[noisy] / sd
    d = int(w.shape[1])
    if d == 0:
        return w, torch.zeros(0, 0, dtype=torch.float64), sd
    order = torch.argsort(sd, descending=True)[: min(3, d)]
    top = torch.zeros(int(order.numel()), d, dtype=torch.float64)
    top[torch.arange(int(order.numel())), order] = 1.0  # unit vectors of the noisiest directions (no d x d eye)
    rnd = torch.randn(4, d, generator=torch.Generator().manual_seed(22), dtype=torch.float64)
    return w, torch.cat([hot[None], top, rnd]), sd


def _unresolved_tested(geo: _Geometry, allow: float) -> torch.Tensor:
    """(d,) bool: the unresolved directions the FAIL side tests -- those that vary always, the flat ones only where
    the flat part carries evidence (declared deterministic, or within a declared radius)."""
    if not geo.floor_testable:
        return torch.zeros_like(geo.resolved)
    un = ~geo.resolved
    return un if math.isfinite(allow) else un & ~geo.flat


def _unresolved_budget(geo: _Geometry, un: torch.Tensor, allow: float) -> torch.Tensor:
    """τ(v) of the tested unresolved directions, plus the flat part's allowance on the flat ones."""
    extra = allow if math.isfinite(allow) else 0.0
    return geo.tau_dir[un] + torch.where(geo.flat[un], extra, 0.0)


def _flat_mean(mean: torch.Tensor, geo: _Geometry) -> torch.Tensor:
    """The part of Ȳ in the flat coordinates and the unresolved directions (what the direction tests leave out
    when the flat part is not declared deterministic)."""
    c = torch.zeros_like(mean)
    c[geo.det] = mean[geo.det]
    fl = geo.flat
    if bool(fl.any()):
        c[geo.idx] += geo.vec[:, fl] @ geo.z[fl]
    return c


def _unseen(geo: _Geometry, n: int, err: float) -> float:
    """Bound (at ``err``) on the chance of an event that moves the flat coordinates or leaves the draws' hull."""
    k_c, k_d = geo.flat_count
    p = int(geo.det.numel())
    if not k_d:
        return unseen_flat_mass(n, p, k_c, err)
    return min(1.0, unseen_flat_mass(n, p, k_c, err / 2.0) + unseen_mass(n, geo.varied_rank(n), err / 2.0))


def _premise_story(gated: Sequence[SubTest], shape: _Shape, base: str, pass_skew: str) -> str:
    """Why no PASS: the PASS premises, a gated subtest that would have rejected, an unknown flat part."""
    parts = [base] if base else []
    if gated:
        parts.append(f"{gated[0].name} would reject, but {gated[0].premise}")
    if pass_skew:
        parts.append(pass_skew)
    if shape.flat == "unknown":
        parts.append(shape.flat_note)
    return "; ".join(dict.fromkeys(parts))


def _anomaly(m: Moments, gnorm: float, plan: SamplePlan, budget: int, opts: TestOptions) -> str:
    """A variance absurd for the mean it estimates: certifying δ needs ≥ anomaly_ratio × the budget of draws."""
    if plan.samples < opts.anomaly_ratio * budget:
        return ""
    rel = plan.trace / gnorm**2
    return (
        f"variance anomaly: tr S/||g||^2 = {rel:.3g} (relative s.d. {math.sqrt(rel):.3g}); certifying "
        f"delta={opts.delta:g} would need ~{plan.samples:.3g} draws, {plan.samples / budget:.3g}x the budget of "
        f"{budget}; the draws show no bias beyond that noise -- a variance problem, not evidence of bias"
    )


def _overflow(m: Moments) -> str:
    """Non-empty when the draws' second moments -- or the fourth moment of their squared errors, which the planner
    uses to inflate a pilot's variance -- overflow float64 (the draws themselves may be finite)."""
    if (
        bool(torch.isfinite(m.scatter).all())
        and bool(torch.isfinite(m.mean).all())
        and math.isfinite(m.q_mean)
        and math.isfinite(m.q_m2)
    ):
        return ""
    return (
        f"variance anomaly: the draws (±inf) or their second moments overflow float64 (largest squared deviation "
        f"{m.max_dev2:.3g}); no bias bound is possible at any sample size this arithmetic can hold -- a variance "
        f"problem (or a computation that produces inf), not evidence of bias"
    )


def _overflow_results(labels: Sequence[str], accs: Sequence[_Acc], norms: Sequence[float]) -> list[QuantityResult]:
    """INCONCLUSIVE (variance anomaly) for every quantity when one quantity's second moments overflow."""
    out = []
    for name, acc, gnorm in zip(labels, accs, norms, strict=True):
        why = _overflow(acc.mom) or "not evaluated: another quantity's second moments overflow float64"
        inf = math.inf
        q = QuantityResult(name, Verdict.INCONCLUSIVE, acc.mom.n, gnorm, inf, inf, inf, inf, (), 1.0, 0, why, 0.0, True)
        out.append(_unscaled(q, acc.scale))
    return out


def _verdict(failed: bool, bound: float, target: float, premise: str, anomaly: str) -> tuple[Verdict, str]:
    if failed:
        return Verdict.FAIL, "bias detected"
    if anomaly:
        return Verdict.INCONCLUSIVE, anomaly
    if premise:
        return Verdict.INCONCLUSIVE, premise
    if bound < target:
        return Verdict.PASS, ""
    return Verdict.INCONCLUSIVE, f"bias bound {bound:.3g} not below delta*||g|| = {target:.3g} yet"


#: :func:`planned_test` and :func:`sequential_test` give no verdict before draws from this many sampler calls can be
#: compared (an offset shared within one call is indistinguishable from bias; issue 39)
MIN_CALLS = 2

#: :func:`planned_test` draws its test's draws, and :func:`sequential_test` its first batch, in at least this many
#: sampler calls of equal size (issue 39): the between-call test then has ``SPLIT_CALLS - 1`` degrees of freedom per
#: direction from the first verdict on. With the one or two calls a request made before, an offset shared by the
#: draws of one call (a batched sampler with one random start per call) of about the mean's standard error went
#: unseen and read as bias: 386 and 57 false FAILs in 1000 at alpha = 1e-3 (planned, sequential)
SPLIT_CALLS = 16


def _split(chunk: int, m: int) -> int:
    """The chunk that draws ``m`` draws in at least :data:`SPLIT_CALLS` calls of equal size (``chunk`` at most)."""
    return max(1, min(chunk, math.ceil(m / SPLIT_CALLS)))


#: the unresolved-directions subtest never FAILs (issue 39): what it would see is a premise on the draws, not a bias
UNRESOLVED_PREMISE = (
    "directions below the eigen-decomposition's resolution vary, if at all, on rare events (e.g. sign patterns "
    "not yet drawn): a premise on the draws, never evidence of bias -- draw more"
)


def _fixed_subtests(
    acc: _Acc, geo: _Geometry, opts: TestOptions, shape: _Shape, alpha: float, dof: int | None = None
) -> list[SubTest]:
    """The FAIL family on fixed draws, each subtest with the premise it needs (levels: see the module docstring).

    ``dof``: the degrees of freedom of the mean's variance where the design effect estimates it from the groups'
    scatter (:func:`_design_dof`); the t and F references take the smaller of it and the draws' own."""
    m = acc.mom
    n = m.n
    subs: list[SubTest] = []
    ybar = m.mean
    allow = shape.flat_allowance(opts.draw_radius)
    share = alpha / 4.0
    if bool(geo.det.any()) and math.isfinite(allow):  # flat coordinates: |Ybar_k| within tau_k + tau_g (+ its s.e.)
        b = geo.tau[geo.det] + geo.tau_truth + allow
        subs.append(
            _bonferroni_subtest(
                "deterministic-coordinates", _shrink(ybar[geo.det], b), torch.sqrt(geo.var[geo.det] / n), b
            )
        )
    un = _unresolved_tested(geo, allow)
    if bool(un.any()):  # below the eigen-decomposition's resolution (flat ones only where declared)
        b = _unresolved_budget(geo, un, allow)
        sub = _bonferroni_subtest(
            "unresolved-directions", _shrink(geo.z[un], b), torch.sqrt((geo.lam[un] + geo.floor) / n), b
        )
        subs.append(dataclasses.replace(sub, premise=UNRESOLVED_PREMISE))
    r = geo.rank
    k_dirs = acc.dirs.shape[0]
    if opts.hotelling and 1 <= r and n > r + 1:
        zs = _shrink(geo.z[geo.resolved], geo.tau_dir[geo.resolved])
        t2 = n * float((zs**2 / (geo.lam[geo.resolved] + geo.floor)).sum())  # Hotelling T^2 on the resolved range
        fstat = (n - r) / (r * (n - 1)) * t2
        pval = float(dist.f_sf(fstat, r, n - r if dof is None else max(1, min(n - r, dof - r + 1))))
        why = shape.joint(n, share) if pval <= share else ""  # the premise matters only where it would reject
        subs.append(SubTest(f"hotelling-T2(r={r})", t2, pval, False, premise=why))
    mu, var, tau_u = _direction_stats(acc, geo, shape)
    if k_dirs:
        level_dir = (share if opts.hotelling and 1 <= r and n > r + 1 else 2.0 * share) / k_dirs  # Holm's first
        ex = _shrink(mu, tau_u)
        sd = torch.sqrt(var / n)
        t = torch.where(sd > 0, ex / sd.clamp(min=1e-300), torch.zeros_like(ex))
        pv = torch.as_tensor(2.0 * dist.t_sf(t.numpy(), n - 1 if dof is None else min(n - 1, dof)), dtype=torch.float64)
        pv = torch.where(sd > 0, pv, (ex <= 0).to(torch.float64))  # no noise along u: exact comparison
        for k in range(k_dirs):
            stat = float(t[k]) if float(sd[k]) > 0 else float(mu[k])
            thr = None if float(sd[k]) > 0 else float(tau_u[k])
            why = shape.direction(k, n, level_dir) if float(sd[k]) > 0 and float(pv[k]) <= k_dirs * level_dir else ""
            subs.append(SubTest(f"direction-{k}", stat, float(pv[k]), False, thr, why))
    return subs


def _evaluate_fixed(
    name: str,
    acc: _Acc,
    truth: torch.Tensor,
    gnorm: float,
    opts: TestOptions,
    alpha: float,
    beta: float,
    plan: SamplePlan | None,
    budget: int,
    min_calls: int = 1,
) -> QuantityResult:
    opts = _scaled_options(opts, acc.scale)
    acc, geo, deff = _robust(acc, truth, opts)
    m = acc.mom
    n = m.n
    shape = _shape(acc, geo, opts, alpha, beta, min_calls)
    subs = _fixed_subtests(acc, geo, opts, shape, alpha, _design_dof(acc, geo))
    has_h = any(s.name.startswith("hotelling") for s in subs)
    share = alpha / 4.0  # one share per kind of evidence (weighted Bonferroni, see the module docstring)
    flat_share = share / 2.0 if shape.flat == "radius" else share  # the other half: the unseen-mass bound
    dirs = [s for s in subs if s.name.startswith("direction-")]
    adj = iter(adjusted_pvalues([s.pvalue for s in dirs], opts.correction) if dirs else [])
    level_dirs = share if has_h else 2.0 * share
    raw = []
    for s in subs:
        if s in dirs:
            raw.append(next(adj) <= level_dirs)
        else:
            raw.append(s.pvalue <= (flat_share if s.evidence == DETERMINISTIC else share))
    subs = [
        SubTest(s.name, s.statistic, s.pvalue, hit and not s.premise, s.threshold, s.premise)
        for s, hit in zip(subs, raw, strict=True)
    ]
    gated = [s for s, hit in zip(subs, raw, strict=True) if hit and s.premise]
    failed = any(s.rejected for s in subs)
    ball_beta = beta / 2.0 if shape.flat == "radius" else beta
    radius = norm_quantile_bound(geo.spectrum, math.log(1.0 / ball_beta)) / math.sqrt(n)  # Laurent-Massart ball
    bias = float(torch.linalg.vector_norm(m.mean))
    bound = _with_unseen(bias + radius + geo.budget, shape, opts)
    anomaly = _anomaly(m, gnorm, plan, budget, opts) if plan is not None else ""
    base = _pass_premises(m, opts)
    ball = shape.ball(n, ball_beta) if not (base or failed or anomaly) and bound < opts.delta * gnorm else ""
    premise = _premise_story(gated, shape, base, ball)
    verdict, reason = _with_design_effect(
        _verdict(failed, bound / acc.scale, opts.delta * gnorm / acc.scale, premise, anomaly), deff, acc.groups.calls
    )  # user units
    return _unscaled(
        QuantityResult(
            name, verdict, n, gnorm, bias, radius, bound, bound / gnorm, tuple(subs), m.tail_share(), _rank(geo, m),
            reason, geo.budget, bool(anomaly) and not failed, m.mean.clone(), deff,
        ),
        acc.scale,
    )  # fmt: skip


def _scaled_options(opts: TestOptions, scale: float) -> TestOptions:
    """The options in the rescaled units of the draws (the declared radius; everything else is relative)."""
    if opts.draw_radius is None or scale == 1.0:
        return opts
    return dataclasses.replace(opts, draw_radius=opts.draw_radius * scale)


def _unscaled(q: QuantityResult, scale: float) -> QuantityResult:
    """A result back in the user's units (the rescaling by a power of two is undone exactly)."""
    if scale == 1.0:
        return q
    return dataclasses.replace(
        q,
        truth_norm=q.truth_norm / scale,
        bias_norm=q.bias_norm / scale,
        radius=q.radius / scale,
        bias_bound=q.bias_bound / scale,
        roundoff_budget=q.roundoff_budget / scale,
        mean_error=None if q.mean_error is None else q.mean_error / scale,
    )


def _with_unseen(bound: float, shape: _Shape, opts: TestOptions) -> float:
    """The certified bound plus what an unseen event (mass ≤ t) within the declared radius can shift: t·(R + B)."""
    if shape.flat != "radius" or opts.draw_radius is None:
        return bound
    return bound + shape.t_pass * (opts.draw_radius + bound)


def _rank(geo: _Geometry, m: Moments) -> int:
    return int((~geo.det).sum()) if m.diagonal else geo.rank


@dataclass(frozen=True)
class _SeqScales:
    """Mixture scales, fixed after the first batch (the boundaries are valid for any fixed scale)."""

    rho_dir: float
    rho_mahal: float
    rho_vec: float


def _best_scalar_rho(m_target: int, err: float) -> float:
    best, best_w = 1.0, math.inf
    for k in range(-40, 21):
        rho = m_target * 10.0 ** (k / 10.0)
        w = normal_mixture_halfwidth(m_target, 1.0, err, rho)
        if w < best_w:
            best, best_w = rho, w
    return best


def _best_mahal_rho(m_target: int, rank: int, err: float) -> float:
    best, best_t = 1.0, math.inf
    for k in range(-40, 21):
        rho = m_target * 10.0 ** (k / 10.0)
        t = mahalanobis_mixture_threshold(m_target, rank, err, rho) / m_target
        if t < best_t:
            best, best_t = rho, t
    return best


def _mixture_coordinates(
    name: str, excess: torch.Tensor, sd: torch.Tensor, budget: torch.Tensor, n: int, err: float, rho: float
) -> SubTest:
    """Per-component normal-mixture boundaries (exact where the s.d. is 0), Bonferroni over ``err``."""
    k = int(excess.numel())
    hw = sd * normal_mixture_halfwidth(n, 1.0, err, rho)  # the boundary is linear in the s.d.
    rej = torch.where(sd > 0, excess >= hw, excess > 0)
    i = int(torch.argmax(excess - hw))
    thr = float(hw[i] + budget[i])
    return SubTest(f"{name}(k={k})", float(excess[i] + budget[i]), 1.0, bool(rej.any()), thr)


def _evaluate_sequential(
    name: str,
    acc: _Acc,
    truth: torch.Tensor,
    gnorm: float,
    opts: TestOptions,
    alpha: float,
    beta: float,
    scales: _SeqScales,
    anomaly: str,
    certified: bool = False,
) -> QuantityResult:
    """One look at one quantity. ``certified``: its PASS certificate was issued at an earlier look and stands
    (:func:`_sequential_look`): only a FAIL can replace it, so the PASS premises (the ball's: independence, tails,
    skewness -- most of a look's cost) are not evaluated again; the FAIL side is evaluated in full."""
    opts = _scaled_options(opts, acc.scale)
    acc, geo, deff = _robust(acc, truth, opts)
    m = acc.mom
    n = m.n
    shape = _shape(acc, geo, opts, alpha, beta, min_calls=MIN_CALLS)
    err = alpha / 4.0  # one share per kind of evidence (weighted Bonferroni over the anytime-valid family)
    flat_err = err / 2.0 if shape.flat == "radius" else err
    allow = shape.flat_allowance(opts.draw_radius)
    k_dirs = max(acc.dirs.shape[0], 1)
    err_dir = (err if opts.hotelling else 2.0 * err) / k_dirs
    subs: list[SubTest] = []
    raw: list[bool] = []
    if bool(geo.det.any()) and math.isfinite(allow):
        b = geo.tau[geo.det] + geo.tau_truth + allow
        subs.append(
            _mixture_coordinates(
                "deterministic-coordinates", _shrink(m.mean[geo.det], b), torch.sqrt(geo.var[geo.det]), b, n,
                flat_err / m.p, scales.rho_dir,
            )
        )  # fmt: skip
        raw.append(subs[-1].rejected)
    un = _unresolved_tested(geo, allow)
    if bool(un.any()):
        zs = _shrink(
            geo.z[un], geo.tau_dir[un] + torch.where(geo.flat[un], allow if math.isfinite(allow) else 0.0, 0.0)
        )
        stat = n * n * float((zs**2 / (geo.lam[un] + geo.floor)).sum())
        thr = mahalanobis_mixture_threshold(n, int(un.sum()), flat_err, scales.rho_mahal)
        subs.append(SubTest(f"unresolved-directions(k={int(un.sum())})", stat, 1.0, False, thr, UNRESOLVED_PREMISE))
        raw.append(stat >= thr)
    r = geo.rank
    if opts.hotelling and r >= 1:
        zs = _shrink(geo.z[geo.resolved], geo.tau_dir[geo.resolved])
        stat = n * n * float((zs**2 / (geo.lam[geo.resolved] + geo.floor)).sum())  # S_m^T S^+ S_m
        thr = mahalanobis_mixture_threshold(n, r, err, scales.rho_mahal)
        why = shape.joint(n, err) if stat >= thr else ""  # the premise matters only where it would reject
        subs.append(SubTest(f"mahalanobis-mixture(r={r})", stat, 1.0, stat >= thr and not why, thr, why))
        raw.append(stat >= thr)
    mu, var, tau_u = _direction_stats(acc, geo, shape)
    if acc.dirs.shape[0]:
        ex = _shrink(mu, tau_u)
        sd = torch.sqrt(var)
        hw = sd * normal_mixture_halfwidth(n, 1.0, err_dir, scales.rho_dir)  # Robbins normal mixture
        rej = torch.where(sd > 0, ex >= hw, ex > 0)  # no noise along u: exact comparison with the budget
        for k in range(acc.dirs.shape[0]):
            why = shape.direction(k, n, err_dir) if float(sd[k]) > 0 and bool(rej[k]) else ""
            hit = bool(rej[k])
            subs.append(SubTest(f"direction-{k}", float(ex[k]), 1.0, hit and not why, float(hw[k] + tau_u[k]), why))
            raw.append(hit)
    gated = [s for s, hit in zip(subs, raw, strict=True) if hit and s.premise]
    failed = any(s.rejected for s in subs)
    ball_beta = beta / 2.0 if shape.flat == "radius" else beta
    radius = vector_mixture_radius(n, geo.spectrum, ball_beta, scales.rho_vec)  # time-uniform ball
    bias = float(torch.linalg.vector_norm(m.mean))
    bound = _with_unseen(bias + radius + geo.budget, shape, opts)
    base = _pass_premises(m, opts)
    in_reach = not (base or failed or anomaly or certified) and bound < opts.delta * gnorm
    ball = shape.ball(n, ball_beta) if in_reach else ""
    premise = _premise_story(gated, shape, base, ball)
    verdict, reason = _with_design_effect(
        _verdict(failed, bound / acc.scale, opts.delta * gnorm / acc.scale, premise, anomaly), deff, acc.groups.calls
    )  # user units
    return _unscaled(
        QuantityResult(
            name, verdict, n, gnorm, bias, radius, bound, bound / gnorm, tuple(subs), m.tail_share(), _rank(geo, m),
            reason, geo.budget, bool(anomaly) and not failed, m.mean.clone(), deff,
        ),
        acc.scale,
    )  # fmt: skip


def _combine(results: Sequence[QuantityResult]) -> tuple[Verdict, str]:
    if any(q.verdict is Verdict.FAIL for q in results):
        return Verdict.FAIL, ""
    if all(q.verdict is Verdict.PASS for q in results):
        return Verdict.PASS, ""
    open_ = [q for q in results if q.verdict is not Verdict.PASS]
    return Verdict.INCONCLUSIVE, "; ".join(f"{q.name}: {q.reason}" for q in open_)


def _default_chunk(p_total: int) -> int:
    return max(256, min(200_000, 4_000_000 // max(p_total, 1)))


def plan_quantity(
    pilot: Moments,
    truth: torch.Tensor,
    gnorm: float,
    opts: TestOptions,
    alpha: float,
    beta: float,
    miss: float,
    min_samples: int,
) -> SamplePlan:
    """The fixed-sample plan from a pilot, honest about what the pilot could not resolve (issue 22).

    :func:`~verify.stats.planner.plan_from_pilot` (the plan and its range from the pilot's uncertainty), with a
    ``caveat`` when the pilot saw no variation in a coordinate or direction that is not declared deterministic
    (an unseen event's variance is not in the plan) or one draw dominates the scatter: the plan is then a lower
    bound, and says so.
    """
    plan = plan_from_pilot(pilot, gnorm, delta=opts.delta, alpha=alpha, beta=beta, miss=miss, min_samples=min_samples)
    if pilot.n < 2:
        return plan
    geo = _geometry(pilot, truth, opts)
    k_c, k_d = geo.flat_count
    notes = []
    if k_c + k_d and not declared_flat(pilot.n, opts.event_floor, min(alpha, beta)):
        what = _flat_what(k_c, k_d)
        t = _unseen(geo, pilot.n, beta)
        notes.append(
            f"the pilot saw no variation in {what} over {pilot.n} draws: an event of probability up to {t:.2g} "
            "is unresolved and its variance is not in the plan"
            + ("" if opts.draw_radius is None else f" (within the declared radius it adds <= {t:.2g}*R^2 to tr S)")
        )
    tail = pilot.tail_share()
    if tail > opts.max_tail_share:
        notes.append(f"one pilot draw carries {tail:.0%} of the scatter: the pilot's variance is unreliable")
    return dataclasses.replace(plan, caveat="; ".join(notes)) if notes else plan


# ------------------------------------------------------------------- public API
def fixed_sample_test(
    samples: torch.Tensor | Sequence[torch.Tensor],
    truth: torch.Tensor | Sequence[torch.Tensor],
    *,
    options: TestOptions | None = None,
    generator: torch.Generator | None = None,
    names: Sequence[str] | None = None,
    reference_norm: float | Sequence[float] | None = None,
) -> UnbiasednessResult:
    r"""Fixed-sample unbiasedness test of given draws (see the module docstring).

    ``samples``: (M, p) draws, or a sequence of J such tensors (one per quantity,
    same M) with ``truth`` a matching sequence of (p_j,) vectors. A variance anomaly is
    judged against these M draws (certifying δ would need ≥ ``anomaly_ratio``·M).
    """
    t0 = time.perf_counter()
    opts = options or TestOptions()
    truths, norms, scales = _prepare_truths(truth, reference_norm)
    xs = _as_list(samples, "samples")
    if len(xs) != len(truths):
        raise InvalidArgument("samples", f"{len(xs)} tensors", f"expected one per truth ({len(truths)})")
    gen = _check_generator(generator) if generator is not None else torch.Generator().manual_seed(0)
    labels = _names(names, len(truths))
    J = len(truths)
    out = []
    for j in range(J):
        dirs = _directions(truths[j].numel(), opts.directions, gen)
        acc = _fold(
            _new_acc(truths[j], dirs, opts, scales[j]), xs[j], truths[j], f"samples[{j}]", blocks=BLOCKS_PER_CALL
        )
        if acc.mom.n < 2:
            raise InvalidArgument(f"samples[{j}]", acc.mom.n, "need at least 2 draws")
        a, b = opts.alpha / J, opts.beta / J
        if _overflow(acc.mom):
            out.append(_overflow_results([labels[j]], [acc], [norms[j]])[0])
            continue
        plan = plan_quantity(acc.mom, truths[j], norms[j], opts, a, b, opts.miss_rate / J, 2)
        out.append(_evaluate_fixed(labels[j], acc, truths[j], norms[j], opts, a, b, plan, acc.mom.n))
    verdict, reason = _combine(out)
    return UnbiasednessResult(
        verdict,
        "fixed",
        opts.alpha,
        opts.beta,
        opts.delta,
        out[0].samples,
        None,
        tuple(out),
        reason,
        wall_time=time.perf_counter() - t0,
    )


def planned_test(
    sampler: Sampler,
    truth: torch.Tensor | Sequence[torch.Tensor],
    *,
    options: TestOptions | None = None,
    generator: torch.Generator,
    max_samples: int,
    pilot: int = 2000,
    chunk: int | None = None,
    names: Sequence[str] | None = None,
    reference_norm: float | Sequence[float] | None = None,
) -> UnbiasednessResult:
    """Pilot → :func:`~verify.stats.planner.plan_from_pilot` → fixed-sample test on M fresh draws.

    If the plan exceeds ``max_samples`` the test runs on ``max_samples`` draws and
    says so (usually INCONCLUSIVE; a variance anomaly when the plan is ≥
    ``anomaly_ratio`` × ``max_samples``). ``samples_used`` counts pilot + test draws.
    """
    t0 = time.perf_counter()
    opts = options or TestOptions()
    generator = _check_generator(generator)
    truths, norms, scales = _prepare_truths(truth, reference_norm)
    require_positive_int("max_samples", max_samples, minimum=2)
    require_positive_int("pilot", pilot, minimum=2)
    J = len(truths)
    labels = _names(names, J)
    ch = chunk or _default_chunk(sum(g.numel() for g in truths))
    dirs = [_directions(g.numel(), opts.directions, generator) for g in truths]
    pil = _draw(sampler, pilot, generator, truths, _new_accs(truths, dirs, opts, scales), _split(ch, pilot))
    if any(_overflow(a.mom) for a in pil):
        return _planned_overflow(labels, pil, norms, opts, pilot, t0)
    plans = _pilot_plans(pil, truths, norms, opts)
    plan = max(plans, key=lambda pl: pl.samples)
    m = min(plan.samples, max_samples)
    acc = _draw(sampler, m, generator, truths, _new_accs(truths, dirs, opts, scales), _split(ch, m))
    # the pilot's calls join the test's in the independence premise (the same sampler, the same directions)
    acc = [a._replace(groups=_joined(p.groups, a.groups)) for p, a in zip(pil, acc, strict=True)]
    out = _evaluate_planned(labels, acc, truths, norms, opts, plans, max_samples)
    verdict, reason = _combine(out)
    if plan.samples > max_samples:
        reason = f"plan {plan.samples} > max_samples={max_samples}, tested {m}" + (f"; {reason}" if reason else "")
    return UnbiasednessResult(
        verdict,
        "fixed (planned)",
        opts.alpha,
        opts.beta,
        opts.delta,
        pilot + m,
        plan.samples,
        tuple(out),
        reason,
        plan=plan,
        wall_time=time.perf_counter() - t0,
        extra={"pilot": pilot, "test_draws": m},
    )


def _pilot_plans(
    pil: Sequence[_Acc], truths: Sequence[torch.Tensor], norms: Sequence[float], opts: TestOptions
) -> list[SamplePlan]:
    """The planned test's plan of each quantity from its pilot, with the pilot's design effect applied (dependent
    draws need more, :func:`design_effect`); α, β and the miss rate split equally."""
    J = len(truths)
    robust = [_robust(a, t, opts)[0] for a, t in zip(pil, truths, strict=True)]
    return [
        plan_quantity(r.mom, t, g, opts, opts.alpha / J, opts.beta / J, opts.miss_rate / J, opts.min_samples)
        for r, t, g in zip(robust, truths, norms, strict=True)
    ]


def _joined(a: Groups, b: Groups) -> Groups:
    """The groups of two sets of calls of the same sampler, in call order."""
    return Groups(torch.cat([a.size, b.size]), torch.cat([a.mean, b.mean]), torch.cat([a.m2, b.m2]), a.calls + b.calls)


def _planned_overflow(
    labels: Sequence[str], pil: Sequence[_Acc], norms: Sequence[float], opts: TestOptions, pilot: int, t0: float
) -> UnbiasednessResult:
    """The pilot overflowed: INCONCLUSIVE, no test draws."""
    out = _overflow_results(labels, pil, norms)
    return UnbiasednessResult(
        Verdict.INCONCLUSIVE, "fixed (planned)", opts.alpha, opts.beta, opts.delta, pilot, None, tuple(out),
        _combine(out)[1], wall_time=time.perf_counter() - t0, extra={"pilot": pilot, "test_draws": 0},
    )  # fmt: skip


def _evaluate_planned(
    labels: Sequence[str],
    acc: Sequence[_Acc],
    truths: Sequence[torch.Tensor],
    norms: Sequence[float],
    opts: TestOptions,
    plans: Sequence[SamplePlan],
    max_samples: int,
) -> list[QuantityResult]:
    """The fixed-sample test of every quantity on the planned draws, α and β split equally (Bonferroni)."""
    J = len(truths)
    return (
        _overflow_results(labels, acc, norms)
        if any(_overflow(a.mom) for a in acc)
        else [
            _evaluate_fixed(
                labels[j],
                acc[j],
                truths[j],
                norms[j],
                opts,
                opts.alpha / J,
                opts.beta / J,
                plans[j],
                max_samples,
                min_calls=MIN_CALLS,
            )
            for j in range(J)
        ]
    )


def pilot_plan(
    sampler: Sampler,
    truth: torch.Tensor | Sequence[torch.Tensor],
    *,
    options: TestOptions | None = None,
    generator: torch.Generator,
    pilot: int,
    reference_norm: float | Sequence[float] | None = None,
) -> SamplePlan | None:
    """The fixed-sample plan :func:`sequential_test` reports as ``samples_planned``, from ``pilot`` draws only.

    The same plan as the sequential test's after a first batch of ``pilot`` draws from the same generator (equal
    α, β split over the quantities, :func:`~verify.stats.planner.plan_from_pilot`), without its looks: what
    ``rnn-verify run --plan`` asks before any test runs. None when the pilot's moments overflow float64.
    """
    opts = options or TestOptions()
    generator = _check_generator(generator)
    truths, norms, scales = _prepare_truths(truth, reference_norm)
    require_positive_int("pilot", pilot, minimum=2)
    J = len(truths)
    ch = _default_chunk(sum(g.numel() for g in truths))
    dirs = [_directions(g.numel(), opts.directions, generator) for g in truths]
    a_js, b_js = _weighted_bonferroni(opts, None, J)
    acc = _draw(sampler, pilot, generator, truths, _new_accs(truths, dirs, opts, scales), _split(ch, pilot))
    if any(_overflow(a.mom) for a in acc):
        return None
    acc = [_robust(a, t, opts)[0] for a, t in zip(acc, truths, strict=True)]
    plans = [
        plan_quantity(acc[j].mom, truths[j], norms[j], opts, a_js[j], b_js[j], opts.miss_rate / J, 2) for j in range(J)
    ]
    return max(plans, key=lambda pl: pl.samples)


def sequential_test(
    sampler: Sampler,
    truth: torch.Tensor | Sequence[torch.Tensor],
    *,
    options: TestOptions | None = None,
    generator: torch.Generator,
    max_samples: int,
    first: int = 2000,
    growth: float = 1.3,
    chunk: int | None = None,
    names: Sequence[str] | None = None,
    reference_norm: float | Sequence[float] | None = None,
    weights: Sequence[float] | None = None,
    min_step: int = 1,
) -> UnbiasednessResult:
    r"""Sequential, anytime-valid unbiasedness test: stops at the first clear verdict.

    Draws ``first`` draws, then grows the sample geometrically (×``growth``, by at
    least ``min_step`` draws: samplers are often faster in larger batches) up to
    ``max_samples``; after each batch every quantity is evaluated against the
    time-uniform boundaries of :mod:`verify.stats.bounds` (FAIL at α, PASS
    certificate at β, both valid simultaneously over all looks). The mixture
    scales are tuned once, after the first batch, for the fixed-sample planner's
    M (reported as ``samples_planned``: the fixed-sample test's plan for the same
    (δ, α, β), from the first batch as pilot). If that plan is ≥ ``anomaly_ratio`` ×
    ``max_samples`` the quantity has a variance anomaly; with ``stop_on_anomaly`` the
    test stops after the first look unless bias is detected there (stopping never
    raises either error rate).

    ``weights`` (one positive number per quantity, fixed before any data are seen)
    split α and β unequally: quantity j gets α·w_j/Σw and β·w_j/Σw (weighted
    Bonferroni); default equal.
    """
    t0 = time.perf_counter()
    opts = options or TestOptions()
    generator = _check_generator(generator)
    truths, norms, scales = _prepare_truths(truth, reference_norm)
    _check_sequential(max_samples, first, min_step, growth)
    J = len(truths)
    labels = _names(names, J)
    ch = chunk or _default_chunk(sum(g.numel() for g in truths))
    dirs = [_directions(g.numel(), opts.directions, generator) for g in truths]
    a_js, b_js = _weighted_bonferroni(opts, weights, J)
    m = min(first, max_samples)
    acc = _draw(sampler, m, generator, truths, _new_accs(truths, dirs, opts, scales), _split(ch, m))
    if any(_overflow(a.mom) for a in acc):
        return _sequential_overflow(labels, acc, norms, opts, m, max_samples, t0, {"first": first, "growth": growth})
    seq = _sequential_setup(labels, acc, truths, norms, opts, a_js, b_js, max_samples, m)
    verdict, reason, cur, looks, m = _sequential_looks(
        sampler, generator, seq, acc, m, max_samples, growth, min_step, ch
    )
    return UnbiasednessResult(
        verdict, "sequential", opts.alpha, opts.beta, opts.delta, m, seq.plan.samples, tuple(cur), reason,
        tuple(looks), seq.plan, time.perf_counter() - t0, {"first": first, "growth": growth},
    )  # fmt: skip


def _sequential_overflow(
    labels: Sequence[str],
    acc: Sequence[_Acc],
    norms: Sequence[float],
    opts: TestOptions,
    m: int,
    max_samples: int,
    t0: float,
    extra: dict[str, Any],
) -> UnbiasednessResult:
    """The first batch overflowed: INCONCLUSIVE after it."""
    out = _overflow_results(labels, acc, norms)
    return UnbiasednessResult(
        Verdict.INCONCLUSIVE, "sequential", opts.alpha, opts.beta, opts.delta, m, None, tuple(out),
        f"stopped after {m} of {max_samples} draws; {_combine(out)[1]}", (), None, time.perf_counter() - t0,
        extra,
    )  # fmt: skip


def _check_sequential(max_samples: int, first: int, min_step: int, growth: float) -> None:
    """The sequential test's budget and growth: exit 2 (InvalidArgument) naming a bad one."""
    require_positive_int("max_samples", max_samples, minimum=2)
    require_positive_int("first", first, minimum=2)
    require_positive_int("min_step", min_step)
    if not (isinstance(growth, (int, float)) and growth > 1.0):
        raise InvalidArgument("growth", growth, "must be a number > 1")


def _weighted_bonferroni(opts: TestOptions, weights: Sequence[float] | None, J: int) -> tuple[list[float], list[float]]:
    """α_j = α·w_j/Σw and β_j = β·w_j/Σw for the J quantities (equal weights by default)."""
    w = [1.0] * J if weights is None else [require_positive("weights", v) for v in weights]
    if len(w) != J:
        raise InvalidArgument("weights", list(w), f"need one weight per quantity ({J})")
    a_js = [opts.alpha * v / sum(w) for v in w]  # weighted Bonferroni over the quantities
    b_js = [opts.beta * v / sum(w) for v in w]
    return a_js, b_js


class _Sequential(NamedTuple):
    """What the looks of a sequential test share, fixed after the first batch."""

    labels: Sequence[str]
    truths: list[torch.Tensor]
    norms: Sequence[float]
    opts: TestOptions
    a_js: Sequence[float]
    b_js: Sequence[float]
    plan: SamplePlan
    anomalies: Sequence[str]
    scales: Sequence[_SeqScales]


def _sequential_setup(
    labels: Sequence[str],
    acc: Sequence[_Acc],
    truths: list[torch.Tensor],
    norms: Sequence[float],
    opts: TestOptions,
    a_js: Sequence[float],
    b_js: Sequence[float],
    max_samples: int,
    m: int,
) -> _Sequential:
    """After the first batch: the fixed-sample plans (anomalies, target M) and the mixture scales tuned for it, from
    the first batch's moments with its design effect applied (:func:`design_effect`: dependent draws need more)."""
    J = len(truths)
    acc = [_robust(a, t, opts)[0] for a, t in zip(acc, truths, strict=True)]
    plans = [
        plan_quantity(acc[j].mom, truths[j], norms[j], opts, a_js[j], b_js[j], opts.miss_rate / J, 2) for j in range(J)
    ]
    anomalies = [_anomaly(acc[j].mom, norms[j], plans[j], max_samples, opts) for j in range(J)]
    plan = max(plans, key=lambda pl: pl.samples)
    target = max(int(min(plan.samples, 10 * max_samples) * _TARGET_FRAC), m)
    scales = []
    for j in range(J):
        geo = _geometry(acc[j].mom, truths[j], opts)
        err = a_js[j] / 4.0
        err_dir = (err if opts.hotelling else 2.0 * err) / max(opts.directions, 1)
        scales.append(
            _SeqScales(
                rho_dir=_best_scalar_rho(target, err_dir),
                rho_mahal=_best_mahal_rho(target, max(geo.rank, 1), err),
                rho_vec=best_mixture_rho(target, geo.spectrum, b_js[j]),
            )
        )
    return _Sequential(labels, truths, norms, opts, a_js, b_js, plan, anomalies, scales)


def _sequential_looks(
    sampler: Sampler,
    generator: torch.Generator,
    seq: _Sequential,
    acc: list[_Acc],
    m: int,
    max_samples: int,
    growth: float,
    min_step: int,
    ch: int,
) -> tuple[Verdict, str, list[QuantityResult], list[tuple[int, float]], int]:
    """Look, and draw more (×``growth``) until a clear verdict or the budget: (verdict, reason, results, looks, m)."""
    labels, truths, norms, opts = seq.labels, seq.truths, seq.norms, seq.opts
    looks: list[tuple[int, float]] = []
    sticky: dict[int, QuantityResult] = {}
    while True:
        if any(_overflow(a.mom) for a in acc):  # a later batch overflowed: stop, nothing more can be certified
            cur = _overflow_results(labels, acc, norms)
            looks.append((m, math.inf))
            verdict, reason = _combine(cur)
            break
        cur = _sequential_look(seq, acc, sticky)
        looks.append((m, max(q.relative_bound for q in cur)))
        verdict, reason = _combine(cur)
        if verdict is not Verdict.INCONCLUSIVE or m >= max_samples:
            break
        if opts.stop_on_anomaly and any(q.variance_anomaly for q in cur) and acc[0].groups.calls >= MIN_CALLS:
            # PASS is out of reach by >= anomaly_ratio x the budget: stop (no error rate increases) -- but only once
            # a FAIL was possible: before MIN_CALLS calls every rejection waits on the independence premise, and
            # stopping there would make an estimator with an anomalous variance unable to FAIL however biased
            break
        nxt = min(max_samples, max(m + min_step, math.ceil(m * growth)))
        acc = _draw(sampler, nxt - m, generator, truths, acc, ch)
        m = nxt
    if verdict is Verdict.INCONCLUSIVE and m >= max_samples:
        reason = f"budget of {max_samples} draws exhausted; {reason}"
    elif verdict is Verdict.INCONCLUSIVE:
        reason = f"stopped after {m} of {max_samples} draws; {reason}"
    return verdict, reason, cur, looks, m


def _sequential_look(seq: _Sequential, acc: Sequence[_Acc], sticky: dict[int, QuantityResult]) -> list[QuantityResult]:
    """Every quantity against its time-uniform boundaries; a PASS certificate, once issued, stands."""
    cur = []
    for j in range(len(seq.truths)):
        q = _evaluate_sequential(
            seq.labels[j], acc[j], seq.truths[j], seq.norms[j], seq.opts, seq.a_js[j], seq.b_js[j], seq.scales[j],
            seq.anomalies[j], j in sticky,
        )  # fmt: skip
        if q.verdict is Verdict.PASS and j not in sticky:
            sticky[j] = q  # a certificate, once issued, stands (time-uniform)
        if j in sticky and q.verdict is not Verdict.FAIL:
            q = sticky[j]
        cur.append(q)
    return cur
