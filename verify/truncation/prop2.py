r"""Prop. 2 of Miller & Hardt ("Stable Recurrent Models", §4, §7.1): training the recurrent and truncated models.

Projected gradient descent on w = W for the full model (:math:`p_T`) and the truncated model
of eq. (3) (:math:`p^k_T`) from the same :math:`w^0`, on the instances of §7.1 / App. A.5
(:func:`~verify.truncation.fixtures.figure1_instance`; for tanh also the same instances with U rescaled so
that tanh is not saturated), with step sizes α/t (Prop. 2), α/√t and
constant (§7.1's observation). Measured along the trajectories: δ_t = ‖w_recurr − w_trunc‖,
Lemma 2's error and Lemma 3's β; compared with Prop. 2's bound with the sympy constants on Ω
and with the constants measured on the trajectory (:func:`theory.truncation.prop2_bound`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from theory import truncation as tt
from theory.truncation import TruncationConstants
from verify.model.builders import clip_spectral_norm
from verify.model.cells import ElmanCell
from verify.model.problem import Problem
from verify.oracles.budget import projected_gd_roundoff
from verify.oracles.contraction import require_contraction, truncation_constants
from verify.truncation.fixtures import TANH_UNSATURATED, figure1_instance, tanh_saturation
from verify.truncation.instances import GradFn, final_gradient, truncated_final_gradient

__all__ = [
    "SCHEDULES",
    "Prop2Experiment",
    "Prop2Setup",
    "batched_final_gradient_W",
    "batched_gradient_errors",
    "control_measurements",
    "degenerate_reasons",
    "max_ratio",
    "mutant_delta_ratio",
    "prop2_experiment",
    "prop2_roundoff",
    "prop2_train",
    "schedule_maxima",
]


@dataclass(frozen=True)
class Prop2Setup:
    """§7.1: λ, sizes, truncation k, step α, N steps, runs; w = W (U and the readout fixed), Ω = {‖W‖₂ ≤ λ}."""

    n: int
    d: int
    T: int
    k: int
    lam: float = 0.75
    alpha: float = 0.01
    N: int = 200
    runs: int = 10


#: step-size schedules α_i: Prop. 2's α/t and the two of §7.1's observation
SCHEDULES: dict[str, Callable[[float, int], float]] = {
    "alpha/t": lambda a, i: a / i,  # Prop. 2
    "alpha/sqrt(t)": lambda a, i: a / math.sqrt(i),
    "constant": lambda a, i: a,
}


def batched_final_gradient_W(
    tanh: bool, W: torch.Tensor, U: torch.Tensor, V: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, start: int
) -> torch.Tensor:
    r""":math:`\nabla_W p_T` for a batch of Elman-tanh (``tanh=True``) or linear systems, by a hand-written BPTT.

    The model restarts from 0 at step ``start`` (0: the full model; T − k: the truncated
    model of eq. (3)); no bias, :math:`p_T = \tfrac12\|Vh_T - Y\|^2`. Shapes: W (B, n, n),
    U (B, n, d), V (B, m, n), X (B, T, d), Y (B, m). Cross-checked against
    :mod:`verify.oracles.bptt` by :func:`batched_gradient_errors` (the Prop. 2 check's positive control).
    """
    B, n = W.shape[0], W.shape[-1]
    s = torch.zeros(B, n, dtype=W.dtype)
    states = [s]
    for t in range(max(start, 0), X.shape[1]):
        a = (W @ s.unsqueeze(-1)).squeeze(-1) + (U @ X[:, t].unsqueeze(-1)).squeeze(-1)
        s = torch.tanh(a) if tanh else a
        states.append(s)
    r = (V @ s.unsqueeze(-1)).squeeze(-1) - Y
    adj = (V.transpose(-1, -2) @ r.unsqueeze(-1)).squeeze(-1)  # dp/dh_T
    gW = torch.zeros_like(W)
    for j in range(len(states) - 1, 0, -1):
        g = adj * (1 - states[j] ** 2) if tanh else adj  # dp/da_j
        gW = gW + g.unsqueeze(-1) * states[j - 1].unsqueeze(-2)
        adj = (W.transpose(-1, -2) @ g.unsqueeze(-1)).squeeze(-1)
    return gW


def _stacked(
    problems: Sequence[Problem], thetas: Sequence[torch.Tensor], S: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """U, V, W⁰, X, Y of every run, repeated for each of ``S`` schedules (batch index = schedule · R + run)."""

    def stacked(name: str) -> torch.Tensor:
        return torch.stack([P.layout.unflatten(th)[name] for P, th in zip(problems, thetas, strict=True)]).repeat(
            S, *([1] * 2)
        )

    U, V, W0 = stacked("cell.U"), stacked("readout.V"), stacked("cell.W")
    X = torch.stack([P.inputs for P in problems]).repeat(S, 1, 1)
    Y = torch.stack([P.targets[-1] for P in problems]).repeat(S, 1)
    return U, V, W0, X, Y


def _user_gradient(
    problems: Sequence[Problem], thetas: Sequence[torch.Tensor], Wt: torch.Tensor, model_gradient: GradFn, k: int
) -> torch.Tensor:
    """``model_gradient``'s W block at each batch entry's w_trunc, one call per entry."""
    R = len(problems)
    gs = []
    for j in range(Wt.shape[0]):
        P, th = problems[j % R], thetas[j % R].clone()
        th[P.layout["cell.W"].slice] = Wt[j].reshape(-1)
        gs.append(P.layout.unflatten(model_gradient(P, th, k))["cell.W"])
    return torch.stack(gs)


def prop2_train(
    problems: Sequence[Problem],
    thetas: Sequence[torch.Tensor],
    setup: Prop2Setup,
    schedules: Sequence[str] = ("alpha/t",),
    model_gradient: GradFn | None = None,
) -> dict[str, dict[str, torch.Tensor]]:
    r"""Projected gradient descent on w = W for the full (:math:`p_T`) and truncated (:math:`p^k_T`) models (Prop. 2).

    .. math:: w^i = \Pi_\Omega\big(w^{i-1} - \alpha_i\nabla p(w^{i-1})\big),\quad \Omega = \{\|W\|_2 \le \lambda\}

    (:math:`\Pi_\Omega` = singular-value clipping), both from the same :math:`w^0`. Returns, for
    each schedule, per step i and run: δ_i = ‖w^i_recurr − w^i_trunc‖ (Frobenius), the
    Lemma 2 error :math:`e_i = \|\nabla p_T(w^{i-1}_{trunc}) - \nabla p^k_T(w^{i-1}_{trunc})\|`
    (correct truncated gradient) and
    :math:`\beta_i = \|\nabla p_T(w^{i-1}_{recurr}) - \nabla p_T(w^{i-1}_{trunc})\|/\delta_{i-1}`.
    Runs and schedules are batched; ``model_gradient`` (the implementation under test's
    ``TruncationImpl.model_gradient``; ``None``: the toolkit's, computed by the batched
    hand-written BPTT) is the truncated gradient that trains w_trunc.
    """
    tanh = isinstance(problems[0].cell, ElmanCell)
    S, R = len(schedules), len(problems)
    U, V, W0, X, Y = _stacked(problems, thetas, S)
    T, k = setup.T, setup.k
    Wr, Wt = W0.clone(), W0.clone()
    deltas, es, betas = [], [], []
    d_prev = torch.zeros(S * R, dtype=torch.float64)
    for i in range(1, setup.N + 1):
        a = torch.tensor([SCHEDULES[sc](setup.alpha, i) for sc in schedules], dtype=torch.float64).repeat_interleave(R)
        a = a.view(-1, 1, 1)
        g_r = batched_final_gradient_W(tanh, Wr, U, V, X, Y, 0)
        g_tf = batched_final_gradient_W(tanh, Wt, U, V, X, Y, 0)
        g_t_ref = batched_final_gradient_W(tanh, Wt, U, V, X, Y, T - k)  # eq. (3): restart at T - k
        g_t = g_t_ref if model_gradient is None else _user_gradient(problems, thetas, Wt, model_gradient, k)
        es.append(torch.linalg.matrix_norm(g_tf - g_t_ref))
        diff = torch.linalg.matrix_norm(g_r - g_tf)
        safe = torch.where(d_prev > 0, d_prev, torch.ones_like(d_prev))
        betas.append(torch.where(d_prev > 0, diff / safe, torch.zeros_like(diff)))
        Wr = clip_spectral_norm(Wr - a * g_r, setup.lam)  # projection onto Omega
        Wt = clip_spectral_norm(Wt - a * g_t, setup.lam)
        d_prev = torch.linalg.matrix_norm(Wr - Wt)
        deltas.append(d_prev)
    D, E, Bt = torch.stack(deltas), torch.stack(es), torch.stack(betas)
    return {
        sc: {"delta": D[:, j * R : (j + 1) * R], "e": E[:, j * R : (j + 1) * R], "beta": Bt[:, j * R : (j + 1) * R]}
        for j, sc in enumerate(schedules)
    }


def prop2_roundoff(setup: Prop2Setup, steps: int) -> list[float]:
    """The round-off allowance of δ_t for Prop. 2's setup (:func:`verify.oracles.budget.projected_gd_roundoff`)."""
    return projected_gd_roundoff(setup.lam, setup.n, steps)


def max_ratio(values: Sequence[float], bounds: Sequence[float]) -> float:
    """max value/bound, with 0/0 = 0 (no truncation error, no gap) and x/0 = inf."""
    out = 0.0
    for x, b in zip(values, bounds, strict=True):
        if x > 0:
            out = max(out, x / b if b > 0 else math.inf)
    return out


def _sharp_bounds(setup: Prop2Setup, g_emp: float, b_emp: float, form: str = "sum") -> list[float]:
    """Prop. 2's bound at every step t = 1..N with the measured constants γ, β (``form``: ``sum`` or ``printed``)."""
    return [
        tt.prop2_bound(setup.alpha, g_emp, max(b_emp, 1e-300), setup.lam, setup.k, i, form)
        for i in range(1, setup.N + 1)
    ]


def _omega_constants(
    problems: Sequence[Problem], thetas: Sequence[torch.Tensor], lam: float
) -> list[TruncationConstants]:
    """Explicit constants on Ω = {‖W‖ ≤ λ} (U fixed at each run's value), one per run."""
    return [
        truncation_constants(
            P,
            th,
            trainable=("W",),
            omega=(lam, float(torch.linalg.matrix_norm(P.layout.unflatten(th)["cell.U"], ord=2))),
        )
        for P, th in zip(problems, thetas, strict=True)
    ]


def _run_record(
    setup: Prop2Setup, sched: str, r: dict[str, torch.Tensor], j: int, lemma2: float, bet: float, rho: list[float]
) -> dict[str, Any]:
    """Run ``j`` of one schedule: measured γ, β, Lemma 2/3 along the trajectory, δ_t against the bounds."""
    delta, e, beta = r["delta"], r["e"], r["beta"]
    kl = setup.k * setup.lam**setup.k
    g_emp = float((e.max(0).values / kl)[j])
    b_emp = float(beta.max(0).values[j])
    sharp = _sharp_bounds(setup, g_emp, b_emp, "sum")
    printed = _sharp_bounds(setup, g_emp, b_emp, "printed")
    alphas = [SCHEDULES[sched](setup.alpha, i) for i in range(1, setup.N + 1)]
    rec = tt.prop2_recurrence_bound(alphas, b_emp, g_emp * kl)
    d = delta[:, j].tolist()
    return {
        "gamma_emp": g_emp,
        "beta_emp": b_emp,
        "lemma2_ok": bool((e[:, j] <= torch.tensor(lemma2) * (1 + 1e-9)).all()),
        "lemma3_ok": bool(b_emp <= bet * (1 + 1e-9)),
        "max_ratio_sharp": max_ratio(d, [b + q for b, q in zip(sharp, rho, strict=True)]),
        "max_ratio_printed": max_ratio(d, [b + q for b, q in zip(printed, rho, strict=True)]),
        "max_ratio_recurrence": max_ratio(d, rec),
        "delta": d,
        "bound_sharp": sharp,
        "bound_printed": printed,
    }


def _schedule_record(
    setup: Prop2Setup, sched: str, r: dict[str, torch.Tensor], lemma2: list[float], bet: float
) -> dict[str, Any]:
    """Every run of one schedule and their summary (mean δ_t and bounds, degenerate runs)."""
    delta, e = r["delta"], r["e"]
    kl = setup.k * setup.lam**setup.k
    rho = prop2_roundoff(setup, setup.N)  # delta_t <= bound_t + rho_t: round-off is not a violation
    per_run = [_run_record(setup, sched, r, j, lemma2[j], bet, rho) for j in range(setup.runs)]
    return {
        "alpha_beta_emp_max": setup.alpha * max(x["beta_emp"] for x in per_run),
        "runs": per_run,
        # no separation at all: the truncation changes the gradient by less than one ulp of the weights
        "degenerate": bool((delta == 0).all()),
        # max_t mean delta_t / the round-off allowance: <= 1, the curve cannot be told from 0 in float64
        "roundoff_margin": max_ratio(delta.mean(1).tolist(), rho),
        "gamma_zero": all(x == 0.0 for x in (e.max(0).values / kl).tolist()),
        "max_truncation_error": float(e.max()),
        "mean_delta": delta.mean(1).tolist(),
        "mean_bound_sharp": [sum(x["bound_sharp"][i] for x in per_run) / setup.runs for i in range(setup.N)],
        "mean_bound_printed": [sum(x["bound_printed"][i] for x in per_run) / setup.runs for i in range(setup.N)],
        "delta_N": delta[-1].tolist(),
    }


@dataclass(frozen=True)
class Prop2Experiment:
    """One model kind's Prop. 2 record (JSON-ready) and the instances it trained on."""

    record: dict[str, Any]
    problems: list[Problem]
    thetas: list[torch.Tensor]


def prop2_experiment(
    kind: str, gen: torch.Generator, setup: Prop2Setup, model_gradient: GradFn | None, *, input_sd: float | None = None
) -> Prop2Experiment:
    r"""Prop. 2 on ``setup.runs`` instances of ``kind`` drawn from ``gen``, every schedule of :data:`SCHEDULES`.

    The record: the worst explicit γ and β over the runs (sympy constants on Ω), Prop. 2's
    bound with them (``log10_explicit_prop2``: :math:`\log_{10}(\alpha\gamma k\lambda^kN^{\alpha\beta+1})`)
    and, per schedule, each run's measurements (:func:`prop2_train` with ``model_gradient``
    training w_trunc; ``None``: the toolkit's batched truncated gradient) and ``instance``: ``input_sd``
    (:func:`~verify.truncation.fixtures.figure1_instance`; ``None``: App. A.5 as printed), the contraction
    certificate's largest λ (every instance must be contractive: AssumptionViolated otherwise) and the worst
    tanh saturation over the runs (:func:`~verify.truncation.fixtures.tanh_saturation`; ``saturated``: mean
    tanh' below :data:`~verify.truncation.fixtures.TANH_UNSATURATED` on some run).
    """
    insts = [
        figure1_instance(kind, setup.n, setup.d, setup.T, setup.lam, gen, input_sd=input_sd) for _ in range(setup.runs)
    ]
    problems, thetas = [p for p, _ in insts], [t for _, t in insts]
    lam_cert = max(require_contraction(P, th).lam for P, th in insts)  # Prop. 2's premise, on every instance
    sat = [tanh_saturation(P, th) for P, th in insts]
    consts = _omega_constants(problems, thetas, setup.lam)  # worst case over runs
    gam = max(tt.gamma(c) for c in consts)
    bet = max(tt.beta(c) for c in consts)
    lemma2 = [tt.gradient_bound(c, setup.k) for c in consts]
    kl = setup.k * setup.lam**setup.k
    mean_deriv = min(x["mean_derivative"] for x in sat)
    instance = {
        "input_sd": input_sd,
        "contraction_lambda": lam_cert,
        "preactivation_sd": max(x["preactivation_sd"] for x in sat),
        "mean_derivative": mean_deriv,
        "saturated_fraction": max(x["saturated_fraction"] for x in sat),
        "saturated": mean_deriv < TANH_UNSATURATED,
    }
    out: dict[str, Any] = {"gamma": gam, "beta": bet, "instance": instance, "schedules": {}}
    log_explicit = (
        math.log10(setup.alpha) + math.log10(gam) + math.log10(kl) + (setup.alpha * bet + 1) * math.log10(setup.N)
    )
    out["log10_explicit_prop2"] = log_explicit  # Prop. 2 with the sympy constants
    trained = prop2_train(problems, thetas, setup, tuple(SCHEDULES), model_gradient=model_gradient)
    for sched in SCHEDULES:
        out["schedules"][sched] = _schedule_record(setup, sched, trained[sched], lemma2, bet)
    return Prop2Experiment(out, problems, thetas)


def degenerate_reasons(name: str, record: dict[str, Any] | None) -> list[str]:
    """Why the α/t curve of the experiment ``record`` (:func:`prop2_experiment`) is no curve; [] when it is one.

    Degenerate: not run (``None``); the model's tanh saturated (mean tanh' below
    :data:`~verify.truncation.fixtures.TANH_UNSATURATED`: the truncation changes the gradient by almost
    nothing); or the mean δ_t never above the round-off allowance ρ_t (it cannot be told from 0 in float64).
    """
    if record is None:
        return [f"{name}: not run"]
    inst, margin = record["instance"], record["schedules"]["alpha/t"]["roundoff_margin"]
    out = []
    if inst["saturated"]:
        out.append(
            f"{name}: tanh saturated (mean tanh' {inst['mean_derivative']:.2g} < {TANH_UNSATURATED}, pre-activation "
            f"s.d. {inst['preactivation_sd']:.2g})"
        )
    if not margin > 1.0:
        out.append(f"{name}: delta_t never above the round-off allowance (max delta_t / rho_t = {margin:.2g})")
    return out


def batched_gradient_errors(problem: Problem, theta: torch.Tensor, setup: Prop2Setup) -> list[float]:
    """Relative errors of :func:`batched_final_gradient_W` against :mod:`verify.oracles.bptt`: full, then truncated."""
    idx = problem.layout["cell.W"].slice
    prm = problem.layout.unflatten(theta)
    args = (prm["cell.W"][None], prm["cell.U"][None], prm["readout.V"][None], problem.inputs[None])
    tanh = isinstance(problem.cell, ElmanCell)
    out = []
    refs = ((0, final_gradient(problem, theta)), (setup.T - setup.k, truncated_final_gradient(problem, theta, setup.k)))
    for start, ref in refs:
        got = batched_final_gradient_W(tanh, *args, problem.targets[-1][None], start)[0].reshape(-1)
        out.append(float(torch.linalg.vector_norm(got - ref[idx]) / torch.linalg.vector_norm(ref[idx])))
    return out


def mutant_delta_ratio(problem: Problem, theta: torch.Tensor, setup: Prop2Setup, model_gradient: GradFn) -> float:
    """max δ_t / (Prop. 2's bound with the measured constants + round-off) when ``model_gradient`` trains w_trunc."""
    rm = prop2_train([problem], [theta], replace(setup, runs=1), ("alpha/t",), model_gradient=model_gradient)["alpha/t"]
    kl = setup.k * setup.lam**setup.k
    g_emp, b_emp = float(rm["e"].max()) / kl, float(rm["beta"].max())
    sharp = _sharp_bounds(setup, g_emp, b_emp, "sum")
    rho = prop2_roundoff(setup, setup.N)  # the same allowance as the correct runs get
    return max_ratio(rm["delta"][:, 0].tolist(), [b + q for b, q in zip(sharp, rho, strict=True)])


def control_measurements(
    exps: Sequence[Prop2Experiment], setup: Prop2Setup, mutant_gradient: GradFn
) -> tuple[list[float], list[float]]:
    """On each experiment's first instance: :func:`batched_gradient_errors` and :func:`mutant_delta_ratio`.

    Returns every relative error of the batched gradients, and per experiment the mutant's
    max δ_t / bound -- nan where the correct runs show no truncation error at all (γ = 0:
    the bound is 0 and cannot tell).
    """
    conf: list[float] = []
    ratios: list[float] = []
    for e in exps:
        P, th = e.problems[0], e.thetas[0]
        conf += batched_gradient_errors(P, th, setup)
        ratio = mutant_delta_ratio(P, th, setup, mutant_gradient)
        ratios.append(math.nan if e.record["schedules"]["alpha/t"]["gamma_zero"] else ratio)
    return conf, ratios


def schedule_maxima(records: dict[str, dict[str, Any]]) -> dict[tuple[str, str], tuple[float, float]]:
    """§7.1's observation: per (model kind, other schedule) the max over runs of δ_t / the α/t bound (sum, printed)."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for kind, r in records.items():
        for sched in ("alpha/sqrt(t)", "constant"):
            rr = r["schedules"][sched]["runs"]
            out[(kind, sched)] = (max(x["max_ratio_sharp"] for x in rr), max(x["max_ratio_printed"] for x in rr))
    return out
