"""Check of ``uoro.influence-balancing-learning`` (claim in :mod:`theory.claims.uoro_learning`).

Tallec & Ollivier 2017 §4, Fig. 3a: online learning of the influence-balancing parameter θ with the
UORO under test (``config.impls.uoro.uoro``) and the truncated BPTT under test
(``config.impls.truncation.tbptt``). The runs are :mod:`verify.uoro.influence_learning`'s; this module
only decides.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from theory.claims.uoro_learning import CONVERGED_LOSS
from verify.checks import register, result
from verify.config import RunConfig
from verify.impl import build
from verify.uoro import influence_learning as il
from verify.verdict import CheckResult, Control

__all__ = ["check_influence_balancing_learning"]

_CLAIM = "uoro.influence-balancing-learning"


def _run_summary(curve: il.Curve, window: float) -> dict[str, Any]:
    first = il.final_loss(il.Curve(curve.losses.flip(0), curve.theta, curve.diverged_at), window)
    return {
        "final_loss": il.final_loss(curve, window),
        "first_loss": first,
        "theta": curve.theta,
        "diverged_at": curve.diverged_at,
    }


@register(_CLAIM, uses=("uoro.uoro", "truncation.tbptt"))
def check_influence_balancing_learning(config: RunConfig) -> CheckResult:
    """Tallec & Ollivier §4, Fig. 3a: UORO converges (L1), TBPTT(10) moves away (L2); a frozen UORO must fail L1."""
    t0 = time.perf_counter()
    setup = il.learning_setup(config.full)
    seeds = [config.seed * setup.runs + i for i in range(setup.runs)]
    uoro = [
        _run_summary(il.learning_curve(build(config.impls.uoro.uoro, _CLAIM), setup, s), setup.window) for s in seeds
    ]
    tb_setup = il.LearningSetup(setup.n, setup.p, setup.tbptt_steps, setup.eta, setup.k, 1, setup.theta0)
    tbptt = _run_summary(il.learning_curve(build(config.impls.truncation.tbptt, _CLAIM, setup.k), tb_setup, 0), 0.2)
    median = statistics.median(r["final_loss"] for r in uoro)
    l1 = median < CONVERGED_LOSS
    initial = 0.5 * (2.0 * (2 * setup.p - setup.n) * setup.theta0 - 1.0) ** 2  # eq. (9) at θ₀'s equilibrium
    l2 = tbptt["final_loss"] > max(initial, tbptt["first_loss"])
    # control: the same harness with UORO's estimate zeroed -- θ never moves, so L1 must fail
    c_setup = il.LearningSetup(setup.n, setup.p, setup.control_steps, setup.eta, setup.k, 1, setup.theta0)
    frozen = il.learning_curve(il.frozen(build(config.impls.uoro.uoro, _CLAIM)), c_setup, seeds[0])
    frozen_loss = il.final_loss(frozen, setup.window)
    control = Control(
        "UORO with its estimate zeroed (theta frozen) converges (L1)",
        "FAIL",
        "PASS" if frozen_loss < CONVERGED_LOSS else "FAIL",
        f"last-fifth loss {frozen_loss:.3g} (level {CONVERGED_LOSS:g})",
    )
    criteria = [
        {"name": f"L1 UORO converged: median last-fifth loss < {CONVERGED_LOSS:g}", "passed": l1,
         "detail": f"median {median:.3g} over {len(uoro)} runs: " + ", ".join(f"{r['final_loss']:.3g}" for r in uoro)},
        {"name": f"L2 TBPTT(k={setup.k}) moves away: last-fifth loss > max(initial {initial:g}, first fifth)",
         "passed": l2, "detail": f"first fifth {tbptt['first_loss']:.3g}, last fifth {tbptt['final_loss']:.3g}, "
         f"final theta {tbptt['theta']:+.4g}, diverged at step {tbptt['diverged_at']}"},
    ]  # fmt: skip
    theta_star = il.optimum_theta(setup.n, setup.p)
    summary = (
        f"[{'full' if config.full else 'ci'}] influence balancing n={setup.n}, p={setup.p} "
        f"(theta* = {theta_star:+.4g}), "
        f"eta={setup.eta:g}/(1+sqrt t): UORO median last-fifth loss {median:.3g} over {len(uoro)} runs x "
        f"{setup.steps} steps ({'converged' if l1 else 'NOT converged'}, level {CONVERGED_LOSS:g}); TBPTT(k={setup.k}) "
        f"last-fifth loss {tbptt['final_loss']:.3g} after {setup.tbptt_steps} steps "
        f"({'moves away as in the paper' if l2 else 'does NOT move away'})"
    )
    findings = [] if l1 and l2 else [f"Fig. 3a not reproduced at these sizes: {summary}"]
    return result(
        _CLAIM,
        config,
        t0,
        l1 and l2,
        summary,
        controls=(control,),
        statistic=median,
        threshold=CONVERGED_LOSS,
        samples_used=len(uoro),
        data={"criteria": criteria, "uoro": uoro, "tbptt": tbptt, "seeds": seeds, "eta": setup.eta,
              "steps": setup.steps, "k": setup.k, "theta_star": theta_star, "frozen_loss": frozen_loss},
        findings=tuple(findings),
    )  # fmt: skip
