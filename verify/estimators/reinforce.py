r"""REINFORCE on the state-perturbed RNN, coupled with UORO of the post (Cooijmans & Martens).

Cooijmans, T. and Martens, J. (2019), "On the Variance of Unbiased Online Recurrent
Optimization", arXiv:1902.02405, section "A link to REINFORCE": with the baseline
:math:`b_t = L_t|_{u=0}` the REINFORCE estimate tends to UORO's as σ → 0, the difference
O(σ); without it the variance grows like O(1/σ²). The claim ``uoro.reinforce-link``
(:mod:`verify.checks.uoro_variance`) measures both.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.func import grad, vmap

from verify._func import vjp
from verify.estimators.guarantee import Guarantee
from verify.model.problem import Problem
from verify.oracles.algorithm1 import StepJacobians, step_jacobians

__all__ = ["Reinforce"]


@dataclass(frozen=True)
class Reinforce:
    r"""REINFORCE on the state-perturbed RNN of Cooijmans & Martens ("A link to REINFORCE"), Q = I.

    .. math::
        h_t = f_\theta(\bar h_{t-1}, x_t),\quad \bar h_t = h_t + \sigma u_t,\ u_t\sim N(0, I),\quad
        \bar w_t^\top = \bar w_{t-1}^\top + \tfrac1\sigma u_t^\top\,\partial f/\partial\theta(\bar h_{t-1}, x_t),

    and the estimate of :math:`\nabla_\theta\sum_t E L_t` is
    :math:`\sum_t (L_t - b_t)\bar w_t + \partial L_t/\partial\theta|_{\bar h_t}` with the baseline
    :math:`b_t = L_t|_{u=0}` (or 0 without). Coupled with the same u, the UORO estimate of the
    post (noise :math:`u_t` unscaled, no ρ's): :math:`\tilde h_t = J\tilde h_{t-1} + u_t`,
    :math:`\tilde w_t^\top = \tilde w_{t-1}^\top + u_t^\top J_\theta`, estimate
    :math:`\sum_t \partial L_t/\partial h_t\,\tilde h_t\,\tilde w_t^\top + \partial L_t/\partial\theta|_{h_t}`.
    The post's expansion gives :math:`(L_t - b_t)\bar w_t \to \partial L_t/\partial h_t\,\tilde h_t\tilde w_t^\top`
    as σ → 0 (difference O(σ)); without the baseline the term :math:`\tfrac1\sigma L_t|_{u=0}\sum u_s^\top J_s`
    has variance O(1/σ²). ``inverse_sigma=False`` is a mutant (the score without 1/σ).
    """

    sigma: float
    baseline: bool = True
    inverse_sigma: bool = True

    @property
    def guarantee(self) -> Guarantee:
        """Biased: the gradient of the σ-smoothed loss; it tends to UORO's estimate as σ → 0 (O(σ))."""
        return Guarantee("biased", source="Cooijmans & Martens 2019, 'A link to REINFORCE'")

    def sample(
        self, problem: Problem, theta: torch.Tensor, m: int, rng: torch.Generator, jac: StepJacobians | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """m coupled draws: (REINFORCE estimate (m, p), UORO-of-the-post estimate (m, p)) of ∇L."""
        jac = step_jacobians(problem, theta) if jac is None else jac
        th = theta.detach()
        T, n, p = problem.T, problem.n, problem.p
        sig = float(self.sigma)
        base = problem.losses(th) if self.baseline else torch.zeros(T, dtype=th.dtype)
        hbar = problem.s0.expand(m, n)
        wbar = torch.zeros(m, p, dtype=th.dtype)
        htil = torch.zeros(m, n, dtype=th.dtype)
        wtil = torch.zeros(m, p, dtype=th.dtype)
        est_r = torch.zeros(m, p, dtype=th.dtype)
        est_u = torch.zeros(m, p, dtype=th.dtype)
        for t in range(1, T + 1):
            x, y = problem.inputs[t - 1], problem.targets[t - 1]
            u = torch.randn(m, n, generator=rng, dtype=th.dtype)
            h = problem.transition(th, hbar, x)

            def score_one(hb: torch.Tensor, uu: torch.Tensor, x: torch.Tensor = x) -> torch.Tensor:
                _, pull = vjp(lambda tt: problem.transition(tt, hb, x), th)
                return pull(uu)[0]

            score = vmap(score_one)(hbar, u)  # per-sample u^T df/dtheta at the noisy state
            hbar = h + sig * u
            wbar = wbar + (score / sig if self.inverse_sigma else score)
            L = problem.loss.pointwise(problem.output(th, hbar), y)  # (m,)
            direct = vmap(grad(lambda tt, hb, y=y: problem.step_loss(tt, hb, y)), in_dims=(None, 0))(th, hbar)
            est_r = est_r + (L - base[t - 1]).unsqueeze(-1) * wbar + direct
            # UORO of the post on the deterministic trajectory, same u
            htil = htil @ jac.J_s[t - 1].T + u
            wtil = wtil + u @ jac.J_th[t - 1]
            est_u = est_u + (htil @ jac.dl_ds[t - 1]).unsqueeze(-1) * wtil + jac.dl_dth[t - 1]
        return est_r, est_u
