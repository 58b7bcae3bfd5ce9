r"""A hand-written truncated BPTT, public API only (Miller & Hardt, stable-recurrent-models-miller-hardt.md §3).

The forward state is the exact trajectory; the gradient of :math:`\ell_t` is
backpropagated through the last k transitions, :math:`s_{t-k}` held fixed:

.. math:: \hat g^k_t = \frac{\partial}{\partial\theta}\,
    \ell_t\big(F_\theta(x_t, F_\theta(\dots F_\theta(x_{t-k+1}, s_{t-k})))\big)\Big|_{s_{t-k}\ \text{fixed}}

(exact while t ≤ k). The state is the window of the last k states.
``rnn-verify run --impl tbptt=verify.examples.tbptt:MyTBPTT`` (the toolkit calls ``MyTBPTT(k)``).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from verify.estimators import Guarantee
from verify.model.problem import Problem


class Window(NamedTuple):
    states: torch.Tensor  #: (M, k, *B, n): s_{t-k+1} .. s_t, oldest first (s_0 repeated at the start)


class MyTBPTT:
    short = 0  #: 1: the seeded bug (one transition fewer than k)

    def __init__(self, k: int) -> None:
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        self.k, self.name = k, f"my-tbptt(k={k})"
        self.guarantee = Guarantee("truncated", k=k, reference="tbptt", source="Miller & Hardt 2019, section 3")

    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> Window:
        return Window(problem.s0.expand(samples, self.k, *problem.s0.shape).clone())

    def step(
        self, problem: Problem, theta: torch.Tensor, state: Window, t: int, rng: torch.Generator
    ) -> tuple[Window, torch.Tensor]:
        M, win = state.states.shape[0], state.states[0]
        start = min(max(t - self.k + self.short, 0), t - 1)  # the state held fixed: s_{t-k} (s_0 while t <= k)
        with torch.enable_grad():
            th = theta.detach().clone().requires_grad_(True)
            s = win[self.k - (t - start)].detach()  # win[j] = s_{t-k+j}
            for j in range(start + 1, t + 1):  # the last t - start transitions, differentiated
                s = problem.transition(th, s, problem.inputs[j - 1])
            (g,) = torch.autograd.grad(problem.step_loss(th, s, problem.targets[t - 1]), th)
        with torch.no_grad():
            s_t = problem.transition(theta, win[-1], problem.inputs[t - 1])
        new = torch.cat([win[1:], s_t.unsqueeze(0)])
        return Window(new.expand(M, *new.shape).clone()), g.detach().expand(M, -1).clone()


class MyTBPTTBuggy(MyTBPTT):
    """Seeded bug: the window is one transition short (k - 1 transitions differentiated)."""

    short = 1
