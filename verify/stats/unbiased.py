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
a family of K + 2 tests of :math:`H_0: E X = g`, combined by Holm's step-down
(or Bonferroni) at level α: Student-t tests of the projections :math:`u_k^\top(X-g)`
on K random unit directions (drawn before the data), Hotelling's
:math:`T^2 = M D^\top S^{+} D` on the range of the sample covariance S
(:math:`\frac{M-r}{r(M-1)}T^2 \sim F(r, M-r)`, used when M > r + 1) and an exact
check of the directions along which S vanishes (a deterministic component must
match to round-off, :math:`|z| \le \mathrm{rtol}\cdot\|g\|`). The PASS side uses
the ball above with :math:`r = a_\beta(S)/\sqrt M`. :func:`planned_test` first
draws a pilot, asks :mod:`verify.stats.planner` for M, then tests M fresh draws.

*Sequential, anytime-valid* (:func:`sequential_test`): draws in growing batches and
after every batch evaluates **time-uniform** boundaries (confidence sequences),
so stopping as soon as the verdict is clear keeps both error rates: Robbins'
normal-mixture boundary per direction (Bonferroni over the K directions and a
Mahalanobis mixture, at α), and the vector normal-mixture radius for the ball
(at β), see :mod:`verify.stats.bounds`.

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

Heavy tails: with infinite or barely-finite variance the plug-in S is dominated
by a few draws and the approximation is unreliable. The **tail diagnostic**
measures the largest single draw's share of the trace of the scatter matrix.
For finite variance it tends to 0 as M grows; for infinite variance it does not
(measured, p = 10, independent Student-t coordinates, 40 seeds: median share
0.6 for 1 degree of freedom (Cauchy), 0.3 for 1.5, 0.15 for 2, but 0.01-0.03
for 3 and ≤ 0.007 for 5 at M = 2·10³-10⁵). Above ``max_tail_share`` (default
0.1) the test refuses to PASS (INCONCLUSIVE, "heavy tail"); a false alarm only
costs power, never an error rate. (A Cauchy-like estimator cannot be certified
anyway: its plug-in radius does not shrink with M.)
A PASS also needs M ≥ ``min_samples`` (default 1000). The FAIL side of the
t/Hotelling tests is conservative for symmetric heavy tails; skewed heavy tails
are the remaining risk, which the calibration runs (Student-t with 3 degrees of
freedom, centred exponential, UORO over 1000 seeds) measure.

Families: J quantities tested on the same draws (e.g. several time steps) split
α and β J ways (Bonferroni), so the family-wise rates are ≤ α and ≤ β.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from scipy import stats

from verify._validate import require_finite, require_positive, require_positive_int, require_probability
from verify.errors import InvalidArgument
from verify.results import Verdict
from verify.stats.bounds import (
    best_mixture_rho,
    mahalanobis_mixture_threshold,
    norm_quantile_bound,
    normal_mixture_halfwidth,
    vector_mixture_radius,
)
from verify.stats.moments import Moments, empty_moments, update_moments
from verify.stats.multiple import adjusted_pvalues
from verify.stats.planner import SamplePlan, plan_from_pilot

__all__ = [
    "QuantityResult",
    "Sampler",
    "SubTest",
    "TestOptions",
    "UnbiasednessResult",
    "fixed_sample_test",
    "planned_test",
    "sequential_test",
]

#: ``sampler(m, generator)`` -> m i.i.d. draws: a tensor (m, p) or a sequence of J tensors (m, p_j).
Sampler = Callable[[int, torch.Generator], torch.Tensor | Sequence[torch.Tensor]]

#: the mixture boundaries are tuned for this fraction of the fixed-sample plan (about where the sequential
#: test stops: 0.4-0.6 of the plan in the UORO claims)
_TARGET_FRAC = 0.5
_EIG_RTOL = 1e-9  # eigenvalues below this fraction of the largest are treated as a deterministic subspace


@dataclass(frozen=True)
class TestOptions:
    """Error rates, tolerance and mechanism settings of an unbiasedness test.

    ``alpha``: false-FAIL rate for an unbiased estimator (per call, split over the
    J quantities). ``beta``: probability that a PASS certificate is wrong.
    ``delta``: PASS requires the certified bias bound below δ·‖g‖. ``directions``:
    K random projections. ``correction``: ``"holm"`` or ``"bonferroni"``.
    ``miss``: planner's probability that a correct estimator misses PASS (default β).
    ``det_rtol``: round-off tolerance (relative to max(‖g‖, ‖X̄‖)) for components
    without noise. ``min_samples`` / ``max_tail_share``: premises of a PASS.
    """

    __test__ = False  # not a pytest test class

    alpha: float = 1e-3
    beta: float = 1e-3
    delta: float = 0.02
    directions: int = 16
    correction: str = "holm"
    hotelling: bool = True
    miss: float | None = None
    det_rtol: float = 1e-9
    min_samples: int = 1000
    max_tail_share: float = 0.1

    def __post_init__(self) -> None:
        require_probability("alpha", self.alpha)
        require_probability("beta", self.beta)
        require_positive("delta", self.delta)
        require_positive_int("directions", self.directions, minimum=0)
        if self.correction not in ("holm", "bonferroni"):
            raise InvalidArgument("correction", self.correction, "must be 'holm' or 'bonferroni'")
        if self.miss is not None:
            require_probability("miss", self.miss)
        require_positive("det_rtol", self.det_rtol)
        require_positive_int("min_samples", self.min_samples, minimum=2)
        require_probability("max_tail_share", self.max_tail_share)

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
    """Certified bound on ‖E ĝ − g‖: ‖X̄ − g‖ + r."""
    relative_bound: float
    """bias_bound / ‖g‖ (PASS needs < δ)."""
    subtests: tuple[SubTest, ...]
    tail_share: float
    rank: int
    reason: str = ""

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
            "tail_share": self.tail_share,
            "rank": self.rank,
            "reason": self.reason,
            "rejected": [s.name for s in self.subtests if s.rejected],
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
        """The worst certified relative bias bound over the quantities (the δ actually achieved)."""
        return max(q.relative_bound for q in self.quantities)

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS

    @property
    def failed(self) -> bool:
        return self.verdict is Verdict.FAIL

    def summary(self) -> str:
        worst = max(self.quantities, key=lambda q: q.relative_bound)
        planned = f" (planned {self.samples_planned})" if self.samples_planned is not None else ""
        head = (
            f"{self.verdict.value} [{self.method}] after {self.samples_used} draws{planned}: "
            f"certified ||E g^ - g|| <= {self.relative_bound:.3g}*||g|| at 1-beta={1 - self.beta:g} "
            f"(delta={self.delta:g}, alpha={self.alpha:g}); worst quantity {worst.name}: "
            f"estimated bias {worst.bias_norm / worst.truth_norm:.3g}*||g||"
        )
        failed = [q for q in self.quantities if q.verdict is Verdict.FAIL]
        if failed:
            head += "; bias detected in " + ", ".join(f"{q.name} ({_rejections(q)})" for q in failed)
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
            "quantities": [q.to_data() for q in self.quantities],
            "looks": [list(lk) for lk in self.looks],
            "reason": self.reason,
            **self.extra,
        }


def _rejections(q: QuantityResult) -> str:
    rej = [s.name for s in q.subtests if s.rejected]
    dirs = [n for n in rej if n.startswith("direction-")]
    n_dirs = sum(1 for s in q.subtests if s.name.startswith("direction-"))
    parts = [n for n in rej if not n.startswith("direction-")]
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


def _prepare_truths(
    truth: torch.Tensor | Sequence[torch.Tensor], reference_norm: float | Sequence[float] | None
) -> tuple[list[torch.Tensor], list[float]]:
    truths = []
    for j, g in enumerate(_as_list(truth, "truth")):
        if g.dim() != 1 or g.numel() == 0:
            raise InvalidArgument(f"truth[{j}]", f"tensor of shape {tuple(g.shape)}", "expected a vector (p,)")
        if g.is_complex() or not g.is_floating_point():
            raise InvalidArgument(f"truth[{j}]", f"dtype {g.dtype}", "must be real floating point")
        require_finite(f"truth[{j}]", g)
        truths.append(g.detach().to(device="cpu", dtype=torch.float64))
    if reference_norm is None:
        norms = [float(torch.linalg.vector_norm(g)) for g in truths]
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
    return truths, norms


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


def _draw(
    sampler: Sampler, m: int, gen: torch.Generator, truths: list[torch.Tensor], moments: list[Moments], chunk: int
) -> list[Moments]:
    done = 0
    while done < m:
        k = min(chunk, m - done)
        out = _as_list(sampler(k, gen), "sampler(...) output")
        if len(out) != len(truths):
            raise InvalidArgument(
                "sampler(...) output", f"{len(out)} tensors", f"expected one per truth ({len(truths)})"
            )
        for j, x in enumerate(out):
            if x.dim() != 2 or x.shape[0] != k:
                raise InvalidArgument(
                    f"sampler(...) output[{j}]",
                    f"tensor of shape {tuple(x.shape)}",
                    f"expected ({k}, {truths[j].numel()}) for {k} requested draws",
                )
            moments[j] = update_moments(moments[j], x, truths[j], name=f"sampler(...) output[{j}]")
        done += k
    return moments


@dataclass(frozen=True)
class _Geometry:
    """Eigen-decomposition of S split into the noisy range and the (numerically) deterministic subspace."""

    eig: torch.Tensor
    z: torch.Tensor  # V^T D
    keep: torch.Tensor  # bool mask, eigenvalues used by Hotelling / the mixture
    cov: torch.Tensor

    @property
    def rank(self) -> int:
        return int(self.keep.sum())


def _geometry(m: Moments) -> _Geometry:
    cov = m.covariance()
    eig, vec = torch.linalg.eigh(cov)
    eig = eig.clamp(min=0.0)
    mx = float(eig.max())
    keep = eig > _EIG_RTOL * mx if mx > 0 else torch.zeros_like(eig, dtype=torch.bool)
    return _Geometry(eig, vec.T @ m.mean, keep, cov)


def _deterministic_subtest(m: Moments, geo: _Geometry, tol: float, err: float) -> SubTest:
    """Directions without (numerical) noise must match to round-off: |z_j| <= tol + z_crit sqrt(λ_j/M)."""
    null = ~geo.keep
    if not bool(null.any()):
        return SubTest("deterministic-subspace", 0.0, 1.0, False, tol)
    p = m.p
    zc = float(stats.norm.isf(err / (2 * p)))
    z = geo.z[null].abs()
    allowed = tol + zc * torch.sqrt(geo.eig[null] / m.n)
    excess = float((z - allowed).max())
    bad = excess > 0
    return SubTest("deterministic-subspace", float(z.max()), 0.0 if bad else 1.0, bad, tol)


def _tolerance(m: Moments, truth: torch.Tensor, opts: TestOptions) -> float:
    gn = float(torch.linalg.vector_norm(truth))
    xn = float(torch.linalg.vector_norm(truth + m.mean))
    return opts.det_rtol * max(gn, xn, 1e-300)


def _pass_premises(m: Moments, opts: TestOptions) -> str:
    if m.n < opts.min_samples:
        return f"M={m.n} < min_samples={opts.min_samples} (CLT premise of a PASS)"
    share = m.tail_share()
    if share > opts.max_tail_share:
        return (
            f"heavy tail: one draw carries {share:.1%} of the total scatter (> {opts.max_tail_share:.0%}); "
            "the Gaussian approximation is not trusted, no PASS"
        )
    return ""


def _verdict(failed: bool, bound: float, target: float, premise: str) -> tuple[Verdict, str]:
    if failed:
        return Verdict.FAIL, "bias detected"
    if premise:
        return Verdict.INCONCLUSIVE, premise
    if bound < target:
        return Verdict.PASS, ""
    return Verdict.INCONCLUSIVE, f"bias bound {bound:.3g} not below delta*||g|| = {target:.3g} yet"


def _evaluate_fixed(
    name: str,
    m: Moments,
    truth: torch.Tensor,
    gnorm: float,
    dirs: torch.Tensor,
    opts: TestOptions,
    alpha: float,
    beta: float,
) -> QuantityResult:
    n = m.n
    geo = _geometry(m)
    tol = _tolerance(m, truth, opts)
    subs: list[SubTest] = [_deterministic_subtest(m, geo, tol, alpha)]
    r = geo.rank
    if opts.hotelling and 1 <= r and n > r + 1:
        t2 = n * float((geo.z[geo.keep] ** 2 / geo.eig[geo.keep]).sum())  # Hotelling T^2 on range(S)
        fstat = (n - r) / (r * (n - 1)) * t2
        subs.append(SubTest(f"hotelling-T2(r={r})", t2, float(stats.f.sf(fstat, r, n - r)), False))
    for k in range(dirs.shape[0]):
        u = dirs[k]
        mu = float(u @ m.mean)
        var = float(u @ geo.cov @ u)
        sd = math.sqrt(max(var, 0.0) / n)
        if sd <= 1e-3 * tol:  # no noise along u: exact comparison
            subs.append(SubTest(f"direction-{k}", mu, 0.0 if abs(mu) > tol else 1.0, False))
        else:
            t = mu / sd
            subs.append(SubTest(f"direction-{k}", t, float(2.0 * stats.t.sf(abs(t), n - 1)), False))
    adj = adjusted_pvalues([s.pvalue for s in subs], opts.correction)
    subs = [SubTest(s.name, s.statistic, s.pvalue, a <= alpha, s.threshold) for s, a in zip(subs, adj, strict=True)]
    failed = any(s.rejected for s in subs)
    radius = norm_quantile_bound(geo.eig, math.log(1.0 / beta)) / math.sqrt(n)  # Laurent-Massart ball
    bias = float(torch.linalg.vector_norm(m.mean))
    bound = bias + radius
    verdict, reason = _verdict(failed, bound, opts.delta * gnorm, _pass_premises(m, opts))
    return QuantityResult(
        name, verdict, n, gnorm, bias, radius, bound, bound / gnorm, tuple(subs), m.tail_share(), r, reason
    )


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


def _evaluate_sequential(
    name: str,
    m: Moments,
    truth: torch.Tensor,
    gnorm: float,
    dirs: torch.Tensor,
    opts: TestOptions,
    alpha: float,
    beta: float,
    scales: _SeqScales,
) -> QuantityResult:
    n = m.n
    geo = _geometry(m)
    tol = _tolerance(m, truth, opts)
    n_tests = dirs.shape[0] + 2
    err = alpha / n_tests  # Bonferroni over the anytime-valid family
    subs: list[SubTest] = [_deterministic_subtest(m, geo, tol, err)]
    r = geo.rank
    if opts.hotelling and r >= 1:
        stat = n * n * float((geo.z[geo.keep] ** 2 / geo.eig[geo.keep]).sum())  # S_m^T S^+ S_m
        thr = mahalanobis_mixture_threshold(n, r, err, scales.rho_mahal)
        subs.append(SubTest(f"mahalanobis-mixture(r={r})", stat, 1.0, stat >= thr, thr))
    for k in range(dirs.shape[0]):
        u = dirs[k]
        mu = float(u @ m.mean)
        sd = math.sqrt(max(float(u @ geo.cov @ u), 0.0))
        if sd / math.sqrt(n) <= 1e-3 * tol:
            subs.append(SubTest(f"direction-{k}", mu, 1.0, abs(mu) > tol, tol))
        else:
            hw = normal_mixture_halfwidth(n, sd, err, scales.rho_dir)  # Robbins normal mixture
            subs.append(SubTest(f"direction-{k}", mu, 1.0, abs(mu) >= hw, hw))
    failed = any(s.rejected for s in subs)
    radius = vector_mixture_radius(n, geo.eig, beta, scales.rho_vec)  # time-uniform ball
    bias = float(torch.linalg.vector_norm(m.mean))
    bound = bias + radius
    verdict, reason = _verdict(failed, bound, opts.delta * gnorm, _pass_premises(m, opts))
    return QuantityResult(
        name, verdict, n, gnorm, bias, radius, bound, bound / gnorm, tuple(subs), m.tail_share(), r, reason
    )


def _combine(results: Sequence[QuantityResult]) -> tuple[Verdict, str]:
    if any(q.verdict is Verdict.FAIL for q in results):
        return Verdict.FAIL, ""
    if all(q.verdict is Verdict.PASS for q in results):
        return Verdict.PASS, ""
    open_ = [q for q in results if q.verdict is not Verdict.PASS]
    return Verdict.INCONCLUSIVE, "; ".join(f"{q.name}: {q.reason}" for q in open_)


def _default_chunk(p_total: int) -> int:
    return max(256, min(200_000, 4_000_000 // max(p_total, 1)))


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
    same M) with ``truth`` a matching sequence of (p_j,) vectors.
    """
    t0 = time.perf_counter()
    opts = options or TestOptions()
    truths, norms = _prepare_truths(truth, reference_norm)
    xs = _as_list(samples, "samples")
    if len(xs) != len(truths):
        raise InvalidArgument("samples", f"{len(xs)} tensors", f"expected one per truth ({len(truths)})")
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    labels = _names(names, len(truths))
    J = len(truths)
    out = []
    for j in range(J):
        mom = update_moments(empty_moments(truths[j].numel()), xs[j], truths[j], name=f"samples[{j}]")
        if mom.n < 2:
            raise InvalidArgument(f"samples[{j}]", mom.n, "need at least 2 draws")
        dirs = _directions(truths[j].numel(), opts.directions, gen)
        out.append(_evaluate_fixed(labels[j], mom, truths[j], norms[j], dirs, opts, opts.alpha / J, opts.beta / J))
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
    says so (usually INCONCLUSIVE). ``samples_used`` counts pilot + test draws.
    """
    t0 = time.perf_counter()
    opts = options or TestOptions()
    truths, norms = _prepare_truths(truth, reference_norm)
    require_positive_int("max_samples", max_samples, minimum=2)
    require_positive_int("pilot", pilot, minimum=2)
    J = len(truths)
    labels = _names(names, J)
    ch = chunk or _default_chunk(sum(g.numel() for g in truths))
    dirs = [_directions(g.numel(), opts.directions, generator) for g in truths]
    pil = _draw(sampler, pilot, generator, truths, [empty_moments(g.numel()) for g in truths], ch)
    plans = [
        plan_from_pilot(
            pil[j],
            norms[j],
            delta=opts.delta,
            alpha=opts.alpha / J,
            beta=opts.beta / J,
            miss=opts.miss_rate / J,
            min_samples=opts.min_samples,
        )
        for j in range(J)
    ]
    plan = max(plans, key=lambda pl: pl.samples)
    m = min(plan.samples, max_samples)
    mom = _draw(sampler, m, generator, truths, [empty_moments(g.numel()) for g in truths], ch)
    out = [
        _evaluate_fixed(labels[j], mom[j], truths[j], norms[j], dirs[j], opts, opts.alpha / J, opts.beta / J)
        for j in range(J)
    ]
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
    (δ, α, β), from the first batch as pilot).

    ``weights`` (one positive number per quantity, fixed before any data are seen)
    split α and β unequally: quantity j gets α·w_j/Σw and β·w_j/Σw (weighted
    Bonferroni); default equal.
    """
    t0 = time.perf_counter()
    opts = options or TestOptions()
    truths, norms = _prepare_truths(truth, reference_norm)
    require_positive_int("max_samples", max_samples, minimum=2)
    require_positive_int("first", first, minimum=2)
    require_positive_int("min_step", min_step)
    if not (isinstance(growth, (int, float)) and growth > 1.0):
        raise InvalidArgument("growth", growth, "must be a number > 1")
    J = len(truths)
    labels = _names(names, J)
    ch = chunk or _default_chunk(sum(g.numel() for g in truths))
    dirs = [_directions(g.numel(), opts.directions, generator) for g in truths]
    w = [1.0] * J if weights is None else [require_positive("weights", v) for v in weights]
    if len(w) != J:
        raise InvalidArgument("weights", list(w), f"need one weight per quantity ({J})")
    a_js = [opts.alpha * v / sum(w) for v in w]  # weighted Bonferroni over the quantities
    b_js = [opts.beta * v / sum(w) for v in w]
    m = min(first, max_samples)
    mom = _draw(sampler, m, generator, truths, [empty_moments(g.numel()) for g in truths], ch)
    plans = [
        plan_from_pilot(
            mom[j], norms[j], delta=opts.delta, alpha=a_js[j], beta=b_js[j], miss=opts.miss_rate / J, min_samples=2
        )
        for j in range(J)
    ]
    plan = max(plans, key=lambda pl: pl.samples)
    target = max(int(plan.samples * _TARGET_FRAC), m)
    scales = []
    for j in range(J):
        geo = _geometry(mom[j])
        err = a_js[j] / (opts.directions + 2)
        scales.append(
            _SeqScales(
                rho_dir=_best_scalar_rho(target, err),
                rho_mahal=_best_mahal_rho(target, max(geo.rank, 1), err),
                rho_vec=best_mixture_rho(target, geo.eig, b_js[j]),
            )
        )
    looks: list[tuple[int, float]] = []
    sticky: dict[int, QuantityResult] = {}
    while True:
        cur = []
        for j in range(J):
            q = _evaluate_sequential(labels[j], mom[j], truths[j], norms[j], dirs[j], opts, a_js[j], b_js[j], scales[j])
            if q.verdict is Verdict.PASS and j not in sticky:
                sticky[j] = q  # a certificate, once issued, stands (time-uniform)
            if j in sticky and q.verdict is not Verdict.FAIL:
                q = sticky[j]
            cur.append(q)
        looks.append((m, max(q.relative_bound for q in cur)))
        verdict, reason = _combine(cur)
        if verdict is not Verdict.INCONCLUSIVE or m >= max_samples:
            break
        nxt = min(max_samples, max(m + min_step, math.ceil(m * growth)))
        mom = _draw(sampler, nxt - m, generator, truths, mom, ch)
        m = nxt
    if verdict is Verdict.INCONCLUSIVE:
        reason = f"budget of {max_samples} draws exhausted; {reason}"
    return UnbiasednessResult(
        verdict,
        "sequential",
        opts.alpha,
        opts.beta,
        opts.delta,
        m,
        plan.samples,
        tuple(cur),
        reason,
        tuple(looks),
        plan,
        time.perf_counter() - t0,
        {"first": first, "growth": growth},
    )
