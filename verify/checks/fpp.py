"""Checks of the ``fpp`` family (claims in theory/claims/fpp.py; paper fpp-explicit-state-variables.md).

Every check has a ``*_core`` function that takes the implementation under test
(:class:`verify.impl.FPPImpl`: eq. (7), the sampler, the multiplier target) so that
the mutants of :mod:`verify.mutants.fpp` -- other ``FPPImpl`` values -- run through
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
from verify.checks._figures import cycleworld_figures, kkt_figures, stationarity_figures, stochasticworld_figures
from verify.errors import AssumptionViolated
from verify.fpp._fit import loglog_slope
from verify.fpp.envs import stochastic_world_reference_losses
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
from verify.fpp.reproduction import cycleworld_reproduction, stochasticworld_reproduction
from verify.impl import FPPImpl
from verify.mutants import get as get_mutant
from verify.problem import Problem
from verify.results import CheckResult, Control, RunConfig, Verdict
from verify.strategies import CELL_KINDS, LOSS_KINDS, random_problem

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
    # alone (the premise on D is reported: the mutant may wander into higher curvature).
    ctrl_setup = StationaritySetup(steps=400, replicates=1, batches=(), stride=8, pilot_steps=60)
    ctrl = stationarity_experiment(
        ctrl_setup,
        RunConfig(seed=config.seed).generator(salt=57),
        get_mutant("fpp.eq7-penalty-sign").impl.eq7_gradients,
        check_premise=False,
    )
    cgd = ctrl["configs"][0]
    c_detail = (
        f"full-batch bound violated at {len(cgd['violations'])} of {len(cgd['N'])} N (slope "
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
def _cycle_sizes(config: RunConfig) -> dict[str, Any]:
    if config.full:
        return {"p": 8, "steps": int(config.option("cycle_steps", 3000)), "runs": 10, "lrs": (0.003, 0.01, 0.03)}
    return {"p": 4, "steps": 120, "runs": 2, "lrs": (0.01,)}


@register("fpp.cycleworld-reproduction")
def check_cycleworld_reproduction(config: RunConfig) -> CheckResult:
    """FPP §5, Fig. 2: FPP vs T-BPTT on CycleWorld at T = p/2 and T = p (ratio to predict-zero), reported."""
    t0 = time.perf_counter()
    sizes = _cycle_sizes(config)
    data = cycleworld_reproduction(generator=config.generator(salt=67), **sizes)
    harness_ok = abs(data["predict_zero_ratio"] - 1.0) <= 1e-12
    finite = all(math.isfinite(r["ratio_mean"]) for r in data["results"].values())
    learns = True
    if config.full:
        learns = all(r["ratio_ci"][1] < 1.0 for r in data["results"].values() if r["T"] == data["p"])
    # control: the same harness with the baseline normaliser 1/p (a factor-2 slip) must be caught
    wrong_ratio = data["predict_zero_ratio"] * 0.5
    controls = (
        Control("harness with baseline 1/p instead of 1/(2p)", "FAIL", "PASS" if abs(wrong_ratio - 1) <= 1e-12
                else "FAIL", f"predict-zero ratio {wrong_ratio:.3f}"),
    )  # fmt: skip
    ok = harness_ok and finite and learns and all(c.ok for c in controls)
    cmp = data["comparison_half"]
    res_txt = ", ".join(
        f"{k}: {v['ratio_mean']:.3f} [{v['ratio_ci'][0]:.3f}, {v['ratio_ci'][1]:.3f}] (lr {v['lr']})"
        for k, v in data["results"].items()
    )
    verdict_txt = (
        f"FPP at T={cmp['T']} {'BEATS' if cmp['fpp_beats_tbptt'] else 'does NOT significantly beat'} T-BPTT at "
        f"T={cmp['T']} (difference {cmp['difference']:+.3f}, one-sided Welch p = {cmp['welch_p_one_sided']:.3g})"
        if cmp
        else ""
    )
    return CheckResult(
        claim_id="fpp.cycleworld-reproduction",
        verdict=Verdict.PASS if ok else Verdict.FAIL,
        summary=f"CycleWorld p={data['p']}, {data['steps']} steps, {data['runs']} runs (seed {config.seed}), ratio to "
        f"predict-zero: {res_txt}. {verdict_txt}"
        + ("" if config.full else " [ci profile: harness-size run, not evidence]"),
        statistic=cmp.get("difference") if cmp else None,
        seed=config.seed,
        samples_used=data["runs"],
        controls=controls,
        data={**data, "figures": cycleworld_figures(data)},
        findings=(
            (
                f"§5 / Fig. 2: FPP at T = p/2 does not beat T-BPTT at T = p/2 on CycleWorld (p = {data['p']}, "
                f"{data['runs']} runs): error ratio difference {cmp['difference']:+.3f}, one-sided Welch "
                f"p = {cmp['welch_p_one_sided']:.3g}",
            )
            if config.full and cmp and not cmp["fpp_beats_tbptt"]
            else ()
        ),
        wall_time=time.perf_counter() - t0,
    )


def _stochastic_sizes(config: RunConfig) -> dict[str, Any]:
    if config.full:
        return {"steps": int(config.option("stochastic_steps", 3000)), "runs": 4, "lr": 0.003, "Ts": (20,)}
    return {"steps": 60, "runs": 2, "lr": 0.003, "Ts": (4,)}


def bayes_sanity(ce_ci_hi: float, bayes: float) -> bool:
    """True unless a loss is significantly below the Bayes optimum (its CI's upper end below it)."""
    return not ce_ci_hi < bayes


_LEVEL_NAMES = {"none": "no memory", "lag15": "o_(t-15) remembered", "both": "both lags remembered"}


@register("fpp.stochasticworld-reproduction")
def check_stochasticworld_reproduction(config: RunConfig) -> CheckResult:
    """FPP §5 / App. D Table 1: Stochastic World's reference cross-entropies and the learners' loss levels."""
    t0 = time.perf_counter()
    refs = stochastic_world_reference_losses()
    printed = {"none": 0.66, "lag15": 0.51, "both": 0.46}
    levels_ok = all(abs(refs[k] - v) < 0.01 for k, v in printed.items())  # the paper: "about" these values
    not_rounded = {k: v for k, v in printed.items() if abs(round(refs[k], 2) - v) > 1e-9}
    data = stochasticworld_reproduction(generator=config.generator(salt=71), **_stochastic_sizes(config))
    bayes = refs["both"]
    sane = all(bayes_sanity(r["final_ce_ci"][1], bayes) for r in data["results"].values())
    # control: an oracle that sees y_t (logit +-10) must break the Bayes sanity bound
    oracle = float(np.log1p(np.exp(-20.0)))
    controls = (Control("oracle predictor that sees the target", "FAIL", "PASS" if bayes_sanity(oracle, bayes)
                        else "FAIL", f"oracle CE {oracle:.2e} vs Bayes {bayes:.3f}"),)  # fmt: skip
    ok = levels_ok and sane and all(c.ok for c in controls)
    res_txt = ", ".join(
        f"{k}: {v['final_ce_mean']:.3f} [{v['final_ce_ci'][0]:.3f}, {v['final_ce_ci'][1]:.3f}]"
        for k, v in data["results"].items()
    )
    return CheckResult(
        claim_id="fpp.stochasticworld-reproduction",
        verdict=Verdict.PASS if ok else Verdict.FAIL,
        summary=f"reference CE: none {refs['none']:.4f}, o_(t-15) {refs['lag15']:.4f}, both {refs['both']:.4f} "
        f"(paper 0.66/0.51/0.46: {'match' if levels_ok else 'MISMATCH'}); final-window CE over {data['runs']} runs, "
        f"{data['steps']} steps: {res_txt}" + ("" if config.full else " [ci profile: harness-size run]"),
        statistic=min(v["final_ce_mean"] for v in data["results"].values()),
        threshold=bayes,
        comparison=">=",
        seed=config.seed,
        samples_used=data["runs"],
        controls=controls,
        data={**data, "figures": stochasticworld_figures(data)},
        findings=tuple(
            f"§5: the Bayes cross-entropy with {_LEVEL_NAMES[k]} is {refs[k]:.4f}; the paper's 'about {v}' is within "
            f"0.01 but does not round to it ({round(refs[k], 2)})"
            for k, v in not_rounded.items()
        ),
        wall_time=time.perf_counter() - t0,
    )
