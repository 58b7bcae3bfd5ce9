"""Check of ``uoro.influence-balancing-learning`` (claim in :mod:`theory.claims.uoro_learning`).

Tallec & Ollivier 2017, "Unbiased Online Recurrent Optimization" (arXiv:1702.05043) §4, eq. (8)-(9),
Fig. 3a: online learning of the influence-balancing parameter θ with UORO (the batched Algorithm 1 of
:func:`verify.uoro.influence_learning.uoro_runs`, tied to the UORO under test ``config.impls.uoro.uoro``
by a conformance run on the same ν) and the truncated BPTT under test (``config.impls.truncation.tbptt``).
The runs are :mod:`verify.uoro.influence_learning`'s; this module only decides.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from theory.claims.uoro_learning import CONFORMANCE_TOL, CONVERGED_LOSS
from verify.checks import register, result
from verify.config import RunConfig
from verify.errors import NotApplicable
from verify.estimators.noise import require_noise_hook
from verify.impl import build
from verify.model.builders import LabeledProblem, influence_balancing_problem
from verify.report.plots.uoro_learning import influence_learning_figures
from verify.uoro import influence_learning as il
from verify.uoro.conformance import gtilde_form, noise_law
from verify.verdict import CheckResult, Control

__all__ = ["check_influence_balancing_learning", "judge_uoro"]

_CLAIM = "uoro.influence-balancing-learning"
#: runs of each broken learner (frozen, sign-flipped) in the same tensor as UORO's runs
CONTROL_RUNS = 3


def _fifths(curve: il.Curve, window: float) -> tuple[float, float]:
    first = il.final_loss(il.Curve(curve.losses.flip(0), curve.theta, curve.diverged_at), window)
    return first, il.final_loss(curve, window)


def judge_uoro(finals: list[float]) -> tuple[bool, float]:
    """L1: the median over runs of the last-fifth online loss is below :data:`CONVERGED_LOSS`."""
    median = statistics.median(finals)
    return median < CONVERGED_LOSS, median


def _algorithm1_form(est: Any, setup: il.LearningSetup, config: RunConfig) -> None:
    """The batched runs are Algorithm 1 with random signs: a UORO of another valid form (g~ from the updated
    s~, theta~ -- Tallec & Ollivier 2017, App. A -- or Gaussian nu) is not judged against them (NotApplicable)."""
    law, how_law = noise_law(est)
    P, th = influence_balancing_problem(n=setup.n, p=setup.p, T=6, theta=setup.theta0)
    form, how = gtilde_form(est, LabeledProblem("influence-balancing", P, th), config.generator(471))
    if law != "rademacher" or form == "post-update":
        what = f"nu {law} ({how_law})" if law != "rademacher" else f"g~ in the post-update form ({how})"
        raise NotApplicable(
            _CLAIM,
            f"the reproduction's batched runs are Algorithm 1 with random signs and the UORO under test has {what}: "
            "a valid variant whose learning curve is not compared with them",
        )


@register(_CLAIM, uses=("uoro.uoro", "truncation.tbptt"))
def check_influence_balancing_learning(config: RunConfig) -> CheckResult:
    """Tallec & Ollivier §4, Fig. 3a: UORO converges (L1), TBPTT(10) moves away (L2); broken UOROs must fail L1."""
    t0 = time.perf_counter()
    setup = il.learning_setup(config.full)
    R, C = setup.runs, CONTROL_RUNS
    seeds = [config.seed * (R + 2 * C) + i for i in range(R + 2 * C)]
    est = require_noise_hook(build(config.impls.uoro.uoro, _CLAIM), _CLAIM)  # the conformance run needs a nu table
    _algorithm1_form(est, setup, config)
    conf = il.conformance(est, setup, seeds[0])  # type: ignore[arg-type]
    l0 = conf["theta"] <= CONFORMANCE_TOL and conf["loss"] <= CONFORMANCE_TOL * max(1.0, conf["loss_scale"])
    runs = il.uoro_runs(setup, seeds, factor=[1.0] * R + [0.0] * C + [-1.0] * C)
    finals = [il.final_loss(runs.curve(i), setup.window) for i in range(R + 2 * C)]
    l1, median = judge_uoro(finals[:R])
    frozen_ok, frozen_med = judge_uoro(finals[R : R + C])
    flipped_ok, flipped_med = judge_uoro(finals[R + C :])
    tb_setup = il.LearningSetup(setup.n, setup.p, setup.tbptt_steps, setup.eta, setup.k, 1, setup.theta0)
    tb = il.learning_curve(build(config.impls.truncation.tbptt, _CLAIM, setup.k), tb_setup, 0)
    tb_first, tb_last = _fifths(tb, setup.window)
    initial = 0.5 * (2.0 * (2 * setup.p - setup.n) * setup.theta0 - 1.0) ** 2  # eq. (9) at θ₀'s equilibrium
    l2 = tb_last > max(initial, tb_first)
    controls = (
        Control("UORO with its estimate zeroed (theta frozen) converges (L1)", "FAIL",
                "PASS" if frozen_ok else "FAIL", f"median last-fifth loss {frozen_med:.3g} over {C} runs"),
        Control("UORO with its estimate sign-flipped (gradient ascent) converges (L1)", "FAIL",
                "PASS" if flipped_ok else "FAIL", f"median last-fifth loss {flipped_med:.3g} over {C} runs, "
                f"{sum(d is not None for d in runs.diverged_at[R + C:])} diverged"),
    )  # fmt: skip
    criteria = [
        {"name": f"L0 the batched runs are the UORO under test (same nu, {CONFORMANCE_TOL:g})", "passed": l0,
         "detail": f"300 steps: |d theta| {conf['theta']:.2g}, max |d loss| {conf['loss']:.2g}"},
        {"name": f"L1 UORO converged: median last-fifth loss < {CONVERGED_LOSS:g}", "passed": l1,
         "detail": f"median {median:.3g} over {R} runs: " + ", ".join(f"{x:.2g}" for x in finals[:R])},
        {"name": f"L2 TBPTT(k={setup.k}) moves away: last-fifth loss > max(initial {initial:g}, first fifth)",
         "passed": l2, "detail": f"first fifth {tb_first:.3g}, last fifth {tb_last:.3g}, final theta {tb.theta:+.4g}, "
         f"diverged at step {tb.diverged_at}"},
    ]  # fmt: skip
    theta_star = il.optimum_theta(setup.n, setup.p)
    summary = (
        f"[{'full' if config.full else 'ci'}] influence balancing n={setup.n}, p={setup.p} "
        f"(theta* = {theta_star:+.4g}), "
        f"eta={setup.eta:g}/(1+sqrt t): UORO median last-fifth loss {median:.3g} over {R} runs x "
        f"{setup.steps} steps "
        f"({'converged' if l1 else 'NOT converged'}, level {CONVERGED_LOSS:g}; initial loss {initial:g}); "
        f"TBPTT(k={setup.k}) loss {tb_first:.3g} -> {tb_last:.3g} over {setup.tbptt_steps} steps, "
        f"theta {tb.theta:+.3g} "
        f"({'moves away as in the paper' if l2 else 'does NOT move away'})"
        + ("" if l0 else "; the batched UORO does NOT match the UORO under test")
    )  # fmt: skip
    passed = l0 and l1 and l2
    step = max(1, setup.steps // 200)
    data: dict[str, Any] = {
        "criteria": criteria, "seeds": seeds, "eta": setup.eta, "steps": setup.steps, "k": setup.k,
        "theta_star": theta_star, "initial_loss": initial, "conformance": conf,
        "uoro": [{"final_loss": finals[i], "theta": float(runs.theta[i]), "diverged_at": runs.diverged_at[i]}
                 for i in range(R)],
        "controls": {"frozen": finals[R : R + C], "sign_flipped": finals[R + C :]},
        "tbptt": {"first_loss": tb_first, "final_loss": tb_last, "theta": tb.theta, "diverged_at": tb.diverged_at},
        "curves": {"step": list(range(step, setup.steps + 1, step)),
                   "uoro": [runs.losses[i, step - 1 :: step].tolist() for i in range(R)],
                   "frozen": runs.losses[R, step - 1 :: step].tolist(),
                   "sign_flipped": runs.losses[R + C, step - 1 :: step].tolist(),
                   "tbptt_step": list(range(1, setup.tbptt_steps + 1, max(1, setup.tbptt_steps // 200))),
                   "tbptt": tb.losses[:: max(1, setup.tbptt_steps // 200)].tolist()},
    }  # fmt: skip
    data["figures"] = influence_learning_figures(data)
    return result(
        _CLAIM, config, t0, passed, summary, controls=controls, statistic=median, threshold=CONVERGED_LOSS,
        samples_used=R, data=data,
        findings=() if passed else (f"Fig. 3a not reproduced at these sizes: {summary}",),
    )  # fmt: skip
