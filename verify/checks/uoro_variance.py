r"""Statistical checks of UORO's variance (claims in :mod:`theory.claims.uoro_statistics`; the computations in
:mod:`verify.uoro.variance`, :mod:`verify.uoro.reinforce_link` and :mod:`verify.uoro.normalizers`).

* ``uoro.rank-variance`` -- E‖ĝ_r − g‖² ∝ 1/r (slope with a CI; Tallec & Ollivier §3);
* ``uoro.variance-growth`` -- relative variance vs t and n (measurements; the
  estimator of the measurement is checked against exact enumeration; Cooijmans & Martens);
* ``uoro.reinforce-link`` -- REINFORCE on the state-perturbed RNN → UORO as σ → 0 (Cooijmans & Martens),
  with :class:`verify.estimators.reinforce.Reinforce`;
* ``uoro.variance-matches-algorithm-1`` -- two-sample tests on second moments against
  the independent Algorithm 1 (:func:`verify.oracles.algorithm1.algorithm1_reference`); the paper's
  normalizers vs alternatives.

Error rates: α = :data:`~theory.claims.uoro_statistics.ALPHA` = 5e-5 per claim. The implementation under test is
``config.impls.uoro`` (:class:`verify.impl.UOROImpl`); shared machinery in :mod:`verify.checks.uoro_common`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from scipy import stats

from theory.catalog import declared_rate
from theory.claims.uoro_statistics import NO_BASELINE_RATE, VARIANCE_CONTROL_BETA
from theory.rates import Rate
from verify.checks import register
from verify.checks.uoro_common import alpha_of, controls_on, finish, mutant, uoro_under_test
from verify.checks.uoro_plans import (
    plan_rank_variance,
    plan_reinforce_link,
    plan_variance_growth,
    plan_variance_matches,
)
from verify.config import RunConfig
from verify.estimators.base import OnlineEstimator
from verify.impl import build
from verify.impl.mutants.uoro import get
from verify.oracles.algorithm1 import NORMALIZERS
from verify.report.plots.uoro import (
    normalizers_table,
    rank_variance_figure,
    reinforce_link_figure,
    variance_growth_figure,
)
from verify.stats.rates import RateFit, decide_rate
from verify.uoro.cases import problem_case
from verify.uoro.normalizers import (
    PAPER,
    FixtureSetup,
    VarianceFixture,
    candidate_q,
    compare_to_algorithm1,
    normalizer_alternatives,
    ref_q,
    variance_fixture,
)
from verify.uoro.reinforce_link import reinforce_fits
from verify.uoro.variance import Growth, exact_vs_measured, rank_slope, variance_growth
from verify.verdict import CheckResult, Control, Verdict

#: the declared rates (theory.claims.uoro_statistics), decided on the fitted interval
RANK_RATE = declared_rate("uoro.rank-variance")
LINK_RATE = declared_rate("uoro.reinforce-link")

__all__ = ["check_rank_variance", "check_reinforce_link", "check_variance_growth", "check_variance_matches"]

#: miss probability allowed to each alternative the variance comparison must see (a control not caught FAILs
#: correct code: part of the gate's budget)
CONTROL_BETA = VARIANCE_CONTROL_BETA
#: the variance fixture per profile: (n, T) with n*T = 15 signs in ci, 2^15 patterns enumerated exactly (~0.2 s
#: per rule); fewest and most draws per side; 8 candidate problems tried before the check gives up (INCONCLUSIVE)
VARIANCE_SETUP = {
    "ci": FixtureSetup((3, 5), (3000, 20_000), CONTROL_BETA),
    "full": FixtureSetup((3, 6), (20_000, 200_000), CONTROL_BETA),
}


def _ranked(factory: Callable[..., Any], ranks: Sequence[int]) -> list[tuple[int, OnlineEstimator]]:
    return [(r, build(factory, "uoro.rank-variance (rank-r UORO)", rank=r)) for r in ranks]


def _slope_control(name: str, fit: RateFit, rate: Rate, positive: bool) -> Control:
    """A mutant's slope fit must not pass: its CI must miss ``rate`` (or, ``positive``, the slope not be > 0)."""
    passes = decide_rate(fit, rate).consistent and (fit.lo > 0 if positive else True)
    return Control(
        f"mutant {name}",
        "FAIL",
        "PASS" if passes else "FAIL",
        f"slope {fit.slope:.3f}, CI [{fit.ci[0]:.3f}, {fit.ci[1]:.3f}]",
    )


@register("uoro.rank-variance", uses=("uoro.uoro",), plan=plan_rank_variance)
def check_rank_variance(config: RunConfig) -> CheckResult:
    r"""Rank-r UORO's variance falls as 1/r (Tallec & Ollivier §3: r independent pairs averaged).

    .. math:: E\|\hat g_r - g\|^2 = \operatorname{tr}\operatorname{Cov}(\hat g_1)/r

    (exact for r independent unbiased pairs). Weighted least squares of log E‖ĝ_r − g‖² (total
    gradient) on log r, r ∈ {1, 2, 4} (full: up to 8), delta-method standard errors; the slope's CI at level
    1 − α must contain −1 (FAIL if it excludes it) and be narrower than ±0.15 (else
    INCONCLUSIVE). Negative control: pairs sharing one ν (``uoro.rank-shared-noise``) must FAIL.
    """
    t0 = time.perf_counter()
    alpha = alpha_of(config)
    n, T, draws = (4, 8, 10_000) if config.full else (3, 5, 1500)
    ranks = (1, 2, 4, 8) if config.full else (1, 2, 4)
    case = problem_case("elman-tanh", n, T, config.seed, 440)
    fit, rows = rank_slope(_ranked(config.impls.uoro.uoro, ranks), case, draws, config.generator(441), 1 - alpha)
    half = (fit.ci[1] - fit.ci[0]) / 2
    if not decide_rate(fit, RANK_RATE).consistent:
        verdict = Verdict.FAIL
    elif half > 0.15:
        verdict = Verdict.INCONCLUSIVE
    else:
        verdict = Verdict.PASS
    controls = []
    if controls_on(config):
        shared = _ranked(get("uoro.rank-shared-noise").part, ranks)
        bad, _ = rank_slope(shared, case, draws, config.generator(442), 1 - alpha)
        controls.append(_slope_control("uoro.rank-shared-noise", bad, RANK_RATE, positive=False))
    summary = (
        f"slope of log E||g_r - g||^2 on log r = {fit.slope:.3f}, {1 - alpha:g}-CI [{fit.ci[0]:.3f}, {fit.ci[1]:.3f}] "
        f"(theory -1; chi2 = {fit.chi2:.2f} on {fit.points - 2} dof); {case.label}, r in {ranks}, {draws} draws each"
    )
    data = {"points": rows, "slope": fit.slope, "ci": list(fit.ci), "chi2": fit.chi2, "level": fit.level}
    data["figures"] = [rank_variance_figure(rows)]
    return finish(
        "uoro.rank-variance",
        config,
        t0,
        verdict,
        summary,
        statistic=fit.slope,
        threshold=-1.0,
        comparison="CI contains",
        controls=controls,
        data=data,
        reason=None if verdict is not Verdict.INCONCLUSIVE else f"CI half-width {half:.3f} > 0.15",
        alpha=alpha,
        samples_used=draws * len(ranks),
    )


def _agrees(rows: Sequence[dict[str, Any]], alpha: float) -> bool:
    """Measured v_t agrees with the exact one at every t: |z| within the two-sided Bonferroni bound at level α."""
    zc = float(stats.norm.isf(alpha / (2 * len(rows))))
    return all(abs(r["z"]) <= zc for r in rows)


def _growth_summary(g: Growth, T: int, rows: Sequence[dict[str, Any]]) -> str:
    fit_n, fit_t = g.fit_n, g.fit_t
    return (
        f"relative variance of g~_T (T={T}): "
        + ", ".join(f"n={n}: {v[-1]:.3g}" for n, v in g.growth.items())
        + f"; growth exponent of the t-averaged relative variance in n {fit_n.slope:.2f} "
        f"(95% CI [{fit_n.ci[0]:.2f}, {fit_n.ci[1]:.2f}]), in t (n={g.big}) {fit_t.slope:.2f} "
        f"(CI [{fit_t.ci[0]:.2f}, {fit_t.ci[1]:.2f}]); measurement vs exact enumeration "
        f"(n=2, t=2..6): max |z| = {max(abs(r['z']) for r in rows):.2f}"
    )


@register("uoro.variance-growth", uses=("uoro.uoro",), plan=plan_variance_growth)
def check_variance_growth(config: RunConfig) -> CheckResult:
    r"""UORO's variance grows with t and with the state size n (measured; Cooijmans & Martens,
    uoro-variance-cooijmans-martens.md § "Variance reduction through iterative rescaling" and § "Theoretical
    framework": the variance is dominated by a product of traces over the past steps and the spatial cross-terms
    of ν νᵀ).

    Measures the relative variance :math:`v_t = E\|\tilde g_t - g_t\|^2/\|g_t\|^2` for t = 1..T on
    Elman-tanh problems with n ∈ {2, 4, 8, 16} (report data, fitted growth exponents with CIs).
    The check that can fail: where all sign patterns can be enumerated (n = 2, t ≤ 6) the
    measured v_t must agree with the exact variance over the 2^{nt} patterns (z-tests, Bonferroni,
    level α). Negative control: the measurement of a mutant (ρ₀ ≡ 1) must disagree with the
    exact variance of Algorithm 1.
    """
    t0 = time.perf_counter()
    alpha = alpha_of(config)
    ns = (2, 4, 8, 16, 32) if config.full else (2, 4, 8, 16)
    T, draws = (20, 4000) if config.full else (8, 800)
    runs = [
        (n, problem_case("elman-tanh", n, T, config.seed, 460 + i), uoro_under_test(config, "uoro.variance-growth"))
        for i, n in enumerate(ns)
    ]
    g = variance_growth(runs, T, draws, config.generator(461))
    # exact variance by enumeration (n = 2, t <= 6), compared with an independent measurement
    small = problem_case("elman-tanh", 2, 6, config.seed, 469)
    rows = exact_vs_measured(uoro_under_test(config, "uoro.variance-growth"), small, config.generator(462))
    verdict = Verdict.PASS if _agrees(rows, alpha) else Verdict.FAIL
    controls = []
    if controls_on(config):
        bad = mutant("uoro.rho0-previous-step", "control")
        bad_rows = exact_vs_measured(bad, small, config.generator(462))
        controls.append(
            Control(
                "measured variance of rho0 = 1 vs exact Algorithm 1",
                "FAIL",
                "PASS" if _agrees(bad_rows, alpha) else "FAIL",
                ", ".join(f"t={r['t']}: z={r['z']:.1f}" for r in bad_rows),
            )
        )
    fit_n, fit_t = g.fit_n, g.fit_t
    data: dict[str, Any] = {"figures": [variance_growth_figure(g.growth, T)], "table": g.table}
    data["growth_in_n"] = {"slope": fit_n.slope, "ci": list(fit_n.ci)}
    data["growth_in_t"] = {"n": g.big, "slope": fit_t.slope, "ci": list(fit_t.ci)}
    data["exact_vs_measured"] = rows
    return finish(
        "uoro.variance-growth",
        config,
        t0,
        verdict,
        _growth_summary(g, T, rows),
        statistic=max(abs(r["z"]) for r in rows),
        threshold=float(stats.norm.isf(alpha / 10)),
        controls=controls,
        data=data,
        alpha=alpha,
        samples_used=draws * len(ns) + 4000,
    )


@register("uoro.reinforce-link", uses=("uoro.reinforce",), plan=plan_reinforce_link)
def check_reinforce_link(config: RunConfig) -> CheckResult:
    r"""REINFORCE on the state-perturbed RNN approaches UORO as σ → 0; without a baseline its variance grows as 1/σ²
    (Cooijmans & Martens, uoro-variance-cooijmans-martens.md § "A link to REINFORCE": the Taylor expansion of
    :math:`L_t\bar w_t`).

    Coupled draws (same u) for σ ∈ {0.05, 0.025, 0.0125, 0.00625, 0.003125} (the limit σ → 0): (i) with the baseline
    :math:`L_t|_{u=0}`, the RMS difference to the post's UORO estimate is O(σ): the slope of
    log RMS(R − U) on log σ has a (1 − α/2)-CI that contains 1 and lies above 0; (ii) without a
    baseline, the slope of log E‖R − g‖² on log σ has a CI that contains −2 and lies below 0.
    Negative control: the score without 1/σ must FAIL (i).
    """
    t0 = time.perf_counter()
    alpha = alpha_of(config)
    n, T, draws = (6, 10, 8000) if config.full else (3, 5, 1500)
    sigmas = (0.05, 0.025, 0.0125, 0.00625, 0.003125)  # the asymptotic regime sigma -> 0
    case = problem_case("elman-tanh", n, T, config.seed, 470)

    def pairs(part: Callable[..., Any]) -> list[tuple[float, Any, Any]]:
        b = "uoro.reinforce-link"
        return [(s, build(part, b, s, baseline=True), build(part, b, s, baseline=False)) for s in sigmas]

    level = 1 - alpha / 2
    P, th = case.problem, case.theta
    fit_d, fit_v, rows = reinforce_fits(P, th, pairs(config.impls.uoro.reinforce), draws, config.generator(471), level)
    ok_d = decide_rate(fit_d, LINK_RATE).consistent and fit_d.lo > 0
    ok_v = decide_rate(fit_v, NO_BASELINE_RATE).consistent and fit_v.hi < 0
    verdict = Verdict.PASS if (ok_d and ok_v) else Verdict.FAIL
    controls = []
    if controls_on(config):
        bad = pairs(get("reinforce.no-inverse-sigma").part)
        bad_d, _, _ = reinforce_fits(P, th, bad, draws, config.generator(472), level)
        controls.append(_slope_control("reinforce.no-inverse-sigma", bad_d, LINK_RATE, positive=True))
    summary = (
        f"with baseline: RMS(REINFORCE - UORO) ~ sigma^{fit_d.slope:.3f} (CI [{fit_d.ci[0]:.3f}, {fit_d.ci[1]:.3f}], "
        f"theory 1), relative difference {rows[0]['rms_diff_over_rms_uoro']:.3g} at sigma={sigmas[0]} -> "
        f"{rows[-1]['rms_diff_over_rms_uoro']:.3g} at sigma={sigmas[-1]}; without baseline: E||R - g||^2 ~ "
        f"sigma^{fit_v.slope:.3f} (CI [{fit_v.ci[0]:.3f}, {fit_v.ci[1]:.3f}], theory -2); {case.label}, {draws} draws"
    )
    data: dict[str, Any] = {"figures": [reinforce_link_figure(sigmas, rows)], "points": rows}
    data["slope_difference"] = {"slope": fit_d.slope, "ci": list(fit_d.ci)}
    data["slope_variance_no_baseline"] = {"slope": fit_v.slope, "ci": list(fit_v.ci)}
    return finish(
        "uoro.reinforce-link",
        config,
        t0,
        verdict,
        summary,
        statistic=fit_d.slope,
        threshold=1.0,
        comparison="CI contains",
        controls=controls,
        data=data,
        alpha=alpha,
        samples_used=2 * draws * len(sigmas),
    )


def _variance_anomaly(rows: Sequence[dict[str, Any]]) -> str:
    """Name a rejected second-moment comparison: which statistic, by what factor, in which direction."""
    parts = []
    for r in rows:
        if not r["rejected_any"]:
            continue
        lo, hi = r["ratio_ci"]
        way = "above" if lo > 1 else ("below" if hi < 1 else "a different law than")
        parts.append(f"{r['statistic']}: E q {r['ratio']:.3g}x Algorithm 1's (CI [{lo:.3g}, {hi:.3g}], {way})")
    return (
        "VARIANCE ANOMALY (the second moment differs from Algorithm 1's; a normalizer change that keeps unbiasedness "
        "shows only here -- whether the mean is off too is for the unbiasedness claims to say): " + "; ".join(parts)
    )


def _variance_summary(
    fx: VarianceFixture,
    rows: Sequence[dict[str, Any]],
    rejected: bool,
    alt_rows: Sequence[dict[str, Any]],
    alpha: float,
) -> str:
    summary = (
        (_variance_anomaly(rows) + "; " if rejected else "")
        + f"UORO under test vs independent Algorithm 1 on {fx.case.label} ({fx.draws} draws each, alpha = {alpha:g} "
        "over 4 tests; draws planned from the exact moments (2^nT patterns) to tell "
        + ", ".join(f"{k} ({v:.0f} needed)" for k, v in fx.needed.items())
        + f" from Algorithm 1 with power 1 - {CONTROL_BETA:g}"
        + (f"; {fx.tried} earlier candidate problem(s) could not" if fx.tried else "")
        + "): "
        + "; ".join(
            f"{r['statistic']}: E q ratio {r['ratio']:.3g} [{r['ratio_ci'][0]:.3g}, {r['ratio_ci'][1]:.3g}], "
            f"Welch p {r['pvalue']:.2g}, rank p {r['rank_pvalue']:.2g}"
            for r in rows
        )
    )
    if alt_rows:
        summary += "; alternatives' E q / paper's: " + ", ".join(
            f"{r['normalizers']} {r['variance_ratio_vs_paper']:.3g}" for r in alt_rows
        )
    return summary


def _fixture_data(fx: VarianceFixture) -> dict[str, Any]:
    return {
        "problem": fx.case.label,
        "draws": fx.draws,
        "needed": fx.needed,
        "exact_moments": {k: {"mean": list(m), "var": list(v)} for k, (m, v) in fx.exact.items()},
        "control_beta": CONTROL_BETA,
        "rejected_candidates": fx.tried,
    }


@register("uoro.variance-matches-algorithm-1", uses=("uoro.uoro",), plan=plan_variance_matches)
def check_variance_matches(config: RunConfig) -> CheckResult:
    r"""The UORO under test has Algorithm 1's variance, not only its mean (Tallec & Ollivier, Algorithm 1's ρ₀, ρ₁;
    App. A: unbiasedness is invariant to them, so only the variance can tell them apart).

    Two independent samples on the same problem (Elman-tanh with inputs × 5, where the
    normalizers matter): the implementation under test (``config.impls.uoro``; a user's UORO
    needs no noise hook here) and the toolkit's Algorithm 1, :func:`algorithm1_reference`
    (dense Jacobians, paper's ρ₀, ρ₁). For the squared errors q = ‖ĝ − g‖² of the total
    gradient and of g̃_T: Welch's z on E q (ratio with its CI) and the Mann–Whitney rank test
    on the law of q (four tests, Bonferroni, false-fail rate α = 5e-5; FAIL if any rejects,
    named a *variance anomaly*). Also reports E q of the alternatives to the paper's
    normalizers (ρ₀ ≡ 1, ρ₁ ≡ 1, both, ρ₀ inverted, ρ₁ without sqrt) relative to the paper's.
    Negative control: ``uoro.rho1-constant`` (ρ₁ ≡ 1, unbiased) must FAIL.
    """
    t0 = time.perf_counter()
    alpha = alpha_of(config)
    claim = "uoro.variance-matches-algorithm-1"
    fx = variance_fixture(config.seed, VARIANCE_SETUP[config.profile], alpha)
    ref = ref_q(fx, config.generator(491), NORMALIZERS[PAPER])
    est = build(config.impls.uoro.uoro, claim)
    rejected, rows, first = compare_to_algorithm1(candidate_q(est, fx, config.generator(492)), ref, alpha)
    # the paper's normalizers vs the alternatives (reference implementation, same draws count); report data,
    # the kill table does not need it
    alt_rows = (
        [] if config.option("kill_table") else normalizer_alternatives(fx, ref, lambda: config.generator(493), alpha)
    )
    controls = []
    if controls_on(config):
        bad = build(get("uoro.rho1-constant").part, claim)
        bad_rej, bad_rows, _ = compare_to_algorithm1(candidate_q(bad, fx, config.generator(494)), ref, alpha)
        controls.append(
            Control(
                "mutant uoro.rho1-constant",
                "FAIL",
                "FAIL" if bad_rej else "PASS",
                ", ".join(f"{r['statistic']}: ratio {r['ratio']:.3g}, z {r['z']:.1f}" for r in bad_rows),
            )
        )
    data = {"comparisons_two_sample": rows, "fixture": _fixture_data(fx), "normalizers": alt_rows}
    data["figures"] = [normalizers_table(alt_rows)]
    return finish(
        claim,
        config,
        t0,
        Verdict.FAIL if rejected else Verdict.PASS,
        _variance_summary(fx, rows, rejected, alt_rows, alpha),
        statistic=first.z,
        threshold=float(stats.norm.isf(alpha / 8)),
        comparison="|z| <=",
        controls=controls,
        data=data,
        alpha=alpha,
        samples_used=2 * fx.draws,
    )
