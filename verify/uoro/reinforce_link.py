r"""REINFORCE on the state-perturbed RNN and UORO (Cooijmans & Martens 2019, "A link to REINFORCE": the Taylor
expansion of :math:`L_t\bar w_t`): with the baseline the difference to UORO is O(σ), without it the variance grows
as 1/σ² (:class:`verify.estimators.reinforce.Reinforce`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from verify.model.problem import Problem
from verify.oracles.algorithm1 import step_jacobians
from verify.oracles.bptt import per_step_gradients
from verify.stats import log_mean_with_se, squared_errors
from verify.stats.rates import RateFit, fit_rate

__all__ = ["reinforce_fits"]


def reinforce_fits(
    problem: Problem,
    theta: torch.Tensor,
    estimators: Sequence[tuple[float, Any, Any]],
    draws: int,
    gen: torch.Generator,
    level: float,
) -> tuple[RateFit, RateFit, list[dict[str, Any]]]:
    """Fits of log RMS(R − U) and of log E‖R − g‖² (no baseline) on log σ over ``estimators`` (σ, with baseline,
    without baseline: samplers like :class:`~verify.estimators.reinforce.Reinforce`), ``draws`` coupled draws
    (same u) each from ``gen``, CIs at ``level``; and the table per σ.
    """
    jac = step_jacobians(problem, theta)
    g = per_step_gradients(problem, theta).sum(0)
    xs, yd, sd, yv, sv, rows = [], [], [], [], [], []
    for s, with_baseline, without in estimators:
        R, U = with_baseline.sample(problem, theta, draws, gen, jac)
        Rn, _ = without.sample(problem, theta, draws, gen, jac)
        d = ((R - U) ** 2).sum(1)
        u2 = float(((U - g) ** 2).sum(1).mean())
        ld, se_d = log_mean_with_se(d)
        lv, se_v = log_mean_with_se(squared_errors(Rn, g))
        xs.append(math.log(s))
        yd.append(0.5 * ld)  # log RMS difference
        sd.append(0.5 * se_d)
        yv.append(lv)
        sv.append(se_v)
        rows.append(
            {
                "sigma": s,
                "rms_diff_over_rms_uoro": math.exp(0.5 * ld) / math.sqrt(u2),
                "var_no_baseline": math.exp(lv),
                "var_uoro": u2,
                "mean_bias_baseline": float((R.mean(0) - g).norm() / g.norm()),
            }
        )
    return fit_rate(xs, yd, errors="wls", se=sd, level=level), fit_rate(xs, yv, errors="wls", se=sv, level=level), rows
