r"""A hand-written RTRL (Tallec & Ollivier, uoro-tallec-ollivier.md eq. (4)), public API only.

.. math::
    \frac{\partial s_t}{\partial\theta} = \frac{\partial F}{\partial s}\frac{\partial s_{t-1}}{\partial\theta}
      + \frac{\partial F}{\partial\theta},\qquad
    \frac{\partial\ell_t}{\partial\theta} = \frac{\partial\ell_t}{\partial s_t}\frac{\partial s_t}{\partial\theta}
      + \frac{\partial\ell_t}{\partial\theta}\Big|_{s_t}

Dense Jacobians by autograd over the flattened (batched) state: O(n²p) per step, fine
for the catalog's small problems. ``rnn-verify run --impl rtrl=verify.examples.rtrl:MyRTRL``.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch.autograd.functional import jacobian

from verify.estimators import Guarantee
from verify.model.problem import Problem


class State(NamedTuple):
    s: torch.Tensor  #: s_t, (M, *B, n) -- deterministic: the M samples are equal
    influence: torch.Tensor  #: ds_t/dtheta, (M, *B, n, p)


class MyRTRL:
    name = "my-rtrl"
    guarantee = Guarantee("exact", source="Tallec & Ollivier 2017, eq. (4)")
    carry = True  #: False: the seeded bug (the carried term of eq. (4) is dropped)

    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> State:
        s0 = problem.s0.expand(samples, *problem.s0.shape).clone()
        J0 = torch.zeros(*s0.shape, problem.p, dtype=problem.dtype, device=problem.device)
        return State(s0, J0)

    def step(
        self, problem: Problem, theta: torch.Tensor, state: State, t: int, rng: torch.Generator
    ) -> tuple[State, torch.Tensor]:
        M, shape, p = state.s.shape[0], state.s.shape[1:], problem.p
        x, y = problem.inputs[t - 1], problem.targets[t - 1]
        s_prev, J_prev = state.s[0].reshape(-1), state.influence[0].reshape(-1, p)

        def F(th: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
            return problem.transition(th, s.reshape(shape), x).reshape(-1)

        J_th, J_s = jacobian(F, (theta.detach(), s_prev))  # (N, p), (N, N)
        J = J_s @ J_prev + J_th if self.carry else J_th  # eq. (4)
        with torch.enable_grad():
            th = theta.detach().clone().requires_grad_(True)
            s = F(theta.detach(), s_prev).detach().requires_grad_(True)
            d_th, d_s = torch.autograd.grad(problem.step_loss(th, s.reshape(shape), y), (th, s), allow_unused=True)
        d_th = torch.zeros_like(theta) if d_th is None else d_th
        d_s = torch.zeros_like(s) if d_s is None else d_s
        g = d_s @ J + d_th  # eq. (7) with the exact influence
        s_new, J_new = s.detach().reshape(shape), J.reshape(*shape, p)
        new = State(s_new.expand(M, *shape).clone(), J_new.expand(M, *shape, p).clone())
        return new, g.detach().expand(M, p).clone()

    def influence_estimate(self, problem: Problem, state: State) -> torch.Tensor:
        return state.influence


class MyRTRLBuggy(MyRTRL):
    """Seeded bug: ``J = ∂F/∂θ`` only (the carried ``∂F/∂s · J_{t-1}`` forgotten) -- a one-step truncation."""

    name = "my-rtrl-buggy"
    carry = False
