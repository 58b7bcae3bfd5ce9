r"""The checks of OK's declared guarantee (Benzing et al. 2019, arXiv:1902.03993; reading in
:mod:`verify.estimators.ok`).

Claims in :mod:`theory.claims.uoro_ok`; they run the implementation under test ``config.impls.uoro.ok``
(``--impl uoro.ok=...``: a user's OK, built as ``ok(rank=r)``) and decide; the computing is
:mod:`verify.uoro.ok` and :mod:`verify.uoro.kfrtrl`.

* ``uoro.ok-unbiased`` -- OK's exact expectation (its ``exact_mean`` hook: one uniform per step, finitely many
  outcomes) equals exact float64 RTRL within :data:`EXACT` on small Elman tanh and relu problems at r = 1, 2.
  Without the hook the claim is SKIPPED with the reason: the sequential test cannot certify OK (no event floor:
  an outcome of the systematic sample can have any small probability), so no statistical fallback is claimed.
  Negative controls: the biased reductions ``ok.truncated-svd``, ``ok.unscaled`` must FAIL; positive control:
  the unbiased but noisier ``ok.uniform`` must PASS.
* ``uoro.ok-variance`` -- (a) exact, per reduction step along a trajectory: the implementation's step variance
  equals eq. (2)'s minimum (within :data:`EXACT` of ‖C‖²) and, at r = 1, is never above KF-RTRL's on the same two
  terms (needs the hooks :data:`verify.uoro.ok.HOOKS`; without them not run, said in the summary); (b) along
  trajectories, E‖g̃_T − g_T‖² of OK(1) over KF-RTRL's and of OK(2) over OK(1)'s at several n, per-n CIs
  (1 − α/(4·#n) each) and the inverse-variance pooled ratio over n (CI 1 − α/4). PASS: (a) holds and the pooled
  OK(2)/OK(1) CI lies below 1; FAIL: (a) is violated or that CI lies above 1; else INCONCLUSIVE. The pooled
  OK(1)/KF-RTRL ratio decides only where (a) could not run (no hooks); where (a) ran it is reported, and a FINDING
  when its CI is not below 1 (the theorem is per step; seeds 3, 12, 13, 15 of 0-20 gave 0.97-1.03). Every n at which a
  ratio's CI lies above 1, and OK(1)'s noise-to-signal E‖g̃_T − g_T‖²/‖g_T‖² ≥ 0.1 (the paper's "negligible
  noise"), are FINDINGs. Negative control: ``ok.uniform`` must FAIL (a).
"""

from __future__ import annotations

import time
from typing import Any

from verify.checks import judged_dtype, precision_name, register
from verify.checks.uoro_common import alpha_of, combine, controls_on, finish
from verify.config import RunConfig
from verify.errors import NotApplicable
from verify.impl import build
from verify.impl.capabilities import cover
from verify.impl.mutants import get as get_mutant
from verify.impl.precision import exact_target
from verify.oracles.bptt import per_step_gradients
from verify.report.plots.kfrtrl import ok_variance_figure
from verify.text import bound_words
from verify.uoro.cases import Case, problem_case
from verify.uoro.kfrtrl import variance_ratios
from verify.uoro.ok import HOOKS, exact_mean_rows, pooled_ratio, step_variance_rows
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["check_ok_unbiased", "check_ok_variance"]

UNBIASED = "uoro.ok-unbiased"
VARIANCE = "uoro.ok-variance"
EXACT = 1e-12  #: float64 round-off target (DESIGN.md "Numerical policy"; measured 5e-16 and 7e-16)
RANKS = (1, 2)
BIASED_CONTROLS = ("ok.truncated-svd", "ok.unscaled")  #: biased reductions: must FAIL the exact mean
UNBIASED_CONTROL = "ok.uniform"  #: unbiased, noisier: PASSes the exact mean, FAILs the per-step optimality
NOISE_FLOOR = 0.1  #: OK(1)'s E||g~_T - g_T||^2 / ||g_T||^2 at or above which "negligible noise" is a FINDING


def _oks(factory: Any, claim: str) -> list[tuple[int, Any]]:
    return [(r, build(factory, claim, rank=r)) for r in RANKS]


def _enum_cases(config: RunConfig) -> list[Case]:
    return [problem_case(kind, 3, 4, config.seed, 480 + i) for i, kind in enumerate(("elman-tanh", "elman-relu"))]


def _mean_rows(ests: list[tuple[int, Any]], cases: list[Case]) -> tuple[list[dict[str, Any]] | None, str]:
    missing = [est for _, est in ests if not callable(getattr(est, "exact_mean", None))]
    if missing:
        return None, f"{type(missing[0]).__name__} has no exact_mean(problem, theta) hook"
    return exact_mean_rows(ests, cases), ""


def _bad(rows: list[dict[str, Any]], exact: float = EXACT) -> list[dict[str, Any]]:
    """The rows above ``exact`` (:data:`EXACT`, or its float32 scaling for code declared float32)."""
    return [r for r in rows if not r["gradient_error"] <= exact]


def _row(r: dict[str, Any]) -> str:
    return f"{r['problem']} r={r['rank']}: {r['gradient_error']:.1e}"


def _mean_control(name: str, cases: list[Case], expect: str) -> Control:
    # the positive control at r = 1 on the first problem only (its plan has more outcomes: ~8 s on all four)
    ranks, on = (RANKS, cases) if expect == "FAIL" else ((1,), cases[:1])
    ests = [(r, build(get_mutant(name).part, UNBIASED, rank=r)) for r in ranks]
    rows = exact_mean_rows(ests, on)
    bad = _bad(rows)
    return Control(f"mutant {name}", expect, "FAIL" if bad else "PASS", "exact mean: " + "; ".join(map(_row, rows)))


@register(UNBIASED, uses=("uoro.ok",))
def check_ok_unbiased(config: RunConfig) -> CheckResult:
    """OK is unbiased (Benzing et al. 2019; eq. (2) of verify.estimators.ok): its exact expectation equals exact
    float64 RTRL (r = 1, 2)."""
    t0 = time.perf_counter()
    ests = _oks(config.impls.uoro.ok, UNBIASED)
    kept, coverage = cover(UNBIASED, _enum_cases(config), lambda c: (c.label, ests[0][1], c.problem, c.theta))
    rows, why = _mean_rows(ests, kept)
    if rows is None:
        raise NotApplicable(
            UNBIASED,
            f"{why}: OK's exact expectation cannot be enumerated, and the sequential test cannot certify OK (no event "
            "floor: an outcome of its systematic sample can have any small probability), so nothing is claimed",
        )
    dtype = judged_dtype(config, UNBIASED)
    exact = exact_target(dtype, EXACT)  # code that computes in float32: the target at float32's rounding unit
    bad = _bad(rows, exact)
    verdict = Verdict.FAIL if bad else Verdict.PASS
    controls: list[Control] = []
    if controls_on(config):
        controls += [_mean_control(name, kept, "FAIL") for name in BIASED_CONTROLS]
        controls.append(_mean_control(UNBIASED_CONTROL, kept, "PASS"))
    worst = max(r["gradient_error"] for r in rows)
    summary = (
        f"exact expectation of OK (r = 1, 2) over every outcome of its uniforms on {len(kept)} problem(s): largest "
        f"relative error to exact float64 RTRL {worst:.1e} ({bound_words(worst, exact)}"
        f"{'' if exact == EXACT else ': the float32 target'})"
    )
    if bad:
        summary += "; not exact: " + "; ".join(map(_row, bad[:3]))
    return finish(
        UNBIASED,
        config,
        t0,
        verdict,
        summary,
        statistic=worst,
        threshold=exact,
        comparison="<=",
        controls=controls,
        data={"exact_mean": rows, "exact": exact},
        coverage=coverage,
        dtype=precision_name(dtype),
    )


def _step_case(config: RunConfig) -> Case:
    return problem_case("elman-tanh", 4, 8, config.seed, 476)


def _step_rows(ests: list[tuple[int, Any]], config: RunConfig) -> tuple[list[dict[str, Any]] | None, str]:
    for _, est in ests:
        missing = [h for h in HOOKS if not hasattr(est, h)]
        if missing:
            return None, f"{type(est).__name__} lacks {', '.join(missing)}"
    return [step_variance_rows(est, _step_case(config), config.generator(salt=477 + r)) for r, est in ests], ""


def _step_bad(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        f"r={r['rank']}: step variance above the minimum by {r['excess']:.2g}*||C||^2"
        for r in rows
        if r["excess"] > EXACT
    ]
    out += [f"r={r['rank']}: a step mean off by {r['step_bias']:.2g}" for r in rows if r["step_bias"] > 1e-10]
    out += [
        f"r=1: a step {r['ok_over_kf']:.6g} x KF-RTRL's variance"
        for r in rows
        if r["ok_over_kf"] is not None and r["ok_over_kf"] > 1 + 1e-10
    ]
    return out


def _trajectory(ests: dict[int, Any], config: RunConfig, level: float) -> dict[str, list[dict[str, Any]]]:
    kf = build(config.impls.uoro.kfrtrl, VARIANCE)
    common = {"T": 16, "draws": 12000 if config.full else 3000, "seed": config.seed, "salt": 460, "level": level}
    ns = (4, 8, 16) if config.full else (4, 8)
    return {
        "ok1/kf": variance_ratios(ests[1], ns, gen=config.generator(salt=461), baseline=kf, **common),  # type: ignore[arg-type]
        "ok2/ok1": variance_ratios(ests[2], ns, gen=config.generator(salt=462), baseline=ests[1], **common),  # type: ignore[arg-type]
    }


def _ratios(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"n={r['n']}: {r['ratio']:.3g} [{r['ci'][0]:.3g}, {r['ci'][1]:.3g}]" for r in rows)


def _findings(traj: dict[str, list[dict[str, Any]]], level: float, seed: int) -> tuple[str, ...]:
    out = [
        f"{name}: at n = {r['n']} ({r['problem']}) the ratio of E||g~_T - g_T||^2 is {r['ratio']:.3g} ({level:.6g}-CI "
        f"[{r['ci'][0]:.3g}, {r['ci'][1]:.3g}]): along this trajectory the first is the noisier estimator"
        for name, rows in traj.items()
        for r in rows
        if r["ci"][0] > 1.0
    ]
    for r in traj["ok1/kf"]:
        case = problem_case("elman-tanh", r["n"], 16, seed, 460 + r["n"])
        g = per_step_gradients(case.problem, case.theta)[-1]
        nsr = r["variance"] / float((g**2).sum())
        if nsr >= NOISE_FLOOR:
            out.append(
                f"the paper's 'negligible noise' is not what is seen at n = {r['n']}: OK(r=1)'s E||g~_T - g_T||^2 is "
                f"{nsr:.3g} x ||g_T||^2 (OK(r=2)'s: {nsr * _row_at(traj['ok2/ok1'], r['n'])['ratio']:.3g} x)"
            )
    return tuple(out)


def _row_at(rows: list[dict[str, Any]], n: int) -> dict[str, Any]:
    return next(r for r in rows if r["n"] == n)


def _variance_summary(
    probe: Case,
    steps: list[dict[str, Any]] | None,
    why: str,
    step_bad: list[str],
    traj: dict[str, list[dict[str, Any]]],
    pooled: dict[str, tuple[float, tuple[float, float]]],
    level: float,
    decisive: list[str],
) -> str:
    step_s = f"per step (exact, {probe.label}, r = 1, 2): " + (
        "not run (" + why + ")"
        if steps is None
        else (
            "; ".join(step_bad)
            or "variance = eq. (2)'s minimum (largest excess "
            f"{max(r['excess'] for r in steps):.1e}*||C||^2), OK(1) <= KF-RTRL at every step (largest ratio "
            f"{steps[0]['ok_over_kf'] or 0:.3g}, mean {steps[0]['mean_ok_over_kf'] or 0:.3g})"
        )
    )
    traj_s = "; ".join(
        f"{name} E||g~_T - g_T||^2 (elman-tanh, T = 16) {_ratios(rows)} ({level:.6g}-CIs), pooled "
        f"{pooled[name][0]:.3g} [{pooled[name][1][0]:.3g}, {pooled[name][1][1]:.3g}] "
        f"({'must be < 1' if name in decisive else 'reported, not decided'})"
        for name, rows in traj.items()
    )
    return f"{step_s}; along trajectories: {traj_s}"


@register(VARIANCE, uses=("uoro.ok", "uoro.kfrtrl"))
def check_ok_variance(config: RunConfig) -> CheckResult:
    """Benzing et al. 2019 (abstract; eq. (2) of verify.estimators.ok): OK is optimal in a class that includes KF-RTRL
    -- per step exactly (eq. (2)'s minimum, never above KF-RTRL's), and along trajectories OK(2) below OK(1); OK(1)
    against KF-RTRL along trajectories is measured and reported."""
    t0 = time.perf_counter()
    alpha = alpha_of(config, VARIANCE)
    ests = _oks(config.impls.uoro.ok, VARIANCE)
    probe = _step_case(config)
    cover(VARIANCE, [probe], lambda c: (c.label, ests[0][1], c.problem, c.theta))  # SKIPPED if unsupported
    steps, why = _step_rows(ests, config)
    step_bad = _step_bad(steps) if steps is not None else []
    n_sizes = 3 if config.full else 2
    level, pooled_level = 1 - alpha / (4 * n_sizes), 1 - alpha / 4
    traj = _trajectory(dict(ests), config, level)
    pooled = {name: pooled_ratio(rows, pooled_level) for name, rows in traj.items()}
    verdicts = [Verdict.FAIL if step_bad else Verdict.PASS] if steps is not None else []
    # the optimality is per step: where (a) ran, OK(1) vs KF-RTRL along a trajectory is reported (a FINDING when
    # not below), not decided -- OK(1) was measurably noisier than KF-RTRL on some trajectories (seed 12, n = 4)
    decisive = [k for k in pooled if k != "ok1/kf" or steps is None]
    for name in decisive:
        ci = pooled[name][1]
        verdicts.append(Verdict.FAIL if ci[0] > 1.0 else Verdict.PASS if ci[1] < 1.0 else Verdict.INCONCLUSIVE)
    verdict = combine(verdicts)
    findings = _findings(traj, level, config.seed)
    if "ok1/kf" not in decisive and not pooled["ok1/kf"][1][1] < 1.0:
        v, (lo, hi) = pooled["ok1/kf"]
        findings += (
            f"OK(r=1) is not measurably less noisy than KF-RTRL along these trajectories (pooled ratio {v:.3g}, "
            f"{pooled_level:.6g}-CI [{lo:.3g}, {hi:.3g}]): its optimality holds per reduction step (part (a)), "
            "not for the accumulated error of a trajectory",
        )
    controls: list[Control] = []
    if controls_on(config):
        bad_rows, _ = _step_rows(_oks(get_mutant(UNBIASED_CONTROL).part, VARIANCE), config)
        got = _step_bad(bad_rows or [])
        controls.append(Control(f"mutant {UNBIASED_CONTROL}", "FAIL", "FAIL" if got else "PASS", "; ".join(got[:2])))
    summary = _variance_summary(probe, steps, why, step_bad, traj, pooled, level, decisive)
    return finish(
        VARIANCE,
        config,
        t0,
        verdict,
        summary,
        statistic=pooled["ok1/kf"][0],
        threshold=1.0,
        controls=controls,
        data={
            "steps": steps,
            "ratios": traj,
            "pooled": {k: [v[0], list(v[1])] for k, v in pooled.items()},
            "level": level,
            "pooled_level": pooled_level,
            "figures": [ok_variance_figure(traj, pooled, level)],
        },
        findings=findings,
        reason=None if verdict is not Verdict.INCONCLUSIVE else "a pooled CI contains 1: " + summary,
        alpha=alpha,
        samples_used=sum(r["draws"] * 2 for rows in traj.values() for r in rows),
    )
