r"""A synthetic ANALOGUE of Miller & Hardt §7.2 -- not the paper's experiment (report data only, no claim).

Paper: J. Miller, M. Hardt, "Stable Recurrent Models", ICLR 2019, arXiv:1805.10369, §7.2 "Moving beyond
stability": single-layer tanh RNNs (and LSTMs) on Wikitext-2 -- (a) a stable model (‖W‖ ≤ 1 by singular-value
projection after each step) loses nothing: test perplexity 146.7 unconstrained vs 143.5 constrained; (b) Fig. 2:
:math:`\|\nabla_{x_t} p_{t+i}\|` vanishes for moderate i (RNN and LSTM, at initialisation and along training);
(c) Fig. 3: :math:`\|W^t_{trunc,k} - W^t_{recurr}\|` grows slowly with training and more slowly for larger k
(k = 65 standing for the full model). Wikitext-2, the word-level language models and their training budget are
not available here; this module runs the same three measurements on a small synthetic problem instead, and its
numbers are labelled as an analogue wherever they are reported.

Setting (chosen here): the data of ``rtrl-sec72``'s Elman-tanh teacher (:func:`verify.rtrl.sec7.teacher`,
n* = 4, d = 4, Δ = 0.1: memory of tens of steps) on :attr:`AnalogueSetup.sequences` training and as many test
sequences of :attr:`AnalogueSetup.T` steps; a tanh student with n = 16 units trained full-batch with Adam on the
mean squared error over all steps (exact BPTT), unconstrained and with W projected onto ‖W‖₂ ≤ 1 after each step;
truncated students (Miller & Hardt eq. (3): each :math:`h^k_t` restarts from 0 k steps back) from the same θ₀
with the same optimiser. The "loss" stands in for perplexity.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import torch

from verify.errors import InvalidArgument
from verify.model.builders import clip_spectral_norm
from verify.model.cells import ElmanCell
from verify.model.losses import LinearReadout, SquaredError
from verify.model.problem import Problem
from verify.rtrl.sec7 import _sequences, teacher  # the data of rtrl-sec72 (why this module sits in verify.rtrl)

__all__ = ["AnalogueSetup", "input_sensitivity", "run_analogue", "truncated_outputs"]


@dataclass(frozen=True)
class AnalogueSetup:
    """Sizes of the analogue: student units n, sequences, length T, Adam steps and rate, truncations, i_max."""

    n: int = 16
    sequences: int = 16
    T: int = 120
    steps: int = 200
    lr: float = 1e-2
    ks: tuple[int, ...] = (2, 5, 10, 20)
    i_max: int = 50
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n", "sequences", "T", "steps", "i_max"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidArgument(name, v, "an integer >= 1")
        if self.i_max >= self.T:
            raise InvalidArgument("i_max", self.i_max, f"must be below T = {self.T}")
        if not self.ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in self.ks):
            raise InvalidArgument("ks", self.ks, "truncations must be integers >= 1")


def input_sensitivity(P: Problem, theta: torch.Tensor, i_max: int) -> list[float]:
    r"""Fig. 2's measurement: :math:`\mathrm{mean}_{t,b}\,\|\partial p_{t+i}/\partial x_t\|` for i = 1..``i_max``.

    :math:`p_s` is the model's prediction at step s (the readout of :math:`h_s`); one backward pass per s gives
    :math:`\partial p_s/\partial x_t` for every t ≤ s; the mean runs over the sequences and over the t with
    t + i ≤ T.
    """
    x = P.inputs.detach().clone().requires_grad_(True)
    T = x.shape[0]
    sums, counts = [0.0] * (i_max + 1), [0] * (i_max + 1)
    with torch.enable_grad():
        Px = P.with_sequence(x, P.targets)
        y = Px.output(theta, Px.rollout(theta)[1:])[..., 0]  # (T, B)
        for s in range(1, T):
            (g,) = torch.autograd.grad(y[s].sum(), x, retain_graph=True)  # sequences are independent
            norms = torch.linalg.vector_norm(g, dim=-1)  # (T, B): ||dp_s / dx_t|| for each t, b
            for i in range(1, min(i_max, s) + 1):
                sums[i] += float(norms[s - i].sum())
                counts[i] += norms.shape[1]
    return [sums[i] / counts[i] for i in range(1, i_max + 1)]


def truncated_outputs(P: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    """Predictions of the truncated model (Miller & Hardt eq. (3)), all steps at once: (T, B, 1).

    Each :math:`h^k_t` starts from 0 at step t − k and applies the last k transitions; steps before the
    sequence's start are skipped (the state stays 0, as :func:`verify.oracles.bptt.truncated_model_states`).
    """
    T = P.T
    xs = P.inputs  # (T, B, d)
    h = torch.zeros(T, *P.s0.shape, dtype=theta.dtype)
    for j in range(k - 1, -1, -1):  # window position: the input x_{t-j} for every t
        idx = torch.arange(T) - j
        valid = (idx >= 0).view(T, *([1] * (h.dim() - 1)))
        xj = xs[idx.clamp(min=0)]
        h = torch.where(valid, P.transition(theta, h, xj), h)
    return P.output(theta, h)


def _loss(P: Problem, theta: torch.Tensor, k: int | None = None) -> torch.Tensor:
    y = P.output(theta, P.rollout(theta)[1:]) if k is None else truncated_outputs(P, theta, k)
    return P.loss.pointwise(y, P.targets).mean()


def _train(
    P: Problem, theta0: torch.Tensor, setup: AnalogueSetup, *, k: int | None = None, project: bool = False
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Adam on the full (k None) or truncated model's mean loss; W after every step (and projected if asked)."""
    th = theta0.detach().clone().requires_grad_(True)
    opt = torch.optim.Adam([th], lr=setup.lr)
    Wsl = P.layout["cell.W"].slice
    Ws = []
    for _ in range(setup.steps):
        opt.zero_grad()
        with torch.enable_grad():
            (th.grad,) = torch.autograd.grad(_loss(P, th, k), th)
        opt.step()
        if project:  # §7.2: singular values thresholded after each update
            with torch.no_grad():
                n = P.n
                th[Wsl] = clip_spectral_norm(th[Wsl].view(n, n), 1.0).reshape(-1)
        Ws.append(th.detach()[Wsl].view(P.n, P.n).clone())
    return th.detach(), Ws


def run_analogue(setup: AnalogueSetup) -> dict[str, Any]:
    """The three measurements of §7.2 on the synthetic problem: (a) losses, (b) sensitivity, (c) ‖W_k − W_full‖."""
    gen = torch.Generator().manual_seed(4242 + setup.seed)
    P0, th_star = teacher("elman-tanh", 4, 4, gen)
    train = _sequences(P0, th_star, setup.T, setup.sequences, 1.0, gen)
    test = _sequences(P0, th_star, setup.T, setup.sequences, 1.0, gen)
    z = torch.zeros
    student = Problem(ElmanCell(setup.n, 4, "tanh"), LinearReadout(setup.n, 1), SquaredError(), train.inputs,
                      train.targets, z(setup.sequences, setup.n, dtype=torch.float64))  # fmt: skip
    stest = student.with_sequence(test.inputs, test.targets)
    th0 = student.init_theta(torch.Generator().manual_seed(99 + setup.seed), scale=0.9)
    free, W_full = _train(student, th0, setup)
    stable, _ = _train(student, th0, setup, project=True)

    def norm(th: torch.Tensor) -> float:
        return float(torch.linalg.matrix_norm(th[student.layout["cell.W"].slice].view(setup.n, -1), 2))

    with torch.no_grad():
        losses = {
            "initial": float(_loss(stest, th0)),
            "unconstrained": float(_loss(stest, free)),
            "stable": float(_loss(stest, stable)),
            "teacher": float(P0.loss.pointwise(test.output(th_star, test.rollout(th_star)[1:]), test.targets).mean()),
        }
    distances: dict[str, list[float]] = {}
    for k in setup.ks:
        _, W_k = _train(student, th0, setup, k=k)
        distances[str(k)] = [float(torch.linalg.matrix_norm(a - b, 2)) for a, b in zip(W_k, W_full, strict=True)]
    return {
        "analogue": "synthetic analogue of Miller & Hardt §7.2 (not Wikitext-2)",
        "setup": asdict(setup),
        "test_loss": losses,
        "spectral_norm_W": {"initial": norm(th0), "unconstrained": norm(free), "stable": norm(stable)},
        "sensitivity": {
            "initial": input_sensitivity(stest, th0, setup.i_max),
            "trained": input_sensitivity(stest, free, setup.i_max),
        },
        "distance_to_full": distances,
        "final_distance": {k: v[-1] for k, v in distances.items()},
        "finite": all(math.isfinite(v) for v in losses.values()),
    }
