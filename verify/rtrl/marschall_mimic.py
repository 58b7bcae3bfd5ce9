r"""Marschall, Cho & Savin 2020: the Mimic task, and the toolkit's online learners trained on it.

Paper: O. Marschall, K. Cho, C. Savin, "A Unified Framework of Online Learning Algorithms for Training Recurrent
Neural Networks", JMLR 21(135):1-34 (2020), arXiv:1907.02649 (:data:`theory.papers.MARSCHALL`): "Testing these
algorithms on two parametric task families shows that performances cluster according to our criteria" -- the Add
task (:mod:`verify.rtrl.marschall_add`) and this one.

**The Mimic task** (the authors' description, read in their public code, omarschall/vanilla-rtrl,
``gen_data/Mimic_RNN.py``: "the inputs are random i.i.d. Bernoulli and the labels are the outputs of a fixed
'target' RNN that is fed these inputs"): inputs :math:`x_t \in \{0, 1\}^d` with i.i.d. Bernoulli(:math:`p`)
entries, labels :math:`y_t = V^* h^*_t + c^*` with :math:`h^*_t = \tanh(W^* h^*_{t-1} + U^* x_t + b^*)` the state of
a fixed random target network started at 0. The target's size, its parameters' law, its output function and the
loss the paper used were not available here; **this instance** (:class:`MimicScale`): an Elman tanh target of the
student's size with recurrent spectral norm about :attr:`MimicScale.target_gain` = 2, a linear readout of
:attr:`MimicScale.n_out` = 2 outputs, the squared error :math:`\tfrac12\|y - \hat y\|^2`, :math:`p = 1/2`,
:math:`d = 2`. The gain was chosen by a pilot (16 units, one realization, 4000 steps) before the criteria's run: at
gain 1.2 the last two inputs explain about 91 % of the target's output variance (the ``memory-1`` baseline is 9 % of
the ``mean`` one: the task hardly needs memory, and every learner, the reservoir included, reached it); at gain 2
they explain 75-80 % (memory-1 20-24 % of mean, two realizations), and RTRL (0.019-0.026) separated from the trained
readout on the fixed network (0.057-0.064) and from ``memory-1`` (0.062).

**Baselines** (:func:`mimic_baselines`): the labels are a deterministic function of the inputs' past, so the best
predictor that knows only the information I has loss :math:`\tfrac12 \sum_j E[\mathrm{Var}(y_j \mid I)]`; estimated
on a long independent run of the target (:data:`BASELINE_STEPS` steps, every input pattern seen thousands of
times) for I = nothing (``mean``), :math:`x_t` (``input-only``) and :math:`(x_t, x_{t-1})` (``memory-1``). A learner
below ``memory-1`` uses inputs from two or more steps back. The optimum is 0.

**Learners and measurements**: those of the Add task (:func:`verify.rtrl.marschall_add.run_learners`): RTRL, UORO,
KF-RTRL, RFLO, e-prop, SnAp-1 by SGD at one learning rate, the controls ``frozen`` (θ never moves) and
``readout-only`` (a trained readout on the fixed random student network: a reservoir), the learning curve of the
expected test loss, the alignment of each update with RTRL's along the learner's trajectory.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from verify.errors import InvalidArgument
from verify.model.cells import ElmanCell
from verify.model.losses import LinearReadout, SquaredError
from verify.model.problem import Problem
from verify.rtrl.marschall_add import BURN_IN, cell_learners, cell_scale, run_learners

__all__ = [
    "BASELINE_NAMES",
    "BASELINE_STEPS",
    "SIZES",
    "MimicScale",
    "mimic_baselines",
    "mimic_task",
    "run_cell",
    "target_theta",
]

#: the baselines, from no information to the last two inputs
BASELINE_NAMES = ("mean", "input-only", "memory-1")
#: steps of the target's run the baselines are estimated on (each of the 16 patterns of (x_t, x_{t-1}) about 12 500
#: times at d = 2, p = 1/2: a conditional variance to about 1 % relative)
BASELINE_STEPS = 200_000


@dataclass(frozen=True)
class MimicScale:
    """One scale of the sweep: the student's size (the target's is the same), input dimension and Bernoulli
    probability, the target's recurrent gain, outputs, realizations, training steps, the learning-rate grid, the test
    sequence's length and the number of checkpoints of the learning curve."""

    n: int
    realizations: int
    steps: int
    lrs: tuple[float, ...]
    test_steps: int = 1000
    checkpoints: int = 10
    d: int = 2
    p_input: float = 0.5
    target_gain: float = 2.0
    n_out: int = 2


#: ``full``: a reduced run (16 units, 5 realizations x 12 000 steps, the Add task's learning-rate grid); ``paper``: the
#: Add task's paper scale in size and length (32 units, 9 realizations x 10^5 steps; the paper's own Mimic sizes were
#: not available here); ``ci``: a seconds-long smoke run.
SIZES: dict[str, MimicScale] = {
    "paper": MimicScale(32, 9, 100_000, (0.003, 0.01, 0.03), 2000, 20),
    "full": MimicScale(16, 5, 12_000, (0.01, 0.03), 1000, 12),
    "ci": MimicScale(4, 2, 60, (0.1,), 100, 3),
}


def _target_problem(X: torch.Tensor, sc: MimicScale) -> Problem:
    zeros = torch.zeros(X.shape[0], sc.n_out, dtype=torch.float64)
    return Problem(ElmanCell(sc.n, sc.d, "tanh"), LinearReadout(sc.n, sc.n_out), SquaredError(), X, zeros,
                   torch.zeros(sc.n, dtype=torch.float64))  # fmt: skip


def _inputs(steps: int, sc: MimicScale, rng: np.random.Generator) -> torch.Tensor:
    return torch.tensor((rng.random((steps, sc.d)) < sc.p_input).astype(float), dtype=torch.float64)


def target_theta(sc: MimicScale, rng: np.random.Generator) -> torch.Tensor:
    """The fixed target network's θ* (:meth:`~verify.model.problem.Problem.init_theta` at ``target_gain``)."""
    gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
    return _target_problem(torch.zeros(1, sc.d, dtype=torch.float64), sc).init_theta(gen, sc.target_gain)


def mimic_task(steps: int, sc: MimicScale, theta_star: torch.Tensor, rng: np.random.Generator) -> tuple[
        torch.Tensor, torch.Tensor]:  # fmt: skip
    r"""``steps`` steps of the Mimic task: Bernoulli inputs (steps, d) and the target's outputs (steps, n_out)."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise InvalidArgument("steps", steps, "must be an integer >= 1")
    X = _inputs(steps, sc, rng)
    target = _target_problem(X, sc)
    target.check_theta(theta_star, "theta_star")
    with torch.no_grad():
        Y = target.output(theta_star, target.rollout(theta_star)[1:])
    return X, Y


def mimic_baselines(sc: MimicScale, theta_star: torch.Tensor, rng: np.random.Generator,
                    steps: int = BASELINE_STEPS) -> dict[str, float]:  # fmt: skip
    r"""The loss :math:`\tfrac12\sum_j E[\mathrm{Var}(y_j\mid I)]` of the best predictor knowing I (the module),
    estimated on ``steps`` steps of the target (after :data:`~verify.rtrl.marschall_add.BURN_IN`)."""
    X, Y = mimic_task(steps + BURN_IN, sc, theta_star, rng)
    x, y = X[BURN_IN:].numpy(), Y[BURN_IN:].numpy()
    codes = x @ (2.0 ** np.arange(sc.d))  # the input pattern of each step, 0 .. 2^d - 1
    prev = np.concatenate([[0.0], codes[:-1]])
    out = {}
    for name, key in (("mean", np.zeros_like(codes)), ("input-only", codes), ("memory-1", codes + 2**sc.d * prev)):
        total = 0.0
        for k in np.unique(key):
            grp = y[key == k]
            total += float(((grp - grp.mean(0)) ** 2).sum())
        out[name] = 0.5 * total / len(y)
    return out


def _student(X: torch.Tensor, Y: torch.Tensor, sc: MimicScale) -> Problem:
    return Problem(ElmanCell(sc.n, sc.d, "tanh"), LinearReadout(sc.n, sc.n_out), SquaredError(), X, Y,
                   torch.zeros(sc.n, dtype=torch.float64))  # fmt: skip


def run_cell(scale: str | MimicScale, realization: int, lr: float, seed: int = 0,
             learners: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    """Every learner (default :data:`~verify.rtrl.marschall_add.LEARNERS` + ``CONTROLS``) on one realization (the
    target θ*, the student's θ₀, the training, test and baseline sequences drawn from ``(seed, realization)``) at
    learning rate ``lr``; with the realization's baselines (:func:`mimic_baselines`)."""
    sc = cell_scale(scale, SIZES, MimicScale)
    names = cell_learners(learners, lr)
    start = time.perf_counter()
    rng = np.random.default_rng([seed, realization, 2])  # 2: the Mimic task's stream (the Add task's has none)
    theta_star = target_theta(sc, rng)
    train = _student(*mimic_task(sc.steps, sc, theta_star, rng), sc)
    test = _student(*mimic_task(sc.test_steps + BURN_IN, sc, theta_star, rng), sc)
    theta0 = train.init_theta(torch.Generator().manual_seed(int(rng.integers(2**31))))
    base = mimic_baselines(sc, theta_star, rng, BASELINE_STEPS if sc.steps >= 1000 else 20 * BURN_IN)
    out: dict[str, Any] = {"realization": realization, "lr": lr, "seed": seed, "n": sc.n, "steps": sc.steps,
                           "baselines": base}  # fmt: skip
    return {**out, **run_learners(names, train, test, theta0, float(lr), sc.checkpoints, seed, start)}
