r"""Marschall, Cho & Savin 2020: the Add task, and the toolkit's online learners trained on it.

Paper: O. Marschall, K. Cho, C. Savin, "A Unified Framework of Online Learning Algorithms for Training Recurrent
Neural Networks", JMLR 21(135):1-34 (2020), arXiv:1907.02649 (:data:`theory.papers.MARSCHALL`). Its abstract:
"Testing these algorithms on two parametric task families shows that performances cluster according to our
criteria. Although a similar clustering is also observed for pairwise gradient alignment, alignment with exact
methods does not explain ultimate performance" (the arXiv version adds "especially for stochastic algorithms").

**The Add task** (the authors' definition, read in their public code, omarschall/vanilla-rtrl,
``gen_data/Add_Task.py``, "as inspired by Pitis 2016", r2rt.com "Recurrent neural networks in TensorFlow I"):
i.i.d. Bernoulli(1/2) inputs :math:`x_t` and a binary label :math:`y_t \sim \text{Bernoulli}(p_t)` with

.. math:: p_t = \tfrac12 + \tfrac12\,x_{t-t_1} - \tfrac14\,x_{t-t_2},

inputs and labels one-hot coded (the complement as a second dimension), a two-way softmax readout and the
cross-entropy loss. :func:`add_task` draws it (no wrap-around: the first :math:`t_2` inputs are drawn and not
scored).

**Baselines** (:func:`add_baselines`, derived here; they are Pitis's 0.66, 0.52, 0.45 nats): the expected
cross-entropy of a predictor q is :math:`H(p) + \mathrm{KL}(p\,\|\,q)` per step, so the best predictor that knows
only the information I is :math:`q = E[p \mid I]`, and its loss is :math:`E[H_b(E[p\mid I])]`:

* no memory (predict the mean): :math:`E[p] = 5/8`, loss :math:`H_b(5/8)` = 0.6616;
* memory of :math:`x_{t-t_1}` only: :math:`E[p\mid x_1] \in \{3/8, 7/8\}`, loss
  :math:`\frac12[H_b(3/8) + H_b(7/8)]` = 0.5192;
* memory of :math:`x_{t-t_2}` only: :math:`E[p\mid x_2] \in \{3/4, 1/2\}`, loss 0.6277;
* both: :math:`p \in \{1/2, 1, 1/4, 3/4\}`, loss :math:`\frac14[H_b(1/2) + 0 + 2H_b(1/4)]` = 0.4544 (the optimum).

**Learners** (:data:`LEARNERS`): the toolkit's estimators, each driving plain SGD with a constant learning rate from
the same grid, on an Elman tanh network (:class:`~verify.model.cells.ElmanCell`, the authors' leaky RNN with
:math:`\alpha = 1`, the only leak KF-RTRL's Kronecker factorisation covers): RTRL (exact), UORO, KF-RTRL (the
stochastic ones, one sample), RFLO, e-prop and SnAp-1 (deterministic approximations); the controls: ``frozen`` (its
gradient zeroed: θ never moves) and ``readout-only`` (RTRL's gradient with every cell entry zeroed: the readout
learns on a fixed random network). All learners of one realization share θ₀ and the training and test sequences
(paired comparisons).

**Measurements** of a run (:func:`run_cell`): the learning curve (the expected test loss at checkpoints, on a held-out
sequence scored with the label probabilities :math:`p_t` as soft targets -- the conditional expectation of the
Bernoulli-label loss, so the same expected value without the label noise), the final loss (the mean of the curve's
last two points),
and the alignment of the learner's update with the exact gradient along its own trajectory: an RTRL run in the
shadow of the learner, at the learner's θ, gives :math:`\partial\ell_t/\partial\theta`, and the cosine of the two
restricted to the cell's parameters (W, U, b: the readout's gradient is exact for every learner) is averaged over the
run's steps (an alignment with an exact method along training, as the paper's; its exact definition there was not
available here to check).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from verify.errors import InvalidArgument
from verify.estimators.kfrtrl import KFRTRL
from verify.estimators.local import RFLO, EProp
from verify.estimators.rtrl import RTRL
from verify.estimators.snap import SnAp
from verify.estimators.uoro import UORO
from verify.model.cells import ElmanCell
from verify.model.losses import LinearReadout, SoftmaxCrossEntropy
from verify.model.problem import Problem

__all__ = [
    "BASELINE_NAMES",
    "CONTROLS",
    "LEARNERS",
    "SIZES",
    "AddScale",
    "add_baselines",
    "add_task",
    "binary_entropy",
    "cell_learners",
    "cell_scale",
    "make_learner",
    "run_cell",
    "run_learners",
]

#: the algorithms compared (the toolkit's estimators), stochastic ones marked in :data:`STOCHASTIC`
LEARNERS = ("rtrl", "uoro", "kf-rtrl", "rflo", "eprop", "snap-1")
STOCHASTIC = ("uoro", "kf-rtrl")
#: learners that cannot learn the memory the task needs: θ frozen (gradient zeroed); the readout alone
CONTROLS = ("frozen", "readout-only")
BASELINE_NAMES = ("mean", "t2-only", "t1-only", "both")
#: a test loss above this, or not finite, is a diverged run
DIVERGED = 10.0
#: steps of the test sequence not scored (the state forgets its start)
BURN_IN = 20


def binary_entropy(p: float) -> float:
    """:math:`H_b(p) = -p\\log p - (1-p)\\log(1-p)` in nats (0 at p = 0, 1)."""
    if not 0.0 <= p <= 1.0:
        raise InvalidArgument("p", p, "must be a probability in [0, 1]")
    return -sum(q * math.log(q) for q in (p, 1.0 - p) if q > 0.0)


def add_baselines() -> dict[str, float]:
    """The expected cross-entropy (nats per step) of the best predictor with each memory (the module)."""
    H = binary_entropy
    return {
        "mean": H(5 / 8),
        "t2-only": 0.5 * (H(3 / 4) + H(1 / 2)),
        "t1-only": 0.5 * (H(3 / 8) + H(7 / 8)),
        "both": 0.25 * (H(1 / 2) + H(1.0) + H(1 / 4) + H(3 / 4)),
    }


def _check_lags(t1: int, t2: int) -> None:
    for name, v in (("t1", t1), ("t2", t2)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InvalidArgument(name, v, "must be an integer >= 1 (steps back)")
    if t2 <= t1:
        raise InvalidArgument("t2", t2, f"must exceed t1 = {t1} (the second, weaker dependency lies further back)")


def add_task(
    steps: int, t1: int, t2: int, rng: np.random.Generator, *, soft: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``steps`` steps of the Add task: inputs (steps, 2) = :math:`[x_t, 1-x_t]` and targets (steps, 2) =
    :math:`[y_t, 1-y_t]`, :math:`y_t \sim \text{Bernoulli}(p_t)` (``soft``: :math:`y_t = p_t` itself), float64."""
    _check_lags(t1, t2)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise InvalidArgument("steps", steps, "must be an integer >= 1")
    x = rng.integers(0, 2, steps + t2).astype(float)
    p = 0.5 + 0.5 * x[t2 - t1 : t2 - t1 + steps] - 0.25 * x[:steps]  # x_{t-t1}, x_{t-t2} for t = t2 .. t2+steps-1
    y = p if soft else (rng.random(steps) < p).astype(float)
    xs = x[t2:]
    X = torch.tensor(np.stack([xs, 1.0 - xs], -1), dtype=torch.float64)
    Y = torch.tensor(np.stack([y, 1.0 - y], -1), dtype=torch.float64)
    return X, Y


@dataclass(frozen=True)
class AddScale:
    """One scale of the sweep: the lags, the network size, realizations, training steps, the learning-rate grid,
    the test sequence's length and the number of checkpoints of the learning curve."""

    t1: int
    t2: int
    n: int
    realizations: int
    steps: int
    lrs: tuple[float, ...]
    test_steps: int = 1000
    checkpoints: int = 10


#: ``paper``: the sizes of the authors' published code's tests ((t1, t2) = (6, 10); the paper's own t1, t2, network
#: size and training length were not available here to check -- see the experiments table) with 32 units, 10^5
#: steps per run and a three-point learning-rate grid; ``full``: a reduced run (t1, t2 = 3, 5, 16 units, 12 000 steps,
#: learning rates 0.01 and 0.03: in a pilot RTRL went below the t1-only baseline from about 3000 steps at 0.03 and
#: diverged at 0.1 and 0.3; at 4000 steps and 0.03 alone it stayed above it in 2 of 5 realizations, two of them
#: unstable -- hence the longer run and the smaller rate); ``ci``: a seconds-long smoke run.
SIZES: dict[str, AddScale] = {
    "paper": AddScale(6, 10, 32, 9, 100_000, (0.003, 0.01, 0.03), 2000, 20),
    "full": AddScale(3, 5, 16, 5, 12_000, (0.01, 0.03), 1000, 12),
    "ci": AddScale(2, 3, 4, 2, 60, (0.1,), 100, 3),
}


def make_learner(name: str) -> Any:
    """The toolkit's estimator behind ``name`` (:data:`LEARNERS`; the controls use RTRL's gradient)."""
    table: dict[str, Any] = {
        "rtrl": RTRL(),
        "uoro": UORO(),
        "kf-rtrl": KFRTRL(),
        "rflo": RFLO(path="auto"),
        "eprop": EProp(path="auto"),
        "snap-1": SnAp(1),
        "readout-only": RTRL(label="readout-only"),
    }
    if name not in table:
        raise InvalidArgument("learner", name, f"must be one of {tuple(table)}")
    return table[name]


def _problem(X: torch.Tensor, Y: torch.Tensor, n: int) -> Problem:
    return Problem(ElmanCell(n, 2, "tanh"), LinearReadout(n, 2), SoftmaxCrossEntropy(), X, Y,
                   torch.zeros(n, dtype=torch.float64))  # fmt: skip


def _test_loss(test: Problem, theta: torch.Tensor) -> float:
    """The mean expected cross-entropy per step on the test sequence, after :data:`BURN_IN` steps."""
    with torch.no_grad():
        return float(test.losses(theta)[BURN_IN:].mean())


def _train(
    name: str, train: Problem, test: Problem, theta0: torch.Tensor, lr: float, checks: list[int], seed: int
) -> dict[str, Any]:
    """One learner's online run: SGD θ ← θ - lr ĝ_t after every step; the curve, the alignment with RTRL."""
    theta = theta0.clone()
    curve = [_test_loss(test, theta)]
    if name == "frozen":
        return {"curve": curve * (len(checks) + 1), "final": curve[0], "alignment": None,
                "diverged_at": None}  # fmt: skip
    rng = torch.Generator().manual_seed(seed)
    est = make_learner(name)
    state = est.init(train, theta, rng)
    shadow = RTRL() if name not in ("rtrl", "readout-only") else None
    sstate = shadow.init(train, theta, rng) if shadow is not None else None
    cell = train.layout["cell.b"].slice.stop  # the cell's entries come first in θ (the readout's last)
    cos_sum, cos_n = 0.0, 0
    for t in range(1, train.T + 1):
        state, g = est.step(train, theta, state, t, rng)
        g = g.mean(0)
        if name == "readout-only":
            g = torch.cat([torch.zeros(cell, dtype=g.dtype), g[cell:]])
        if shadow is not None and sstate is not None:
            sstate, g_ex = shadow.step(train, theta, sstate, t, rng)
            a, b = g[:cell], g_ex[0, :cell]  # the cell's entries: the readout's gradient is exact for every learner
            den = float(torch.linalg.vector_norm(a)) * float(torch.linalg.vector_norm(b))
            if den > 0:
                cos_sum, cos_n = cos_sum + float(a @ b) / den, cos_n + 1
        theta = theta - lr * g
        if not bool(torch.isfinite(theta).all()):
            return {"curve": curve, "final": math.inf, "alignment": None, "diverged_at": t}
        if t in checks:
            curve.append(_test_loss(test, theta))
            if not math.isfinite(curve[-1]) or curve[-1] > DIVERGED:
                return {"curve": curve, "final": math.inf, "alignment": None, "diverged_at": t}
    final = sum(curve[-2:]) / len(curve[-2:])  # the last two checkpoints: less of SGD's fluctuation
    return {"curve": curve, "final": final, "alignment": cos_sum / cos_n if cos_n else None, "diverged_at": None}


def cell_scale(scale: Any, sizes: dict[str, Any], kind: type) -> Any:
    """``scale``: a name of ``sizes`` or a ``kind`` instance (InvalidArgument naming it otherwise)."""
    sc = sizes.get(scale) if isinstance(scale, str) else scale
    if not isinstance(sc, kind):
        raise InvalidArgument("scale", scale, f"must be one of {tuple(sizes)} or an instance of {kind.__name__}")
    return sc


def cell_learners(learners: tuple[str, ...], lr: float) -> tuple[str, ...]:
    """The learners of a cell (default :data:`LEARNERS` + :data:`CONTROLS`), ``lr`` checked positive."""
    names = learners or LEARNERS + CONTROLS
    bad = [x for x in names if x not in LEARNERS + CONTROLS]
    if bad:
        raise InvalidArgument("learners", bad, f"must be among {LEARNERS + CONTROLS}")
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise InvalidArgument("lr", lr, "must be a positive number")
    return names


def run_cell(scale: str | AddScale, realization: int, lr: float, seed: int = 0,
             learners: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    """Every learner (default :data:`LEARNERS` + :data:`CONTROLS`) on one realization (θ₀, training and test
    sequences drawn from ``(seed, realization)``) at learning rate ``lr``."""
    sc = cell_scale(scale, SIZES, AddScale)
    names = cell_learners(learners, lr)
    start = time.perf_counter()
    rng = np.random.default_rng([seed, realization])
    train = _problem(*add_task(sc.steps, sc.t1, sc.t2, rng), sc.n)
    test = _problem(*add_task(sc.test_steps + BURN_IN, sc.t1, sc.t2, rng, soft=True), sc.n)
    theta0 = train.init_theta(torch.Generator().manual_seed(int(rng.integers(2**31))))
    out: dict[str, Any] = {"realization": realization, "lr": lr, "seed": seed, "t1": sc.t1, "t2": sc.t2, "n": sc.n,
                           "steps": sc.steps}  # fmt: skip
    return {**out, **run_learners(names, train, test, theta0, float(lr), sc.checkpoints, seed, start)}


def run_learners(
    names: tuple[str, ...],
    train: Problem,
    test: Problem,
    theta0: torch.Tensor,
    lr: float,
    checkpoints: int,
    seed: int,
    start: float,
) -> dict[str, Any]:
    """Every learner of ``names`` trained online on ``train`` from ``theta0`` at ``lr`` (the same θ₀ and sequences
    for all: paired comparisons), scored on ``test`` at ``checkpoints`` evenly spaced steps (:func:`_train`); the
    Add task's and the Mimic task's (:mod:`verify.rtrl.marschall_mimic`) cells alike."""
    checks = sorted({round(float(x)) for x in np.linspace(0, train.T, checkpoints + 1)[1:]})
    out: dict[str, Any] = {"curve_steps": [0, *checks], "learners": {}}
    for i, name in enumerate(names):
        t0 = time.perf_counter()
        out["learners"][name] = {**_train(name, train, test, theta0, lr, checks, seed * 1000 + i),
                                 "seconds": time.perf_counter() - t0}  # fmt: skip
    out["seconds"] = time.perf_counter() - start
    return out
