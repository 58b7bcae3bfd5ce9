r"""Truncated gradients as online estimators: truncated BPTT and the truncated model.

**Truncated BPTT** (:class:`TBPTT`): the forward state is the exact trajectory
:math:`s_t`; the gradient of :math:`\ell_t` is backpropagated through the last k
transitions only, :math:`s_{t-k}` being treated as a constant
(rtrl-convergence-analysis.md §1: TBPTT "truncates the chain rule after k steps
backward in time"; UORO §4, "TBPTT-T"):

.. math:: \hat g_t^{k} = \frac{\partial}{\partial\theta}\,
          \ell_t\big(F_\theta(x_t, F_\theta(\dots F_\theta(x_{t-k+1}, s_{t-k})))\big)
          \Big|_{s_{t-k}\ \text{fixed}} .

Where t ≤ k the window reaches :math:`s_0` and the estimate is exact. This is the
per-step form of :func:`verify.oracles.bptt.tbptt_gradient` (``which="per_step"``),
checked against it by ``rtrl.truncated-bptt``.

**Truncated model** (:class:`TruncatedModel`): Miller & Hardt
(stable-recurrent-models-miller-hardt.md) eq. (3): the state restarts from 0 k
steps back, :math:`h^k_t = \phi_w(h^k_{t-1}, x_t)`, :math:`h^k_{t-k} = 0`, and the
estimate is :math:`\nabla_\theta \ell_t(h^k_t)` (for t ≤ k the model starts from
:math:`s_0`, as :func:`verify.oracles.bptt.truncated_model_states` does).

State: the last k states of the exact trajectory (M, k, *B, n) for TBPTT, the
exact state for the truncated model; the window's inputs are read from the
problem (a streaming implementation would buffer those k inputs as well). Cost
O(k) transitions per step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from verify._validate import require_positive_int
from verify.errors import ContractViolation, InvalidArgument
from verify.estimators import kernels
from verify.estimators.guarantee import Guarantee
from verify.estimators.online import (
    _Named,
    check_problem_theta,
    check_step,
    expand_samples,
    rollout,
    shared,
)
from verify.model.problem import Problem

__all__ = ["TBPTT", "TBPTTState", "TruncatedModel", "TruncatedModelState"]


def _require_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidArgument("k", k, "truncation length must be an integer >= 1")
    return k


class TBPTTState(NamedTuple):
    """The last k states of the exact trajectory, oldest first: ``window[:, -1]`` is :math:`s_{t}`."""

    window: torch.Tensor  #: (M, k, *B, n)


@dataclass(frozen=True)
class TBPTT(_Named):
    """Truncated BPTT with truncation ``k`` ≥ 1 as an online estimator (see module docstring).

    Miller & Hardt (stable-recurrent-models-miller-hardt.md) §3 and rtrl-convergence-analysis.md
    §1: the forward state exact, the gradient truncated to the last k transitions.
    ``path``: ``"auto"`` backpropagates through the window with the cell's structured derivatives
    (:mod:`verify.estimators.kernels`) for the standard cells, ``"generic"`` with autograd.
    """

    k: int
    label: str = ""

    @property
    def guarantee(self) -> Guarantee:
        """Truncated(k): ∂ℓ_t/∂θ with s_{t-k} held fixed (Miller & Hardt 2019, §3)."""
        return Guarantee("truncated", k=self.k, reference="tbptt", source="Miller & Hardt 2019, section 3")

    path: str = "auto"

    def __post_init__(self) -> None:
        _require_k(self.k)
        kernels.check_path(self.path)
        object.__setattr__(self, "name", self.label or f"tbptt(k={self.k})")

    def window_start(self, t: int) -> int:
        """Index of the state held fixed for the estimate of step t: :math:`\\max(t-k, 0)`."""
        return max(t - self.k, 0)

    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> TBPTTState:
        M = require_positive_int("samples", samples)
        check_problem_theta(problem, theta)
        # entries older than s_0 are never read (the window start is clipped at 0)
        win = problem.s0.unsqueeze(0).expand(self.k, *problem.s0.shape).clone()
        return TBPTTState(expand_samples(win, M))

    def step(
        self, problem: Problem, theta: torch.Tensor, state: TBPTTState, t: int, rng: torch.Generator
    ) -> tuple[TBPTTState, torch.Tensor]:
        k = self.k
        theta, M = check_step(self.name, problem, theta, state, t, {"window": (k, *problem.batch_shape, problem.n)})
        win = shared("state.window", state.window)  # win[j] = s_{t-k+j}, j = 0..k-1
        start = self.window_start(t)
        offset = k - (t - start)  # position of s_start in the window
        if not 0 <= offset < k:  # the window (its own window_start, overridable) must hold min(k, t) transitions
            raise ContractViolation(
                f"{self.name}.window_start({t})",
                start,
                f"the window must start in [t-k, t-1] = [{t - k}, {t - 1}] so that min(k, t) = {min(k, t)} "
                f"transitions are differentiated; this start gives {t - start}",
            )
        if kernels.use_fast(self.path, problem, self.name):
            _, g, _ = kernels.window_loss_gradient(problem, theta, win[offset], start, t)
        else:
            with torch.enable_grad():
                th = theta.clone().requires_grad_(True)
                s_t = rollout(problem, th, win[offset].detach(), start, t)  # the last t-start transitions
                loss = problem.step_loss(th, s_t, problem.targets[t - 1])
                (g,) = torch.autograd.grad(loss, th)
        # the exact forward state s_t, computed from s_{t-1}
        with torch.no_grad():
            s_exact = problem.transition(theta, win[-1], problem.inputs[t - 1])
        new_win = torch.cat([win[1:], s_exact.unsqueeze(0)])
        return TBPTTState(expand_samples(new_win, M)), expand_samples(g.detach(), M)


class TruncatedModelState(NamedTuple):
    """The exact state :math:`s_t` (kept so a caller can compare it with :math:`h^k_t`)."""

    s: torch.Tensor  #: (M, *B, n)


@dataclass(frozen=True)
class TruncatedModel(_Named):
    r"""Gradient of the truncated model's loss :math:`\nabla_\theta\ell_t(h^k_t)` (Miller & Hardt eq. (3)).

    ``path`` as for :class:`TBPTT`.
    """

    k: int
    label: str = ""

    @property
    def guarantee(self) -> Guarantee:
        """Truncated(k): the gradient of the truncated model's loss ∇ℓ_t(h_t^k) (Miller & Hardt 2019, eq. (3))."""
        return Guarantee("truncated", k=self.k, reference="truncated-model", source="Miller & Hardt 2019, eq. (3)")

    path: str = "auto"

    def __post_init__(self) -> None:
        _require_k(self.k)
        kernels.check_path(self.path)
        object.__setattr__(self, "name", self.label or f"truncated-model(k={self.k})")

    def init(
        self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1
    ) -> TruncatedModelState:
        M = require_positive_int("samples", samples)
        check_problem_theta(problem, theta)
        return TruncatedModelState(expand_samples(problem.s0.clone(), M))

    def step(
        self, problem: Problem, theta: torch.Tensor, state: TruncatedModelState, t: int, rng: torch.Generator
    ) -> tuple[TruncatedModelState, torch.Tensor]:
        theta, M = check_step(self.name, problem, theta, state, t, {"s": (*problem.batch_shape, problem.n)})
        s_prev = shared("state.s", state.s)
        start = t - self.k
        h0 = problem.s0 if start <= 0 else torch.zeros_like(problem.s0)  # eq. (3): h^k_{t-k} = 0
        if kernels.use_fast(self.path, problem, self.name):
            _, g, _ = kernels.window_loss_gradient(problem, theta, h0, max(start, 0), t)
        else:
            with torch.enable_grad():
                th = theta.clone().requires_grad_(True)
                h = rollout(problem, th, h0, max(start, 0), t)
                (g,) = torch.autograd.grad(problem.step_loss(th, h, problem.targets[t - 1]), th)
        with torch.no_grad():
            s_t = problem.transition(theta, s_prev, problem.inputs[t - 1])
        return TruncatedModelState(expand_samples(s_t, M)), expand_samples(g.detach(), M)
