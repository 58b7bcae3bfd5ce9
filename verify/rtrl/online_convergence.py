r"""What ``rtrl.online-convergence`` computes: the rebuilt §7.1-7.2 experiments of the RTRL convergence analysis.

rtrl-convergence-analysis.md §2.3 (eq. (2.26), Assumption 2.14 steps) on §7.1 (linear) and
§7.2 (Elman tanh) data: a teacher of the student's form (:func:`teacher`), stable AR(1)
inputs (:func:`sequences`), online training of the student by an estimator (RTRL, after
Tallec & Ollivier arXiv:1702.05043 eq. (4); TBPTT(k) baselines; the control) with
Robbins–Monro steps (:func:`online_curve`), and the long-run loss :math:`\bar L`, its
gradient and the Gauss–Newton stationarity δ evaluated in float64 on fresh sequences
(:func:`longrun`, :func:`stationarity`).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from verify._func import forward_mode_ready
from verify.errors import InvalidArgument, NotApplicable
from verify.estimators.base import OnlineEstimator
from verify.estimators.online import RobbinsMonroSGD, run_online
from verify.model.cells import ElmanCell, LinearCell
from verify.model.losses import LinearReadout, SquaredError
from verify.model.problem import Problem
from verify.report.plots.rtrl import online_convergence_figures
from verify.stats.binomial import clopper_pearson_upper
from verify.verdict import CheckResult

__all__ = [
    "AR_COEF",
    "BURN_IN",
    "CI_STEPS",
    "CLIP",
    "EVAL_LENGTH",
    "EVAL_SEQUENCES",
    "FULL_STEPS",
    "INIT_SCALE",
    "NOISE_STD",
    "STEP0",
    "STEP_T0",
    "TRAIN_SEQUENCES",
    "WISHART_FACTOR",
    "ConvergenceSetup",
    "Stationarity",
    "TrialParts",
    "calibrate",
    "convergence_runs",
    "convergence_setup",
    "convergence_trial",
    "euclidean_reduction",
    "longrun",
    "longrun_gradient",
    "natural_reduction",
    "online_curve",
    "report_data",
    "sequences",
    "stationarity",
    "teacher",
    "trial_summary",
]

#: constants of the rebuilt §7.1-7.2 experiments (see theory/claims/rtrl.py)
AR_COEF = 0.9
NOISE_STD = 0.1
WISHART_FACTOR = 4
BURN_IN = 100
STEP0 = 0.1  # a_0 of the Robbins–Monro steps (per mean-over-sequences gradient)
STEP_T0 = 50.0  # t_0 of the Robbins–Monro steps, in steps (both profiles)
CLIP = 0.05  # largest update norm (acts in the transient only)
INIT_SCALE = 0.1  # student init: Problem.init_theta(scale=0.1), small random recurrent weights
CI_STEPS, FULL_STEPS = 1000, 2000
EVAL_SEQUENCES, EVAL_LENGTH = 64, 600
TRAIN_SEQUENCES = 16  # parallel training sequences (the online gradient is their mean)


def _ar_inputs(T: int, B: int, d: int, gen: torch.Generator) -> torch.Tensor:
    """Stable Gaussian AR(1) inputs x_{t+1} = a x_t + sqrt(1 - a²) ξ_t (stationary N(0, I))."""
    x = torch.empty(T, B, d, dtype=torch.float64)
    xt = torch.randn(B, d, generator=gen, dtype=torch.float64)
    c = math.sqrt(1 - AR_COEF**2)
    for t in range(T):
        xt = AR_COEF * xt + c * torch.randn(B, d, generator=gen, dtype=torch.float64)
        x[t] = xt
    return x


def teacher(kind: str, n: int, d: int, gen: torch.Generator) -> tuple[Problem, torch.Tensor]:
    r"""A teacher of the student's form (rtrl-convergence-analysis.md §7.1-7.2, constants chosen here).

    :math:`\Lambda^* = ZZ^\top/m` (Wishart, m = 4n), :math:`\Delta = 1/\lambda_{max}(\Lambda^*)`,
    :math:`W^* = I - \Delta\Lambda^*` (an Euler step of :math:`dh = -\Lambda^* h\,dt + \dots`,
    eigenvalues in [0, 1)); linear: :math:`U^* = \Delta B^*`; Elman tanh: :math:`U^* = B^*/\sqrt d`;
    :math:`V^*` standard normal rescaled to unit output variance; no biases.
    Returns a template problem (empty sequence) and θ*.
    """
    m = WISHART_FACTOR * n
    Z = torch.randn(n, m, generator=gen, dtype=torch.float64)
    Lam = Z @ Z.T / m
    delta = 1.0 / float(torch.linalg.eigvalsh(Lam)[-1])
    W = torch.eye(n, dtype=torch.float64) - delta * Lam
    Bm = torch.randn(n, d, generator=gen, dtype=torch.float64)
    U = delta * Bm if kind == "linear" else Bm / math.sqrt(d)
    V = torch.randn(1, n, generator=gen, dtype=torch.float64)
    cell = LinearCell(n, d) if kind == "linear" else ElmanCell(n, d, "tanh")
    z = torch.zeros
    P0 = Problem(
        cell,
        LinearReadout(n, 1),
        SquaredError(),
        z(1, 1, d, dtype=torch.float64),
        z(1, 1, 1, dtype=torch.float64),
        z(1, n, dtype=torch.float64),
    )
    th = P0.layout.flatten(
        {
            "cell.W": W,
            "cell.U": U,
            "cell.b": z(n, dtype=torch.float64),
            "readout.V": V,
            "readout.c": z(1, dtype=torch.float64),
        }
    )
    P = sequences(P0, th, 1000, 16, gen, noise=False)
    with torch.no_grad():
        y = P.targets[BURN_IN:]
    th[P0.layout["readout.V"].slice] /= float(y.std())
    return P0, th


def sequences(P0: Problem, th: torch.Tensor, T: int, B: int, gen: torch.Generator, noise: bool = True) -> Problem:
    """B fresh sequences of length T from the teacher θ (s₀ = 0, targets = teacher output + noise)."""
    d, n = P0.cell.input_size, P0.n
    x = _ar_inputs(T, B, d, gen)
    P = P0.with_sequence(x, torch.zeros(T, B, 1, dtype=torch.float64), torch.zeros(B, n, dtype=torch.float64))
    with torch.no_grad():
        y = P.output(th, P.rollout(th)[1:])
    if noise:
        y = y + NOISE_STD * torch.randn(T, B, 1, generator=gen, dtype=torch.float64)
    return P.with_sequence(x, y)


def longrun(P: Problem, theta: torch.Tensor, burn_in: int = BURN_IN) -> tuple[float, torch.Tensor]:
    r"""Long-run loss :math:`\bar L = \mathrm{mean}_{b,\,t > burn}\,\ell_t` (eq. (1.3)) and its float64 BPTT gradient.

    The mean runs over the sequences of the batch and the steps after ``burn_in``.
    """
    th = theta.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        per = P.loss.pointwise(P.output(th, P.rollout(th)[1:]), P.targets)  # (T, B)
        loss = per[burn_in:].mean()
        (g,) = torch.autograd.grad(loss, th)
    return float(loss.detach()), g.detach()


def longrun_gradient(P: Problem, theta: torch.Tensor, burn_in: int = BURN_IN) -> torch.Tensor:
    """The gradient part of :func:`longrun`."""
    return longrun(P, theta, burn_in)[1]


class Stationarity(NamedTuple):
    """Long-run loss, its gradient and the squared natural-gradient norm at one θ (see :func:`stationarity`)."""

    loss: float
    grad: torch.Tensor
    natural: float


def stationarity(P: Problem, theta: torch.Tensor, burn_in: int = BURN_IN) -> Stationarity:
    r"""Long-run loss :math:`\bar L`, its gradient, and its squared norm in the Gauss–Newton metric.

    For the squared error, with residuals :math:`r` of the N = |B|·(T − burn) outputs after the
    burn-in and :math:`J = \partial y/\partial\theta` (N × p, forward mode, float64):
    :math:`\bar L = \|r\|^2/2N`, :math:`\nabla\bar L = J^\top r/N`, and the Gauss–Newton matrix
    (the Fisher information of the Gaussian model) :math:`G = J^\top J/N`. Then

    .. math::
        \delta(\theta) = \nabla\bar L^\top G^{+}\,\nabla\bar L
                       = \frac1N\,\big\|J (J^\top J)^{+} J^\top r\big\|^2 ,

    twice the loss decrease that a full Gauss–Newton step predicts. :math:`\delta = 0` exactly at
    the stationary points (:math:`\nabla\bar L` lies in the range of G), and
    :math:`\|\nabla\bar L\|^2 \le \lambda_{max}(G)\,\delta`, so :math:`\delta \to 0` forces
    :math:`\nabla\bar L \to 0` (rtrl-convergence-analysis.md eq. (2.26)'s conclusion). Unlike
    :math:`\|\nabla\bar L\|` it does not depend on the parametrization: the recurrent sensitivities
    of a student with long memory (spectral radius near 1) amplify :math:`\nabla\bar L` and J
    alike. The projection is computed by least squares (``gelsd``), which handles the rank
    deficiency of J (e.g. the similarity invariance of a linear RNN).
    """
    if not isinstance(P.loss, SquaredError):
        raise InvalidArgument("problem.loss", type(P.loss).__name__, "the Gauss–Newton metric needs SquaredError")
    th = theta.detach().to(torch.float64)

    def outputs(w: torch.Tensor) -> torch.Tensor:
        return P.output(w, P.rollout(w)[1:])[burn_in:]  # (T - burn, *B, k)

    forward_mode_ready()
    J = torch.func.jacfwd(outputs)(th).reshape(-1, th.numel())
    with torch.no_grad():
        r = (outputs(th) - P.targets[burn_in:]).reshape(-1)
    N = r.numel() // P.readout.output_size  # number of loss terms (steps × sequences)
    x = torch.linalg.lstsq(J, r.unsqueeze(1), driver="gelsd").solution
    natural = float((J @ x).pow(2).sum()) / N
    return Stationarity(float(r.pow(2).sum()) / (2 * N), (J.T @ r) / N, natural)


def online_curve(
    make: Callable[[], OnlineEstimator],
    Ptrain: Problem,
    Peval: Problem,
    th0: torch.Tensor,
    record: Sequence[int],
    cell_slice: slice,
    start: Stationarity | None = None,
    natural: bool = True,
) -> dict[str, Any]:
    """Run ``make()`` online on ``Ptrain`` (SGD, Robbins–Monro steps) and evaluate the long run at ``record``.

    ``start`` is the evaluation at θ₀ when it is already known (step 0 is then not re-evaluated).
    With ``natural=False`` only the loss and the Euclidean gradient are evaluated (report data).
    """
    B = Ptrain.batch_shape[0]
    opt = RobbinsMonroSGD(STEP0 / B, t0=STEP_T0, power=1.0, clip=CLIP)
    t1 = time.perf_counter()
    try:
        run = run_online(make(), Ptrain, th0, opt, torch.Generator().manual_seed(0), record=record)
    except NotApplicable:
        raise
    except Exception as exc:  # divergence is a result, reported as such
        return {"diverged": f"{type(exc).__name__}: {exc}", "steps": list(record)}
    evals: list[Stationarity] = []
    for step, th in zip(run.steps, run.thetas, strict=True):
        if step == 0 and start is not None:
            evals.append(start)
        elif natural:
            evals.append(stationarity(Peval, th))
        else:
            loss, g = longrun(Peval, th)
            evals.append(Stationarity(loss, g, math.nan))
    return {
        "steps": list(run.steps),
        "loss": [e.loss for e in evals],
        "grad_norm": [float(torch.linalg.vector_norm(e.grad)) for e in evals],
        "cell_grad_norm": [float(torch.linalg.vector_norm(e.grad[cell_slice])) for e in evals],
        "natural": [e.natural for e in evals],
        "seconds": time.perf_counter() - t1,
    }


def natural_reduction(curve: dict[str, Any]) -> float:
    r""":math:`\delta(\theta_0)/\delta(\theta_T)` (0 when the run diverged)."""
    if "diverged" in curve:
        return 0.0
    d = curve["natural"]
    return float(d[0] / d[-1]) if d[-1] > 0 else math.inf


def euclidean_reduction(curve: dict[str, Any]) -> float:
    r"""The earlier statistic: Euclidean :math:`\|\nabla\bar L(\theta_0)\|/\|\nabla\bar L(\theta_T)\|`.

    The minimum of the ratio over all parameters and over the cell block (0 when the run diverged).
    """
    if "diverged" in curve:
        return 0.0
    g, c = curve["grad_norm"], curve["cell_grad_norm"]
    return float(min(g[0] / g[-1], c[0] / c[-1]))


@dataclass(frozen=True)
class ConvergenceSetup:
    """The experiment's instances: teachers × seeds, T online steps, the checkpoints, TBPTT's k, sizes."""

    teachers: Sequence[str]
    seeds: Sequence[int]
    T: int
    record: Sequence[int]
    ks: Sequence[int] = ()
    n: int = 3
    d: int = 2
    B: int = TRAIN_SEQUENCES


def convergence_setup(full: bool) -> ConvergenceSetup:
    """``full``: linear and Elman-tanh teachers, three seeds, 2000 steps, 10 checkpoints, TBPTT k = 1, 5.

    Otherwise (``ci``): the linear teacher, one seed, 1000 steps, the first and last step recorded.
    """
    T = FULL_STEPS if full else CI_STEPS
    return ConvergenceSetup(
        teachers=("linear", "elman-tanh") if full else ("linear",),
        seeds=(0, 1, 2) if full else (0,),
        T=T,
        record=list(range(0, T + 1, T // 10)) if full else [0, T],
        ks=(1, 5) if full else (),
    )


def report_data(runs: dict[str, dict[str, Any]], setup: ConvergenceSetup, criteria: dict[str, float]) -> dict[str, Any]:
    """The check's data: the runs, its ``criteria`` (factors), the experiment's constants and the figures.

    Constants: T, burn-in, training and evaluation sequences, the Robbins–Monro steps, the clip, the init scale.
    """
    return {
        "runs": runs,
        **criteria,
        "steps": setup.T,
        "burn_in": BURN_IN,
        "train_sequences": TRAIN_SEQUENCES,
        "eval_sequences": EVAL_SEQUENCES,
        "eval_length": EVAL_LENGTH,
        "step0": STEP0,
        "step_t0": STEP_T0,
        "clip": CLIP,
        "init_scale": INIT_SCALE,
        "figures": online_convergence_figures(runs, setup.T),
    }


class TrialParts(NamedTuple):
    """The estimators a trial trains: ``rtrl()``, ``tbptt(k)`` and the control's (None: no control run)."""

    rtrl: Callable[[], OnlineEstimator]
    tbptt: Callable[[int], OnlineEstimator]
    control: Callable[[], OnlineEstimator] | None


def convergence_trial(
    parts: TrialParts, generator: torch.Generator, init_generator: torch.Generator, kind: str, setup: ConvergenceSetup
) -> dict[str, Any]:
    """One teacher/student instance of ``rtrl.online-convergence``: RTRL, TBPTT(k) baselines and the control.

    ``generator`` draws the teacher and the training and evaluation sequences, ``init_generator``
    the student's θ₀.
    """
    n, d, B, T, record = setup.n, setup.d, setup.B, setup.T, setup.record
    gen = generator
    P0, th_star = teacher(kind, n, d, gen)
    Ptrain = sequences(P0, th_star, T, B, gen)
    Peval = sequences(P0, th_star, EVAL_LENGTH, EVAL_SEQUENCES, gen)
    th0 = Ptrain.init_theta(init_generator, scale=INIT_SCALE)
    cells = slice(0, P0.layout["readout.V"].offset)
    at_star = stationarity(Peval, th_star)
    at0 = stationarity(Peval, th0)
    ends = [0, T]
    out: dict[str, Any] = {
        "teacher_spectral_radius": float(torch.linalg.eigvals(P0.layout.unflatten(th_star)["cell.W"]).abs().max()),
        "teacher_loss": at_star.loss,
        "floor_at_teacher": float(torch.linalg.vector_norm(at_star.grad)),
        "natural_floor_at_teacher": at_star.natural,
        "rtrl": online_curve(parts.rtrl, Ptrain, Peval, th0, record, cells, at0),
    }
    for k in setup.ks:
        out[f"tbptt(k={k})"] = online_curve(
            functools.partial(parts.tbptt, k), Ptrain, Peval, th0, ends, cells, at0, natural=False
        )
    if parts.control is not None:
        out["control"] = online_curve(parts.control, Ptrain, Peval, th0, ends, cells, at0)
    out["reduction"] = natural_reduction(out["rtrl"])
    out["euclidean_reduction"] = euclidean_reduction(out["rtrl"])
    if parts.control is not None:
        out["control_reduction"] = natural_reduction(out["control"])
        out["control_euclidean_reduction"] = euclidean_reduction(out["control"])
    return out


def convergence_runs(
    parts: TrialParts, generators: Callable[[int], torch.Generator], setup: ConvergenceSetup
) -> dict[str, dict[str, Any]]:
    """Every teacher × seed, ``"<kind>/seed<j>" -> trial``; the control runs on the first seed only.

    ``generators(salt)`` gives the generators: salt 40 + 10 j + i draws teacher i's data for
    seed j, salt 50 + 10 j + i the student's θ₀.
    """
    runs: dict[str, dict[str, Any]] = {}
    for i, kind in enumerate(setup.teachers):
        for j in setup.seeds:
            trial_parts = parts if j == setup.seeds[0] else parts._replace(control=None)
            gen, init = generators(40 + 10 * j + i), generators(50 + 10 * j + i)
            runs[f"{kind}/seed{j}"] = convergence_trial(trial_parts, gen, init, kind, setup)
    return runs


def trial_summary(label: str, out: dict[str, Any], ks: Sequence[int]) -> str:
    """One trial in words: δ and ‖∇L̄‖ before -> after, the loss vs the teacher's, TBPTT's ‖∇L̄‖, the control's."""
    r = out["rtrl"]
    tb = "".join(
        f"; TBPTT-{k} ||∇L̄|| "
        + ("diverged" if "diverged" in out[f"tbptt(k={k})"] else f"{out[f'tbptt(k={k})']['grad_norm'][-1]:.2e}")
        for k in ks
    )
    ctl = (
        f"; control δ x{out['control_reduction']:.2f} (||∇L̄|| x{out['control_euclidean_reduction']:.2f})"
        if "control_reduction" in out
        else ""
    )
    return (
        f"{label}: δ {r['natural'][0]:.2e} -> {r['natural'][-1]:.2e} (x{out['reduction']:.1f}), "
        f"||∇L̄|| {r['grad_norm'][0]:.2e} -> {r['grad_norm'][-1]:.2e} (x{out['euclidean_reduction']:.1f}), "
        f"loss {r['loss'][-1]:.4f} vs teacher {out['teacher_loss']:.4f}{tb}{ctl}"
    )


def _calibration_rows(run: Callable[[int], CheckResult], seeds: Sequence[int]) -> list[dict[str, Any]]:
    rows = []
    for seed in seeds:
        t1 = time.perf_counter()
        res = run(seed)
        for label, out in res.data["runs"].items():
            rows.append(
                {
                    "seed": seed,
                    "run": label,
                    "verdict": str(res.verdict),
                    "rtrl": out.get("reduction", 0.0),
                    "rtrl_euclidean": out.get("euclidean_reduction", 0.0),
                    "control": out.get("control_reduction"),
                    "control_euclidean": out.get("control_euclidean_reduction"),
                    "seconds": time.perf_counter() - t1,
                }
            )
    return rows


def calibrate(
    run: Callable[[int], CheckResult], seeds: Sequence[int], profile: str, factor: float, euclidean_factor: float
) -> dict[str, Any]:
    """The check ``run(seed)`` over ``seeds``: false-fail rate of correct RTRL, catch rate of the control.

    A false fail is an RTRL run below ``factor``; a control miss is a control run at or above it.
    Both rates come with one-sided 95 % Clopper–Pearson bounds (:mod:`verify.stats.binomial`);
    the old Euclidean criterion's (``euclidean_factor``) false fails are counted on the same runs.
    """
    rows = _calibration_rows(run, seeds)
    n = len(rows)
    ctl = [r for r in rows if r["control"] is not None]
    false_fails = sum(float(r["rtrl"]) < factor for r in rows)
    old_false_fails = sum(float(r["rtrl_euclidean"]) < euclidean_factor for r in rows)
    misses = sum(float(r["control"]) >= factor for r in ctl)
    return {
        "profile": profile,
        "runs": n,
        "factor": factor,
        "false_fails": false_fails,
        "false_fail_upper95": clopper_pearson_upper(false_fails, n),
        "euclidean_false_fails": old_false_fails,
        "controls": len(ctl),
        "control_misses": misses,
        "control_catch_lower95": 1.0 - clopper_pearson_upper(misses, len(ctl)) if ctl else math.nan,
        "rtrl_min": min(float(r["rtrl"]) for r in rows),
        "control_max": max(float(r["control"]) for r in ctl) if ctl else math.nan,
        "rows": rows,
    }
