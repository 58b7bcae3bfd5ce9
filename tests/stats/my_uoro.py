"""The hand-written UORO of the README's worked example ("Checking your own estimator").

A user's implementation of Tallec & Ollivier's Algorithm 1 with dense one-step
Jacobians (fine for small unbatched problems), following the estimator contract of
:mod:`verify.estimators.base`; ``buggy=True`` forgets the square root of ρ₁'s
ratio *and* applies ρ₁ to s̃ only -- a biased variant for the README's failing run.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch.func import grad, jacrev


class MyUOROState(NamedTuple):
    s: torch.Tensor  # (M, n) forward state s_t (the same for every sample)
    s_tilde: torch.Tensor  # (M, n)
    theta_tilde: torch.Tensor  # (M, p)


class MyUORO:
    """UORO (Tallec & Ollivier, Algorithm 1) with dense one-step Jacobians, M samples at once."""

    name = "my-uoro"
    #: declared (issue 22): along any direction where the estimate is not constant, one flip of a sign of ν
    #: changes it -- an event of probability 1/2 -- so draws that stay flat are deterministic
    event_floor = 0.5

    def __init__(self, buggy: bool = False) -> None:
        self.buggy = buggy

    def init(self, problem, theta, rng, *, samples=1):  # type: ignore[no-untyped-def]
        M, n, p = samples, problem.n, problem.p
        zeros = torch.zeros
        return MyUOROState(problem.s0.expand(M, n), zeros(M, n, dtype=theta.dtype), zeros(M, p, dtype=theta.dtype))

    def step(self, problem, theta, state, t, rng):  # type: ignore[no-untyped-def]
        x, y, s = problem.inputs[t - 1], problem.targets[t - 1], state.s[0]
        J_s = jacrev(lambda u: problem.transition(theta, u, x))(s)  # dF/ds   (n, n)
        J_th = jacrev(lambda w: problem.transition(w, s, x))(theta)  # dF/dθ   (n, p)
        s_next = problem.transition(theta, s, x)
        dl_ds = grad(lambda u: problem.step_loss(theta, u, y))(s_next)
        dl_dth = grad(lambda w: problem.step_loss(w, s_next, y))(theta)
        delta_s, delta_th = dl_ds @ J_s, dl_ds @ J_th + dl_dth
        g = (state.s_tilde @ delta_s)[:, None] * state.theta_tilde + delta_th  # g~ = (δs·s~) θ~ + δθ
        M = state.s_tilde.shape[0]
        nu = (2 * torch.randint(0, 2, (M, problem.n), generator=rng) - 1).to(theta.dtype)  # random signs
        s_fwd, d_th_g = state.s_tilde @ J_s.T, nu @ J_th  # forwarddiff of s~, backprop of ν
        eps = 1e-7
        rho0 = (state.theta_tilde.norm(dim=1) / (s_fwd.norm(dim=1) + eps)).sqrt() + eps
        rho1 = (d_th_g.norm(dim=1) / (nu.norm(dim=1) + eps)).sqrt() + eps
        if self.buggy:
            rho1 = d_th_g.norm(dim=1) / (nu.norm(dim=1) + eps) + eps
            s_tilde = rho0[:, None] * s_fwd + rho1[:, None] * nu
            theta_tilde = state.theta_tilde / rho0[:, None] + d_th_g  # ρ1 applied to s~ only
        else:
            s_tilde = rho0[:, None] * s_fwd + rho1[:, None] * nu
            theta_tilde = state.theta_tilde / rho0[:, None] + d_th_g / rho1[:, None]
        return MyUOROState(s_next.expand(M, -1), s_tilde, theta_tilde), g

    def influence_estimate(self, problem, state):  # type: ignore[no-untyped-def]
        return state.s_tilde[:, :, None] * state.theta_tilde[:, None, :]  # s~ ⊗ θ~, (M, n, p)
