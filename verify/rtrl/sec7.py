r"""The RTRL convergence paper's §7.1-7.2 runs as sweeps: RTRL vs TBPTT under RMSprop and learning-rate schedules.

Paper: "Convergence Analysis of Real-time Recurrent Learning (RTRL) for a class of Recurrent Neural Networks"
(:data:`theory.papers.RTRL_CONVERGENCE`: preprint, 2024 or later; the author line and an arXiv id are missing from
the text used, ``seeds/rtrl-convergence-analysis.md``), §7.1 "Linear
RNNs" (eq. (7.1)-(7.3), Fig. 1-2) and §7.2 "Single-layer RNNs" (eq. (7.4)-(7.5), Fig. 3-8). The seed lost its
formulas and most of its numbers, so the constants below are **rebuilt** (chosen here, documented here):

* teacher (§7.1 eq. (7.1)-(7.3)): :math:`h_{t+1} = h_t + \Delta(-\Lambda^* h_t + B^* x_t)`, i.e. a linear RNN with
  :math:`W^* = I - \Delta\Lambda^*`, :math:`U^* = \Delta B^*`; :math:`\Lambda^* = ZZ^\top/m` (Wishart,
  m = 4n) rescaled to :math:`\lambda_{max} = 1`, so the time step Δ sets the memory: the eigenvalues of W* lie in
  :math:`[1 - \Delta, 1 - \Delta\lambda_{min}]` (Δ = :data:`DT_LINEAR` = 0.1: memory of tens of steps, longer
  than most truncations -- the regime where the paper sees TBPTT fail). Readout :math:`V^*` i.i.d. N(0, 1)
  rescaled to unit output variance; targets = teacher output + N(0, :data:`NOISE_STD`²).
* inputs: i.i.d. Gaussian :math:`x_t \sim N(0, \sigma_x^2 I)` (§7.1 "X is a vector with an i.i.d. Gaussian
  distribution"); Fig. 2 multiplies the data's standard deviation by a lost factor: :data:`SD_FACTOR` = 3 here.
* §7.2 (eq. (7.4)-(7.5)): an Elman teacher :math:`h_{t+1} = \sigma(W^* h_t + U^* x_t)` with the same W* and
  :math:`U^* = B^*/\sqrt d`; ReLU (Fig. 3-4) and tanh (Fig. 5-6) at Δ = :data:`DT_ELMAN`, tanh at the "different
  value" Δ = :data:`DT_ELMAN_B` (Fig. 7-8).
* learning (§7.1 text): a mini-batch of B parallel sequences (the gradient is their mean), RMSprop
  (:class:`RMSpropSchedule`) with an initial learning-rate magnitude η₀ reduced by a schedule (``constant``,
  ``step``: ×0.1 at half time, ``inverse``: η₀/(1 + 10 t/T)); RTRL (UORO eq. (4), the toolkit's estimator) updates
  every step; TBPTT(τ) is the online truncated estimator (gradient of ℓ_t truncated τ transitions back, an update
  every step -- the paper's per-block TBPTT is not rebuilt: the per-step form compares the gradients at the same
  update frequency).
* evaluation: the long-run loss :math:`\bar L` (eq. (1.3)) on :data:`EVAL_SEQUENCES` fresh sequences of
  :data:`EVAL_LENGTH` steps, the first :data:`EVAL_BURN_IN` excluded, at evenly spaced checkpoints.
* the readout-only floor: :math:`\min_{V,c}\bar L` with the student's cell frozen at θ₀ (least squares on the
  evaluation set). A learner whose recurrent parameters do not move -- the negative control, RTRL without
  :math:`\partial F/\partial\theta` -- cannot end below it, by construction.

One run (:func:`run_cell`) is one learner at one (η₀, schedule, τ) on one seed's teacher, data and θ₀; runs on the
same seed share teacher, data and θ₀ (paired comparisons). :func:`design` lists a sweep's runs at a scale.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any

import torch

from verify.errors import InvalidArgument
from verify.estimators.base import OnlineEstimator
from verify.estimators.online import run_online
from verify.model.cells import ElmanCell, LinearCell
from verify.model.losses import LinearReadout, SquaredError
from verify.model.problem import Problem

__all__ = [
    "DT_ELMAN",
    "DT_ELMAN_B",
    "DT_LINEAR",
    "EVAL_BURN_IN",
    "EVAL_LENGTH",
    "EVAL_SEQUENCES",
    "LEARNERS",
    "NOISE_STD",
    "SCALES",
    "SCHEDULES",
    "SD_FACTOR",
    "SIZES",
    "TEACHERS",
    "RMSpropSchedule",
    "Run",
    "Scale",
    "constants",
    "design",
    "group_name",
    "min_wins",
    "readout_floor",
    "run_cell",
    "sign_test",
    "tabulate",
    "teacher",
]

#: rebuilt constants (the seed lost them; see the module docstring)
DT_LINEAR = 0.1
DT_ELMAN = 0.1
DT_ELMAN_B = 0.3
SD_FACTOR = 3.0
NOISE_STD = 0.1
WISHART_FACTOR = 4
EVAL_SEQUENCES, EVAL_LENGTH, EVAL_BURN_IN = 32, 800, 200
RMS_DECAY, RMS_EPS = 0.99, 1e-8
INIT_SCALE = 0.1
#: teacher name -> (cell kind, Δ)
TEACHERS: dict[str, tuple[str, float]] = {
    "linear": ("linear", DT_LINEAR),
    "elman-relu": ("relu", DT_ELMAN),
    "elman-tanh": ("tanh", DT_ELMAN),
    "elman-tanh-b": ("tanh", DT_ELMAN_B),
}
SCHEDULES = ("constant", "step", "inverse")
#: ``broken-rtrl``: the negative control, RTRL without ∂F/∂θ (mutant ``rtrl.no-immediate-term``)
LEARNERS = ("rtrl", "tbptt", "broken-rtrl")
SCALES = ("ci", "full", "paper")


@dataclass(frozen=True)
class RMSpropSchedule:
    r"""RMSprop (Tieleman & Hinton 2012) with a learning-rate schedule (the paper's §7.1 optimiser, rebuilt).

    .. math:: v_t = \rho v_{t-1} + (1-\rho)\,g_t^2,\qquad
              \theta_{t+1} = \theta_t - \eta_t\, g_t / (\sqrt{v_t} + \epsilon)

    with :math:`\eta_t` = η₀ (``constant``), η₀ for t ≤ T/2 then η₀/10 (``step``), η₀/(1 + 10 t/T) (``inverse``).
    """

    lr: float
    schedule: str
    steps: int
    decay: float = RMS_DECAY
    eps: float = RMS_EPS

    def __post_init__(self) -> None:
        if not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0):
            raise InvalidArgument("lr", self.lr, "a finite number > 0")
        if self.schedule not in SCHEDULES:
            raise InvalidArgument("schedule", self.schedule, f"must be one of {SCHEDULES}")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1:
            raise InvalidArgument("steps", self.steps, "an integer >= 1")

    def step_size(self, t: int) -> float:
        if self.schedule == "constant":
            return float(self.lr)
        if self.schedule == "step":
            return float(self.lr if t <= self.steps // 2 else self.lr / 10)
        return float(self.lr / (1.0 + 10.0 * t / self.steps))

    def init(self, theta: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(theta)

    def update(self, theta: torch.Tensor, grad: torch.Tensor, v: Any, t: int) -> tuple[torch.Tensor, Any]:
        v = self.decay * v + (1 - self.decay) * grad * grad
        return theta - self.step_size(t) * grad / (v.sqrt() + self.eps), v


@dataclass(frozen=True)
class Run:
    """One run of a §7 sweep: a learner at (η₀, schedule, τ) on seed ``seed``'s teacher, data and θ₀."""

    teacher: str
    learner: str
    lr: float
    schedule: str
    seed: int
    steps: int
    k: int = 0  # TBPTT's truncation τ (0 for RTRL and the control)
    data_sd: float = 1.0
    n: int = 3
    d: int = 2
    batch: int = 8
    checkpoints: int = 10

    def __post_init__(self) -> None:
        if self.teacher not in TEACHERS:
            raise InvalidArgument("teacher", self.teacher, f"must be one of {sorted(TEACHERS)}")
        if self.learner not in LEARNERS:
            raise InvalidArgument("learner", self.learner, f"must be one of {LEARNERS}")
        if (self.learner == "tbptt") != (self.k >= 1):
            raise InvalidArgument("k", self.k, "TBPTT needs a truncation k >= 1, the other learners k = 0")
        RMSpropSchedule(self.lr, self.schedule, self.steps)  # validates lr, schedule, steps

    def params(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Run:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(params) - names)
        if unknown:
            raise InvalidArgument("params", unknown, f"unknown fields; known: {sorted(names)}")
        return cls(**params)

    @property
    def config(self) -> tuple[float, str]:
        """The (η₀, schedule) panel."""
        return (self.lr, self.schedule)

    def label(self) -> str:
        who = f"tbptt(k={self.k})" if self.learner == "tbptt" else self.learner
        return f"{self.teacher} sd={self.data_sd:g} {who} lr={self.lr:g} {self.schedule} seed={self.seed}"


def teacher(name: str, n: int, d: int, gen: torch.Generator) -> tuple[Problem, torch.Tensor]:
    r"""The §7.1/§7.2 teacher ``name`` (:data:`TEACHERS`): a template problem (empty sequence) and θ*.

    :math:`W^* = I - \Delta\Lambda^*`, :math:`\Lambda^* = ZZ^\top/m / \lambda_{max}` (eq. (7.3), rebuilt); linear:
    :math:`U^* = \Delta B^*`, Elman: :math:`U^* = B^*/\sqrt d`; V* rescaled to unit output variance (on N(0, I)
    inputs).
    """
    kind, dt = TEACHERS[name]
    m = WISHART_FACTOR * n
    Z = torch.randn(n, m, generator=gen, dtype=torch.float64)
    Lam = Z @ Z.T / m
    Lam = Lam / float(torch.linalg.eigvalsh(Lam)[-1])
    W = torch.eye(n, dtype=torch.float64) - dt * Lam  # eq. (7.1): an Euler step of dh = -Λ h dt + ...
    Bm = torch.randn(n, d, generator=gen, dtype=torch.float64)
    U = dt * Bm if kind == "linear" else Bm / math.sqrt(d)
    V = torch.randn(1, n, generator=gen, dtype=torch.float64)
    cell = LinearCell(n, d) if kind == "linear" else ElmanCell(n, d, kind)  # type: ignore[arg-type]
    z = torch.zeros
    P0 = Problem(cell, LinearReadout(n, 1), SquaredError(), z(1, 1, d, dtype=torch.float64),
                 z(1, 1, 1, dtype=torch.float64), z(1, n, dtype=torch.float64))  # fmt: skip
    zn, z1 = z(n, dtype=torch.float64), z(1, dtype=torch.float64)
    th = P0.layout.flatten({"cell.W": W, "cell.U": U, "cell.b": zn, "readout.V": V, "readout.c": z1})
    P = _sequences(P0, th, 1000, 16, 1.0, gen, noise=False)
    th[P0.layout["readout.V"].slice] /= float(P.targets[EVAL_BURN_IN:].std())
    return P0, th


def _sequences(
    P0: Problem, th: torch.Tensor, T: int, B: int, sd: float, gen: torch.Generator, noise: bool = True
) -> Problem:
    """B sequences of length T: i.i.d. N(0, sd² I) inputs, s₀ = 0, targets = teacher output (+ noise)."""
    x = sd * torch.randn(T, B, P0.cell.input_size, generator=gen, dtype=torch.float64)
    P = P0.with_sequence(x, torch.zeros(T, B, 1, dtype=torch.float64), torch.zeros(B, P0.n, dtype=torch.float64))
    with torch.no_grad():
        y = P.output(th, P.rollout(th)[1:])
    if noise:
        y = y + NOISE_STD * torch.randn(T, B, 1, generator=gen, dtype=torch.float64)
    return P.with_sequence(x, y)


def _loss(P: Problem, theta: torch.Tensor) -> float:
    """The long-run loss L̄ (eq. (1.3)): mean over sequences and steps after the burn-in."""
    with torch.no_grad():
        per = P.loss.pointwise(P.output(theta, P.rollout(theta)[1:]), P.targets)
    return float(per[EVAL_BURN_IN:].mean())


def readout_floor(P: Problem, theta: torch.Tensor) -> float:
    """min over the readout (V, c) of L̄ with the cell at ``theta`` (least squares on P's steps after the burn-in).

    Any learner that leaves the cell's parameters at ``theta`` ends at or above it.
    """
    with torch.no_grad():
        h = P.rollout(theta)[1:][EVAL_BURN_IN:].reshape(-1, P.n)
    X = torch.cat([h, torch.ones(h.shape[0], 1, dtype=h.dtype)], 1)
    y = P.targets[EVAL_BURN_IN:].reshape(-1, 1)
    sol = torch.linalg.lstsq(X, y, driver="gelsd").solution
    th = theta.clone()
    th[P.layout["readout.V"].slice] = sol[:-1, 0]
    th[P.layout["readout.c"].slice] = sol[-1:, 0]
    return _loss(P, th)


def constants() -> dict[str, Any]:
    """The rebuilt constants (the report's settings)."""
    return {"dt_linear": DT_LINEAR, "dt_elman": DT_ELMAN, "dt_elman_b": DT_ELMAN_B, "sd_factor": SD_FACTOR,
            "noise_std": NOISE_STD, "wishart_factor": WISHART_FACTOR, "eval_sequences": EVAL_SEQUENCES,
            "eval_length": EVAL_LENGTH, "eval_burn_in": EVAL_BURN_IN, "rmsprop_decay": RMS_DECAY,
            "rmsprop_eps": RMS_EPS, "init_scale": INIT_SCALE, "inputs": "i.i.d. N(0, sd^2 I)"}  # fmt: skip


LearnerFactory = Callable[[Run], OnlineEstimator]


def run_cell(run: Run, learner: LearnerFactory) -> dict[str, Any]:
    """Train ``run``'s learner online and return its loss curve, the floor, the initial and the teacher's loss.

    ``learner(run)`` builds the estimator for ``run.learner`` (the sweep's task passes the implementations under
    test: :func:`verify.run.sweep.tasks.sec7_learner`). A run whose iterate becomes non-finite is reported
    ``diverged`` (a result, not an error), its loss then +inf.
    """
    gen = torch.Generator().manual_seed(1_000_003 * run.seed + 17 * sorted(TEACHERS).index(run.teacher) + 1)
    P0, th_star = teacher(run.teacher, run.n, run.d, gen)
    Ptrain = _sequences(P0, th_star, run.steps, run.batch, run.data_sd, gen)
    Peval = _sequences(P0, th_star, EVAL_LENGTH, EVAL_SEQUENCES, run.data_sd, gen)
    th0 = Ptrain.init_theta(torch.Generator().manual_seed(7919 * run.seed + 3), scale=INIT_SCALE)
    record = sorted({round(run.steps * i / run.checkpoints) for i in range(run.checkpoints + 1)})
    opt = RMSpropSchedule(run.lr, run.schedule, run.steps)
    t1 = time.perf_counter()
    out: dict[str, Any] = {
        "initial_loss": _loss(Peval, th0),
        "floor": readout_floor(Peval, th0),
        "teacher_loss": _loss(Peval, th_star),
        "steps": record,
    }
    try:
        res = run_online(learner(run), Ptrain, th0, opt, torch.Generator().manual_seed(0), record=record)
        losses = [_loss(Peval, th) for th in res.thetas]
        out["diverged"] = None
    except InvalidArgument as exc:  # non-finite estimate or iterate: divergence is a result
        losses, out["diverged"] = [math.inf] * len(record), str(exc)
    out["loss"] = [x if math.isfinite(x) else math.inf for x in losses]
    out["final"] = out["loss"][-1]
    out["seconds"] = time.perf_counter() - t1
    return out


@dataclass(frozen=True)
class Scale:
    """A §7 sweep's size: seeds, steps, sizes, η₀ grid, schedules, truncations."""

    seeds: int
    steps: int
    n: int
    d: int
    batch: int
    lrs: tuple[float, ...]
    schedules: tuple[str, ...]
    ks: tuple[int, ...]
    checkpoints: int = 10


SIZES: dict[str, Scale] = {
    "ci": Scale(seeds=5, steps=1000, n=3, d=2, batch=8, lrs=(1e-2,), schedules=("step",), ks=(2, 8)),
    # a reduced paper-like grid (``--scale full``): what fits a few minutes on two cores; labelled as reduced
    "full": Scale(
        seeds=5,
        steps=2000,
        n=4,
        d=3,
        batch=16,
        lrs=(3e-3, 3e-2),
        schedules=("constant", "inverse"),
        ks=(1, 5, 20),
        checkpoints=10,
    ),
    "paper": Scale(
        seeds=10,
        steps=20_000,
        n=4,
        d=3,
        batch=16,
        lrs=(1e-3, 3e-3, 1e-2, 3e-2),
        schedules=SCHEDULES,
        ks=(1, 5, 10, 20, 50),
        checkpoints=40,
    ),
}


def design(section: str, scale: str | Scale, seed: int = 0, control: bool = True) -> list[Run]:
    """The runs of ``rtrl-sec71`` (``section="7.1"``: linear teacher, data sd 1 and :data:`SD_FACTOR`) or
    ``rtrl-sec72`` (``"7.2"``: Elman ReLU, tanh, tanh at Δ = :data:`DT_ELMAN_B`) at ``scale`` (a name of
    :data:`SIZES` or a :class:`Scale`); seeds ``seed .. seed + seeds - 1``; ``control`` adds the broken-RTRL runs."""
    if not isinstance(scale, Scale) and scale not in SIZES:
        raise InvalidArgument("--scale", scale, f"the rtrl-sec7 sweeps take one of {tuple(SIZES)}")
    if section not in ("7.1", "7.2"):
        raise InvalidArgument("section", section, "must be '7.1' or '7.2'")
    sz = scale if isinstance(scale, Scale) else SIZES[scale]
    groups = (
        [("linear", 1.0), ("linear", SD_FACTOR)]
        if section == "7.1"
        else [("elman-relu", 1.0), ("elman-tanh", 1.0), ("elman-tanh-b", 1.0)]
    )
    learners = [("rtrl", 0), *[("tbptt", k) for k in sz.ks]] + ([("broken-rtrl", 0)] if control else [])
    common = {"steps": sz.steps, "n": sz.n, "d": sz.d, "batch": sz.batch, "checkpoints": sz.checkpoints}
    return [
        Run(t, who, lr, sch, s, k=k, data_sd=sd, **common)
        for t, sd in groups
        for s in range(seed, seed + sz.seeds)
        for lr in sz.lrs
        for sch in sz.schedules
        for who, k in learners
    ]


# ------------------------------------------------------------------ tabulation (the judge decides on these)
GroupKey = tuple[str, float]


def _group(run: Run) -> GroupKey:
    return (run.teacher, run.data_sd)


def group_name(key: GroupKey) -> str:
    """``linear-sd1``, ``linear-sd3``, ``elman-relu``, ...: the group's part of a result id."""
    teacher_name, sd = key
    return f"{teacher_name}-sd{sd:g}" if teacher_name == "linear" else teacher_name


def _unstable(v: dict[str, Any]) -> bool:
    """Diverged, or ended above its initial loss."""
    return bool(v.get("diverged")) or not float(v["final"]) <= float(v["initial_loss"])


def sign_test(plus: int, minus: int) -> tuple[float, float]:
    """Exact one-sided sign-test p-values (ties dropped): P(Bin(n, 1/2) >= plus), P(Bin(n, 1/2) <= plus)."""
    n = plus + minus
    upper = sum(math.comb(n, j) for j in range(plus, n + 1)) / 2**n
    lower = sum(math.comb(n, j) for j in range(0, plus + 1)) / 2**n
    return upper, lower


def min_wins(n: int, alpha: float) -> int | None:
    """The fewest favourable seeds out of n that the one-sided sign test calls significant at ``alpha``."""
    for k in range(n + 1):
        if sign_test(k, n - k)[0] <= alpha:
            return k
    return None


def tabulate(
    runs: list[Run], values: dict[Run, dict[str, Any]], rtrl_learner: str = "rtrl"
) -> dict[GroupKey, dict[str, Any]]:
    """Per group (teacher, data sd): paired per-seed statistics of ``rtrl_learner`` against every TBPTT(τ).

    For seed s: ``learned`` -- the learner's best final loss over the (η₀, schedule) panels is below the
    readout-only floor; ``win`` -- the fraction of panels (η₀, schedule, τ) where its final loss is below TBPTT(τ)'s
    at the same (η₀, schedule) (a tie, e.g. both diverged, counts 1/2); the log loss ratios log(L_TBPTT/L_RTRL)
    (diverged = +inf). Also the instability table: per panel, the seeds on which TBPTT(τ) and the learner were
    unstable (diverged or ended above the initial loss). ``rtrl_learner="broken-rtrl"`` tabulates the control.
    """
    out: dict[GroupKey, dict[str, Any]] = {}
    for key in sorted({_group(r) for r in runs}):
        mine = [r for r in runs if _group(r) == key and r in values]
        seeds = sorted({r.seed for r in mine})
        configs = sorted({r.config for r in mine})
        ks = sorted({r.k for r in mine if r.learner == "tbptt"})
        at = {(r.learner, r.config, r.k, r.seed): values[r] for r in mine}
        per_seed = []
        for s in seeds:
            rt = {c: at.get((rtrl_learner, c, 0, s)) for c in configs}
            finals = [float(v["final"]) for v in rt.values() if v is not None]
            floor = next((float(v["floor"]) for v in rt.values() if v is not None), math.nan)
            wins, ratios = [], []
            for c in configs:
                for k in ks:
                    a, b = rt.get(c), at.get(("tbptt", c, k, s))
                    if a is None or b is None:
                        continue
                    la, lb = float(a["final"]), float(b["final"])
                    wins.append(0.5 if la == lb else float(la < lb))
                    ratios.append(math.log(lb / la) if math.isfinite(la) and math.isfinite(lb) else None)
            per_seed.append({
                "seed": s,
                "best": min(finals) if finals else math.inf,
                "floor": floor,
                "learned": bool(finals) and min(finals) < floor,
                "win": sum(wins) / len(wins) if wins else math.nan,
                "panels": len(wins),
                "log_ratios": ratios,
            })  # fmt: skip
        unstable = []
        for c in configs:
            r_bad = [s for s in seeds if (v := at.get((rtrl_learner, c, 0, s))) is not None and _unstable(v)]
            for k in ks:
                t_bad = [s for s in seeds if (v := at.get(("tbptt", c, k, s))) is not None and _unstable(v)]
                unstable.append({"lr": c[0], "schedule": c[1], "k": k, "tbptt_unstable_seeds": t_bad,
                                 "rtrl_unstable_seeds": r_bad, "seeds": len(seeds)})  # fmt: skip
        out[key] = {"name": group_name(key), "seeds": seeds, "configs": configs, "ks": ks, "per_seed": per_seed,
                    "unstable": unstable, "curves": _curves(at, configs, ks, seeds, rtrl_learner)}  # fmt: skip
    return out


def _curves(
    at: dict[tuple[str, tuple[float, str], int, int], dict[str, Any]],
    configs: list[tuple[float, str]],
    ks: list[int],
    seeds: list[int],
    rtrl_learner: str,
) -> list[dict[str, Any]]:
    """Median over seeds of the loss at each checkpoint, per (η₀, schedule, learner); None where >= half diverged."""
    rows = []
    for c in configs:
        for who, k in [(rtrl_learner, 0), *[("tbptt", k) for k in ks], *([("broken-rtrl", 0)] if rtrl_learner ==
                       "rtrl" else [])]:  # fmt: skip
            vs = [v for s in seeds if (v := at.get((who, c, k, s))) is not None]
            if not vs:
                continue
            steps = vs[0]["steps"]
            med = []
            for i in range(len(steps)):
                col = sorted(float(v["loss"][i]) for v in vs)
                m = col[len(col) // 2] if len(col) % 2 else 0.5 * (col[len(col) // 2 - 1] + col[len(col) // 2])
                med.append(m if math.isfinite(m) else None)
            label = f"tbptt(k={k})" if who == "tbptt" else who
            rows.append({"lr": c[0], "schedule": c[1], "learner": label, "steps": steps, "median_loss": med})
    return rows
