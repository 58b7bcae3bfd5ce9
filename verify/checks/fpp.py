"""Checks of the ``fpp`` family (claims in theory/claims/fpp.py; paper fpp-explicit-state-variables.md).

Every check has a ``*_core`` function that takes the implementation under test
(:class:`verify.impl.FPPImpl`: eq. (7), the sampler, the multiplier target) so that
the mutants of :mod:`verify.impl.mutants.fpp` -- other ``FPPImpl`` values -- run through
the very same comparison; the registered check runs ``config.impls.fpp`` and, as
its negative control, a mutant that must come out FAIL. The experiments are computed in
:mod:`verify.fpp`; the §5 reproductions run the FPP learner under test, ``config.impls.fpp.learner``
(against the toolkit's rivals; controls: broken learners rerun through the same harness), and are
judged in :mod:`verify.checks.fpp_reproduction`.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

import torch

from theory.catalog import declared_rate
from theory.fpp_kkt import verify_prop2
from verify.checks import judged_dtype, precision_name, register, result
from verify.checks.fpp_cycleworld import judge_cycleworld
from verify.checks.fpp_reproduction import judge_stochasticworld, judge_updates
from verify.config import RunConfig
from verify.errors import AssumptionViolated
from verify.fpp.exactness import SuiteSetup, eq7_comparisons, lemma3_comparisons
from verify.fpp.experiments import (
    KKTSetup,
    Prop2Setup,
    StationaritySetup,
    batch_floor_fit,
    first_violation,
    floor_text,
    kkt_experiment,
    kkt_measurements,
    prop2_rows,
    stationarity_experiment,
    stationarity_findings,
    unconverged_solves,
)
from verify.fpp.kkt import PathPoint
from verify.fpp.reproduction import cycleworld_designs, run_blocks, stochasticworld_design, updates_designs
from verify.impl import FPPImpl
from verify.impl.capabilities import row_coverage
from verify.impl.mutants import get as get_mutant
from verify.impl.precision import exact_target
from verify.impl.precision import target_words as _tol_words
from verify.model.problem import Problem
from verify.report.plots.fpp import kkt_figures, stationarity_figures
from verify.stats.rates import decide_rate
from verify.verdict import CheckResult, Control

#: the declared rates (theory.claims.fpp): decided on the fitted interval (verify.stats.rates.decide_rate)
STATIONARITY_RATE = declared_rate("fpp.stationarity")
KKT_RATE = declared_rate("fpp.kkt-recovery")

#: float64 exactness target for eq. (7) and Lemma 3 (relative, DESIGN "Numerical policy")
EXACT_TOL = 1e-12


def _mutant_control(name: str, res: dict[str, Any], detail: str) -> Control:  # must come out FAIL
    return Control(f"mutant {name}", "FAIL", "PASS" if res["passed"] else "FAIL", detail)


def _suite_setup(config: RunConfig) -> SuiteSetup:
    return SuiteSetup(n=4, buffer=16) if config.full else SuiteSetup(n=3, buffer=8)


# ================================================================ eq. (7)
def _exact_tol(config: RunConfig, claim_id: str) -> tuple[float, torch.dtype]:
    """:data:`EXACT_TOL` at the precision the claim judges by (float32 code: the same target at float32's rounding
    unit, :func:`verify.impl.precision.exact_target`), and that precision (:func:`verify.checks.judged_dtype`)."""
    return exact_target(dtype := judged_dtype(config, claim_id), EXACT_TOL), dtype


def eq7_core(config: RunConfig, impl: FPPImpl | None = None) -> dict[str, Any]:
    """Worst relative error of eq. (7) (``impl.eq7_gradients``) against autograd of L_i over the suite (every i),
    within :func:`_exact_tol` of the precision the claim judges at."""
    impl = impl or config.impls.fpp
    tol, dtype = _exact_tol(config, "fpp.gradient-eq7")
    rows, coverage = row_coverage(
        "fpp.gradient-eq7", eq7_comparisons(_suite_setup(config), config.generator(salt=51), impl.eq7_gradients)
    )
    worst = max(r["max_rel_error"] for r in rows)
    return {"rows": rows, "worst": worst, "passed": worst <= tol, "coverage": coverage, "tol": tol, "dtype": dtype}


@register("fpp.gradient-eq7", uses=("fpp.eq7_gradients",))
def check_gradient_eq7(config: RunConfig) -> CheckResult:
    """Eq. (7) (FPP §3) = autograd of L_i (eq. (6)) for every cell, loss, T ∈ {1, 2, 5} and sample i."""
    t0 = time.perf_counter()
    res = eq7_core(config)
    mut = eq7_core(RunConfig(seed=config.seed), get_mutant("fpp.eq7-penalty-sign").impl)
    controls = (_mutant_control("fpp.eq7-penalty-sign", mut, f"worst {mut['worst']:.2e}"),)
    n = sum(r["samples"] for r in res["rows"])
    return result(
        "fpp.gradient-eq7",
        config,
        t0,
        res["passed"],
        f"{n} per-sample gradients on {len(res['rows'])} problems (5 cells x 2 losses x T in {{1,2,5}}); "
        f"worst relative error {res['worst']:.2e} vs {_tol_words(res['tol'], res['dtype'])}; sign mutant worst "
        f"{mut['worst']:.2e}",
        controls=controls,
        coverage=res["coverage"],
        statistic=res["worst"],
        threshold=res["tol"],
        dtype=precision_name(res["dtype"]),
        data={"comparisons": res["rows"], "mutant_worst": mut["worst"]},
    )


# ================================================================ Lemma 3
def lemma3_core(config: RunConfig, impl: FPPImpl | None = None) -> dict[str, Any]:
    """E_k[∇L_k] (exact, over k ~ uniform{T..n}) of ``impl.eq7_gradients`` vs autograd ∇L; ``impl.sampler``'s
    draws vs that law (support exactly {T..n}, chi-square for uniformity)."""
    impl = impl or config.impls.fpp
    tol, dtype = _exact_tol(config, "fpp.lemma3-unbiased")
    gen = config.generator(salt=53)
    rows, coverage = row_coverage(
        "fpp.lemma3-unbiased",
        lemma3_comparisons(_suite_setup(config), config.generator(salt=51), gen, impl.eq7_gradients, impl.sampler),
    )
    worst = max(r["rel_error"] for r in rows)
    support_ok = all(r["support_ok"] for r in rows)
    passed = worst <= tol and support_ok
    out = {"rows": rows, "worst": worst, "support_ok": support_ok, "passed": passed, "coverage": coverage}
    return out | {"tol": tol, "dtype": dtype}


@register("fpp.lemma3-unbiased", uses=("fpp.eq7_gradients", "fpp.sampler"))
def check_lemma3_unbiased(config: RunConfig) -> CheckResult:
    """Lemma 3 (FPP App. B.1): the exact average of eq. (7) over k ~ uniform{T..n} equals ∇L of eq. (6), and the
    sampler draws k from that law."""
    t0 = time.perf_counter()
    res = lemma3_core(config)
    small = RunConfig(seed=config.seed)
    m1 = lemma3_core(small, get_mutant("fpp.sampler-exclusive-endpoint").impl)
    m2 = lemma3_core(small, get_mutant("fpp.eq7-penalty-sign").impl)
    controls = (
        _mutant_control(
            "fpp.sampler-exclusive-endpoint", m1, f"worst {m1['worst']:.2e}, support ok {m1['support_ok']}"
        ),
        _mutant_control("fpp.eq7-penalty-sign", m2, f"worst {m2['worst']:.2e}"),
    )
    min_p = min(r["chi2_p"] for r in res["rows"])
    return result(
        "fpp.lemma3-unbiased",
        config,
        t0,
        res["passed"],
        f"exact E_k[grad L_k] vs autograd grad L on {len(res['rows'])} problems: worst relative error "
        f"{res['worst']:.2e} vs {_tol_words(res['tol'], res['dtype'])}; sampler draws cover exactly {{T..n}}: "
        f"{res['support_ok']} "
        f"(smallest chi-square p {min_p:.2g}); exclusive-endpoint sampler caught: {not m1['support_ok']}",
        controls=controls,
        coverage=res["coverage"],
        statistic=res["worst"],
        threshold=res["tol"],
        dtype=precision_name(res["dtype"]),
        data={"comparisons": res["rows"]},
    )


# ================================================================ Thm 1
def _stationarity_setup(config: RunConfig) -> StationaritySetup:
    if config.full:
        return StationaritySetup(steps=3000, replicates=48, batches=(1, 2, 4, 8, 16), stride=8, pilot_steps=400)
    return StationaritySetup(steps=300, replicates=12, batches=(1, 4, 16), stride=8, pilot_steps=100)


def stationarity_core(config: RunConfig, impl: FPPImpl | None = None) -> dict[str, Any]:
    """The Thm 1 experiment and the verdict inputs (see the claim): bound, full-batch slope, floor vs m."""
    impl = impl or config.impls.fpp
    data = stationarity_experiment(_stationarity_setup(config), config.generator(salt=57), impl.eq7_gradients)
    cfgs, sgd = data["configs"], data["configs"][1:]
    violations = {str(c["batch"]): [c["N"][j] for j in c["violations"]] for c in cfgs if c["violations"]}  # N values
    out: dict[str, Any] = {"data": data, "violations": violations, "gd_slope": cfgs[0]["last_decade_slope"]["slope"]}
    if sgd:
        out["floor_fit"] = batch_floor_fit(cfgs)
        out["floor_falls"] = sgd[-1]["floor"]["ci_hi"] < sgd[0]["floor"]["ci_lo"]
        # the printed O(1/N) at batch 1: the interval lies above the declared rate (a variance floor)
        out["floor_at_batch1"] = decide_rate(sgd[0]["last_decade_slope"], STATIONARITY_RATE).outcome == "slower"
    out["passed"] = not violations and out.get("floor_falls", True)
    return out


#: steps of the stationarity check's negative control, tried in turn until the mutant breaks the bound
CONTROL_STEPS = (400, 1600, 6400)


def _stationarity_control(config: RunConfig) -> Control:
    """Gradient descent along eq. (7)'s sign mutant on the same instance converges where the true gradient mapping
    does not vanish: the 1/N bound must break (judged by the bound alone; the premise on D is reported). Its
    E||G||^2 falls like ~N^-0.5 before its plateau: where 400 steps are too few to see the break (2 seeds of 200 in
    the gate sweep) it reruns with 4x the steps until the bound breaks or CONTROL_STEPS is spent."""
    setups = [StationaritySetup(steps=s, replicates=1, batches=(), stride=8, pilot_steps=60) for s in CONTROL_STEPS]
    mutant = get_mutant("fpp.eq7-penalty-sign").impl.eq7_gradients
    steps, ctrl = first_violation(setups, config.generator(salt=57), mutant)
    cgd = ctrl["configs"][0]
    c_detail = (
        f"full-batch bound violated at {len(cgd['violations'])} of {len(cgd['N'])} N up to N = {steps} (slope "
        f"{cgd['last_decade_slope']['slope']:.2f}; D premise {'held' if ctrl['premise_ok'] else 'broken'})"
    )
    observed = "FAIL" if cgd["violations"] else "PASS"
    return Control("mutant fpp.eq7-penalty-sign (gradient descent)", "FAIL", observed, c_detail)


@register("fpp.stationarity", uses=("fpp.eq7_gradients",))
def check_stationarity(config: RunConfig) -> CheckResult:
    """Thm 1 (FPP §4.1, eq. (9); App. B.1) in its corrected form: E‖G(x_R)‖² ≤ 16DΔ/(3N) + 14σ²/(3m).

    The printed O(1/N) holds for σ = 0 only; at constant step and batch 1 the
    data show a variance floor, and that it falls with the batch size.
    """
    t0 = time.perf_counter()
    res = stationarity_core(config)
    controls = (_stationarity_control(config),)
    data = res["data"]
    gd = data["configs"][0]
    tight = max(m / b for m, b in zip(gd["mean"], gd["bound"], strict=True))
    viol = "; ".join(f"VIOLATED at batch {b}: N = {str(ns)[1:-1]}" for b, ns in res["violations"].items())
    summary = (
        f"corrected Thm 1 bound 16 D Delta/(3N) + 14 sigma^2/(3m) {viol or 'holds at every N and m'}"
        + f" (D={data['D']:.3g}, sigma^2={data['sigma2']:.3g}, Delta={data['gap']:.3g}); full batch (sigma=0): "
        f"E||G(x_R)||^2 / its 1/N bound at most {tight:.2f}, last-decade slope {res['gd_slope']:.3f}" + floor_text(res)
    )
    return result(
        "fpp.stationarity",
        config,
        t0,
        res["passed"],
        summary,
        controls=controls,
        statistic=tight,
        threshold=1.0,
        alpha=0.05,
        samples_planned=data["replicates"],
        samples_used=data["replicates"],
        data={
            **data,
            "floor_fit": res.get("floor_fit"),
            "floor_at_batch1": res.get("floor_at_batch1"),
            "floor_falls_with_batch": res.get("floor_falls"),
            "finding": "E||G(x_R)||^2 = O(1/N) only with sigma = 0; at constant step a floor ~ sigma^2/m remains",
            "figures": stationarity_figures(data),
        },
        findings=stationarity_findings(res),
    )


# ================================================================ Thm 2
@lru_cache(maxsize=4)
def _kkt_cached(seed: int, profile: str) -> tuple[Problem, torch.Tensor, torch.Tensor, dict[str, Any], list[PathPoint]]:
    return kkt_experiment(KKTSetup(n=80 if profile == "full" else 40), RunConfig(seed=seed).generator(salt=59))


def kkt_core(config: RunConfig, impl: FPPImpl | None = None) -> dict[str, Any]:
    """Thm 2 measurements along the path (multiplier target ``impl.multipliers``) and the verdict inputs;
    raises AssumptionViolated on a failed premise."""
    impl = impl or config.impls.fpp
    problem, theta, s0, info, path = _kkt_cached(config.seed, config.profile)
    meas = kkt_measurements(problem, theta, s0, path, impl.multipliers)
    rows = meas["rows"]
    unconverged = unconverged_solves(rows, path)
    rate = {k: decide_rate(meas[f"{k}_fit"], KKT_RATE) for k in ("distance", "residual", "multiplier")}
    if unconverged:
        raise AssumptionViolated(
            "Thm 2: eps_k -> 0 (each penalty problem solved)", unconverged, "Newton did not reach the tolerance"
        )
    if not rate["distance"].consistent:
        raise AssumptionViolated(
            "Thm 2: the iterates converge along lambda_k",
            meas["distance_fit"],
            "distance to the limit does not fall like 1/lambda",
        )
    checks = {
        "residual_slope": rate["residual"].consistent,
        "multiplier_slope": rate["multiplier"].consistent,
        "rnn_grad_drop": meas["rnn_grad_drop"] >= 1e4,
        "full_row_rank": meas["sigma_min"] > 1e-8 * max(r["sigma_max"] for r in rows),
    }
    return {"meas": meas, "info": info, "checks": checks, "passed": all(checks.values())}


@register("fpp.kkt-recovery", uses=("fpp.multipliers",))
def check_kkt_recovery(config: RunConfig) -> CheckResult:
    """Thm 2 (FPP §4.2, eq. (11)) with App. B.2 Lemma 1 and Prop. 3: KKT recovery along λ_k = 10^1..10^6."""
    t0 = time.perf_counter()
    res = kkt_core(config)
    mut = kkt_core(config, get_mutant("fpp.multiplier-full-loss-adjoint").impl)
    detail = f"multiplier slope {mut['meas']['multiplier_fit']['slope']:.2f}"
    controls = (_mutant_control("fpp.multiplier-full-loss-adjoint", mut, detail),)
    m = res["meas"]
    reach = KKT_RATE.expected() + KKT_RATE.tolerance
    iv = {k: f"[{m[k]['ci_lo']:.3f}, {m[k]['ci_hi']:.3f}]" for k in ("residual_fit", "multiplier_fit")}
    says = {  # what each failed check of kkt_core means
        "residual_slope": f"residual-slope interval {iv['residual_fit']} does not reach {reach:g}",
        "multiplier_slope": f"multiplier-error-slope interval {iv['multiplier_fit']} does not reach {reach:g}",
        "rnn_grad_drop": f"||grad E|| fell only {m['rnn_grad_drop']:.2e}x (< 1e4)",
        "full_row_rank": f"grad h is not of full row rank (sigma_min {m['sigma_min']:.3g})",
    }
    failed = [says[k] for k, v in res["checks"].items() if not v]
    summary = (
        f"lambda 1e1..1e6 ({len(m['rows'])} solves): residual slope {m['residual_fit']['slope']:.3f} "
        f"{iv['residual_fit']}, multiplier-error slope {m['multiplier_fit']['slope']:.3f} {iv['multiplier_fit']}"
        f" (required: each interval reaches {reach:g} or below: {KKT_RATE.name}, "
        f"allowance {KKT_RATE.tolerance:g}), ||grad E|| fell {m['rnn_grad_drop']:.2e}x (required >= 1e4), "
        f"sigma_min(grad h) = {m['sigma_min']:.3g}; iterates converge (distance slope {m['distance_fit']['slope']:.3f})"
        + (f"; FAILED: {', '.join(failed)}" if failed else "")
    )
    return result(
        "fpp.kkt-recovery",
        config,
        t0,
        res["passed"],
        summary,
        controls=controls,
        statistic=max(m["residual_fit"]["ci_lo"], m["multiplier_fit"]["ci_lo"]),
        threshold=reach,
        data={**m, "instance": res["info"], "checks": res["checks"], "figures": kkt_figures(m)},
    )


# ================================================================ Prop. 2
def prop2_core(config: RunConfig, impl: FPPImpl | None = None) -> dict[str, Any]:
    """Numeric Prop. 2 (multipliers ``impl.multipliers``) at random feasible points (every cell) and at the Thm 2
    path's limit point."""
    multiplier_fn = (impl or config.impls.fpp).multipliers
    setup = Prop2Setup(buffer=12 if config.full else 8)
    problem, _, _, _, path = _kkt_cached(config.seed, config.profile)
    rows = prop2_rows(setup, config.generator(salt=61), multiplier_fn, problem, path)
    worst = max(max(r["param_rel_error"], r["state_equations"]) for r in rows)
    tol, dtype = _exact_tol(config, "fpp.prop2-kkt-equivalence")
    return {"rows": rows, "worst": worst, "passed": worst <= tol, "tol": tol, "dtype": dtype}


@register("fpp.prop2-kkt-equivalence", uses=("fpp.multipliers",))
def check_prop2_kkt_equivalence(config: RunConfig) -> CheckResult:
    """Prop. 2 (FPP App. B.2): the KKT equations of (12) and (10) coincide -- numerically and by sympy (n ≤ 3)."""
    t0 = time.perf_counter()
    res = prop2_core(config)
    symbolic = {f"generic n={n}": verify_prop2(n, "generic") for n in (1, 2, 3)}
    for n in (1, 2, 3) if config.full else (1, 2):
        symbolic[f"elman n={n}"] = verify_prop2(n, "elman")
    mut = prop2_core(config, get_mutant("fpp.multiplier-full-loss-adjoint").impl)
    controls = (_mutant_control("fpp.multiplier-full-loss-adjoint", mut, f"worst {mut['worst']:.2e}"),)
    lim = res["rows"][-1]
    return result(
        "fpp.prop2-kkt-equivalence",
        config,
        t0,
        res["passed"] and all(symbolic.values()),
        f"numeric: worst relative KKT mismatch {res['worst']:.2e} vs {_tol_words(res['tol'], res['dtype'])} over "
        f"{len(res['rows'])} "
        f"points (at the Thm 2 limit ||grad E|| = {lim['rnn_grad_norm']:.2e}, ||grad Lagr|| = "
        f"{lim['lagrangian_grad_norm']:.2e}); symbolic (sympy): "
        + ", ".join(f"{k}: {'0' if v else 'NONZERO'}" for k, v in symbolic.items()),
        controls=controls,
        statistic=res["worst"],
        threshold=res["tol"],
        dtype=precision_name(res["dtype"]),
        data={"numeric": res["rows"], "symbolic": symbolic},
    )


# ================================================================ reproductions (judged in fpp_reproduction)
def _scale(config: RunConfig) -> str:
    return "full" if config.full else "ci"


@register("fpp.cycleworld-reproduction", uses=("fpp.learner",))
def check_cycleworld_reproduction(config: RunConfig) -> CheckResult:
    """FPP §5, Fig. 2: FPP vs T-BPTT on CycleWorld at T = p/2 and p; criteria in :func:`judge_cycleworld`."""
    t0 = time.perf_counter()
    reps = cycleworld_designs(_scale(config), config.seed)
    values = run_blocks([b for r in reps for b in r.all_blocks()], config.impls.fpp.learner)
    return judge_cycleworld(reps, values, seed=config.seed, t0=t0)


@register("fpp.stochasticworld-reproduction", uses=("fpp.learner",))
def check_stochasticworld_reproduction(config: RunConfig) -> CheckResult:
    """FPP §5 / App. D Table 1, Fig. 3(b): Stochastic World; criteria and controls in :func:`judge_stochasticworld`."""
    t0 = time.perf_counter()
    rep = stochasticworld_design(_scale(config), config.seed)
    values = run_blocks(rep.all_blocks(), config.impls.fpp.learner)
    return judge_stochasticworld(rep, values, seed=config.seed, t0=t0)


@register("fpp.updates-reproduction", uses=("fpp.learner",))
def check_updates_reproduction(config: RunConfig) -> CheckResult:
    """FPP §5, Fig. 4: multiple updates and mini-batches, FPP vs FPP without state update; see :func:`judge_updates`."""
    t0 = time.perf_counter()
    reps = updates_designs(_scale(config), config.seed)
    values = run_blocks([b for r in reps for b in r.all_blocks()], config.impls.fpp.learner)
    return judge_updates(reps, values, seed=config.seed, t0=t0)
