r"""Online next-character learning with UORO or truncated BPTT (Tallec & Ollivier 2017, §4).

Tallec & Ollivier 2017, "Unbiased Online Recurrent Optimization", arXiv:1702.05043, §4
"Next-character prediction": one layer of GRU or LSTM units (64 in the paper) reads the
characters one-hot and a linear readout gives the logits of the next one; cross-entropy loss;
a single pass over the stream; Adam (β1 = 0.9, β2 = 0.999) with

.. math:: \eta_t = \frac{\gamma}{1 + \alpha\sqrt t}\qquad (t = \text{characters processed}),

and the plotted loss is the moving average
:math:`\mathcal L(t+1) = (1 - 1/\sqrt t)\,\mathcal L(t) + \ell_{t+1}/\sqrt t` in bits.

Learners (:class:`CharLearnerSpec`):

* ``uoro``: the toolkit's :class:`~verify.estimators.uoro.UORO` (Algorithm 1), θ updated after
  every character with its estimate g̃ (the paper's UORO with truncation 1); with ``truncation`` T > 1,
  UORO-T (§3, "Multi-step UORO": Algorithm 1 applied to :math:`F^T`, the last T steps backpropagated
  exactly; :class:`~verify.estimators.uoro.UORO` with ``block=T``): one step of :math:`F^T` is a block of T
  characters whose loss is the sum of their losses, so θ is updated once per block with the sum of the block's
  per-character estimates (their sum is the estimate of that step of :math:`F^T`), as TBPTT-T is below.
* ``tbptt``: truncated BPTT as in the authors' code (github.com/ctallec/uoro, ``uoro.lua`` with
  ``--off``): the stream is cut into consecutive windows of T characters; the summed loss of a
  window is backpropagated to its first state (held fixed) and θ is updated once per window. (The
  toolkit's :class:`~verify.estimators.tbptt.TBPTT` is the per-step, overlapping-window variant;
  the paper's TBPTT-T costs O(1) per character, this one.)

``feed="shuffled"`` is the control that cannot learn: the learner is fed (inputs *and* targets)
a random permutation of the same characters, so no context carries information about the next
character and no predictor can beat the unigram entropy (up to the sampling noise of the
measuring window). Its loss is measured against the stream it is fed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from verify._validate import require_positive_int
from verify.errors import InvalidArgument
from verify.estimators.uoro import UORO
from verify.model.builders import make_cell
from verify.model.losses import LinearReadout, SoftmaxCrossEntropy
from verify.model.problem import Problem
from verify.uoro.char_tasks import CharTask, make_task, unigram_entropy

__all__ = ["CharLearnerSpec", "PaperAdam", "char_problem", "moving_average_bits", "run_char_learner"]

LN2 = math.log(2.0)
FEEDS = ("stream", "shuffled")


@dataclass(frozen=True)
class PaperAdam:
    r"""Adam (Kingma & Ba 2014) with UORO §4's step size :math:`\gamma / (1 + \alpha\sqrt t)`, t in characters."""

    gamma: float = 1e-3
    alpha: float = 0.015
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    def lr(self, chars: int) -> float:
        return self.gamma / (1.0 + self.alpha * math.sqrt(chars))  # UORO §4

    def init(self, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        return torch.zeros_like(theta), torch.zeros_like(theta), 0

    def update(
        self, theta: torch.Tensor, g: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor, int], chars: int
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor, int]]:
        m, v, k = state
        k += 1
        m = self.beta1 * m + (1 - self.beta1) * g
        v = self.beta2 * v + (1 - self.beta2) * g * g
        mhat, vhat = m / (1 - self.beta1**k), v / (1 - self.beta2**k)
        return theta - self.lr(chars) * mhat / (vhat.sqrt() + self.eps), (m, v, k)


@dataclass(frozen=True)
class CharLearnerSpec:
    """One online run: ``task`` (``brackets``/``anbn`` and its ``task_params``), ``cell`` (``gru``/``lstm``),
    ``hidden`` units, ``learner`` (``uoro``/``tbptt``), ``truncation`` T (TBPTT's window), ``chars``,
    the schedule (``gamma``, ``alpha``), ``feed`` (``stream`` or the ``shuffled`` control), ``seed``."""

    task: str = "anbn"
    task_params: tuple[tuple[str, int], ...] = ()
    cell: str = "gru"
    hidden: int = 64
    learner: str = "uoro"
    truncation: int = 1
    chars: int = 10_000
    gamma: float = 1e-3
    alpha: float = 0.03
    feed: str = "stream"
    seed: int = 0

    def __post_init__(self) -> None:
        make_task(self.task, **dict(self.task_params))
        if self.cell not in ("gru", "lstm"):
            raise InvalidArgument("cell", self.cell, "must be 'gru' or 'lstm' (UORO §4)")
        if self.learner not in ("uoro", "tbptt"):
            raise InvalidArgument("learner", self.learner, "must be 'uoro' or 'tbptt'")
        if self.feed not in FEEDS:
            raise InvalidArgument("feed", self.feed, f"must be one of {FEEDS}")
        require_positive_int("hidden", self.hidden)
        require_positive_int("truncation", self.truncation)
        require_positive_int("chars", self.chars)
        for key in ("gamma", "alpha"):
            val = getattr(self, key)
            if isinstance(val, bool) or not isinstance(val, (int, float)) or not (val >= 0 and math.isfinite(val)):
                raise InvalidArgument(key, val, "must be a finite number >= 0")

    def params(self) -> dict[str, Any]:
        """JSON parameters (a sweep cell's)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["task_params"] = dict(self.task_params)
        return d

    @classmethod
    def from_params(cls, p: dict[str, Any]) -> CharLearnerSpec:
        q = dict(p)
        q["task_params"] = tuple(sorted(dict(q.get("task_params") or {}).items()))
        return cls(**q)

    def label(self) -> str:
        who = f"{self.learner}-{self.truncation}" if self.learner == "tbptt" or self.truncation > 1 else "uoro"
        ctl = " [shuffled control]" if self.feed == "shuffled" else ""
        return f"{self.task} {self.cell}-{self.hidden} {who} {self.chars} chars seed {self.seed}{ctl}"


def char_problem(task: CharTask, cell_kind: str, hidden: int, seq: np.ndarray) -> Problem:
    """The §4 model on the one-hot stream ``seq``: x_t = seq[t-1], target seq[t] (float64, no batch)."""
    V = task.vocab
    cell = make_cell(cell_kind, hidden, V)
    idx = torch.as_tensor(seq, dtype=torch.int64)
    x = torch.nn.functional.one_hot(idx[:-1], V).to(torch.float64)
    return Problem(
        cell,
        LinearReadout(cell.observed_size, V),
        SoftmaxCrossEntropy(),
        x,
        idx[1:],
        torch.zeros(cell.state_size, dtype=torch.float64),
    )


def moving_average_bits(losses_bits: np.ndarray) -> np.ndarray:
    r"""UORO §4's plotted loss: :math:`\mathcal L(1) = \ell_1`, :math:`\mathcal L(t+1) = (1 - 1/\sqrt t)\mathcal L(t)
    + \ell_{t+1}/\sqrt t`."""
    out = np.empty_like(losses_bits)
    acc = float(losses_bits[0])
    out[0] = acc
    for t in range(1, len(losses_bits)):
        w = 1.0 / math.sqrt(t)
        acc = (1 - w) * acc + w * float(losses_bits[t])
        out[t] = acc
    return out


def run_char_learner(spec: CharLearnerSpec, *, final_fraction: float = 0.2, points: int = 60) -> dict[str, Any]:
    """Run ``spec`` online; the per-character losses summarised as JSON.

    Returns ``final_bpc`` (mean loss in bits over the last ``final_fraction`` of the stream, with its
    standard error ``final_se`` from 20 batch means), ``early_bpc`` (the same over the first ``final_fraction``),
    ``curve`` (the §4 moving average at ``points``
    log-spaced characters), ``cumulative_bpc``, the task's reference levels (``entropy_rate``,
    ``memoryless_rate``, ``unigram``) and ``wall_time``.
    """
    t0 = time.perf_counter()
    task = make_task(spec.task, **dict(spec.task_params))
    rng = np.random.default_rng(np.random.SeedSequence([spec.seed, 0x0C4A5]))
    seq = task.sample(spec.chars + 1, rng)
    if spec.feed == "shuffled":  # the control: the same characters with every lag destroyed
        seq = seq[rng.permutation(len(seq))]
    problem = char_problem(task, spec.cell, spec.hidden, seq)
    gen = torch.Generator().manual_seed(int(rng.integers(0, 2**62)))
    theta = problem.init_theta(gen)
    opt = PaperAdam(gamma=spec.gamma, alpha=spec.alpha)
    if spec.learner == "uoro":
        losses = _run_uoro(problem, theta, opt, gen, spec.truncation)
    else:
        losses = _run_tbptt(problem, theta, opt, spec.truncation)
    bits = losses / LN2
    if not np.all(np.isfinite(bits)):
        raise InvalidArgument("spec", spec.label(), "the online run diverged (non-finite loss)")
    tail = bits[-max(20, int(final_fraction * len(bits))) :]
    batches = np.array_split(tail, 20)
    means = np.array([b.mean() for b in batches])
    ma = moving_average_bits(bits)
    at = sorted({round(x) for x in np.geomspace(1, len(bits), points)})
    return {
        "label": spec.label(),
        "spec": spec.params(),
        "final_bpc": float(tail.mean()),
        "final_se": float(means.std(ddof=1) / math.sqrt(len(means))),
        "final_chars": len(tail),
        "early_bpc": float(bits[: max(20, int(final_fraction * len(bits)))].mean()),
        "cumulative_bpc": float(bits.mean()),
        "curve": {"chars": at, "bpc": [float(ma[i - 1]) for i in at]},
        "entropy_rate": task.entropy_rate(),
        "memoryless_rate": task.memoryless_rate(),
        "unigram": unigram_entropy(task),
        "wall_time": time.perf_counter() - t0,
    }


def _run_uoro(
    problem: Problem, theta: torch.Tensor, opt: PaperAdam, gen: torch.Generator, block: int = 1
) -> np.ndarray:
    """UORO (Algorithm 1) with an Adam step after every character (``block`` = 1), or UORO-T (§3: Algorithm 1 on
    :math:`F^T`, ``block`` = T) with an Adam step after every block of T characters with the block's summed
    estimate; ℓ_t at the θ that read x_t."""
    est = UORO(block=block)
    state = est.init(problem, theta, gen, samples=1)
    opt_state = opt.init(theta)
    out = np.empty(problem.T)
    acc = torch.zeros_like(theta)
    for t in range(1, problem.T + 1):
        state, g = est.step(problem, theta, state, t, gen)
        with torch.no_grad():
            out[t - 1] = float(problem.step_loss(theta, state.s[0], problem.targets[t - 1]))
        acc += g[0]
        if t % block == 0 or t == problem.T:  # the end of a step of F^T (a trailing partial block too)
            theta, opt_state = opt.update(theta, acc, opt_state, t)
            acc = torch.zeros_like(theta)
    return out


def _run_tbptt(problem: Problem, theta: torch.Tensor, opt: PaperAdam, T: int) -> np.ndarray:
    """TBPTT-T as in the authors' code: windows of T characters, one update per window with its summed loss."""
    out = np.empty(problem.T)
    s = problem.s0
    opt_state = opt.init(theta)
    for start in range(0, problem.T, T):
        stop = min(start + T, problem.T)
        with torch.enable_grad():
            th = theta.clone().requires_grad_(True)
            h = s.detach()
            total = th.new_zeros(())
            for t in range(start, stop):
                h = problem.transition(th, h, problem.inputs[t])
                lt = problem.step_loss(th, h, problem.targets[t])
                out[t] = float(lt.detach())
                total = total + lt
            (g,) = torch.autograd.grad(total, th)
        s = h.detach()
        theta, opt_state = opt.update(theta, g, opt_state, stop)
    return out
