"""Checks of the ``fpp`` family (claims in theory/claims/fpp.py; paper fpp-explicit-state-variables.md).

Every check has a ``*_core`` function that takes the implementation under test
(:class:`verify.impl.FPPImpl`: eq. (7), the sampler, the multiplier target) so that
the mutants of :mod:`verify.impl.mutants.fpp` -- other ``FPPImpl`` values -- run through
the very same comparison; the registered check runs ``config.impls.fpp`` and, as
its negative control, a mutant that must come out FAIL.
"""

from __future__ import annotations

import math
import time
from functools import lru_cache
from typing import Any

import numpy as np
import torch
from scipy import stats
from torch.func import jacrev

from theory.fpp_kkt import verify_prop2
from verify.checks import register
from verify.config import RunConfig
from verify.errors import AssumptionViolated
from verify.fpp._fit import loglog_slope
from verify.fpp.envs import cycle_world, cycle_world_baseline, stochastic_world_reference_losses
from verify.fpp.experiments import (
    KKTSetup,
    StationaritySetup,
    kkt_instance,
    kkt_measurements,
    prop2_numeric,
    solve_path,
    stationarity_experiment,
)
from verify.fpp.kkt import PathPoint
from verify.fpp.objective import (
    FPPObjective,
    FPPVariables,
    autograd_gradient,
    flatten_variables,
    index_distribution,
    minibatch_gradient,
    per_sample_gradients,
    relative_error,
    sample_losses,
)
from verify.fpp.reproduction import (
    SETTINGS_NOTES,
    Reproduction,
    cycleworld_designs,
    run_block,
    stochasticworld_design,
    summarize,
    updates_designs,
)
from verify.impl import FPPImpl
from verify.impl.mutants import get as get_mutant
from verify.model.builders import CELL_KINDS, LOSS_KINDS, random_problem
from verify.model.problem import Problem
from verify.report.plots.fpp import (
    cycleworld_figures,
    kkt_figures,
    stationarity_figures,
    stochasticworld_figures,
    updates_figures,
)
from verify.verdict import CheckResult, Control, Verdict

#: float64 exactness target for eq. (7) and Lemma 3 (relative, DESIGN "Numerical policy")
EXACT_TOL = 1e-12
T_VALUES = (1, 2, 5)


# ====================================================================== fixtures
def _suite(config: RunConfig) -> list[tuple[str, FPPObjective, FPPVariables]]:
    """Every cell x loss x T in {1, 2, 5}, on infeasible states (s_i != s_hat_i) so the lambda terms matter."""
    gen = config.generator(salt=51)
    n, buf = (4, 16) if config.full else (3, 8)
    out = []
    for kind in CELL_KINDS:
        for loss in LOSS_KINDS:
            for T in T_VALUES:
                P, theta = random_problem(kind, n=n, d=2, T=buf, k=2, loss=loss, generator=gen)
                obj = FPPObjective(P, T, 0.7)
                v = obj.rollout_variables(theta)
                noise = 0.3 * torch.randn(v.states.shape, generator=gen, dtype=torch.float64)
                out.append((f"{kind}/{loss}/T={T}", obj, FPPVariables(v.theta, v.states + noise)))
    return out


def _per_sample_autograd(obj: FPPObjective, v: FPPVariables) -> torch.Tensor:
    """Dense ∇L_i by reverse-mode autograd of the vector (L_T..L_n): shape (n−T+1, z)."""
    Jt, JS = jacrev(lambda th, S: sample_losses(obj, FPPVariables(th, S)), argnums=(0, 1))(v.theta, v.states)
    return torch.cat([Jt, JS.reshape(JS.shape[0], -1)], dim=-1)


# ================================================================ eq. (7)
def eq7_core(config: RunConfig, impl: FPPImpl | None = None) -> dict[str, Any]:
    """Worst relative error of eq. (7) (``impl.eq7_gradients``) against autograd of L_i over the suite (every i)."""
    impl = impl or config.impls.fpp
    rows: list[dict[str, Any]] = []
    for label, obj, v in _suite(config):
        G7 = per_sample_gradients(obj, v, impl.eq7_gradients)
        GA = _per_sample_autograd(obj, v)
        errs = torch.linalg.vector_norm(G7 - GA, dim=-1) / torch.linalg.vector_norm(GA, dim=-1).clamp_min(1e-300)
        rows.append({"problem": label, "samples": int(errs.numel()), "max_rel_error": float(errs.max())})
    worst = max(r["max_rel_error"] for r in rows)
    return {"rows": rows, "worst": worst, "passed": worst <= EXACT_TOL}


@register("fpp.gradient-eq7", uses=("fpp.eq7_gradients",))
def check_gradient_eq7(config: RunConfig) -> CheckResult:
    """Eq. (7) (FPP §3) = autograd of L_i (eq. (6)) for every cell, loss, T ∈ {1, 2, 5} and sample i."""
    t0 = time.perf_counter()
    res = eq7_core(config)
    mut = eq7_core(RunConfig(seed=config.seed), get_mutant("fpp.eq7-penalty-sign").impl)
    controls = (
        Control(
            "mutant fpp.eq7-penalty-sign", "FAIL", "PASS" if mut["passed"] else "FAIL", f"worst {mut['worst']:.2e}"
        ),
    )
    ok = res["passed"] and all(c.ok for c in controls)
    n = sum(r["samples"] for r in res["rows"])
    return CheckResult(
        claim_id="fpp.gradient-eq7",
        verdict=Verdict.PASS if ok else Verdict.FAIL,
        summary=f"{n} per-sample gradients on {len(res['rows'])} problems (5 cells x 2 losses x T in {{1,2,5}}); "
        f"worst relative error {res['worst']:.2e} vs {EXACT_TOL:.0e}; sign mutant worst {mut['worst']:.2e}",
        statistic=res["worst"],
        threshold=EXACT_TOL,
        seed=config.seed,
        controls=controls,
        data={"comparisons": res["rows"], "mutant_worst": mut["worst"]},
        wall_time=time.perf_counter() - t0,
    )


# ================================================================ Lemma 3
def lemma3_core(config: RunConfig, impl: FPPImpl | None = None) -> dict[str, Any]:
    """E_k[∇L_k] (exact, over k ~ uniform{T..n}) of ``impl.eq7_gradients`` vs autograd ∇L; ``impl.sampler``'s
    draws vs that law (support exactly {T..n}, chi-square for uniformity)."""
    impl = impl or config.impls.fpp
    gen = config.generator(salt=53)
    rows: list[dict[str, Any]] = []
    for label, obj, v in _suite(config):
        support, probs = index_distribution(obj.n, obj.T)  # the law of §4.1 / Lemma 3
        avg = flatten_variables(minibatch_gradient(obj, v, support, probs.to(torch.float64), impl.eq7_gradients))
        ref = flatten_variables(autograd_gradient(obj, v))
        err = relative_error(avg, ref)
        draws = impl.sampler(obj.n, obj.T, 200 * obj.num_samples, gen)
        seen = sorted(set(draws.tolist()))
        want = list(range(obj.T, obj.n + 1))
        counts = np.bincount(draws.numpy() - obj.T, minlength=obj.num_samples)[: obj.num_samples]
        chi = stats.chisquare(counts) if counts.sum() else None
        rows.append(
            {
                "problem": label,
                "rel_error": err,
                "support_ok": seen == want,
                "chi2_p": float(chi.pvalue) if chi is not None else 0.0,
            }
        )
    worst = max(r["rel_error"] for r in rows)
    support_ok = all(r["support_ok"] for r in rows)
    return {"rows": rows, "worst": worst, "support_ok": support_ok, "passed": worst <= EXACT_TOL and support_ok}


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
        Control(
            "mutant fpp.sampler-exclusive-endpoint",
            "FAIL",
            "PASS" if m1["passed"] else "FAIL",
            f"worst {m1['worst']:.2e}, support ok {m1['support_ok']}",
        ),
        Control("mutant fpp.eq7-penalty-sign", "FAIL", "PASS" if m2["passed"] else "FAIL", f"worst {m2['worst']:.2e}"),
    )
    ok = res["passed"] and all(c.ok for c in controls)
    min_p = min(r["chi2_p"] for r in res["rows"])
    return CheckResult(
        claim_id="fpp.lemma3-unbiased",
        verdict=Verdict.PASS if ok else Verdict.FAIL,
        summary=f"exact E_k[grad L_k] vs autograd grad L on {len(res['rows'])} problems: worst relative error "
        f"{res['worst']:.2e} vs {EXACT_TOL:.0e}; sampler draws cover exactly {{T..n}}: {res['support_ok']} "
        f"(smallest chi-square p {min_p:.2g}); exclusive-endpoint sampler caught: {not m1['support_ok']}",
        statistic=res["worst"],
        threshold=EXACT_TOL,
        seed=config.seed,
        controls=controls,
        data={"comparisons": res["rows"]},
        wall_time=time.perf_counter() - t0,
    )


# ================================================================ Thm 1
def _stationarity_setup(config: RunConfig) -> StationaritySetup:
    if config.full:
        return StationaritySetup(steps=3000, replicates=48, batches=(1, 2, 4, 8, 16), stride=8, pilot_steps=400)
    return StationaritySetup(steps=300, replicates=12, batches=(1, 4, 16), stride=8, pilot_steps=100)


def stationarity_core(config: RunConfig, impl: FPPImpl | None = None) -> dict[str, Any]:
    """The Thm 1 experiment and the verdict inputs (see the claim): bound, full-batch slope, floor vs m."""
    impl = impl or config.impls.fpp
    setup = _stationarity_setup(config)
    data = stationarity_experiment(setup, config.generator(salt=57), impl.eq7_gradients)
    cfgs = data["configs"]
    gd = cfgs[0]
    sgd = cfgs[1:]
    violations = {str(c["batch"]): c["violations"] for c in cfgs if c["violations"]}
    gd_slope = gd["last_decade_slope"]["slope"]
    out: dict[str, Any] = {"data": data, "violations": violations, "gd_slope": gd_slope}
    if sgd:
        first, last = sgd[0], sgd[-1]
        ms = [c["batch"] for c in sgd]
        floors = [c["floor"]["mean"] for c in sgd]
        out["floor_fit"] = loglog_slope(ms, floors).as_dict() if len(ms) >= 3 else None
        out["floor_falls"] = last["floor"]["ci_hi"] < first["floor"]["ci_lo"]
        b1 = first["last_decade_slope"]
        out["floor_at_batch1"] = bool(b1["ci_hi"] > -0.9 and b1["ci_lo"] > -1.0)
    out["passed"] = not violations and out.get("floor_falls", True)
    return out


#: steps of the stationarity check's negative control, tried in turn until the mutant breaks the bound
CONTROL_STEPS = (400, 1600, 6400)


@register("fpp.stationarity", uses=("fpp.eq7_gradients",))
def check_stationarity(config: RunConfig) -> CheckResult:
    """Thm 1 (FPP §4.1, eq. (9); App. B.1) in its corrected form: E‖G(x_R)‖² ≤ 16DΔ/(3N) + 14σ²/(3m).

    The printed O(1/N) holds for σ = 0 only; at constant step and batch 1 the
    data show a variance floor, and that it falls with the batch size.
    """
    t0 = time.perf_counter()
    res = stationarity_core(config)
    # control: gradient descent along the sign-mutant field of eq. (7) on the same instance; it converges to a
    # point where the true gradient mapping does not vanish, so the 1/N bound must break. Judged by the bound
    # alone (the premise on D is reported: the mutant may wander into higher curvature). The mutant's E||G||^2
    # falls like ~N^-0.5 before its plateau, the bound like 1/N: on some instances (2 seeds of 200 in the gate
    # sweep) 400 steps are too few to see the break, so the harness reruns the mutant with 4x the steps until the
    # bound breaks or CONTROL_STEPS is spent (more steps can only show more of the mutant's plateau).
    for steps in CONTROL_STEPS:
        ctrl_setup = StationaritySetup(steps=steps, replicates=1, batches=(), stride=8, pilot_steps=60)
        ctrl = stationarity_experiment(
            ctrl_setup,
            RunConfig(seed=config.seed).generator(salt=57),
            get_mutant("fpp.eq7-penalty-sign").impl.eq7_gradients,
            check_premise=False,
        )
        cgd = ctrl["configs"][0]
        if cgd["violations"]:
            break
    c_detail = (
        f"full-batch bound violated at {len(cgd['violations'])} of {len(cgd['N'])} N up to N = {steps} (slope "
        f"{cgd['last_decade_slope']['slope']:.2f}; D premise {'held' if ctrl['premise_ok'] else 'broken'})"
    )
    controls = (
        Control(
            "mutant fpp.eq7-penalty-sign (gradient descent)", "FAIL", "FAIL" if cgd["violations"] else "PASS", c_detail
        ),
    )
    data = res["data"]
    b1 = data["configs"][1] if len(data["configs"]) > 1 else None
    floor_txt = ""
    if b1 is not None:
        s = b1["last_decade_slope"]
        gd_level = data["configs"][0]["floor"]["mean"]
        last = data["configs"][-1]
        fit = res.get("floor_fit")
        floor_txt = (
            f"; batch 1 at constant step: last-decade slope {s['slope']:.2f} [{s['ci_lo']:.2f}, {s['ci_hi']:.2f}] "
            f"({'CI above -0.9: NOT O(1/N), a variance floor' if res.get('floor_at_batch1') else 'no floor resolved'})"
            f", second-half level {b1['floor']['mean']:.2e} vs {gd_level:.2e} for full batch "
            f"({b1['floor']['mean'] / max(gd_level, 1e-300):.0f}x); level "
            f"{'falls' if res.get('floor_falls') else 'does NOT fall'} with m: {last['floor']['mean']:.2e} at "
            f"m={last['batch']}"
            + (f", slope vs m {fit['slope']:.2f} [{fit['ci_lo']:.2f}, {fit['ci_hi']:.2f}]" if fit else "")
        )
    ok = res["passed"] and all(c.ok for c in controls)
    gd = data["configs"][0]
    tight = max(m / b for m, b in zip(gd["mean"], gd["bound"], strict=True))
    summary = (
        f"corrected Thm 1 bound 16 D Delta/(3N) + 14 sigma^2/(3m) "
        f"{'holds' if not res['violations'] else 'VIOLATED ' + str(res['violations'])} at every N and m "
        f"(D={data['D']:.3g}, sigma^2={data['sigma2']:.3g}, Delta={data['gap']:.3g}); full batch (sigma=0): "
        f"E||G(x_R)||^2 <= 1/N bound (tightness {tight:.2f}), last-decade slope {res['gd_slope']:.3f}" + floor_txt
    )
    return CheckResult(
        claim_id="fpp.stationarity",
        verdict=Verdict.PASS if ok else Verdict.FAIL,
        summary=summary,
        statistic=tight,
        threshold=1.0,
        seed=config.seed,
        alpha=0.05,
        samples_planned=data["replicates"],
        samples_used=data["replicates"],
        controls=controls,
        data={
            **data,
            "floor_fit": res.get("floor_fit"),
            "floor_at_batch1": res.get("floor_at_batch1"),
            "floor_falls_with_batch": res.get("floor_falls"),
            "finding": "E||G(x_R)||^2 = O(1/N) only with sigma = 0; at constant step a floor ~ sigma^2/m remains",
            "figures": stationarity_figures(data),
        },
        findings=(
            (
                "Thm 1 as printed (E||G(x_R)||^2 = O(1/N)) fails at constant step with batch 1: the last-decade "
                f"slope is {b1['last_decade_slope']['slope']:.2f} [{b1['last_decade_slope']['ci_lo']:.2f}, "
                f"{b1['last_decade_slope']['ci_hi']:.2f}], a variance floor; the cited result's sigma^2/m term "
                "is missing from the statement",
            )
            if b1 is not None and res.get("floor_at_batch1")
            else ()
        ),
        wall_time=time.perf_counter() - t0,
    )


# ================================================================ Thm 2
def _kkt_setup(config: RunConfig) -> KKTSetup:
    return KKTSetup(n=80) if config.full else KKTSetup(n=40)


@lru_cache(maxsize=4)
def _kkt_cached(seed: int, profile: str) -> tuple[Problem, torch.Tensor, torch.Tensor, dict[str, Any], list[PathPoint]]:
    config = RunConfig(profile=profile, seed=seed)
    setup = _kkt_setup(config)
    problem, theta, s0, info = kkt_instance(setup, config.generator(salt=59))
    path = solve_path(problem, theta, s0, setup.lams)
    return problem, theta, s0, info, path


def kkt_core(config: RunConfig, impl: FPPImpl | None = None) -> dict[str, Any]:
    """Thm 2 measurements along the path (multiplier target ``impl.multipliers``) and the verdict inputs;
    raises AssumptionViolated on a failed premise."""
    impl = impl or config.impls.fpp
    problem, theta, s0, info, path = _kkt_cached(config.seed, config.profile)
    meas = kkt_measurements(problem, theta, s0, path, impl.multipliers)
    rows = meas["rows"]
    unconverged = [
        f"lambda={r['lam']:.1e}: |grad|={r['grad_norm']:.1e}" for r, pt in zip(rows, path, strict=True)
        if not pt.solve.converged
    ]  # fmt: skip
    dist = meas["distance_fit"]
    if unconverged:
        raise AssumptionViolated(
            "Thm 2: eps_k -> 0 (each penalty problem solved)", unconverged, "Newton did not reach the tolerance"
        )
    if not dist["slope"] <= -0.9:
        raise AssumptionViolated(
            "Thm 2: the iterates converge along lambda_k", dist, "distance to the limit does not fall like 1/lambda"
        )
    checks = {
        "residual_slope": meas["residual_fit"]["slope"] <= -0.9,
        "multiplier_slope": meas["multiplier_fit"]["slope"] <= -0.9,
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
    controls = (
        Control(
            "mutant fpp.multiplier-full-loss-adjoint",
            "FAIL",
            "PASS" if mut["passed"] else "FAIL",
            f"multiplier slope {mut['meas']['multiplier_fit']['slope']:.2f}",
        ),
    )
    m = res["meas"]
    ok = res["passed"] and all(c.ok for c in controls)
    failed = [k for k, v in res["checks"].items() if not v]
    summary = (
        f"lambda 1e1..1e6 ({len(m['rows'])} solves): residual slope {m['residual_fit']['slope']:.3f} "
        f"[{m['residual_fit']['ci_lo']:.3f}, {m['residual_fit']['ci_hi']:.3f}], multiplier-error slope "
        f"{m['multiplier_fit']['slope']:.3f} [{m['multiplier_fit']['ci_lo']:.3f}, {m['multiplier_fit']['ci_hi']:.3f}]"
        f" (both <= -0.9), ||grad E|| fell {m['rnn_grad_drop']:.2e}x (>= 1e4), sigma_min(grad h) = "
        f"{m['sigma_min']:.3g}; iterates converge (distance slope {m['distance_fit']['slope']:.3f})"
        + (f"; FAILED: {failed}" if failed else "")
    )
    return CheckResult(
        claim_id="fpp.kkt-recovery",
        verdict=Verdict.PASS if ok else Verdict.FAIL,
        summary=summary,
        statistic=max(m["residual_fit"]["slope"], m["multiplier_fit"]["slope"]),
        threshold=-0.9,
        seed=config.seed,
        controls=controls,
        data={**m, "instance": res["info"], "checks": res["checks"], "figures": kkt_figures(m)},
        wall_time=time.perf_counter() - t0,
    )


# ================================================================ Prop. 2
def prop2_core(config: RunConfig, impl: FPPImpl | None = None) -> dict[str, Any]:
    """Numeric Prop. 2 (multipliers ``impl.multipliers``) at random feasible points (every cell) and at the Thm 2
    path's limit point."""
    multiplier_fn = (impl or config.impls.fpp).multipliers
    gen = config.generator(salt=61)
    rows: list[dict[str, Any]] = []
    for kind in CELL_KINDS:
        P, theta = random_problem(kind, n=3, d=2, T=12 if config.full else 8, k=2, generator=gen)
        r = prop2_numeric(P, theta, P.s0, multiplier_fn)
        rows.append({"point": f"random feasible, {kind}", **r})
    problem, _, _, _, path = _kkt_cached(config.seed, config.profile)
    last = path[-1].variables
    r = prop2_numeric(problem, last.theta, last.states[0], multiplier_fn)
    rows.append({"point": f"Thm 2 limit (lambda={path[-1].lam:.0e})", **r})
    worst = max(max(r["param_rel_error"], r["state_equations"]) for r in rows)
    return {"rows": rows, "worst": worst, "passed": worst <= EXACT_TOL}


@register("fpp.prop2-kkt-equivalence", uses=("fpp.multipliers",))
def check_prop2_kkt_equivalence(config: RunConfig) -> CheckResult:
    """Prop. 2 (FPP App. B.2): the KKT equations of (12) and (10) coincide -- numerically and by sympy (n ≤ 3)."""
    t0 = time.perf_counter()
    res = prop2_core(config)
    symbolic = {f"generic n={n}": verify_prop2(n, "generic") for n in (1, 2, 3)}
    for n in (1, 2, 3) if config.full else (1, 2):
        symbolic[f"elman n={n}"] = verify_prop2(n, "elman")
    mut = prop2_core(config, get_mutant("fpp.multiplier-full-loss-adjoint").impl)
    controls = (
        Control("mutant fpp.multiplier-full-loss-adjoint", "FAIL", "PASS" if mut["passed"] else "FAIL",
                f"worst {mut['worst']:.2e}"),
    )  # fmt: skip
    ok = res["passed"] and all(symbolic.values()) and all(c.ok for c in controls)
    lim = res["rows"][-1]
    return CheckResult(
        claim_id="fpp.prop2-kkt-equivalence",
        verdict=Verdict.PASS if ok else Verdict.FAIL,
        summary=f"numeric: worst relative KKT mismatch {res['worst']:.2e} vs {EXACT_TOL:.0e} over {len(res['rows'])} "
        f"points (at the Thm 2 limit ||grad E|| = {lim['rnn_grad_norm']:.2e}, ||grad Lagr|| = "
        f"{lim['lagrangian_grad_norm']:.2e}); symbolic (sympy): "
        + ", ".join(f"{k}: {'0' if v else 'NONZERO'}" for k, v in symbolic.items()),
        statistic=res["worst"],
        threshold=EXACT_TOL,
        seed=config.seed,
        controls=controls,
        data={"numeric": res["rows"], "symbolic": symbolic},
        wall_time=time.perf_counter() - t0,
    )


# ================================================================ reproductions
#: family-wise false-FAIL rate of a reproduction's statistical criteria (Holm over the tests of a criterion)
REPRO_ALPHA = 0.05
Values = dict[Any, dict[str, Any]]


def _blocks_values(blocks: Any) -> Values:
    """Run every block of a design in this process (the checks; a sweep runs the same blocks as cells)."""
    return {b: run_block(b) for b in blocks}


def _ci_txt(s: dict[str, Any], key: str) -> str:
    lo, hi = s[f"{key}_ci"]
    return f"{s[f'{key}_mean']:.3f} [{lo:.3f}, {hi:.3f}]"


def _one_sided_paired(a: list[float], b: list[float]) -> float:
    """p-value of H0: mean(a − b) ≥ 0 against mean(a) < mean(b); runs are paired (same streams and weights)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if d.size < 2 or not np.isfinite(d).all():
        return math.nan
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd <= 1e-12 * max(1.0, abs(mean)):  # identical runs up to round-off: the sign decides
        return 0.0 if mean < 0 else 1.0
    return float(stats.t.cdf(mean / (sd / math.sqrt(d.size)), d.size - 1))  # one-sided paired t


def _holm(pvals: list[float]) -> list[bool]:
    from verify.stats.multiple import holm

    clean = [p if math.isfinite(p) else 1.0 for p in pvals]
    return list(holm(clean, REPRO_ALPHA)) if clean else []


def _failed_blocks(rep_blocks: Any, values: Values, errors: dict[Any, str] | None) -> str:
    missing = [b for b in rep_blocks if b not in values]
    if not missing:
        return ""
    lines = [f"{len(missing)} block(s) of the reproduction did not run:"]
    for b in missing[:10]:
        lines.append(f"--- {b.method} T={b.T} lrs={list(b.lrs)} mutant={b.mutant}\n{(errors or {}).get(b, '')}")
    return "\n".join(lines)


def judge_stochasticworld(
    rep: Reproduction, values: Values, *, seed: int, errors: dict[Any, str] | None = None, t0: float | None = None
) -> CheckResult:
    """FPP §5 / Fig. 3(b) on Stochastic World, judged by the criteria stated in the claim (pre-stated).

    (S0) the Bayes levels of Table 1 lie within 0.01 of the printed 0.66 / 0.51 / 0.46;
    (S1, premise) FPP and T-BPTT at the largest T learned: final-window CE, 95% CI upper
    end below the memoryless 0.6616; (S2) no learner is significantly below the Bayes
    optimum (a leaky stream); (S3, the paper's comparison, ``full``/``paper`` only) FPP's
    online CE is below T-BPTT's (and No-Overlap T-BPTT's) at every compared T: one-sided
    paired t-tests, Holm at family α = 0.05; controls: each broken learner, judged by
    (S1), must FAIL. PASS needs all of them; a premise that fails is a FAIL (a learner
    that learns nothing never PASSes). Reported, not judged: FPP at T ≥ 20 near the
    optimum at the end (Fig. 3's caption), as a finding when it is not.
    """
    t0 = time.perf_counter() if t0 is None else t0
    refs = stochastic_world_reference_losses()
    printed = {"none": 0.66, "lag15": 0.51, "both": 0.46}
    levels_ok = all(abs(refs[k] - v) < 0.01 for k, v in printed.items())
    not_rounded = {k: v for k, v in printed.items() if abs(round(refs[k], 2) - v) > 1e-9}
    summ = summarize(rep, values)
    missing = _failed_blocks(rep.all_blocks(), values, errors)
    learners, controls = summ["learners"], summ["controls"]
    memoryless, bayes = refs["none"], refs["both"]
    Ts = sorted({T for _, T in rep.learners})
    T_max = Ts[-1]
    findings: list[str] = [
        f"§5: the Bayes cross-entropy with {_LEVEL_NAMES[k]} is {refs[k]:.4f}; the paper's 'about {v}' is within "
        f"0.01 but does not round to it ({round(refs[k], 2)})"
        for k, v in not_rounded.items()
    ]
    criteria: list[dict[str, Any]] = [
        {"name": "S0 levels", "passed": levels_ok,
         "detail": f"none {refs['none']:.4f}, o_(t-15) {refs['lag15']:.4f}, both {refs['both']:.4f} vs 0.66/0.51/0.46"}
    ]  # fmt: skip

    def learned(s: dict[str, Any] | None) -> bool:
        return s is not None and s["finite"] and math.isfinite(s["final_ci"][1]) and s["final_ci"][1] < memoryless

    premise = [k for k in learners if k.endswith(f"/T={T_max}") and not k.startswith("tbptt-no-overlap")]
    prem_ok = bool(premise) and all(learned(learners[k]) for k in premise)
    criteria.append({
        "name": f"S1 premise: learners at T = {T_max} learned (final CE 95% CI upper < memoryless {memoryless:.4f})",
        "passed": prem_ok,
        "detail": "; ".join(f"{k}: " + (_ci_txt(learners[k], "final") if learners[k] else "no result")
                            for k in premise),
    })  # fmt: skip
    sane = all(s is None or not (s["final_ci"][1] < bayes) for s in learners.values())
    criteria.append({"name": f"S2 no learner below the Bayes optimum {bayes:.4f}", "passed": sane, "detail": ""})
    # S3: the paper's comparison (judged at full/paper scale only)
    compare_Ts = [T for T in Ts if T < T_max] if rep.scale != "ci" else []
    rivals = sorted({m for m, _ in rep.learners} - {"fpp"})
    tests: list[dict[str, Any]] = []
    for T in compare_Ts:
        for m in rivals:
            a, b = learners.get(f"fpp/T={T}"), learners.get(f"{m}/T={T}")
            if a is None or b is None:
                continue
            tests.append({"T": T, "rival": m, "fpp": a["online_mean"], "other": b["online_mean"],
                          "p": _one_sided_paired(a["online_runs"], b["online_runs"])})  # fmt: skip
    for t, rej in zip(tests, _holm([t["p"] for t in tests]), strict=True):
        t["reproduced"] = bool(rej)
    cmp_ok: bool | None = all(t["reproduced"] for t in tests) if tests else None
    if tests:
        criteria.append({
            "name": "S3 paper: FPP's online CE below "
            + " and ".join(rivals) + f"'s at T in {compare_Ts} (one-sided paired t, Holm, alpha {REPRO_ALPHA})",
            "passed": cmp_ok,
            "detail": "; ".join(f"T={t['T']} vs {t['rival']}: {t['fpp']:.4f} vs {t['other']:.4f} (p = {t['p']:.2g})"
                                for t in tests),
        })  # fmt: skip
        for t in tests:
            if not t["reproduced"]:
                findings.append(
                    f"§5 / Fig. 3(b) not reproduced at T = {t['T']}: FPP's online CE {t['fpp']:.4f} is not "
                    f"significantly below {t['rival']}'s {t['other']:.4f} (one-sided paired t, p = {t['p']:.2g}, "
                    f"Holm over {len(tests)} tests; {rep.runs} runs, {rep.steps} steps)"
                )
    else:
        why = "reported, not judged at the ci size (the effect needs the paper's lags and horizon)"
        criteria.append({"name": "S3 paper's comparison", "passed": None, "detail": why})
    # Fig. 3's caption: FPP at T = 20, 30, 40 reaches a final solution with optimal performance (finding only)
    if rep.scale != "ci":
        for T in (T for T in Ts if T >= 20):
            s = learners.get(f"fpp/T={T}")
            if s is not None and s["final_ci"][0] > bayes + 0.02:
                findings.append(
                    f"Fig. 3 caption ('FPP at T = 20, 30, 40 reaches a final solution with optimal performance') not "
                    f"reproduced at T = {T} after {rep.steps} steps: final-window CE {_ci_txt(s, 'final')} vs the "
                    f"optimum {bayes:.4f}"
                )
    ctrl_objs = []
    for label, s in controls.items():
        observed = "PASS" if learned(s) else "FAIL"
        detail = f"final CE {_ci_txt(s, 'final')} (lr {s['lr']})" if s else "no result"
        ctrl_objs.append(Control(f"harness rerun with {label}", "FAIL", observed, detail))
    controls_ok = all(c.ok for c in ctrl_objs)
    ok = levels_ok and prem_ok and sane and cmp_ok is not False and controls_ok and not missing
    verdict, reason = _decide(ok, missing, criteria, ctrl_objs)
    res_txt = ", ".join(f"{k}: online {_ci_txt(v, 'online')}, final {_ci_txt(v, 'final')} (lr {v['lr']:g})"
                        for k, v in learners.items() if v)  # fmt: skip
    data = {
        "scale": rep.scale, "design": _design_dict(rep), "references": refs, "criteria": criteria, "tests": tests,
        "learners": learners, "controls": controls, "settings_notes": list(SETTINGS_NOTES),
        "paper": {"levels": printed, "claims": [
            "FPP outperforms T-BPTT and No-Overlap T-BPTT for every T (Fig. 3(b))",
            "20-BPTT is unable to learn both dependencies",
            "FPP at T = 20, 30, 40 reaches a final solution with optimal performance"]},
    }  # fmt: skip
    data["figures"] = stochasticworld_figures(data)
    return CheckResult(
        claim_id="fpp.stochasticworld-reproduction",
        verdict=verdict,
        summary=f"[{rep.scale}] Stochastic World, {rep.runs} runs x {rep.steps} steps (seed {seed}); levels "
        f"{'match' if levels_ok else 'MISMATCH'}; premise (learned at T={T_max}) {'met' if prem_ok else 'NOT MET'}; "
        + (f"paper's comparison {'reproduced' if cmp_ok else 'NOT reproduced'}; " if cmp_ok is not None else "")
        + f"{res_txt}",
        statistic=min((v["final_ci"][1] for k, v in learners.items() if v and k in premise), default=None),
        threshold=memoryless,
        comparison="<",
        alpha=REPRO_ALPHA,
        seed=seed,
        samples_used=rep.runs,
        reason=reason,
        controls=tuple(ctrl_objs),
        data=data,
        findings=tuple(findings),
        wall_time=time.perf_counter() - t0,
    )


def judge_cycleworld(
    reps: list[Reproduction], values: Values, *, seed: int, errors: dict[Any, str] | None = None,
    t0: float | None = None,
) -> CheckResult:  # fmt: skip
    """FPP §5 / Fig. 2 on CycleWorld(p) for each p of ``reps``, judged by the criteria stated in the claim.

    (C0) the environment's predict-zero ratio is exactly 1; (C1, premise) FPP and T-BPTT
    at T = p learned: online ratio's 95% CI upper end below 1 (better than predicting
    0); (C2, the paper, ``full``/``paper`` only) FPP's online ratio at T = p/2 is below
    T-BPTT's at T = p/2: one-sided paired t-test per p, Holm at family α = 0.05 over
    the p's; controls: each broken learner at T = p, judged by (C1), must FAIL. PASS
    needs all of them; a premise that fails is a FAIL.
    """
    t0 = time.perf_counter() if t0 is None else t0
    all_blocks = [b for r in reps for b in r.all_blocks()]
    missing = _failed_blocks(all_blocks, values, errors)
    per_p: list[dict[str, Any]] = []
    criteria: list[dict[str, Any]] = []
    ctrl_objs: list[Control] = []
    findings: list[str] = []
    tests: list[dict[str, Any]] = []
    prem_ok = True
    zero_ok = True
    for rep in reps:
        p = int(rep.common["p"])
        stream = cycle_world(p, 10 * p, 2, torch.Generator().manual_seed(0))  # whole cycles: exactly 1
        zero = float((0.5 * stream.targets**2).mean() / cycle_world_baseline(p))
        zero_ok = zero_ok and abs(zero - 1.0) <= 1e-12
        summ = summarize(rep, values)
        L, C = summ["learners"], summ["controls"]
        half = max(1, p // 2)
        for k in (f"fpp/T={p}", f"tbptt/T={p}"):
            s = L.get(k)
            ok = s is not None and s["finite"] and s["online_ci"][1] < 1.0
            prem_ok = prem_ok and ok
        for label, s in C.items():
            observed = "PASS" if (s is not None and s["finite"] and s["online_ci"][1] < 1.0) else "FAIL"
            detail = f"online ratio {_ci_txt(s, 'online')} (lr {s['lr']:g})" if s else "no result"
            ctrl_objs.append(Control(f"p = {p}: harness rerun with {label}", "FAIL", observed, detail))
        a, b = L.get(f"fpp/T={half}"), L.get(f"tbptt/T={half}")
        if rep.scale != "ci" and a is not None and b is not None and half < p:
            tests.append({"p": p, "T": half, "fpp": a["online_mean"], "tbptt": b["online_mean"],
                          "p_value": _one_sided_paired(a["online_runs"], b["online_runs"])})  # fmt: skip
        per_p.append({"p": p, "design": _design_dict(rep), "predict_zero_ratio": zero, "learners": L, "controls": C})
    for t, rej in zip(tests, _holm([t["p_value"] for t in tests]), strict=True):
        t["reproduced"] = bool(rej)
        if not rej:
            findings.append(
                f"§5 / Fig. 2 not reproduced at p = {t['p']}: FPP at T = {t['T']} has online error ratio "
                f"{t['fpp']:.3f}, not significantly below T-BPTT's {t['tbptt']:.3f} (one-sided paired t, "
                f"p = {t['p_value']:.2g}, Holm over {len(tests)} p's; {reps[0].runs} runs, {reps[0].steps} steps)"
            )
    cmp_ok: bool | None = all(t["reproduced"] for t in tests) if tests else None
    ps = [int(r.common["p"]) for r in reps]
    criteria += [
        {"name": "C0 predict-zero ratio of the environment is 1", "passed": zero_ok, "detail": ""},
        {"name": "C1 premise: FPP and T-BPTT at T = p beat predict-zero (online ratio 95% CI upper < 1)",
         "passed": prem_ok,
         "detail": "; ".join(f"p={d['p']} {k}: " + (_ci_txt(v, 'online') if v else "no result")
                             for d in per_p for k, v in d["learners"].items() if k.endswith(f"/T={d['p']}"))},
        {"name": f"C2 paper: FPP below T-BPTT at T = p/2 for p in {ps} (one-sided paired t, Holm, alpha "
                 f"{REPRO_ALPHA})" if tests else "C2 paper's comparison",
         "passed": cmp_ok,
         "detail": "; ".join(f"p={t['p']}: {t['fpp']:.3f} vs {t['tbptt']:.3f} (p = {t['p_value']:.2g})" for t in tests)
         or "reported, not judged at the ci size"},
    ]  # fmt: skip
    controls_ok = all(c.ok for c in ctrl_objs)
    ok = zero_ok and prem_ok and cmp_ok is not False and controls_ok and not missing
    verdict, reason = _decide(ok, missing, criteria, ctrl_objs)
    res_txt = "; ".join(
        f"p={d['p']}: "
        + ", ".join(f"{k} {_ci_txt(v, 'online')} (lr {v['lr']:g})" for k, v in d["learners"].items() if v)
        for d in per_p
    )
    data = {"scale": reps[0].scale, "criteria": criteria, "tests": tests, "per_p": per_p,
            "settings_notes": list(SETTINGS_NOTES),
            "paper": {"claims": ["FPP is more robust to T: at T = p/2 FPP beats T-BPTT (Fig. 2)",
                                 "T-BPTT with T = p eventually learns"]}}  # fmt: skip
    data["figures"] = cycleworld_figures(data)
    return CheckResult(
        claim_id="fpp.cycleworld-reproduction",
        verdict=verdict,
        summary=f"[{reps[0].scale}] CycleWorld p in {ps}, {reps[0].runs} runs x {reps[0].steps} steps (seed {seed}), "
        f"online error ratio to predict-zero; premise {'met' if prem_ok else 'NOT MET'}; "
        + (f"paper's comparison {'reproduced' if cmp_ok else 'NOT reproduced'}; " if cmp_ok is not None else "")
        + res_txt,
        statistic=max((t["p_value"] for t in tests), default=None),
        threshold=REPRO_ALPHA if tests else None,
        alpha=REPRO_ALPHA,
        seed=seed,
        samples_used=reps[0].runs,
        reason=reason,
        controls=tuple(ctrl_objs),
        data=data,
        findings=tuple(findings),
        wall_time=time.perf_counter() - t0,
    )


def _decide(
    ok: bool, missing: str, criteria: list[dict[str, Any]], controls: list[Control]
) -> tuple[Verdict, str | None]:
    """A reproduction's verdict: FAIL when blocks are missing or any stated criterion or control failed."""
    if missing:
        return Verdict.FAIL, missing
    if ok:
        return Verdict.PASS, None
    bad = [c["name"] for c in criteria if c["passed"] is False] + [f"control {c.name}" for c in controls if not c.ok]
    return Verdict.FAIL, "failed: " + "; ".join(bad)


def _design_dict(rep: Reproduction) -> dict[str, Any]:
    return {"env": rep.env, "learners": [list(x) for x in rep.learners], "lrs": list(rep.lrs), "steps": rep.steps,
            "runs": rep.runs, "seed": rep.seed, "common": {k: (list(v) if isinstance(v, tuple) else v)
                                                           for k, v in rep.common.items()},
            "controls": [list(c) for c in rep.controls]}  # fmt: skip


def _scale(config: RunConfig) -> str:
    return "full" if config.full else "ci"


@register("fpp.cycleworld-reproduction")
def check_cycleworld_reproduction(config: RunConfig) -> CheckResult:
    """FPP §5, Fig. 2: FPP vs T-BPTT on CycleWorld at T = p/2 and p; criteria in :func:`judge_cycleworld`."""
    t0 = time.perf_counter()
    reps = cycleworld_designs(_scale(config), config.seed)
    values = _blocks_values([b for r in reps for b in r.all_blocks()])
    return judge_cycleworld(reps, values, seed=config.seed, t0=t0)


_LEVEL_NAMES = {"none": "no memory", "lag15": "o_(t-15) remembered", "both": "both lags remembered"}


@register("fpp.stochasticworld-reproduction")
def check_stochasticworld_reproduction(config: RunConfig) -> CheckResult:
    """FPP §5 / App. D Table 1, Fig. 3(b): Stochastic World; criteria and controls in :func:`judge_stochasticworld`."""
    t0 = time.perf_counter()
    rep = stochasticworld_design(_scale(config), config.seed)
    values = _blocks_values(rep.all_blocks())
    return judge_stochasticworld(rep, values, seed=config.seed, t0=t0)


def judge_updates(
    reps: list[Reproduction], values: Values, *, seed: int, errors: dict[Any, str] | None = None,
    t0: float | None = None,
) -> CheckResult:  # fmt: skip
    """FPP §5 Fig. 4: M updates per step and mini-batches of B, FPP vs FPP without state update.

    Per environment, at the T where the paper sees the largest gaps (Stochastic World
    T = 16; CycleWorld T ∈ {1, 2}; the grid's T otherwise): (U0, premise) FPP at the
    largest M learned (CycleWorld: online ratio 95% CI upper < 1; Stochastic World:
    final CE 95% CI upper < 0.6616); (U1, the paper) FPP's online loss is below FPP
    without state update's at the largest M and at the largest B, and (U2) FPP's
    online loss at the largest M (B) is below its own at M = B = 1 -- one-sided paired
    t-tests, one Holm family at α = 0.05 (``full``/``paper``; reported at ``ci``);
    controls: FPP with a zeroed gradient at the largest M must fail (U0).
    """
    t0 = time.perf_counter() if t0 is None else t0
    missing = _failed_blocks([b for r in reps for b in r.all_blocks()], values, errors)
    memoryless = stochastic_world_reference_losses()["none"]
    by_env: dict[str, dict[tuple[int, int], Any]] = {}
    summaries: dict[str, Any] = {}
    for r in reps:
        s = summarize(r, values)
        by_env.setdefault(r.env, {})[(int(r.common["updates"]), int(r.common["batch"]))] = (r, s)
        summaries[r.name] = s
    prem_ok = True
    prem_txt: list[str] = []
    tests: list[dict[str, Any]] = []
    ctrl_objs: list[Control] = []
    findings: list[str] = []
    for env, cfgs in by_env.items():
        Ts = sorted({T for _, T in next(iter(cfgs.values()))[0].learners})
        gap = [T for T in ((16,) if env == "stochasticworld" else (1, 2)) if T in Ts] or [Ts[-1]]
        M_max = max(M for M, B in cfgs if B == 1)
        B_max = max(B for M, B in cfgs if M == 1)

        def learned(s: dict[str, Any] | None, env: str = env) -> bool:
            if s is None or not s["finite"]:
                return False
            return bool(s["final_ci"][1] < memoryless) if env == "stochasticworld" else bool(s["online_ci"][1] < 1.0)

        for T in gap:
            s = cfgs[(M_max, 1)][1]["learners"].get(f"fpp/T={T}")
            ok = learned(s)
            prem_ok = prem_ok and ok
            prem_txt.append(f"{env} M={M_max} fpp/T={T}: " + (_ci_txt(s, "online") if s else "no result"))
            pairs = []
            for cfg in {(M_max, 1), (1, B_max)} - {(1, 1)}:
                L = cfgs[cfg][1]["learners"]
                pairs.append((f"{env} M={cfg[0]} B={cfg[1]} T={T}: FPP < FPP w/o state update",
                              L.get(f"fpp/T={T}"), L.get(f"fpp-no-state-update/T={T}")))  # fmt: skip
                base = cfgs[(1, 1)][1]["learners"].get(f"fpp/T={T}")
                pairs.append((f"{env} T={T}: FPP at M={cfg[0]} B={cfg[1]} < FPP at M=B=1", L.get(f"fpp/T={T}"), base))
            for name, a, b in pairs:
                if a is not None and b is not None:
                    tests.append({"test": name, "better": a["online_mean"], "other": b["online_mean"],
                                  "p": _one_sided_paired(a["online_runs"], b["online_runs"])})  # fmt: skip
        for label, s in cfgs[(M_max, 1)][1]["controls"].items():
            observed = "PASS" if learned(s) else "FAIL"
            ctrl_objs.append(Control(f"{env}: harness rerun with {label}", "FAIL", observed,
                                     f"online {_ci_txt(s, 'online')}" if s else "no result"))  # fmt: skip
    judged = reps[0].scale != "ci"
    for t, rej in zip(tests, _holm([t["p"] for t in tests]), strict=True):
        t["reproduced"] = bool(rej)
        if judged and not rej:
            findings.append(f"§5 / Fig. 4 not reproduced: {t['test']} ({t['better']:.4f} vs {t['other']:.4f}, "
                            f"one-sided paired t p = {t['p']:.2g}, Holm over {len(tests)} tests)")  # fmt: skip
    cmp_ok: bool | None = all(t["reproduced"] for t in tests) if (judged and tests) else None
    criteria: list[dict[str, Any]] = [
        {"name": "U0 premise: FPP at the largest M learned", "passed": prem_ok, "detail": "; ".join(prem_txt)},
        {"name": f"U1/U2 paper: state updates and more updates/larger batches help (paired t, Holm, alpha "
                 f"{REPRO_ALPHA})", "passed": cmp_ok,
         "detail": "; ".join(f"{t['test']}: {t['better']:.4f} vs {t['other']:.4f} (p = {t['p']:.2g})" for t in tests)
         + ("" if judged else " [reported, not judged at the ci size]")},
    ]  # fmt: skip
    ok = prem_ok and cmp_ok is not False and all(c.ok for c in ctrl_objs) and not missing
    verdict, reason = _decide(ok, missing, criteria, ctrl_objs)
    data = {"scale": reps[0].scale, "criteria": criteria, "tests": tests, "configs": summaries,
            "designs": {r.name: _design_dict(r) for r in reps}, "settings_notes": list(SETTINGS_NOTES)}  # fmt: skip
    data["figures"] = updates_figures(data)
    return CheckResult(
        claim_id="fpp.updates-reproduction",
        verdict=verdict,
        summary=f"[{reps[0].scale}] Fig. 4: {len(reps)} (env, M, B) configurations, {reps[0].runs} runs x "
        f"{reps[0].steps} steps (seed {seed}); premise {'met' if prem_ok else 'NOT MET'}; "
        + (f"paper's comparisons {'reproduced' if cmp_ok else 'NOT reproduced'}; " if cmp_ok is not None else "")
        + "; ".join(f"{t['test']} {t['better']:.3f} vs {t['other']:.3f}" for t in tests[:6]),
        statistic=max((t["p"] for t in tests), default=None),
        threshold=REPRO_ALPHA if judged and tests else None,
        alpha=REPRO_ALPHA,
        seed=seed,
        samples_used=reps[0].runs,
        reason=reason,
        controls=tuple(ctrl_objs),
        data=data,
        findings=tuple(findings),
        wall_time=time.perf_counter() - t0,
    )


@register("fpp.updates-reproduction")
def check_updates_reproduction(config: RunConfig) -> CheckResult:
    """FPP §5, Fig. 4: multiple updates and mini-batches, FPP vs FPP without state update; see :func:`judge_updates`."""
    t0 = time.perf_counter()
    reps = updates_designs(_scale(config), config.seed)
    values = _blocks_values([b for r in reps for b in r.all_blocks()])
    return judge_updates(reps, values, seed=config.seed, t0=t0)
