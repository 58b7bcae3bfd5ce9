r"""The checks of KF-RTRL's declared guarantee (Mujika, Meier & Steger 2018, arXiv:1805.10842, §4).

Claims in :mod:`theory.claims.uoro_kfrtrl`; they run the implementation under test ``config.impls.uoro.kfrtrl``
(``--impl uoro.kfrtrl=...``: a user's KF-RTRL) and decide; the computing is :mod:`verify.uoro.kfrtrl` and
:mod:`verify.uoro.unbiased`.

* ``uoro.kfrtrl-unbiased`` -- (1) exact enumeration of every sign pattern (c1, c2 per step) on tiny Elman
  problems: E g̃_t and E[u_t ⊗ A_t] within :data:`EXACT` of exact float64 RTRL (needs the noise hook; without it
  this part is not run and says so); (2) the sequential test of :mod:`verify.stats.unbiased` at n·T ≥ 64
  (α planned by :mod:`theory.gate`, β = 1e-3, δ = 0.02). Fixture problems the implementation does not support
  (``supports`` or a NotApplicable probe: KF-RTRL factors only for one elementwise map of one affine map) are left
  out with the reason; none supported: SKIPPED. Negative controls: the wrong-Kronecker-factor mutants must FAIL the
  enumeration; positive control: the unbiased but noisier ``kfrtrl.rho1-scaled`` must PASS it.
* ``uoro.kfrtrl-variance`` -- the paper's variance statement (KF-RTRL's noise asymptotically much smaller than
  UORO's): the ratio E‖g̃_T − g_T‖²(KF) / E‖g̃_T − g_T‖²(UORO) on the same problems at several n, CIs at
  1 − α/(2·#n) each (Bonferroni), and the slope of log ratio on log n (CI 1 − α/2). PASS: the ratio's CI lies
  below 1 at the largest n and the slope's below 0; FAIL: the ratio's CI lies above 1 at the largest n or the
  slope's above 0; else INCONCLUSIVE. Every n at which KF-RTRL is significantly *noisier* than UORO is a FINDING
  (the advantage is asymptotic, not at every size). Negative control: ``kfrtrl.rho1-scaled`` must FAIL.
"""

from __future__ import annotations

import time
from typing import Any

from verify.checks import judged_dtype, precision_name, register
from verify.checks.uoro_common import alpha_of, combine, controls_on, finish, max_samples, options
from verify.config import RunConfig
from verify.errors import NotApplicable
from verify.estimators.noise import require_noise_hook
from verify.impl import build
from verify.impl.capabilities import cover
from verify.impl.mutants import get as get_mutant
from verify.impl.precision import exact_target
from verify.report.plots.kfrtrl import kfrtrl_variance_figure
from verify.report.plots.uoro import sequential_looks_figure
from verify.text import bound_words
from verify.uoro.cases import Case, problem_case
from verify.uoro.kfrtrl import enumeration_rows, ratio_slope, variance_ratios
from verify.uoro.unbiased import unbiased_runs
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["check_kfrtrl_unbiased", "check_kfrtrl_variance"]

UNBIASED = "uoro.kfrtrl-unbiased"
VARIANCE = "uoro.kfrtrl-variance"
EXACT = 1e-12  #: float64 round-off target of the enumeration (DESIGN.md "Numerical policy"; measured 3e-16)
BIASED_CONTROLS = ("kfrtrl.new-state-factor", "kfrtrl.no-derivative")  #: wrong Kronecker factors: must FAIL
UNBIASED_CONTROL = "kfrtrl.rho1-scaled"  #: unbiased, noisier: PASSes the enumeration, FAILs the variance claim
#: the enumeration's fixtures (kind, n); T = 4 steps: 2^8 sign patterns
ENUM_CELLS = (("elman-tanh", 3), ("elman-relu", 3), ("gru", 2), ("lstm", 2))


def _kf(factory: Any, claim: str) -> Any:
    return build(factory, claim)


def _enum_bad(rows: list[dict[str, Any]], exact: float = EXACT) -> list[dict[str, Any]]:
    """The enumeration rows above ``exact`` (:data:`EXACT`, or its float32 scaling for code declared float32)."""
    return [r for r in rows if r["gradient_error"] > exact or (r["influence_error"] or 0.0) > exact]


def _enum_cases(config: RunConfig) -> list[Case]:
    return [problem_case(kind, n, 4, config.seed, 490 + i) for i, (kind, n) in enumerate(ENUM_CELLS)]


def _stat_cases(config: RunConfig) -> list[Case]:
    T = 64 if config.full else 16  # n·T = 64 (ci), 256 (full)
    return [problem_case("elman-tanh", 4, T, config.seed, 495), problem_case("gru", 2, 2 * T, config.seed, 496)]


def _steps(T: int) -> tuple[int, ...]:
    return tuple(sorted({2, (T + 1) // 2 + 1, T}))


def _row(r: dict[str, Any]) -> str:
    infl = "" if r["influence_error"] is None else f", influence {r['influence_error']:.1e}"
    w = r.get("where") or {}
    at = f", E g~ first off at step t = {w['first_step']}, largest in the block {w['block']}" if w else ""
    if w.get("scale") is not None:  # at t = 1 only the immediate term a_1 (x) D_1 is there: its normalizer rho2
        which = (
            "the immediate term's normalizer rho2 does not cancel (rho2 on both factors where rho2 and 1/rho2 belong?)"
            if w["first_step"] == 1
            else "a normalizer that does not cancel (rho1 or rho2 on both factors where rho and 1/rho belong?)"
        )
        at += f" (there E g~ is {w['scale']:.4g} x RTRL's on the cell's parameters: a scale, not a direction -- "
        at += f"{which})"
    return f"{r['problem']}: gradient {r['gradient_error']:.1e}{infl}{at}"


def _enumerate(est: Any, cases: list[Case], exact: float = EXACT) -> tuple[list[dict[str, Any]] | None, str]:
    """The enumeration rows, located at ``exact``, or None and the reason when the estimator has no noise hook."""
    try:
        require_noise_hook(est, UNBIASED)
    except NotApplicable as exc:
        return None, exc.reason
    return enumeration_rows(est, cases, exact), ""


def _enum_control(name: str, cases: list[Case], expect: str) -> Control:
    rows = enumeration_rows(_kf(get_mutant(name).part, UNBIASED), cases, EXACT)
    bad = _enum_bad(rows)
    detail = "; ".join(_row(r) for r in (bad or rows)[:2])
    return Control(f"mutant {name}", expect, "FAIL" if bad else "PASS", f"enumeration: {detail}")


def _unbiased_summary(
    rows: list[dict[str, Any]] | None,
    why: str,
    bad: list[dict[str, Any]],
    results: list[Any],
    delta: float,
    exact: float = EXACT,
) -> str:
    if rows is None:
        enum_s = f"exact enumeration not run ({why})"
    else:
        worst = max(max(r["gradient_error"], r["influence_error"] or 0.0) for r in rows)
        enum_s = (
            f"exact enumeration on {len(rows)} problem(s): largest relative error {worst:.1e} "
            f"({bound_words(worst, exact)}{'' if exact == EXACT else ': the float32 target'})"
        )
        if bad:
            enum_s += "; not exact: " + "; ".join(_row(r) for r in bad[:3])
    stat_s = "; ".join(
        f"{lab}: {r.verdict.value}"
        + ("" if r.failed else f", bound {r.relative_bound:.3g}*||g||")
        + f", M={r.samples_used}"
        for lab, r in results
    )
    return f"{enum_s}; sequential test (delta = {delta:g}): {stat_s or 'not run'}"


@register(UNBIASED, uses=("uoro.kfrtrl",))
def check_kfrtrl_unbiased(config: RunConfig) -> CheckResult:
    """KF-RTRL is unbiased (Mujika et al. 2018 §4): exact enumeration (round-off) and the sequential test at
    n·T ≥ 64 with δ = 0.02 on the implementation under test."""
    t0 = time.perf_counter()
    est = _kf(config.impls.uoro.kfrtrl, UNBIASED)
    dtype = judged_dtype(config, UNBIASED)
    exact = exact_target(dtype, EXACT)  # code that computes in float32: the target at float32's rounding unit
    items = [("enum", c) for c in _enum_cases(config)] + [("stat", c) for c in _stat_cases(config)]
    kept, coverage = cover(UNBIASED, items, lambda it: (it[1].label, est, it[1].problem, it[1].theta))
    enum_cases = [c for part, c in kept if part == "enum"]
    stat_cases = [c for part, c in kept if part == "stat"]
    rows, why = _enumerate(est, enum_cases, exact) if enum_cases else (None, "no enumeration fixture supported")
    bad = _enum_bad(rows, exact) if rows else []
    verdicts = [Verdict.FAIL if bad else Verdict.PASS] if rows is not None else []
    results = []
    opts = options(config, UNBIASED, split=max(len(stat_cases), 1))
    if stat_cases and not bad:
        runs = [(c, est, _steps(c.problem.T), (c.problem.T,)) for c in stat_cases]
        results = unbiased_runs(runs, opts, config.generator(salt=497), max_samples(config), dtype=dtype)
        verdicts += [r.verdict for _, r in results]
    verdict = combine(verdicts) if verdicts else Verdict.INCONCLUSIVE
    controls: list[Control] = []
    if controls_on(config) and enum_cases:
        controls += [_enum_control(name, enum_cases, "FAIL") for name in BIASED_CONTROLS]
        controls.append(_enum_control(UNBIASED_CONTROL, enum_cases, "PASS"))
    summary = _unbiased_summary(rows, why, bad, results, opts.delta, exact)
    reason = None
    if verdict is Verdict.INCONCLUSIVE:
        reason = "; ".join(r.reason for _, r in results if r.reason) or summary
    tests = [dict(r.to_data(), problem=lab) for lab, r in results]
    data: dict[str, Any] = {"enumeration": rows, "exact": exact, "tests": tests}
    if results:
        data["figures"] = [sequential_looks_figure(results, opts.delta)]
    used = sum(r.samples_used for _, r in results)
    return finish(
        UNBIASED,
        config,
        t0,
        verdict,
        summary,
        statistic=max((r.relative_bound for _, r in results), default=None),
        threshold=opts.delta,
        controls=controls,
        data=data,
        coverage=coverage,
        reason=reason,
        alpha=opts.alpha * max(len(stat_cases), 1),
        beta=opts.beta * max(len(stat_cases), 1),
        delta=opts.delta,
        samples_used=used,
        dtype=precision_name(dtype),
    )


def _variance_rows(est: Any, config: RunConfig, level: float) -> list[dict[str, Any]]:
    ns = (4, 8, 16, 32) if config.full else (4, 8, 16)
    draws = 20_000 if config.full else 1000
    return variance_ratios(
        est, ns, T=16, draws=draws, seed=config.seed, salt=470, gen=config.generator(salt=471), level=level
    )


def _variance_verdict(rows: list[dict[str, Any]], slope_ci: tuple[float, float]) -> Verdict:
    lo, hi = rows[-1]["ci"]
    if lo > 1.0 or slope_ci[0] > 0.0:
        return Verdict.FAIL
    if hi < 1.0 and slope_ci[1] < 0.0:
        return Verdict.PASS
    return Verdict.INCONCLUSIVE


def _ratios(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"n={r['n']}: {r['ratio']:.3g} [{r['ci'][0]:.3g}, {r['ci'][1]:.3g}]" for r in rows)


@register(VARIANCE, uses=("uoro.kfrtrl",))
def check_kfrtrl_variance(config: RunConfig) -> CheckResult:
    """Mujika et al. 2018 (abstract, §4): KF-RTRL's noise is asymptotically much smaller than UORO's -- the ratio of
    their gradient variances on the same problems below 1 at the largest n and falling with n."""
    t0 = time.perf_counter()
    alpha = alpha_of(config, VARIANCE)
    est = _kf(config.impls.uoro.kfrtrl, VARIANCE)
    probe = problem_case("elman-tanh", 4, 16, config.seed, 474)
    cover(VARIANCE, [probe], lambda c: (c.label, est, c.problem, c.theta))  # SKIPPED if Elman-tanh is not supported
    n_sizes = 4 if config.full else 3
    level = 1 - alpha / (2 * n_sizes)
    rows = _variance_rows(est, config, level)
    slope, slope_ci = ratio_slope(rows, 1 - alpha / 2)
    verdict = _variance_verdict(rows, slope_ci)
    controls: list[Control] = []
    if controls_on(config):
        bad_rows = _variance_rows(_kf(get_mutant(UNBIASED_CONTROL).part, VARIANCE), config, level)
        b_slope, b_ci = ratio_slope(bad_rows, 1 - alpha / 2)
        got = _variance_verdict(bad_rows, b_ci)
        controls.append(
            Control(f"mutant {UNBIASED_CONTROL}", "FAIL", got.value, f"ratios {_ratios(bad_rows)}; slope {b_slope:.2f}")
        )
    findings = tuple(
        "the printed 'noise much smaller than UORO's' holds only asymptotically in n: "
        f"at n = {r['n']} ({r['problem']}) "
        f"KF-RTRL's E||g~_T - g_T||^2 is {r['ratio']:.3g} x UORO's ({level:.6g}-CI [{r['ci'][0]:.3g}, "
        f"{r['ci'][1]:.3g}], {r['draws']} draws each): KF-RTRL is the noisier estimator at this size"
        for r in rows
        if r["ci"][0] > 1.0
    )
    summary = (
        f"E||g~_T - g_T||^2 of KF-RTRL / UORO on elman-tanh (T = 16) at {_ratios(rows)} ({level:.6g}-CIs); slope of "
        f"log ratio on log n {slope:.2f} [{slope_ci[0]:.2f}, {slope_ci[1]:.2f}] (must be < 0; ratio at the largest n "
        "must be < 1)"
    )
    return finish(
        VARIANCE,
        config,
        t0,
        verdict,
        summary,
        statistic=rows[-1]["ratio"],
        threshold=1.0,
        controls=controls,
        data={
            "ratios": rows,
            "slope": slope,
            "slope_ci": list(slope_ci),
            "level": level,
            "figures": [kfrtrl_variance_figure(rows, level, slope)],
        },
        findings=findings,
        reason=None if verdict is not Verdict.INCONCLUSIVE else "a CI contains its threshold: " + summary,
        alpha=alpha,
        samples_used=2 * sum(r["draws"] for r in rows),
    )
