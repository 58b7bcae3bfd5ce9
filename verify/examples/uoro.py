r"""A hand-written UORO (Tallec & Ollivier 2017, arXiv:1702.05043, Algorithm 1), public API only.

.. math::
    \tilde g_t = (\delta s\cdot\tilde s_{t-1})\tilde\theta_{t-1} + \delta\theta,\quad
    \tilde s_t = \rho_0\partial_sF\,\tilde s_{t-1} + \rho_1\nu,\quad
    \tilde\theta_t = \tilde\theta_{t-1}/\rho_0 + \nu^\top\partial_\theta F/\rho_1

with Algorithm 1's normalizers ρ₀, ρ₁ (ε = 1e-7); ν random signs drawn through the noise hook (tabulated draws).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import torch
from torch.autograd.functional import jacobian

from verify.estimators import Guarantee, NoiseSource, Rademacher
from verify.model.problem import Problem

EPS = 1e-7  # Algorithm 1's epsilon


class State(NamedTuple):
    s: torch.Tensor  #: s_t, (M, *B, n) (the exact state: equal over the samples)
    s_tilde: torch.Tensor  #: (M, *B, n)
    theta_tilde: torch.Tensor  #: (M, p)
    nu: torch.Tensor  #: the last draw, (M, *B, n)


@dataclasses.dataclass(frozen=True)
class MyUORO:
    noise: NoiseSource = dataclasses.field(default_factory=Rademacher)
    rho1_fixed: bool = False  #: True: the seeded bug (rho1 = 1: unbiased, but not Algorithm 1)
    name: str = "my-uoro"
    guarantee = Guarantee("unbiased", source="Tallec & Ollivier 2017, Prop. 1")
    event_floor = 0.5  # declared: one flip of a sign of ν changes any non-constant direction (flat = deterministic)

    def noise_shape(self, problem: Problem) -> tuple[int, ...]:  # noise hook: one sign per state coordinate
        return tuple(problem.s0.shape)

    def noise_draws(self, steps: int) -> int:  # one draw per step (draw number t - 1)
        return steps

    def with_noise(self, noise: NoiseSource) -> MyUORO:  # the hook: the same estimator fed other draws
        return dataclasses.replace(self, noise=noise)

    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> State:
        s = problem.s0.expand(samples, *problem.s0.shape).clone()
        return State(s, torch.zeros_like(s), theta.new_zeros(samples, problem.p), torch.zeros_like(s))

    def step(
        self, problem: Problem, theta: torch.Tensor, state: State, t: int, rng: torch.Generator
    ) -> tuple[State, torch.Tensor]:
        M, shape = state.s.shape[0], state.s.shape[1:]
        x, y, th = problem.inputs[t - 1], problem.targets[t - 1], theta.detach()

        def F(w: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
            return problem.transition(w, s.reshape(shape), x).reshape(-1)

        J_th, J_s = jacobian(F, (th, state.s[0].reshape(-1)))  # (N, p), (N, N): shared by the samples
        s_t = F(th, state.s[0].reshape(-1)).detach()
        with torch.enable_grad():
            w, s = th.clone().requires_grad_(True), s_t.clone().requires_grad_(True)
            dl_dth, dl_ds = torch.autograd.grad(problem.step_loss(w, s.reshape(shape), y), (w, s), allow_unused=True)
        dl_dth, dl_ds = (torch.zeros_like(v) if d is None else d for d, v in ((dl_dth, th), (dl_ds, s_t)))
        st, tt = state.s_tilde.reshape(M, -1), state.theta_tilde
        g = (st @ (dl_ds @ J_s)).unsqueeze(-1) * tt + (dl_ds @ J_th + dl_dth)  # g~ = (ds . s~) th~ + dth
        nu = self.noise.draw(rng, (M, *shape), problem.dtype, problem.device, t - 1, state.nu).reshape(M, -1)
        s_fwd, dthg = st @ J_s.T, nu @ J_th
        norm = lambda v: torch.linalg.vector_norm(v, dim=-1, keepdim=True)  # noqa: E731
        rho0 = torch.sqrt(norm(tt) / (norm(s_fwd) + EPS)) + EPS  # Algorithm 1
        rho1 = torch.ones_like(rho0) if self.rho1_fixed else torch.sqrt(norm(dthg) / (norm(nu) + EPS)) + EPS
        st, tt = rho0 * s_fwd + rho1 * nu, tt / rho0 + dthg / rho1  # Algorithm 1: s~_t, theta~_t
        new = State(s_t.reshape(shape).expand(M, *shape).clone(), st.reshape(M, *shape), tt, nu.reshape(M, *shape))
        return new, g.detach()

    def influence_estimate(self, problem: Problem, state: State) -> torch.Tensor:
        return state.s_tilde.unsqueeze(-1) * state.theta_tilde.reshape(-1, *[1] * (state.s.dim() - 1), problem.p)


def MyUOROBuggy() -> MyUORO:
    """Seeded bug: ρ₁ ≡ 1. Still unbiased (any positive even ρ₁ is): conformance and the variance checks see it."""
    return MyUORO(rho1_fixed=True, name="my-uoro-buggy")
