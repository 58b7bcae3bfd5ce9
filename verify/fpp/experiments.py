r"""The FPP experiments behind the checks: Thm 1 on a fixed buffer, Thm 2's penalty path, Prop. 2.

Each function returns plain measurements (numbers, lists); the verdicts and
thresholds live in :mod:`verify.checks.fpp`. Paper: ``fpp-explicit-state-variables.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.func import grad, hessian

from theory.fpp_sgd import bound_coefficients, stationarity_bound
from verify._func import forward_mode_ready
from verify.errors import AssumptionViolated, InvalidArgument
from verify.fpp.kkt import (
    MultiplierFn,
    PathPoint,
    constraint_jacobian,
    kkt_path,
    lagrangian,
    lemma1_multipliers,
    rnn_gradient,
    solve_rnn_stationary,
)
from verify.fpp.objective import (
    FPPObjective,
    FPPVariables,
    SampleGradFn,
    eq7_gradients,
    flatten_variables,
    objective,
    per_sample_gradients,
    unflatten_variables,
)
from verify.fpp.problems import teacher_buffer
from verify.fpp.sgd import SGDTrace, projected_sgd
from verify.model.builders import CELL_KINDS, random_problem
from verify.model.problem import Problem
from verify.stats.rates import fit_rate, loglog_fit, mean_interval

__all__ = [
    "KKTSetup",
    "Prop2Setup",
    "StationaritySetup",
    "batch_floor_fit",
    "first_violation",
    "kkt_experiment",
    "kkt_instance",
    "kkt_measurements",
    "per_sample_variance",
    "prop2_numeric",
    "prop2_rows",
    "roundoff_tolerance",
    "solve_path",
    "stationarity_experiment",
]


# ============================================================== Thm 1 (stationarity)
@dataclass(frozen=True)
class StationaritySetup:
    """Sizes of the Thm 1 experiment (see :func:`stationarity_experiment`)."""

    n: int = 24
    k: int = 1
    T: int = 1
    lam: float = 1.0
    noise: float = 0.3
    radius_factor: float = 1.1
    steps: int = 400
    replicates: int = 16
    batches: tuple[int, ...] = (1, 4, 16)
    head: int = 32
    stride: int = 4
    D_safety: float = 1.5
    pilot_steps: int = 200


def per_sample_variance(obj: FPPObjective, x: torch.Tensor, sample_grad: SampleGradFn = eq7_gradients) -> torch.Tensor:
    r"""Exact :math:`\mathbb{E}_k\|\nabla L_k(x) - \nabla L(x)\|^2` over k ~ uniform{T..n} (Lemma 4's variance)."""
    G = per_sample_gradients(obj, unflatten_variables(obj, x), sample_grad)
    return ((G - G.mean(0)) ** 2).sum(-1).mean()


def _hessian_norm(obj: FPPObjective, x: torch.Tensor) -> float:
    forward_mode_ready()
    H = hessian(lambda xx: objective(obj, unflatten_variables(obj, xx)))(x)
    return float(torch.linalg.eigvalsh(0.5 * (H + H.T)).abs().max())


def stationarity_experiment(
    setup: StationaritySetup,
    generator: torch.Generator,
    sample_grad: SampleGradFn = eq7_gradients,
    *,
    check_premise: bool = True,
) -> dict[str, Any]:
    r"""Projected SGD eq. (9) on a fixed buffer: E‖G(x_R)‖² vs N for full batch and batches m.

    Instance: a realizable buffer with noise (:func:`~verify.fpp.problems.teacher_buffer`,
    Elman-tanh), eq. (6) with the given T and λ, the start = a random student's
    rollout, the ball radius ``radius_factor``·‖x₁‖ (so Γ is active: without it the
    FPP objective has no minimiser -- inflating W drives it to 0 -- and no global
    Lipschitz constant). D is ``D_safety`` × the largest Hessian norm seen on a
    projected gradient-descent pilot run, α = 1/(2D); the run's own iterates are
    checked against D afterwards (premise). Raises
    :class:`~verify.errors.AssumptionViolated` if a visited Hessian exceeds D (with
    ``check_premise=False`` the measured norms are only reported, in ``premise_ok``).
    """
    tb = teacher_buffer(k=setup.k, n=setup.n, noise=setup.noise, generator=generator)
    obj = FPPObjective(tb.problem, setup.T, setup.lam)
    theta0 = tb.problem.init_theta(generator)
    start = obj.rollout_variables(theta0, torch.zeros(setup.k, dtype=torch.float64))
    x1 = flatten_variables(start)
    radius = setup.radius_factor * float(torch.linalg.vector_norm(x1))
    D, pilot_norms = _pilot_curvature(obj, start, x1, radius, setup, generator)
    alpha = 1.0 / (2 * D)
    trace = projected_sgd(
        obj, start, steps=setup.steps, step_size=alpha, radius=radius, generator=generator,
        batches=(None, *setup.batches), replicates=setup.replicates, sample_grad=sample_grad,
        head=setup.head, stride=setup.stride, snapshot_every=max(1, setup.steps // 4),
    )  # fmt: skip
    visited, sigma2 = _visited_premise(obj, trace, D, check_premise)
    gap = float(objective(obj, start))  # L(x_1) - L*, with L* >= 0
    A, B = (float(c) for c in bound_coefficients(projected=True))
    configs = _stationarity_configs(trace, setup, D, gap, sigma2)
    return {
        "instance": f"{tb.problem.describe()}; FPP T={setup.T}, lambda={setup.lam}, buffer n={setup.n}, "
        f"noise {setup.noise}",
        "D": D,
        "alpha": alpha,
        "radius": radius,
        "x1_norm": float(torch.linalg.vector_norm(x1)),
        "gap": gap,
        "sigma2": sigma2,
        "A": A,
        "B": B,
        "visited_hessian_norms": visited,
        "premise_ok": max(visited) <= D,
        "pilot_hessian_norms": pilot_norms,
        "configs": configs,
        "steps": setup.steps,
        "replicates": setup.replicates,
        "stride": setup.stride,
        "head": setup.head,
    }


def _pilot_curvature(
    obj: FPPObjective, start: FPPVariables, x1: torch.Tensor, radius: float, setup: StationaritySetup,
    generator: torch.Generator,
) -> tuple[float, list[float]]:  # fmt: skip
    """D = ``D_safety`` x the largest Hessian norm on a projected gradient-descent pilot run; the norms seen."""
    h0 = _hessian_norm(obj, x1)
    pilot = projected_sgd(
        obj, start, steps=setup.pilot_steps, step_size=1.0 / (2 * setup.D_safety * h0), radius=radius,
        generator=generator, batches=(None,), head=1, stride=setup.pilot_steps,
        snapshot_every=max(1, setup.pilot_steps // 8),
    )  # fmt: skip
    pilot_norms = [_hessian_norm(obj, xs[0]) for xs in pilot.snapshots] + [h0]
    return setup.D_safety * max(pilot_norms), pilot_norms


def _visited_premise(obj: FPPObjective, trace: SGDTrace, D: float, check_premise: bool) -> tuple[list[float], float]:
    """Thm 1's premise: the visited iterates' Hessian norms (<= D, else raise) and the variance sigma^2 over them."""
    snaps = trace.snapshots.reshape(-1, obj.size)
    pick = torch.linspace(0, snaps.shape[0] - 1, min(12, snaps.shape[0])).round().long()
    visited = [_hessian_norm(obj, snaps[i]) for i in pick.tolist()]
    sigma2 = max(float(per_sample_variance(obj, snaps[i])) for i in pick.tolist())
    if max(visited) > D and check_premise:
        raise AssumptionViolated(
            "Thm 1: alpha = 1/(2D) with D a Lipschitz constant of grad L on the visited region",
            max(visited),
            f"a visited iterate has Hessian norm {max(visited):.4g} > D = {D:.4g}",
        )
    return visited, sigma2


def _stationarity_configs(
    trace: SGDTrace, setup: StationaritySetup, D: float, gap: float, sigma2: float
) -> list[dict[str, Any]]:
    """Per batch configuration (full batch first): E||G(x_R)||^2 on a log grid of N, the bound, fits, the floor."""
    horizons = trace.valid_horizons()
    grid = sorted({min(horizons, key=lambda h: abs(math.log(h) - math.log(v))) for v in
                   np.geomspace(setup.head, setup.steps, 10)})  # fmt: skip
    labels = trace.batch.tolist()
    second_half = [t for t in range(setup.steps) if t >= setup.steps // 2 and float(trace.weight[t]) > 0]
    return [
        _stationarity_config(trace, setup, b, [r for r, lab in enumerate(labels) if lab == b], grid, second_half,
                             (D, gap, sigma2))
        for b in (0, *setup.batches)
    ]  # fmt: skip


def _stationarity_config(
    trace: SGDTrace, setup: StationaritySetup, b: int, cols: list[int], grid: list[int], second_half: list[int],
    constants: tuple[float, float, float],
) -> dict[str, Any]:  # fmt: skip
    """One batch size ``b`` (0 = full batch) over its replicate columns ``cols``: a row of ``configs``."""
    D, gap, sigma2 = constants
    per_rep = np.array([[float(v) for v in trace.expected_measure(N)[cols]] for N in grid])  # (len(grid), K)
    means = per_rep.mean(1)
    cis = [mean_interval(row) for row in per_rep] if len(cols) > 1 else [(m, m, m) for m in means]
    m_eff = math.inf if b == 0 else float(b)
    bounds = [stationarity_bound(D, gap, sigma2, N, m_eff) for N in grid]
    last = [j for j, N in enumerate(grid) if N >= setup.steps / 10]
    if len(cols) > 1:
        fit = bootstrap_loglog_fit([grid[j] for j in last], per_rep[last], np.random.default_rng(0))
    else:
        fit = loglog_fit([grid[j] for j in last], means[last])
    floor_rows = trace.measure[second_half][:, cols]
    floor_rep = floor_rows.mean(0).numpy()
    floor = mean_interval(floor_rep) if len(cols) > 1 else (float(floor_rep[0]),) * 3
    return {
        "batch": "full" if b == 0 else b,
        "replicates": len(cols),
        "N": grid,
        "mean": means.tolist(),
        "ci_lo": [c[1] for c in cis],
        "ci_hi": [c[2] for c in cis],
        "bound": bounds,
        "violations": [j for j in range(len(grid)) if cis[j][1] > bounds[j]],
        "last_decade_slope": fit,
        "floor": {"mean": floor[0], "ci_lo": floor[1], "ci_hi": floor[2]},
        "projection_active_fraction": float(trace.active[:, cols].double().mean()),
    }


def bootstrap_loglog_fit(
    x: Sequence[float], samples: np.ndarray, rng: np.random.Generator, level: float = 0.95, resamples: int = 2000
) -> dict[str, float]:
    """Slope of log10(mean over replicates) against log10 x, with the percentile interval of resampled replicates.

    ``samples`` has shape (len(x), K): the points share their K replicates, so an OLS interval would
    ignore their correlation; resampling the replicates (columns) does not (:func:`verify.stats.rates.fit_rate`,
    ``errors="bootstrap"``).
    """
    K = samples.shape[1]
    cols = rng.integers(0, K, (resamples, K))
    y_boot = np.log10(np.maximum(samples[:, cols].mean(-1), 1e-300))  # (len(x), resamples)
    lx = np.log10(np.asarray(x, dtype=float))
    return fit_rate(lx, np.log10(samples.mean(1)), errors="bootstrap", y_boot=y_boot, level=level).as_dict()


def batch_floor_fit(configs: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The log-log slope of the second-half level against the batch size m (``configs`` of
    :func:`stationarity_experiment`, full batch first); None with fewer than 3 batch sizes."""
    sgd = configs[1:]
    ms = [c["batch"] for c in sgd]
    floors = [c["floor"]["mean"] for c in sgd]
    return loglog_fit(ms, floors) if len(ms) >= 3 else None


def first_violation(
    setups: Sequence[StationaritySetup],
    generator: torch.Generator,
    sample_grad: SampleGradFn = eq7_gradients,
) -> tuple[int, dict[str, Any]]:
    """The experiment at each of ``setups`` in turn, every one from ``generator``'s present state (it is not
    advanced), until the full-batch bound breaks; the steps of the last one run and its data.

    The harness of a negative control: a broken ``sample_grad`` must break the 1/N bound, and more steps can only
    show more of its plateau. The premise on D is reported, not raised (``check_premise=False``).
    """
    if not setups:
        raise InvalidArgument("setups", setups, "need at least one setup")
    for setup in setups:
        gen = torch.Generator()
        gen.set_state(generator.get_state())
        data = stationarity_experiment(setup, gen, sample_grad, check_premise=False)
        if data["configs"][0]["violations"]:
            break
    return setup.steps, data


# ============================================================== Thm 2 (KKT recovery)
_U = torch.finfo(torch.float64).eps / 2  # unit round-off of float64


@dataclass(frozen=True)
class KKTSetup:
    """Sizes of the Thm 2 experiment: a k=1 Elman-tanh teacher with noise, n ≫ the 6 RNN parameters."""

    n: int = 40
    noise: float = 0.1
    input_gain: float = 4.0
    lams: tuple[float, ...] = tuple(10 ** (1 + 0.5 * j) for j in range(11))
    draws: int = 10
    min_curvature: float = 1e-3


def roundoff_tolerance(lam: float, states: torch.Tensor) -> float:
    r"""The stopping tolerance of a penalty solve: :math:`\max(10^{-10}, 8 u \lambda \|S\|_F)`.

    :math:`\nabla L_\lambda` contains :math:`\lambda(s_i - \hat s_i)`; each entry is a
    difference of O(‖s‖) numbers, so its evaluation carries a round-off of about
    :math:`u\lambda|s|` that no solver can go below: in float64 ‖∇L_λ‖ ≤ 1e-10 is
    unattainable for λ ≳ 10⁵ (measured floor ≈ 3e-10 at λ = 10⁶).
    """
    return max(1e-10, 8 * _U * lam * float(torch.linalg.vector_norm(states)))


def kkt_instance(
    setup: KKTSetup, generator: torch.Generator
) -> tuple[Problem, torch.Tensor, torch.Tensor, dict[str, Any]]:
    """A realizable buffer and a strict, well-conditioned minimiser (W*, β*, s₀*) of eq. (10), by Newton to 1e-10.

    Draws up to ``setup.draws`` teachers until the RNN solve converges to a point
    whose Hessian has smallest eigenvalue ≥ ``min_curvature`` · n (per-sample
    curvature). Positive definiteness makes the point a strict local minimiser,
    so the penalty path converges to it; the margin is needed because along
    weakly curved directions the curvature of eq. (11) is about λ_min(∇²E)/n while
    the float64 round-off of ∇L_λ grows like uλ‖S‖, and below 1e-3 the path is
    not resolved up to λ = 10⁶ (the iterates stall at the round-off floor). Raises
    :class:`AssumptionViolated` when no draw qualifies.
    """
    tried: list[str] = []
    for _ in range(setup.draws):
        tb = teacher_buffer(k=1, n=setup.n, noise=setup.noise, input_gain=setup.input_gain, generator=generator)
        th, s0, res = solve_rnn_stationary(tb.problem, tb.theta, tb.s0, tol=1e-10, max_iter=25)
        ok = res.converged and res.eig_min >= setup.min_curvature * setup.n
        tried.append(f"|grad E|={res.grad_norm:.1e}, Hessian eig [{res.eig_min:.2e}, {res.eig_max:.2e}]")
        if ok:
            info = {"rnn_grad_norm": res.grad_norm, "rnn_hessian_eig": [res.eig_min, res.eig_max], "draws": tried}
            return tb.problem, th, s0, info
    raise AssumptionViolated(
        "Thm 2 experiment: a strict, well-conditioned local minimiser of the RNN objective (10)",
        tried,
        f"no drawn instance gave a converged RNN solve with Hessian eigenvalues >= {setup.min_curvature} n",
    )


def kkt_measurements(
    problem: Problem,
    theta: torch.Tensor,
    s0: torch.Tensor,
    path: Sequence[PathPoint],
    multiplier_target: MultiplierFn = lemma1_multipliers,
) -> dict[str, Any]:
    """Thm 2 quantities along the path: residual, ‖∇E‖, multiplier error, distance to the start, σ_min(∇h)."""
    n = problem.T
    states_star = problem.rollout(theta, s0)
    x_star = torch.cat([theta, states_star.reshape(-1)])
    target = multiplier_target(problem, theta, states_star)[1:] / n  # λ(s_i - ŝ_i) -> λ_i / n
    lams = [pt.lam for pt in path]
    rows = []
    for pt in path:
        x = flatten_variables(pt.variables)
        J = constraint_jacobian(problem, pt.variables)
        sv = torch.linalg.svdvals(J)
        rows.append(
            {
                "lam": pt.lam,
                "grad_norm": pt.solve.grad_norm,
                "iterations": pt.solve.iterations,
                "residual": pt.residual,
                "rnn_grad_norm": pt.rnn_grad_norm,
                "multiplier_error": float(torch.linalg.vector_norm(pt.multipliers - target)),
                "multiplier_norm": float(torch.linalg.vector_norm(target)),
                "multiplier_floor": _U * pt.lam * float(torch.linalg.vector_norm(pt.variables.states)),
                "distance": float(torch.linalg.vector_norm(x - x_star)),
                "sigma_min": float(sv[-1]),
                "sigma_max": float(sv[0]),
                "hessian_eig_min": pt.solve.eig_min,
            }
        )
    col = {key: [r[key] for r in rows] for key in rows[0]}
    # the multiplier estimate lambda (s_i - s_hat_i) carries a round-off of about u lambda ||S||: points within
    # 10x of it are at the floor and left out of the fit (DESIGN "Rates and bounds")
    above = [j for j, r in enumerate(rows) if r["multiplier_error"] >= 10 * r["multiplier_floor"]]
    return {
        "rows": rows,
        "residual_fit": loglog_fit(lams, col["residual"]),
        "multiplier_fit": loglog_fit([lams[j] for j in above], [col["multiplier_error"][j] for j in above]),
        "multiplier_fit_lams": [lams[j] for j in above],
        "rnn_grad_fit": loglog_fit(lams, col["rnn_grad_norm"]),
        "distance_fit": loglog_fit(lams, col["distance"]),
        "rnn_grad_drop": col["rnn_grad_norm"][0] / max(col["rnn_grad_norm"][-1], 1e-300),
        "sigma_min": min(col["sigma_min"]),
    }


def solve_path(problem: Problem, theta: torch.Tensor, s0: torch.Tensor, lams: Sequence[float]) -> list[PathPoint]:
    """Thm 2's path from the RNN stationary point's rollout, each solve to :func:`roundoff_tolerance`."""
    start = FPPVariables(theta.clone(), problem.rollout(theta, s0))
    path: list[PathPoint] = []
    for lam in lams:
        warm = start if not path else path[-1].variables
        tol = roundoff_tolerance(lam, warm.states)
        path += kkt_path(problem, warm, [lam], tol=tol)
    return path


def kkt_experiment(
    setup: KKTSetup, generator: torch.Generator
) -> tuple[Problem, torch.Tensor, torch.Tensor, dict[str, Any], list[PathPoint]]:
    """Thm 2's instance (:func:`kkt_instance`) and its penalty path along ``setup.lams`` (:func:`solve_path`)."""
    problem, theta, s0, info = kkt_instance(setup, generator)
    path = solve_path(problem, theta, s0, setup.lams)
    return problem, theta, s0, info, path


def unconverged_solves(rows: Sequence[Mapping[str, Any]], path: Sequence[PathPoint]) -> list[str]:
    """The penalty problems of the path whose Newton solve did not reach its tolerance (Thm 2's ε_k → 0)."""
    return [
        f"lambda={r['lam']:.1e}: |grad|={r['grad_norm']:.1e}" for r, pt in zip(rows, path, strict=True)
        if not pt.solve.converged
    ]  # fmt: skip


# ============================================================== Prop. 2 (numeric)
def prop2_numeric(
    problem: Problem,
    theta: torch.Tensor,
    s0: torch.Tensor,
    multiplier_fn: MultiplierFn = lemma1_multipliers,
) -> dict[str, float]:
    r"""At the feasible point (θ, s₀, S = rollout) with Lemma 1's multipliers, compare the KKT systems.

    Returns the relative error of :math:`(\nabla_{W,\beta}\mathcal{L}, \nabla_{s_0}\mathcal{L})` against
    :math:`\nabla E` (eq. (13)-(15) vs (17)-(18)), the size of the state equations
    :math:`\|\nabla_{s_{1..n}}\mathcal{L}\|` relative to the gradients' scale, and ‖∇E‖.
    """
    states = problem.rollout(theta, s0).detach()
    lam = multiplier_fn(problem, theta, states).detach()
    g_th, g_S = grad(lambda th, S: lagrangian(problem, FPPVariables(th, S), lam), argnums=(0, 1))(theta, states)
    lhs = torch.cat([g_th, g_S[0]])
    rhs = rnn_gradient(problem, theta, s0)
    scale = max(float(torch.linalg.vector_norm(rhs)), float(torch.linalg.vector_norm(lam)), 1e-300)
    return {
        "param_rel_error": float(torch.linalg.vector_norm(lhs - rhs)) / scale,
        "state_equations": float(torch.linalg.vector_norm(g_S[1:])) / scale,
        "rnn_grad_norm": float(torch.linalg.vector_norm(rhs)),
        "lagrangian_grad_norm": float(torch.linalg.vector_norm(torch.cat([lhs, g_S[1:].reshape(-1)]))),
        "scale": scale,
    }


@dataclass(frozen=True)
class Prop2Setup:
    """Sizes of the numeric Prop. 2 comparison: random feasible points on a buffer of ``buffer`` steps."""

    buffer: int = 8


def prop2_rows(
    setup: Prop2Setup,
    generator: torch.Generator,
    multiplier_fn: MultiplierFn,
    problem: Problem,
    path: Sequence[PathPoint],
) -> list[dict[str, Any]]:
    """:func:`prop2_numeric` at a random feasible point of every cell and at the limit point of Thm 2's ``path``
    (on ``problem``), with the multipliers ``multiplier_fn``."""
    rows: list[dict[str, Any]] = []
    for kind in CELL_KINDS:
        P, theta = random_problem(kind, n=3, d=2, T=setup.buffer, k=2, generator=generator)
        r = prop2_numeric(P, theta, P.s0, multiplier_fn)
        rows.append({"point": f"random feasible, {kind}", **r})
    last = path[-1].variables
    r = prop2_numeric(problem, last.theta, last.states[0], multiplier_fn)
    rows.append({"point": f"Thm 2 limit (lambda={path[-1].lam:.0e})", **r})
    return rows


def floor_text(res: dict[str, Any]) -> str:
    """The batch-1 variance floor and its fall with m, for the summary (empty without SGD configurations)."""
    cfgs, fit = res["data"]["configs"], res.get("floor_fit")
    if len(cfgs) <= 1:
        return ""
    b1, last, gd_level = cfgs[1], cfgs[-1], cfgs[0]["floor"]["mean"]
    s = b1["last_decade_slope"]
    return (
        f"; batch 1 at constant step: last-decade slope {s['slope']:.2f} [{s['ci_lo']:.2f}, {s['ci_hi']:.2f}] "
        f"({'CI above -0.9: NOT O(1/N), a variance floor' if res.get('floor_at_batch1') else 'no floor resolved'})"
        f", second-half level {b1['floor']['mean']:.2e} vs {gd_level:.2e} for full batch "
        f"({b1['floor']['mean'] / max(gd_level, 1e-300):.0f}x); level "
        f"{'falls' if res.get('floor_falls') else 'does NOT fall'} with m: {last['floor']['mean']:.2e} at "
        f"m={last['batch']}"
        + (f", slope vs m {fit['slope']:.2f} [{fit['ci_lo']:.2f}, {fit['ci_hi']:.2f}]" if fit else "")
    )


def stationarity_findings(res: dict[str, Any]) -> tuple[str, ...]:
    """The printed Thm 1 fails at constant step with batch 1 when the floor is resolved."""
    cfgs = res["data"]["configs"]
    if len(cfgs) <= 1 or not res.get("floor_at_batch1"):
        return ()
    s = cfgs[1]["last_decade_slope"]
    return (
        "Thm 1 as printed (E||G(x_R)||^2 = O(1/N)) fails at constant step with batch 1: the last-decade "
        f"slope is {s['slope']:.2f} [{s['ci_lo']:.2f}, {s['ci_hi']:.2f}], a variance floor; the cited result's "
        "sigma^2/m term is missing from the statement",
    )
