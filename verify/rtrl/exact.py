r"""What ``rtrl.exact`` and ``rtrl.truncated-bptt`` compute: online estimators against float64 references.

RTRL's forward recursion (Tallec & Ollivier, arXiv:1702.05043, eq. (4); the gradient eq. (7))
is run online for frozen θ and compared with the reverse-mode influence matrices and per-step
BPTT gradients of :mod:`verify.oracles.bptt`, each error against the predicted round-off
budget of :mod:`verify.oracles.budget` and the DESIGN target :data:`TARGET`. Online TBPTT(k)
and the online truncated model (Miller & Hardt eq. (3); rtrl-convergence-analysis.md §1) are
compared with their offline references.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from verify.estimators.base import OnlineEstimator
from verify.model.builders import CELL_KINDS, LOSS_KINDS, LabeledProblem, influence_balancing_problem, random_problem
from verify.model.problem import Problem
from verify.oracles.bptt import (
    influence_matrices,
    per_step_gradients,
    tbptt_gradient,
    truncated_model_gradient,
)
from verify.oracles.budget import Conditioning, conditioning, pair_unit, roundoff_budget

__all__ = [
    "TARGET",
    "Case",
    "SuiteSetup",
    "budgets",
    "compare_rtrl",
    "compare_truncated",
    "gradient_budgets",
    "locate",
    "located_words",
    "relative_error",
    "step_hint",
    "suite",
    "target",
]

#: DESIGN.md target for RTRL vs BPTT (relative)
TARGET = 1e-11


#: one problem of the rtrl.exact suite (label, problem, θ)
Case = LabeledProblem


@dataclass(frozen=True)
class SuiteSetup:
    """The suite's size: ``full`` (bigger problems, two repetitions, every loss) and ``all_losses``."""

    full: bool = False
    all_losses: bool = True


def suite(generator: torch.Generator, setup: SuiteSetup) -> list[Case]:
    """Every cell kind × loss, a batched GRU and an influence-balancing problem; bigger under ``full``.

    With ``all_losses=False`` (and not ``full``) each cell kind gets one loss, alternating.
    """
    n, d, T, k = (6, 3, 40, 3) if setup.full else (3, 2, 8, 2)
    reps = 2 if setup.full else 1
    cases = []
    for rep in range(reps):
        for i, kind in enumerate(CELL_KINDS):
            losses = LOSS_KINDS if setup.all_losses or setup.full else (LOSS_KINDS[i % 2],)
            for loss in losses:
                P, th = random_problem(kind, n=n, d=d, T=T, k=k, loss=loss, generator=generator)
                cases.append(Case(f"{kind}/{loss}/{rep}", P, th))
    P, th = random_problem("gru", n=n, d=d, T=T, k=k, loss="cross-entropy", batch=(2,), generator=generator)
    cases.append(Case("gru/cross-entropy/batch2", P, th))
    P, th = influence_balancing_problem(n=5, p=2, T=T, theta=0.5)
    cases.append(Case("influence-balancing(n=5,p=2)", P, th))
    return cases


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """‖a − b‖ / ‖b‖ (0 when both are 0, inf when only b is)."""
    den = float(torch.linalg.vector_norm(b))
    num = float(torch.linalg.vector_norm(a - b))
    return num / den if den > 0 else (0.0 if num == 0 else math.inf)


def _run_rtrl(est: OnlineEstimator, case: Case, samples: int = 2) -> tuple[torch.Tensor | None, torch.Tensor]:
    """Per-step influence (sample 0; None without ``influence_estimate``) and gradients (last sample)."""
    P, th = case.problem, case.theta
    rng = torch.Generator().manual_seed(0)
    state = est.init(P, th, rng, samples=samples)
    influence = getattr(est, "influence_estimate", None)
    infl, grads = [], []
    for t in range(1, P.T + 1):
        state, g = est.step(P, th, state, t, rng)
        if influence is not None:
            infl.append(influence(P, state)[0])
        grads.append(g[-1])
    return (torch.stack(infl) if influence is not None else None), torch.stack(grads)


def locate(est: torch.Tensor, ref: torch.Tensor, problem: Problem, budget: float) -> dict[str, Any]:
    """Where an estimate (T, ..., p) first leaves its reference: the first step t (1-based) whose error
    ‖est_t − ref_t‖ exceeds ``budget`` times ‖ref‖ (the scale :func:`relative_error` judges by), and at that step
    the error of each parameter block of θ's layout (``cell.W``, ``cell.U``, ``cell.b`` ...) on the same scale,
    the largest named. Empty when no step leaves the budget."""
    scale = max(float(torch.linalg.vector_norm(ref)), 1e-300)
    diff = (est - ref).reshape(est.shape[0], -1, problem.p)
    per_step = torch.linalg.vector_norm(diff, dim=(1, 2)) / scale
    over = torch.nonzero(per_step > budget)
    if over.numel() == 0:
        return {}
    t = int(over[0, 0])
    by_step = {
        e.name: [float(v) / scale for v in torch.linalg.vector_norm(diff[..., e.slice], dim=(1, 2))]
        for e in problem.layout.entries
    }
    blocks = {name: errs[t] for name, errs in by_step.items()}
    worst = max(blocks, key=lambda name: blocks[name])
    return {
        "first_step": t + 1,
        "block": worst,
        "block_errors": blocks,
        "step_error": float(per_step[t]),
        "budget": budget,
        "by_step": by_step,  # per block, the error at every step t = 1..T (same scale): the figure's lines
    }


def target(dtype: torch.dtype = torch.float64) -> float:
    """The DESIGN target of the judged precision: :data:`TARGET` for float64; none (inf) for float32, judged by its
    predicted budget alone (:mod:`verify.impl.precision`)."""
    return TARGET if dtype == torch.float64 else math.inf


def budgets(cond: Conditioning, dtype: torch.dtype = torch.float64) -> tuple[float, float]:
    r"""The predicted round-off budgets (influence, gradient) of an implementation computing in ``dtype`` against the
    float64 reference: :math:`C\,u\,m\,T\,\kappa` with u = :func:`~verify.oracles.budget.pair_unit` (float64:
    the usual float64 budgets)."""
    u = pair_unit(dtype)
    return (
        roundoff_budget(u, cond.depth, cond.steps, cond.kappa_influence),
        roundoff_budget(u, cond.depth, cond.steps, cond.kappa_grad),
    )


def compare_rtrl(rtrl: Callable[[], OnlineEstimator], case: Case, dtype: torch.dtype = torch.float64) -> dict[str, Any]:
    """RTRL built by ``rtrl()`` against the float64 references on one case (influence only where it exposes one),
    judged by the budget of an implementation computing in ``dtype`` (:func:`budgets`, :func:`target`); where the
    gradients leave their budget, :func:`locate` says at which step first and in which parameter block."""
    I_est, G_est = _run_rtrl(rtrl(), case)
    cond = conditioning(case.problem, case.theta)
    G_ref = per_step_gradients(case.problem, case.theta)
    e_g = relative_error(G_est, G_ref)
    b_i, b_g = budgets(cond, dtype)
    goal = target(dtype)
    e_i = math.nan if I_est is None else relative_error(I_est, influence_matrices(case.problem, case.theta))
    ok = (I_est is None or e_i <= min(b_i, goal)) and e_g <= min(b_g, goal)
    where = {} if e_g <= min(b_g, goal) else locate(G_est, G_ref, case.problem, min(b_g, goal))
    return {
        "where": where,
        "problem": case.label,
        "influence_error": e_i,
        "influence_budget": b_i,
        "gradient_error": e_g,
        "gradient_budget": b_g,
        "ratio": max(e_i / b_i if I_est is not None else 0.0, e_g / b_g),
        "passed": ok,
    }


def _online(est: OnlineEstimator, P: Problem, th: torch.Tensor) -> torch.Tensor:
    rng = torch.Generator().manual_seed(0)
    state = est.init(P, th, rng, samples=2)
    out = []
    for t in range(1, P.T + 1):
        state, g = est.step(P, th, state, t, rng)
        out.append(g[-1])
    return torch.stack(out)


def compare_truncated(
    tbptt: Callable[[int], OnlineEstimator],
    truncated_model: Callable[[int], OnlineEstimator],
    k: int,
    case: Case,
    budget: float,
) -> dict[str, Any]:
    """Online ``tbptt(k)`` and ``truncated_model(k)`` against their offline references on one case."""
    P, th = case.problem, case.theta
    e_tb = relative_error(_online(tbptt(k), P, th), tbptt_gradient(P, th, k, which="per_step"))
    G_tm = _online(truncated_model(k), P, th)
    e_tm = max(
        relative_error(G_tm.sum(0), truncated_model_gradient(P, th, k, which="total")),
        relative_error(G_tm[-1], truncated_model_gradient(P, th, k, which="final")),
    )
    return {
        "problem": case.label,
        "k": k,
        "tbptt_error": e_tb,
        "truncated_model_error": e_tm,
        "budget": budget,
        "passed": e_tb <= budget and e_tm <= budget,
    }


def gradient_budgets(cases: list[Case], dtype: torch.dtype = torch.float64) -> list[float]:
    """The predicted round-off budget of each case's gradients (:mod:`verify.oracles.budget`, no influence), for an
    implementation computing in ``dtype`` against the float64 reference."""
    u = pair_unit(dtype)
    out = []
    for c in cases:
        cond = conditioning(c.problem, c.theta, with_influence=False)
        out.append(roundoff_budget(u, cond.depth, cond.steps, cond.kappa_grad))
    return out


def located_words(located: dict[str, Any] | None) -> str:
    """Where a wrong gradient first shows (:func:`verify.rtrl.exact.locate`): the step and the parameter block."""
    if located is None:
        return ""
    w = located["where"]
    return (
        f"; the gradient first leaves its budget at step t = {w['first_step']} of {located['problem']}, "
        f"largest in the block {w['block']} ({w['block_errors'][w['block']]:.2e} of the gradient's norm)"
        + step_hint(int(w["first_step"]))
    )


def step_hint(first_step: int) -> str:
    r"""Which part of RTRL the first wrong step points at (Tallec & Ollivier 2017, eq. (4):
    :math:`J_t = \partial F/\partial s\,J_{t-1} + \partial F/\partial	heta`, with :math:`J_0 = 0`): at t = 1 the
    influence is :math:`\partial F/\partial	heta` alone, so a wrong first step is the immediate Jacobian, the
    readout or the loss gradient; a first wrong step t ≥ 2 after exact ones is where the recurrence enters (from
    t = 2) or a step-dependent quantity -- a pointer to read the code at, not a proof."""
    if first_step == 1:
        return (
            " (at t = 1 the influence is dF/dtheta alone, J_0 = 0: look at the immediate Jacobian dF/dtheta, "
            "the readout or the loss gradient)"
        )
    return (
        f" (steps before t = {first_step} agree, dF/dtheta at t = 1 included: look at the recurrence "
        "J_t = dF/ds J_(t-1) + dF/dtheta, which enters from t = 2, or at what changes with t)"
    )
