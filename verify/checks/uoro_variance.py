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

Error rates: α = the claim's share of the gate's budget, :func:`theory.gate.planned_alpha`. The implementation
under test is ``config.impls.uoro`` (:class:`verify.impl.UOROImpl`); shared machinery in
:mod:`verify.checks.uoro_common`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from theory.catalog import declared_rate
from theory.claims.uoro_statistics import NO_BASELINE_RATE
from theory.rates import Rate
from verify.checks import register
from verify.checks.uoro_common import alpha_of, controls_on, finish, mutant, uoro_under_test
from verify.checks.uoro_plans import (
    plan_rank_variance,
    plan_reinforce_link,
    plan_variance_growth,
)
from verify.config import RunConfig
from verify.estimators.base import OnlineEstimator
from verify.impl import build
from verify.impl.mutants.uoro import get
from verify.report.plots.uoro import (
    rank_variance_figure,
    reinforce_link_figure,
    variance_growth_figure,
)
from verify.stats import dist
from verify.stats.rates import RateFit, decide_rate
from verify.uoro.cases import problem_case
from verify.uoro.conformance import UNDECLARED_LAW, gtilde_form, noise_law
from verify.uoro.reinforce_link import reinforce_fits
from verify.uoro.variance import (
    Growth,
    exact_vs_measured,
    gaussian_vs_measured,
    rank_slope,
    relative_variances,
    variance_growth,
)
from verify.verdict import CheckResult, Control, Verdict

#: the declared rates (theory.claims.uoro_statistics), decided on the fitted interval
RANK_RATE = declared_rate("uoro.rank-variance")
LINK_RATE = declared_rate("uoro.reinforce-link")

__all__ = ["check_rank_variance", "check_reinforce_link", "check_variance_growth"]


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
    alpha = alpha_of(config, "uoro.rank-variance")
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
    zc = float(dist.norm_isf(alpha / (2 * len(rows))))
    return all(abs(r["z"]) <= zc for r in rows)


def _against_laws(
    est: Any, case: Any, config: RunConfig, post: bool, law: tuple[str, str], alpha: float
) -> tuple[list[dict[str, Any]], str]:
    """The measured variance of ``est`` against Algorithm 1's under ν's law: a declared (or known) law alone at
    level α; an undeclared one against both Rademacher signs (exact enumeration) and standard normal ν (Monte
    Carlo) at α/2 each, agreeing if either agrees (a correct Gaussian UORO is not FAILed for not saying so: issue
    37). Returns the rows and the law it agrees with ("" when none)."""
    meas = relative_variances(est, case, 4000, config.generator(462))
    rad = exact_vs_measured(est, case, config.generator(462), post=post, meas=meas)
    declared = law[1] != UNDECLARED_LAW
    if declared and law[0] == "rademacher":
        return rad, "rademacher" if _agrees(rad, alpha) else ""
    gauss = gaussian_vs_measured(case, meas, config.generator(464), post=post)
    if declared:
        return gauss, "gaussian" if _agrees(gauss, alpha) else ""
    if _agrees(rad, alpha / 2):
        return rad, "rademacher"
    if _agrees(gauss, alpha / 2):
        return gauss, "gaussian"
    return rad, ""


def _growth_control(small: Any, config: RunConfig, alpha: float) -> Control:
    """The negative control: the measured variance of the mutant ρ₀ of the previous step must disagree."""
    bad = mutant("uoro.rho0-previous-step", "control")
    bad_rows, bad_law = _against_laws(bad, small, config, False, noise_law(bad), alpha)
    return Control(
        "measured variance of rho0 = 1 vs exact Algorithm 1",
        "FAIL",
        "PASS" if bad_law else "FAIL",
        ", ".join(f"t={r['t']}: z={r['z']:.1f}" for r in bad_rows),
    )


def _z_words(row: dict[str, Any]) -> str:
    """The z-score, or why there is none: a squared error the same in every draw (g~_t does not depend on nu)."""
    if row.get("constant"):
        return "the squared error is the same in every draw: g~_t does not depend on nu"
    return f"z = {row['z']:.1f}"


def _growth_summary(
    g: Growth,
    T: int,
    rows: Sequence[dict[str, Any]],
    verdict: Verdict,
    form: tuple[str | None, str],
    law: tuple[str, str] = ("rademacher", ""),
    by_law: str = "rademacher",
) -> str:
    fit_n, fit_t = g.fit_n, g.fit_t
    worst = max(rows, key=lambda r: abs(r["z"]))
    head = ""
    if verdict is Verdict.FAIL:
        against = "under Gaussian nu (Monte Carlo)" if worst.get("law") == "gaussian" else "exact"
        head = (
            f"VARIANCE differs from Algorithm 1's {against} variance: at t={worst['t']} measured relative variance "
            f"{worst['measured']:.3g} vs {worst['exact']:.3g} ({worst['measured'] / worst['exact']:.3g}x, "
            f"{_z_words(worst)}){' -- and from the Gaussian variant' if law[1] == UNDECLARED_LAW else ''}; "
        )
    elif by_law == "gaussian" and law[0] == "gaussian":
        head = f"nu standard normal ({law[1]}): compared with Algorithm 1 under Gaussian nu (Monte Carlo); "
    elif by_law == "gaussian":
        head = (
            "nu's law not declared: the variance agrees with Algorithm 1 under standard normal nu (Monte Carlo), "
            "not with Rademacher signs (declare noise_law='gaussian' to test that law alone); "
        )
    if form[0] == "post-update":
        head += f"g~ in the post-update form ({form[1]}): compared with that variant of Algorithm 1; "
    return head + (
        f"relative variance of g~_T (T={T}): "
        + ", ".join(f"n={n}: {v[-1]:.3g}" for n, v in g.growth.items())
        + f"; growth exponent of the t-averaged relative variance in n {fit_n.slope:.2f} "
        f"(95% CI [{fit_n.ci[0]:.2f}, {fit_n.ci[1]:.2f}]), in t (n={g.big}) {fit_t.slope:.2f} "
        f"(CI [{fit_t.ci[0]:.2f}, {fit_t.ci[1]:.2f}]); measurement vs "
        f"{'the Gaussian reference' if rows[0].get('law') == 'gaussian' else 'exact enumeration'} "
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
    alpha = alpha_of(config, "uoro.variance-growth")
    ns = (2, 4, 8, 16, 32) if config.full else (2, 4, 8, 16)
    T, draws = (20, 4000) if config.full else (8, 800)
    runs = [
        (n, problem_case("elman-tanh", n, T, config.seed, 460 + i), uoro_under_test(config, "uoro.variance-growth"))
        for i, n in enumerate(ns)
    ]
    g = variance_growth(runs, T, draws, config.generator(461))
    # exact variance by enumeration (n = 2, t <= 6), compared with an independent measurement
    small = problem_case("elman-tanh", 2, 6, config.seed, 469)
    est = uoro_under_test(config, "uoro.variance-growth")
    form, how = gtilde_form(est, small, config.generator(463))
    post = form == "post-update"
    law = noise_law(est)
    rows, by_law = _against_laws(est, small, config, post, law, alpha)
    verdict = Verdict.PASS if by_law else Verdict.FAIL
    controls = [_growth_control(small, config, alpha)] if controls_on(config) else []
    fit_n, fit_t = g.fit_n, g.fit_t
    data: dict[str, Any] = {"figures": [variance_growth_figure(g.growth, T)], "table": g.table}
    data["growth_in_n"] = {"slope": fit_n.slope, "ci": list(fit_n.ci)}
    data["growth_in_t"] = {"n": g.big, "slope": fit_t.slope, "ci": list(fit_t.ci)}
    data["exact_vs_measured"] = rows
    data["gtilde_form"] = {"form": form, "how": how}
    data["noise_law"] = {"law": law[0], "how": law[1], "agrees_with": by_law}
    return finish(
        "uoro.variance-growth",
        config,
        t0,
        verdict,
        _growth_summary(g, T, rows, verdict, (form, how), law, by_law),
        statistic=max(abs(r["z"]) for r in rows),
        threshold=float(dist.norm_isf(alpha / 10)),
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
    alpha = alpha_of(config, "uoro.reinforce-link")
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
