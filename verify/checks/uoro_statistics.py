r"""Statistical checks of UORO's unbiasedness (claims in :mod:`theory.claims.uoro_statistics`).

Every unbiasedness claim is a test of :mod:`verify.stats.unbiased` with stated
error rates (α = the claim's share of the ci gate's family-wise budget, :func:`theory.gate.planned_alpha`;
β = 1e-3, δ = 0.02 relative to ‖g‖), run on the
toolkit's estimators (:mod:`verify.estimators.uoro`) against the float64
references (the computations: :mod:`verify.uoro.unbiased`, :mod:`verify.uoro.variance`):

* ``uoro.unbiased-statistical`` -- Prop. 1 on Elman-tanh, LSTM, GRU (sequential test);
* ``uoro.truncated-unbiased`` / ``uoro.rank-unbiased`` -- UORO-T and rank-r UORO (§3);
* ``uoro.preactivation`` -- preactivation-space UORO unbiased, lower variance (ratio).

The variance claims are in :mod:`verify.checks.uoro_variance`, the conformance to Algorithm 1 and the kill
table in :mod:`verify.checks.uoro_mutants`; what they share in :mod:`verify.checks.uoro_common`.

Every check runs the implementation under test, ``config.impls.uoro``
(:class:`verify.impl.UOROImpl`: the UORO factory, preactivation UORO, REINFORCE); a
mutant of :mod:`verify.impl.mutants.uoro` is another value of that type. A claim that
needs what the implementation does not declare (``rank=``, ``block=``, the noise hook
of :mod:`verify.estimators.noise`) is SKIPPED with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from verify.checks import judged_dtype, precision_name, register
from verify.checks.uoro_common import (
    alpha_of,
    combine,
    controls_on,
    finish,
    max_samples,
    mutant,
    options,
    uoro_under_test,
)
from verify.checks.uoro_plans import (
    plan_preactivation,
    plan_rank_unbiased,
    plan_truncated_unbiased,
    plan_unbiased_statistical,
    prop1_runs,
)
from verify.config import RunConfig
from verify.estimators.base import OnlineEstimator
from verify.impl import build
from verify.impl.capabilities import Coverage
from verify.report.plots.uoro import planned_draws_table, preactivation_variance_figure, sequential_looks_figure
from verify.stats import TestOptions, UnbiasednessResult, compare_second_moments
from verify.uoro.cases import Case, problem_case
from verify.uoro.unbiased import unbiased_family, unbiased_runs
from verify.uoro.variance import preactivation_vs_uoro
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["check_preactivation", "check_rank_unbiased", "check_truncated_unbiased", "check_unbiased_statistical"]

_Run = tuple[Case, OnlineEstimator, Sequence[int], Sequence[int] | None]


def _unbiased_control(
    est: OnlineEstimator, case: Case, steps: Sequence[int], opts: TestOptions, config: RunConfig, salt: int, name: str
) -> Control:
    """Negative control: the mutant estimator ``est`` must FAIL the sequential test (20 000 draws at most), with the
    round-off allowance of the precision the claim judges at (:func:`verify.checks.judged_dtype`)."""
    dtype = judged_dtype(config, "uoro.unbiased-statistical")
    res = unbiased_family(est, case, steps, opts, config.generator(salt), 20_000, dtype=dtype)
    return Control(f"mutant {name}", "FAIL", res.verdict.value, res.summary())


def _result_data(results: Sequence[tuple[str, UnbiasednessResult]]) -> dict[str, Any]:
    rows = []
    for label, r in results:
        d = r.to_data()
        d["problem"] = label
        d["sequential_over_planned"] = (r.samples_used / r.samples_planned) if r.samples_planned else None
        rows.append(d)
    return {"tests": rows}


def _story(verdict: Verdict, results: Sequence[tuple[str, UnbiasednessResult]], opts: TestOptions, k: int) -> str:
    """One story per verdict: only a PASS certifies (``k`` tests share the claim's α, β)."""
    worst = max(r.relative_bound for _, r in results)
    if verdict is Verdict.PASS:
        level = 1 - opts.beta * k
        return f"certified ||E g^ - g|| <= {worst:.3g}*||g|| (delta={opts.delta:g}) at 1-beta = {level:g}"
    if verdict is Verdict.FAIL:
        return "bias detected: " + "; ".join(r.summary() for _, r in results if r.failed)
    return f"no bias detected, no certificate (bound reached {worst:.3g}*||g|| vs delta={opts.delta:g})"


def _unbiased_summary(
    what: str, verdict: Verdict, results: Sequence[tuple[str, UnbiasednessResult]], opts: TestOptions, k: int
) -> str:
    used = sum(r.samples_used for _, r in results)
    planned = sum(r.samples_planned or 0 for _, r in results)
    parts = "; ".join(
        f"{lab}: {r.verdict.value}" + ("" if r.failed else f", bound {r.relative_bound:.3g}") + f", M={r.samples_used}"
        for lab, r in results
    )
    plan_s = str(planned) if planned < 10**9 else f"{planned:.3g}"
    plan_s = f"{plan_s} (ratio {used / planned:.2f})" if planned else "none (second moments overflow float64)"
    return (
        f"{what}: {verdict.value}; {_story(verdict, results, opts, k)}, alpha = {opts.alpha * k:g}; sequential used "
        f"{used} draws vs fixed-sample plan {plan_s}; {parts}"
    )


def _unbiased_claim(
    claim_id: str,
    config: RunConfig,
    t0: float,
    runs: Sequence[_Run],
    control: Callable[[], Control],
    what: str,
    coverage: Coverage | None = None,
) -> CheckResult:
    """Shared driver: one sequential family test per (problem, estimator) with α, β split over the runs."""
    opts = options(config, claim_id, split=len(runs))
    first = int(config.option("first", 1000))
    dtype = judged_dtype(config, claim_id)
    results = unbiased_runs(runs, opts, config.generator(salt=401), max_samples(config), first, dtype)
    verdict = combine([r.verdict for _, r in results])
    controls = [control()] if controls_on(config) else []
    used = sum(r.samples_used for _, r in results)
    planned = sum(r.samples_planned or 0 for _, r in results)
    reason = None
    if verdict is Verdict.INCONCLUSIVE:
        reason = "; ".join(r.reason for _, r in results if r.verdict is not Verdict.PASS) or "budget exhausted"
    data = _result_data(results)
    data["sequential_over_planned"] = used / max(planned, 1)
    data["figures"] = [sequential_looks_figure(results, opts.delta), planned_draws_table(results)]
    return finish(
        claim_id,
        config,
        t0,
        verdict,
        _unbiased_summary(what, verdict, results, opts, len(runs)),
        statistic=max(r.relative_bound for _, r in results),
        threshold=opts.delta,
        controls=controls,
        data=data,
        coverage=coverage,
        reason=reason,
        alpha=opts.alpha * len(runs),
        beta=opts.beta * len(runs),
        delta=opts.delta,
        samples_planned=planned,
        samples_used=used,
        dtype=precision_name(dtype),
    )


# ================================================================ claim sizes
# Issue 15: the certified claims run where exact enumeration cannot decide: n·T ≥ 64 noise signs
# per run in the ci profile (2^64 sign patterns), n·T ≥ 256 in full (n the state size: 2H for the
# LSTM). Feasibility: the draws a δ = 0.02 certificate needs grow with trΣ/‖g‖² of the worst
# quantity -- always the influence matrix s̃⊗θ̃ -- and the engine's cost per draw with the square of
# its n·p entries (a p×p scatter). Measured (2·10⁴ draws, default scales: recurrent spectral norm
# ≈ 0.45, contractive, so the variance grows slowly in T): trΣ/‖g‖² ≈ 6-9 at n = 4, T = 16
# (elman-tanh, lstm H = 2), 3-4 for the GRU at n = 2, T = 32, but 15-19 at n = 8, T = 8 with 8·p ≥ 850
# influence entries. So the problems are long and narrow: ~2·10⁵ draws per problem, seconds with the
# fused sampler (:mod:`verify.estimators.fused`). The influence is tested at t = T (the longest
# chain), the gradients at t ∈ {2, ⌊(T+1)/2⌋+1, T} and the total.


# ============================================================== the checks
@register("uoro.unbiased-statistical", uses=("uoro.uoro",), plan=plan_unbiased_statistical)
def check_unbiased_statistical(config: RunConfig) -> CheckResult:
    """UORO is unbiased (Tallec & Ollivier, Prop. 1, App. A; Algorithm 1): a statistical test per cell.

    E g̃_t = ∂ℓ_t/∂θ at t ∈ {2, ⌊(T+1)/2⌋+1, T}, E[s̃_T ⊗ θ̃_T] = ∂s_T/∂θ and E Σ_t g̃_t = ∇L on
    Elman-tanh, LSTM and GRU problems with n·T ≥ 64 noise signs (ci; ≥ 256 full; see "claim sizes"), by the
    sequential anytime-valid test of :mod:`verify.stats.unbiased` (α planned, β = 1e-3 for the claim,
    split over the three problems and their quantities; δ = 0.02·‖g‖). Negative control: the mutant
    ``uoro.theta-tilde-scaled`` must FAIL.
    """
    t0 = time.perf_counter()
    runs, coverage = prop1_runs(config)  # the problems the implementation supports (NotApplicable: none)

    def control() -> Control:
        case, _, steps, _ = runs[0]
        bad = mutant("uoro.theta-tilde-scaled", "control")
        return _unbiased_control(
            bad, case, steps, options(config, "uoro.unbiased-statistical"), config, 402, "uoro.theta-tilde-scaled"
        )

    kinds = ", ".join(r[0].label.split("(")[0] for r in runs)
    what = f"UORO Prop. 1 (influence, per-step and total gradient) on {kinds}"
    return _unbiased_claim("uoro.unbiased-statistical", config, t0, runs, control, what, coverage)


@register("uoro.truncated-unbiased", uses=("uoro.uoro",), plan=plan_truncated_unbiased)
def check_truncated_unbiased(config: RunConfig) -> CheckResult:
    """UORO-T is unbiased (Tallec & Ollivier §3: Algorithm 1 applied to F^T, the last T steps exact).

    Blocks of 4 steps on an Elman-tanh problem (n = 4, T = 16; full: T = 64): E g̃_t = ∂ℓ_t/∂θ at
    t ∈ {2, 3, T}, the total gradient, and E[s̃⊗θ̃] = ∂s_t/∂θ at the block boundaries T/2 and T;
    sequential test, α planned, β = 1e-3,
    δ = 0.02. Negative control: UORO-T with θ̃ scaled by 2 must FAIL.
    """
    t0 = time.perf_counter()
    n, T, block = (4, 64, 4) if config.full else (4, 16, 4)
    est = uoro_under_test(config, "uoro.truncated-unbiased (UORO-T)", block=block)
    case = problem_case("elman-tanh", n, T, config.seed, 420)
    bounds = (block * (T // 2 // block), T)  # the influence at two block boundaries: mid-run and the end
    runs: list[_Run] = [(case, est, (2, 3, T), bounds)]

    def control() -> Control:
        bad = mutant("uoro.theta-tilde-scaled", "control", block=block)
        return _unbiased_control(
            bad, case, (2, 3, T), options(config, "uoro.truncated-unbiased"), config, 403, bad.name
        )

    return _unbiased_claim("uoro.truncated-unbiased", config, t0, runs, control, f"UORO-T (T={block})")


@register("uoro.rank-unbiased", uses=("uoro.uoro",), plan=plan_rank_unbiased)
def check_rank_unbiased(config: RunConfig) -> CheckResult:
    """Rank-r UORO is unbiased (Tallec & Ollivier §3: r independent pairs of Algorithm 1, averaged).

    r = 4 on an Elman-tanh problem (n = 4, T = 16; full: r = 8, T = 64): gradients at t ∈ {2, ⌊(T+1)/2⌋+1, T},
    influence (1/r Σ s̃⊗θ̃) at T, total
    gradient; sequential test, α planned, β = 1e-3, δ = 0.02. Negative control: rank-r UORO with ν ∈ {0, 1}
    must FAIL.
    """
    t0 = time.perf_counter()
    n, T, r = (4, 64, 8) if config.full else (4, 16, 4)
    est = uoro_under_test(config, "uoro.rank-unbiased (rank-r UORO)", rank=r)
    case = problem_case("elman-tanh", n, T, config.seed, 430)
    steps = tuple(sorted({2, (T + 1) // 2 + 1, T}))
    runs: list[_Run] = [(case, est, steps, (T,))]

    def control() -> Control:
        bad = mutant("uoro.noise-zero-one", "control", rank=r)
        return _unbiased_control(bad, case, steps, options(config, "uoro.rank-unbiased"), config, 404, bad.name)

    return _unbiased_claim("uoro.rank-unbiased", config, t0, runs, control, f"rank-{r} UORO")


def _preactivation_verdict(res: UnbiasednessResult, ratio_ci: tuple[float, float]) -> Verdict:
    """FAIL on a bias or a variance ratio surely above 1; PASS when unbiased and the ratio surely below 1."""
    if res.verdict is Verdict.FAIL:
        return Verdict.FAIL
    if res.verdict is Verdict.PASS and ratio_ci[1] < 1.0:
        return Verdict.PASS
    if ratio_ci[0] > 1.0:
        return Verdict.FAIL
    return Verdict.INCONCLUSIVE


@register("uoro.preactivation", uses=("uoro.preactivation",), plan=plan_preactivation)
def check_preactivation(config: RunConfig) -> CheckResult:
    """Preactivation-space UORO is unbiased and has lower variance than UORO (Cooijmans & Martens,
    uoro-variance-cooijmans-martens.md § "Projecting in preactivation space": the H̃_t / ã_t recursion).

    Unbiasedness: sequential test of the influence and gradients at t ∈ {2, 3, T} and the total
    gradient (α/2, β; δ = 0.02). Variance: ratio E‖ĝ_pre − g‖² / E‖ĝ_uoro − g‖² of the total
    gradient with a (1 − α/2) CI, which must lie below 1. Negative control: τ ∈ {0, 1} must FAIL.
    """
    t0 = time.perf_counter()
    alpha = alpha_of(config, "uoro.preactivation")
    n, T, draws = (4, 64, 20_000) if config.full else (4, 16, 4000)
    case = problem_case("elman-tanh", n, T, config.seed, 450)
    opts = TestOptions(
        alpha=alpha / 2, beta=float(config.option("beta", 1e-3)), delta=options(config, "uoro.preactivation").delta
    )
    est = build(config.impls.uoro.preactivation, "uoro.preactivation")
    res = unbiased_family(est, case, (2, 3, T), opts, config.generator(451), max_samples(config), influence_steps=(T,))
    q_pre, q_uoro = preactivation_vs_uoro(est, case, draws, config.generator(452))
    cmp = compare_second_moments(q_pre, q_uoro, alpha=alpha / 2, level=1 - alpha / 2)
    verdict = _preactivation_verdict(res, cmp.ratio_ci)
    controls = []
    if controls_on(config):
        bad = mutant("uoro-preact.noise-zero-one", "control")
        controls.append(_unbiased_control(bad, case, (2, 3, T), opts, config, 453, bad.name))
    summary = (
        f"unbiased: {res.summary()}; variance ratio preact/UORO (total gradient) = {cmp.ratio:.3g}, "
        f"{1 - alpha / 2:g}-CI [{cmp.ratio_ci[0]:.3g}, {cmp.ratio_ci[1]:.3g}] on {case.label}"
    )
    data = _result_data([(case.label, res)])
    data["variance_ratio"] = cmp.to_data()
    data["figures"] = [
        sequential_looks_figure([(case.label, res)], opts.delta),
        preactivation_variance_figure(q_pre, q_uoro, cmp.ratio, cmp.ratio_ci, case.label),
    ]
    return finish(
        "uoro.preactivation",
        config,
        t0,
        verdict,
        summary,
        statistic=cmp.ratio,
        threshold=1.0,
        controls=controls,
        data=data,
        reason=None if verdict is not Verdict.INCONCLUSIVE else (res.reason or "variance ratio CI contains 1"),
        alpha=alpha,
        beta=opts.beta,
        delta=opts.delta,
        samples_planned=res.samples_planned,
        samples_used=res.samples_used + 2 * draws,
    )
