r"""Real-time recurrent learning: the forward sensitivity recursion, exact for frozen θ.

Tallec & Ollivier (uoro-tallec-ollivier.md) eq. (4); Cooijmans & Martens
(uoro-variance-cooijmans-martens.md), "forward accumulation":

.. math::
    \frac{\partial s_{t}}{\partial\theta}
      = \frac{\partial F_{state}}{\partial\theta}(x_{t}, s_{t-1}, \theta)
      + \frac{\partial F_{state}}{\partial s}(x_{t}, s_{t-1}, \theta)\,
        \frac{\partial s_{t-1}}{\partial\theta},\qquad
    \frac{\partial s_0}{\partial\theta} = 0,

and the per-step gradient (UORO eq. (7) with the exact influence matrix)

.. math::
    \frac{\partial \ell_t}{\partial\theta}
      = \frac{\partial \ell_t}{\partial s_t}\,\frac{\partial s_t}{\partial\theta}
      + \frac{\partial \ell_t}{\partial\theta}\Big|_{s_t}.

Cost per step O(n²p): the two one-step Jacobians come from one reverse pass with
a batch of n·|B| basis cotangents, and the influence update is one batched matrix
product (|B|, n, n) @ (|B|, n, p) -- never a loop over parameters. The influence
state is kept per sequence of the batch: shape (M, *B, n, p).

**Frozen mode**: :func:`~verify.estimators.base.run_estimator` (θ fixed): the
estimates equal BPTT's per-step gradients to round-off (check ``rtrl.exact``).
**Online mode**: :func:`~verify.estimators.online.run_online` passes the updated
θ_t to every step; the recursion then accumulates sensitivities along the moving
θ (rtrl-convergence-analysis.md eq. (2.24), the "online forward derivative").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from verify._validate import require_memory, require_positive_int
from verify.estimators import kernels
from verify.estimators.guarantee import Guarantee
from verify.estimators.online import (
    _Named,
    batch_numel,
    check_problem_theta,
    check_step,
    expand_samples,
    grad_batched,
    shared,
)
from verify.model.problem import Problem

__all__ = ["RTRL", "RTRLState"]


class RTRLState(NamedTuple):
    """RTRL's state: the forward state and the influence matrices :math:`\\partial s_t/\\partial\\theta`."""

    s: torch.Tensor  #: (M, *B, n)
    influence: torch.Tensor  #: (M, *B, n, p)


@dataclass(frozen=True)
class RTRL(_Named):
    r"""RTRL (UORO eq. (4)); deterministic, so its M samples are identical.

    ``label`` overrides the estimator's ``name`` (default ``"rtrl"``).
    Subclasses may override :meth:`transition_jacobians` (the mutant catalog does).
    ``path``: ``"auto"`` (default) computes the one-step Jacobians and the loss gradient
    from the cell's structured derivatives (:mod:`verify.estimators.kernels`: no autograd
    graph, a handful of fused operations per step) for the standard cells and by autograd
    otherwise; ``"generic"`` forces autograd (the reference); ``"fast"`` refuses other cells.
    """

    label: str = ""
    path: str = "auto"

    @property
    def guarantee(self) -> Guarantee:
        """Exact: RTRL's influence recursion (Tallec & Ollivier 2017, eq. (4)) gives ∂ℓ_t/∂θ itself."""
        return Guarantee("exact", source="Tallec & Ollivier 2017, eq. (4)")

    def __post_init__(self) -> None:
        kernels.check_path(self.path)
        object.__setattr__(self, "name", self.label or "rtrl")

    # ---------------------------------------------------------------- contract
    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> RTRLState:
        """State at t = 0: :math:`s_0` and :math:`\\partial s_0/\\partial\\theta = 0`."""
        M = require_positive_int("samples", samples)
        check_problem_theta(problem, theta)
        self.require_memory(problem)
        shape = (*problem.batch_shape, problem.n, problem.p)
        J = torch.zeros(shape, dtype=problem.dtype, device=problem.device)
        return RTRLState(expand_samples(problem.s0.clone(), M), expand_samples(J, M))

    def step(
        self, problem: Problem, theta: torch.Tensor, state: RTRLState, t: int, rng: torch.Generator
    ) -> tuple[RTRLState, torch.Tensor]:
        """Advance eq. (4) by one step and return :math:`\\partial\\ell_t/\\partial\\theta` for every sample."""
        n, p, B = problem.n, problem.p, problem.batch_shape
        theta, M = check_step(self.name, problem, theta, state, t, {"s": (*B, n), "influence": (*B, n, p)})
        s_prev = shared("state.s", state.s)
        J_prev = shared("state.influence", state.influence)
        nb = batch_numel(problem)
        if kernels.use_fast(self.path, problem, self.name):
            if type(self).transition_jacobians is RTRL.transition_jacobians:
                # eq. (4) with the structure of ∂F/∂θ: J = ∂F/∂s J_{t-1} (one product), then += ∂F/∂θ in place
                lin = kernels.linearize(problem, theta, s_prev, problem.inputs[t - 1])
                s_next = lin.s_next.reshape(s_prev.shape)
                J = kernels.add_theta_rows_(problem, lin, torch.bmm(lin.jac_state(), J_prev.reshape(nb, n, p)))
            else:  # a subclass's own Jacobians (the mutant catalog overrides them)
                s_next, J_s, J_th = self.transition_jacobians(problem, theta, s_prev, problem.inputs[t - 1])
                J = torch.baddbmm(J_th, J_s, J_prev.reshape(nb, n, p))  # eq. (4)
            dl_ds, dl_dth = kernels.loss_gradients(problem, theta, s_next, problem.targets[t - 1])
        else:
            with torch.enable_grad():
                th = theta.clone().requires_grad_(True)
                s_in = s_prev.detach().clone().requires_grad_(True)
                s_next, J_s, J_th = self.transition_jacobians(problem, th, s_in, problem.inputs[t - 1])
                # eq. (4): ds_t/dθ = ∂F/∂s · ds_{t-1}/dθ + ∂F/∂θ
                J = torch.bmm(J_s, J_prev.reshape(nb, n, p)) + J_th  # eq. (4)
                s_leaf = s_next.detach().requires_grad_(True)
                loss = problem.step_loss(th, s_leaf, problem.targets[t - 1])
                d_th, d_s = torch.autograd.grad(loss, (th, s_leaf), allow_unused=True)
            dl_dth = torch.zeros_like(theta) if d_th is None else d_th
            dl_ds = torch.zeros_like(s_leaf) if d_s is None else d_s
        # eq. (7) with the exact influence: dl_t/dθ = dl_t/ds_t · ds_t/dθ + ∂l_t/∂θ|_{s_t}
        g = torch.einsum("bi,bip->p", dl_ds.reshape(nb, n), J) + dl_dth  # eq. (7)
        J = J.reshape(*B, n, p).detach()
        new = RTRLState(expand_samples(s_next.detach(), M), expand_samples(J, M))
        return new, expand_samples(g.detach(), M)

    # ------------------------------------------------------------ components
    def transition_jacobians(
        self, problem: Problem, theta: torch.Tensor, s: torch.Tensor, x: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        r"""One step's value and Jacobians at (x_t, s_{t-1}, θ): (s_t, ∂F/∂s (|B|,n,n), ∂F/∂θ (|B|,n,p)).

        Generic path: one reverse pass with the n·|B| basis cotangents of the (flattened)
        batched state; ∂F/∂s of a batched transition is block diagonal, and its |B| blocks
        are read off; ``theta`` and ``s`` must require grad. Fast path (standard cells):
        ∂F/∂s from the cell's tangent map and ∂F/∂θ from the outer products of the gate
        cotangents with (h, x, 1) (:mod:`verify.estimators.kernels`).
        """
        if kernels.use_fast(self.path, problem, self.name):
            lin = kernels.linearize(problem, theta.detach(), s.detach(), x)
            return lin.s_next.reshape(s.shape), lin.jac_state(), kernels.theta_rows(problem, lin)
        n, nb = problem.n, batch_numel(problem)
        s_next = problem.transition(theta, s, x)
        N = nb * n
        eye = torch.eye(N, dtype=s_next.dtype, device=s_next.device).reshape(N, *s_next.shape)
        d_th, d_s = grad_batched(s_next, (theta, s), eye, retain_graph=False)
        J_th = d_th.reshape(nb, n, problem.p)
        full = d_s.reshape(nb, n, nb, n)
        idx = torch.arange(nb, device=s_next.device)
        J_s = full[idx, :, idx, :]  # diagonal blocks: (nb, n, n)
        return s_next.detach(), J_s, J_th

    def influence_estimate(self, problem: Problem, state: RTRLState) -> torch.Tensor:
        """:math:`\\partial s_t/\\partial\\theta` held in the state, shape (M, *B, n, p)."""
        return state.influence

    def require_memory(self, problem: Problem, samples: int = 1) -> None:
        """Refuse, before allocating, an influence state that would not fit in memory.

        The state is stored once (the samples share it) but a step holds about five
        n·|B|×p blocks (old and new influence, ∂F/∂θ, the batched cotangent pass).
        """
        nb, n, p = batch_numel(problem), problem.n, problem.p
        item = torch.empty((), dtype=problem.dtype).element_size()
        need = 5 * nb * n * p * item + 2 * (nb * n) ** 2 * item
        require_memory(
            "problem",
            need,
            f"RTRL influence state (batch {nb}) x (n={n}) x (p={p}) in {str(problem.dtype).replace('torch.', '')}",
        )
