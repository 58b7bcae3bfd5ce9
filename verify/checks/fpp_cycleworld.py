"""The CycleWorld judge (FPP §5, Fig. 2) with the power of each comparison stated, and the check of the paper's measure.

Paper: "Training Recurrent Neural Networks Online by Learning Explicit State Variables" (Fixed Point
Propagation; anonymous authors, paper under double-blind review, year and arXiv id not printed -- the public code
is VincentLiu3/fpp; :data:`theory.papers.FPP`, ``fpp-explicit-state-variables.md``), §5 "Comparison to T-BPTT",
Fig. 2 and App. D.1. Two claims share :func:`judge_cycleworld`: ``fpp.cycleworld-reproduction`` (squared error
on the scalar next observation, a documented departure; its check is in :mod:`verify.checks.fpp`) and
``fpp.cycleworld-accuracy-reproduction`` (the paper's measure: softmax cross-entropy on the one-hot next
observation, the error rate over predict-zero's error rate 1/p, as the authors' code reports accuracy).

A comparison that is not significant is read with its power (:func:`verify.stats.power.paired_t_power`): at
the run's n and the scatter of its paired differences, how likely the test would have detected the minimal
effect :data:`MIN_EFFECT`. Only an adequately powered null (power >= :data:`ADEQUATE_POWER`) or a significant
effect the wrong way counts as "not reproduced"; an underpowered null is "not resolved at this power".
"""

from __future__ import annotations

import math
import time
from typing import Any

from verify.checks import register, result
from verify.checks.fpp_reproduction import REPRO_ALPHA, _ci_txt, _decide, _learned_ratio, _mark_reproduced
from verify.config import RunConfig
from verify.fpp.judging import Values, cycleworld_table, missing_blocks
from verify.fpp.reproduction import SETTINGS_NOTES, Reproduction, cycleworld_designs, run_blocks
from verify.report.plots.fpp import cycleworld_figures
from verify.stats.power import min_detectable_effect, paired_t_power
from verify.verdict import CheckResult, Control, Verdict

__all__ = [
    "ADEQUATE_POWER",
    "MIN_EFFECT",
    "STATUSES",
    "check_cycleworld_accuracy_reproduction",
    "comparison_status",
    "judge_cycleworld",
]

#: the minimal effect of interest, in the ratio's units (both measures are ratios to predict-zero): FPP's ratio
#: at T = p/2 below T-BPTT's by one tenth of the predict-zero baseline. The paper's words ("T-BPTT with T = p/2
#: performs poorly", FPP "more robust") describe gaps of that order or larger; Fig. 2's values are not in the text
#: we have, so this is our stated choice, fixed before the paper-scale run
MIN_EFFECT = 0.1
#: a non-significant comparison counts as "not reproduced" only when its test had at least this power at
#: :data:`MIN_EFFECT` (the conventional 0.8, Cohen 1988); below it the comparison is "not resolved at this power"
ADEQUATE_POWER = 0.8
#: a comparison's outcome: the paper's effect found; a significant effect the wrong way; an adequately powered
#: null; a null whose test could not have seen :data:`MIN_EFFECT` reliably
STATUSES = ("reproduced", "contradicted", "not reproduced", "not resolved at this power")
_CLAIM = {"squared": "fpp.cycleworld-reproduction", "accuracy": "fpp.cycleworld-accuracy-reproduction"}
_MEASURE_TXT = {
    "squared": "online squared-error ratio to predict-zero (scalar target)",
    "accuracy": "online error-rate ratio to predict-zero, p (1 - accuracy) (cross-entropy on one-hot targets)",
}


def comparison_status(reproduced: bool, p_reverse: float, power: float, alpha: float) -> str:
    """One comparison's outcome (:data:`STATUSES`): ``reproduced`` (Holm rejected), ``contradicted`` (the reverse
    one-sided p-value below ``alpha``), else by ``power`` at :data:`MIN_EFFECT`: ``not reproduced`` when at least
    :data:`ADEQUATE_POWER`, ``not resolved at this power`` below it."""
    if reproduced:
        return "reproduced"
    if math.isfinite(p_reverse) and p_reverse < alpha:
        return "contradicted"
    return "not reproduced" if power >= ADEQUATE_POWER else "not resolved at this power"


def _power_and_status(tests: list[dict[str, Any]]) -> None:
    """Holm over the tests, then each test's power at :data:`MIN_EFFECT`, its minimal detectable effect (power
    :data:`ADEQUATE_POWER`) and its status; power at the Bonferroni level alpha/m (a lower bound for Holm's)."""
    _mark_reproduced(tests, "p_value")
    level = REPRO_ALPHA / max(1, len(tests))
    for t in tests:
        sd, n = t["sd_diff"], t["n"]
        ok = n >= 2 and math.isfinite(sd)
        t["power"] = paired_t_power(sd, n, MIN_EFFECT, level) if ok else 0.0
        t["mde"] = min_detectable_effect(sd, n, level, ADEQUATE_POWER) if ok else math.inf
        t["min_effect"], t["power_alpha"] = MIN_EFFECT, level
        t["status"] = comparison_status(t["reproduced"], t["p_reverse"], t["power"], level)


def _test_txt(t: dict[str, Any]) -> str:
    lo, hi = t["effect_ci"]
    return (
        f"p={t['p']}, T={t['T']}: FPP {t['fpp']:.3f} vs T-BPTT {t['tbptt']:.3f}, effect {t['effect']:+.3f} "
        f"[{lo:+.3f}, {hi:+.3f}], p = {t['p_value']:.2g}, power {t['power']:.2f} at {MIN_EFFECT:g} "
        f"(detectable at power {ADEQUATE_POWER:g}: {t['mde']:.3f}) -> {t['status']}"
    )


def judge_cycleworld(
    reps: list[Reproduction], values: Values, *, seed: int, errors: dict[Any, str] | None = None,
    t0: float | None = None,
) -> CheckResult:  # fmt: skip
    """FPP §5 / Fig. 2 on CycleWorld(p) for each p of ``reps``, judged by the criteria stated in the claim.

    (C0) the environment's predict-zero ratio is exactly 1; (C1, premise) FPP and T-BPTT at T = p learned:
    online ratio's 95% CI upper end below 1 (better than predicting 0); (C2, the paper, ``full``/``paper`` only)
    FPP's online ratio at T = p/2 is below T-BPTT's at T = p/2: one-sided paired t-test per p, Holm at family
    alpha = 0.05 over the p's, each with its effect (FPP - T-BPTT, 95% CI), its power at :data:`MIN_EFFECT` and
    its status (:func:`comparison_status`); controls: each broken learner at T = p, judged by (C1), must FAIL.
    Verdict: FAIL when blocks are missing, (C0) or (C1) fails, a control passes, or a comparison is
    ``contradicted`` or ``not reproduced`` (adequately powered); else INCONCLUSIVE when a comparison is ``not
    resolved at this power``; else PASS.
    """
    t0 = time.perf_counter() if t0 is None else t0
    measure = str(reps[0].common.get("measure", "squared"))
    missing = missing_blocks([b for r in reps for b in r.all_blocks()], values, errors)
    tabs = [cycleworld_table(rep, values) for rep in reps]
    per_p = [t.row for t in tabs]
    tests = [t.test for t in tabs if t.test is not None]
    zero_ok = all(abs(t.row["predict_zero_ratio"] - 1.0) <= 1e-12 for t in tabs)
    prem_ok = all(_learned_ratio(t.learners.get(k)) for t in tabs for k in (f"fpp/T={t.p}", f"tbptt/T={t.p}"))
    ctrl_objs = [
        Control(f"p = {t.p}: harness rerun with {label}", "FAIL", "PASS" if _learned_ratio(s) else "FAIL",
                f"online ratio {_ci_txt(s, 'online')} (lr {s['lr']:g})" if s else "no result")
        for t in tabs for label, s in t.controls.items()
    ]  # fmt: skip
    _power_and_status(tests)
    size = f"{reps[0].runs} runs, {reps[0].steps} steps"
    bad = [t for t in tests if t["status"] in ("contradicted", "not reproduced")]
    # a finding says the paper's claim differs from what holds: only a contradicted or adequately powered null is one
    findings = [f"§5 / Fig. 2 {t['status']} ({size}): {_test_txt(t)}" for t in bad]
    open_ = [t for t in tests if t["status"] == "not resolved at this power"]
    cmp_ok: bool | None = None if not tests or (open_ and not bad) else not bad
    criteria: list[dict[str, Any]] = [
        {"name": "C0 predict-zero ratio of the environment is 1", "passed": zero_ok, "detail": ""},
        {"name": "C1 premise: FPP and T-BPTT at T = p beat predict-zero (online ratio 95% CI upper < 1)",
         "passed": prem_ok,
         "detail": "; ".join(f"p={d['p']} {k}: " + (_ci_txt(v, 'online') if v else "no result")
                             for d in per_p for k, v in d["learners"].items() if k.endswith(f"/T={d['p']}"))},
        {"name": f"C2 paper: FPP below T-BPTT at T = p/2 for p in {[t.p for t in tabs]} (one-sided paired t, Holm, "
                 f"alpha {REPRO_ALPHA}; power at effect {MIN_EFFECT:g}, adequate >= {ADEQUATE_POWER:g})"
                 if tests else "C2 paper's comparison",
         "passed": cmp_ok if tests else None,
         "detail": "; ".join(_test_txt(t) for t in tests) or "reported, not judged at the ci size"},
    ]  # fmt: skip
    ok = zero_ok and prem_ok and not bad and all(c.ok for c in ctrl_objs) and not missing
    verdict, reason = _decide(ok and not open_, missing, criteria, ctrl_objs)
    if ok and open_:
        verdict, reason = Verdict.INCONCLUSIVE, "not resolved at this power: " + "; ".join(map(_test_txt, open_))
    data = {"scale": reps[0].scale, "measure": measure, "criteria": criteria, "tests": tests, "per_p": per_p,
            "min_effect": MIN_EFFECT, "adequate_power": ADEQUATE_POWER, "settings_notes": list(SETTINGS_NOTES),
            "paper": {"claims": ["FPP is more robust to T: at T = p/2 FPP beats T-BPTT (Fig. 2)",
                                 "T-BPTT with T = p eventually learns"]}}  # fmt: skip
    data["figures"] = cycleworld_figures(data)
    return _cw_result(reps, data, (verdict, reason, prem_ok, tests), ctrl_objs, findings, seed, t0)


def _cw_result(
    reps: list[Reproduction], data: dict[str, Any], decided: tuple[Verdict, str | None, bool, list[dict[str, Any]]],
    ctrl_objs: list[Control], findings: list[str], seed: int, t0: float,
) -> CheckResult:  # fmt: skip
    """The CycleWorld result: summary and statistic (the largest p-value of the paper's comparisons)."""
    verdict, reason, prem_ok, tests = decided
    per_p = data["per_p"]
    res_txt = "; ".join(
        f"p={d['p']}: "
        + ", ".join(f"{k} {_ci_txt(v, 'online')} (lr {v['lr']:g})" for k, v in d["learners"].items() if v)
        for d in per_p
    )
    counts = {s: sum(t["status"] == s for t in tests) for s in STATUSES}
    cmp_txt = ("paper's comparison: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v) + "; ") if tests else ""
    return result(
        _CLAIM[data["measure"]],
        seed,
        t0,
        verdict,
        f"[{reps[0].scale}] CycleWorld p in {[d['p'] for d in per_p]}, {reps[0].runs} runs x "
        f"{reps[0].steps} steps (seed {seed}), {_MEASURE_TXT[data['measure']]}; premise "
        f"{'met' if prem_ok else 'NOT MET'}; {cmp_txt}{res_txt}",
        controls=ctrl_objs,
        reason=reason,
        statistic=max((t["p_value"] for t in tests), default=None),
        threshold=REPRO_ALPHA if tests else None,
        alpha=REPRO_ALPHA,
        samples_used=reps[0].runs,
        data=data,
        findings=tuple(findings),
    )


@register("fpp.cycleworld-accuracy-reproduction", uses=("fpp.learner",))
def check_cycleworld_accuracy_reproduction(config: RunConfig) -> CheckResult:
    """FPP §5, Fig. 2 with the paper's measure (cross-entropy on one-hot observations, error-rate ratio to
    predict-zero); criteria in :func:`judge_cycleworld`."""
    t0 = time.perf_counter()
    reps = cycleworld_designs("full" if config.full else "ci", config.seed, measure="accuracy")
    values = run_blocks([b for r in reps for b in r.all_blocks()], config.impls.fpp.learner)
    return judge_cycleworld(reps, values, seed=config.seed, t0=t0)
