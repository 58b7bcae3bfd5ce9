r"""UORO in Cooijmans & Martens's framework, projected in preactivation space, with given rescaling matrices Q_t
or UORO's greedy rescaling (Cooijmans & Martens 2019, "On the Variance of Unbiased Online Recurrent Optimization",
arXiv:1902.02405, § "Theoretical framework" and § "Toward improved variance reduction"; the greedy rule is
Tallec & Ollivier 2017, arXiv:1702.05043, Algorithm 1).

For an Elman cell :math:`h_t = \phi(p_t)`, :math:`p_t = W_t a_t` (:math:`z_t \equiv p_t`, the preactivation, is the
cut vertex where the noise enters):

.. math::
    \tilde h_t = \mathcal J^{h_t}_{h_{t-1}}\tilde h_{t-1} + \mathcal J^{h_t}_{p_t} Q_t u_t,\qquad
    \tilde w_t^\top = \tilde w_{t-1}^\top + u_t^\top Q_t^{-1}\mathcal J^{p_t}_{\theta_t},

with :math:`u_t` independent random signs (``noise="rademacher"``, Algorithm 1's law) or standard normal
(``"gaussian"``; the post asks only :math:`E[u u^\top] = I`; Gaussian noise makes the framework's trace product
:math:`V(Q)` the *whole* Q-dependent part of the variance, see :mod:`verify.uoro.framework`),
:math:`\tilde h_0 = 0`, :math:`\tilde w_0 = 0`, and the post's per-step estimate
:math:`\tilde g_t = \mathcal J^{L_t}_{h_t}\tilde h_t\tilde w_t^\top + \partial\ell_t/\partial\theta|_{h_t}` (the
readout's own gradient, exact) with ``form="post"``; with ``form="algorithm-1"`` (the default) Tallec & Ollivier's
Algorithm 1 form :math:`\tilde g_t = (\delta s\cdot\tilde h_{t-1})\tilde w_{t-1} + \delta\theta` (step t's own
contribution exact), the form of the toolkit's plain UORO, so that plain and optimal differ only in the projection
and the coefficients. Unbiased for any invertible, noise-independent :math:`Q_t`: :math:`E[Q u u^\top Q^{-1}] = I`.

* ``alpha``, ``Q0`` given: :math:`Q_t = \alpha_t Q_0` ("Toward improved variance reduction");
* both ``None``: UORO's *greedy* iterative rescaling ("Variance reduction through iterative rescaling"),
  :math:`\tilde h_t = \gamma_t\mathcal J\tilde h_{t-1} + \beta_t\mathcal J^{h_t}_{p_t}u_t`,
  :math:`\tilde w_t = \gamma_t^{-1}\tilde w_{t-1} + \beta_t^{-1}u_t^\top\mathcal J^{p_t}_{\theta_t}` with Algorithm
  1's :math:`\rho_0, \rho_1` (ε = 1e-7) as :math:`\gamma_t, \beta_t` -- noise-dependent, so outside the framework's
  closed form (β is even in u: still unbiased).

The per-step Jacobians are dense (``torch.func.jacrev``): an experiment estimator for the small, controlled setting
of the paper, not a fast one. Unbatched problems with an Elman cell only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch.func import grad, jacrev

from verify._validate import require_positive_int
from verify.errors import InvalidArgument
from verify.estimators.guarantee import Guarantee
from verify.estimators.online import _Named, check_problem_theta, check_step, expand_samples, shared
from verify.model.cells import ElmanCell
from verify.model.problem import Problem

__all__ = ["EPS", "FORMS", "NOISES", "FrameworkState", "FrameworkUORO", "StepTerms", "step_terms"]

EPS = 1e-7  # Algorithm 1's ε (the greedy rule)
#: the per-step estimate: the post's J^{L_t}_{h_t} h~_t w~_t^T, or Algorithm 1's (from h~_{t-1}, w~_{t-1}, step t exact)
FORMS = ("post", "algorithm-1")
#: the law of u_t: independent random signs (Algorithm 1's law) or standard normal (both have E[u u^T] = I)
NOISES = ("rademacher", "gaussian")


class FrameworkState(NamedTuple):
    """State of :class:`FrameworkUORO`: the forward state and the pair (h̃_t, w̃_t)."""

    s: torch.Tensor  #: h_t, (M, n)
    h: torch.Tensor  #: h̃_t, (M, n)
    w: torch.Tensor  #: w̃_t, (M, p)


class StepTerms(NamedTuple):
    """The deterministic quantities of step t at frozen θ (dense, float64 in the problem's dtype)."""

    s: torch.Tensor  #: h_t, (n,)
    J_h: torch.Tensor  #: ∂h_t/∂h_{t-1}, (n, n)
    J_hp: torch.Tensor  #: ∂h_t/∂p_t, (n, n)
    J_p: torch.Tensor  #: ∂p_t/∂θ_t, (n, p) (readout columns 0)
    dl_ds: torch.Tensor  #: ∂ℓ_t/∂h_t, (n,)
    dl_dth: torch.Tensor  #: ∂ℓ_t/∂θ at fixed h_t (the readout's own gradient), (p,)


def _elman(problem: Problem) -> ElmanCell:
    cell = problem.cell
    if not isinstance(cell, ElmanCell):
        raise InvalidArgument(
            "problem.cell", cell.describe(), "the framework's preactivation projection needs an Elman cell"
        )
    if problem.batch_shape:
        raise InvalidArgument("problem", problem.describe(), "the framework estimator is for unbatched problems")
    return cell


def step_terms(problem: Problem, theta: torch.Tensor, s_prev: torch.Tensor, t: int) -> StepTerms:
    """Dense Jacobians and loss gradients of step ``t`` (1..T) from the state ``s_prev`` = h_{t-1}."""
    cell = _elman(problem)
    x, y = problem.inputs[t - 1], problem.targets[t - 1]
    params = problem.cell_params(theta)
    p = cell.preactivation(params, s_prev, x)
    s = cell.phi(p)
    J_h = jacrev(lambda ss: cell.step(params, ss, x))(s_prev)
    J_hp = jacrev(cell.phi)(p)
    J_p = jacrev(lambda th: cell.preactivation(problem.cell_params(th), s_prev, x))(theta)
    dl_ds = grad(lambda ss: problem.step_loss(theta, ss, y))(s)
    dl_dth = grad(lambda th: problem.step_loss(th, s, y))(theta)
    return StepTerms(s.detach(), J_h, J_hp, J_p, dl_ds, dl_dth)


def _check_schedule(alpha: torch.Tensor | None, Q0: torch.Tensor | None) -> None:
    if (alpha is None) != (Q0 is None):
        raise InvalidArgument("alpha, Q0", f"{type(alpha).__name__}, {type(Q0).__name__}", "give both or neither")
    if alpha is None or Q0 is None:
        return
    if alpha.dim() != 1 or not bool(torch.isfinite(alpha).all()) or not bool((alpha > 0).all()):
        raise InvalidArgument("alpha", f"tensor of shape {tuple(alpha.shape)}", "must be a finite positive (T,) vector")
    if Q0.dim() != 2 or Q0.shape[0] != Q0.shape[1] or not bool(torch.isfinite(Q0).all()):
        raise InvalidArgument("Q0", f"tensor of shape {tuple(Q0.shape)}", "must be a finite square (n, n) matrix")
    cond = float(torch.linalg.cond(Q0))
    if not cond <= 1e12:  # nan for a zero matrix
        raise InvalidArgument("Q0", f"condition number {cond:.3g}", "must be invertible (condition number <= 1e12)")


@dataclass(frozen=True, eq=False)
class FrameworkUORO(_Named):
    r"""The framework's UORO with :math:`Q_t = \alpha_t Q_0` (``alpha`` (T,), ``Q0`` (n, n)), or UORO's greedy
    rescaling when both are ``None`` (module docstring; Cooijmans & Martens 2019, § "Theoretical framework")."""

    alpha: torch.Tensor | None = None
    Q0: torch.Tensor | None = None
    form: str = "algorithm-1"
    noise: str = "rademacher"
    label: str = ""
    _Qinv: torch.Tensor | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        _check_schedule(self.alpha, self.Q0)
        if self.form not in FORMS:
            raise InvalidArgument("form", self.form, f"must be one of {FORMS}")
        if self.noise not in NOISES:
            raise InvalidArgument("noise", self.noise, f"must be one of {NOISES}")
        if self.Q0 is not None:
            object.__setattr__(self, "_Qinv", torch.linalg.inv(self.Q0))
        name = self.label or ("uoro-framework(greedy)" if self.alpha is None else "uoro-framework(Q_t = alpha_t Q0)")
        object.__setattr__(self, "name", name)

    @property
    def guarantee(self) -> Guarantee:
        """Unbiased at frozen θ for any noise-independent invertible Q_t (Cooijmans & Martens 2019)."""
        return Guarantee("unbiased", source="Cooijmans & Martens 2019, 'Theoretical framework'")

    def _forward_back(self, t: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(Q_t, Q_t^{-1}) of step t."""
        assert self.alpha is not None and self.Q0 is not None and self._Qinv is not None
        a = self.alpha[t - 1]
        return a * self.Q0, self._Qinv / a

    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> FrameworkState:
        M = require_positive_int("samples", samples)
        _elman(problem)
        check_problem_theta(problem, theta)
        n, p = problem.n, problem.p
        if self.alpha is not None and self.Q0 is not None:
            if self.alpha.shape[0] < problem.T or tuple(self.Q0.shape) != (n, n):
                raise InvalidArgument(
                    "alpha, Q0",
                    f"shapes {tuple(self.alpha.shape)}, {tuple(self.Q0.shape)}",
                    f"the problem needs alpha (T,) = ({problem.T},) and Q0 (n, n) = ({n}, {n})",
                )
        dt, dev = problem.dtype, problem.device
        return FrameworkState(
            s=expand_samples(problem.s0.clone(), M),
            h=torch.zeros(M, n, dtype=dt, device=dev),
            w=torch.zeros(M, p, dtype=dt, device=dev),
        )

    def step(
        self, problem: Problem, theta: torch.Tensor, state: FrameworkState, t: int, rng: torch.Generator
    ) -> tuple[FrameworkState, torch.Tensor]:
        n, p = problem.n, problem.p
        theta, M = check_step(self.name, problem, theta, state, t, {"s": (n,), "h": (n,), "w": (p,)})
        z = step_terms(problem, theta, shared("state.s", state.s), t)
        if self.noise == "gaussian":
            u = torch.randn(M, n, generator=rng, dtype=problem.dtype, device=problem.device)
        else:
            u = (2 * torch.randint(0, 2, (M, n), generator=rng, device=problem.device) - 1).to(problem.dtype)
        fwd = state.h @ z.J_h.T  # J^{h_t}_{h_{t-1}} h~_{t-1}
        if self.alpha is None:  # UORO's greedy rule (Algorithm 1's rho_0, rho_1 as gamma_t, beta_t)
            nu_f, nu_b = u @ z.J_hp.T, u @ z.J_p
            gamma = torch.sqrt(state.w.norm(dim=1) / (fwd.norm(dim=1) + EPS)) + EPS
            beta = torch.sqrt(nu_b.norm(dim=1) / (nu_f.norm(dim=1) + EPS)) + EPS
            h = gamma[:, None] * fwd + beta[:, None] * nu_f
            w = state.w / gamma[:, None] + nu_b / beta[:, None]
        else:
            Q, Qinv = self._forward_back(t)
            h = fwd + (u @ Q.T) @ z.J_hp.T  # + J^{h_t}_{p_t} Q_t u_t
            w = state.w + (u @ Qinv) @ z.J_p  # + u_t^T Q_t^{-1} J^{p_t}_{theta_t}
        if self.form == "post":
            est = (h @ z.dl_ds)[:, None] * w + z.dl_dth  # J^{L_t}_{h_t} h~_t w~_t^T + readout gradient
        else:  # Algorithm 1: (delta s . h~_{t-1}) w~_{t-1} + delta theta (step t's own gradient, exact)
            est = (fwd @ z.dl_ds)[:, None] * state.w + (z.dl_ds @ z.J_hp @ z.J_p + z.dl_dth)
        return FrameworkState(expand_samples(z.s, M), h, w), est
