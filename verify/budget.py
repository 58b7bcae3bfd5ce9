r"""Predicted round-off budgets for comparing two computations of the same derivative.

The error of a sum of terms is bounded by the rounding unit times the sum of the
terms' magnitudes, not by the size of the result (Higham, *Accuracy and Stability
of Numerical Algorithms*, §3-4: the :math:`|a|^\top|b|` bound of an inner product).
For a BPTT gradient :math:`g = \sum_t c_t` with per-step contributions
:math:`c_t = a_t\,\partial f/\partial\theta(s_{t-1}, x_t) + \partial\ell_t/\partial\theta`,
each :math:`c_t` is produced by inner products of length about :math:`m = n + d + k`
and by at most T adjoint steps, so we predict

.. math::
    \frac{\|\hat g - g\|}{\|g\|} \le C\,u\,m\,T\,\kappa,\qquad
    \kappa = \frac{\sum_t \|c_t\|}{\|g\|} \;(\ge 1),

where u is the rounding unit (``finfo.eps / 2``) and κ measures cancellation
between the steps. For influence matrices the analogue of κ is

.. math::
    \kappa_I = \frac{\sum_t \sum_{\tau \le t} \big(\prod_{j=\tau+1}^{t}\|J_j\|_2\big)\,
               \|\partial f/\partial\theta(\tau)\|_F}{\sum_t \|\partial s_t/\partial\theta\|_F},

with :math:`J_j = \partial f/\partial s` at step j: the products of step-Jacobian
norms bound the measured contraction of the instance (Σ‖∂h_T/∂h_{T−j}‖). The
constant C is the number of independently rounded computations compared (2: each
side carries its own error). This is a worst-case model; observed errors are
usually far smaller (they grow like the square root of the depth), which the
self-check reports as measured/budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.func import jacrev

from verify.problem import Problem
from verify.reference import default_loss_vjp, default_transition_vjp, influence_jacfwd

__all__ = ["Conditioning", "conditioning", "roundoff_budget", "unit_roundoff"]

#: number of independently rounded computations in a pairwise comparison
C_PAIR = 2.0


def unit_roundoff(dtype: torch.dtype) -> float:
    """Rounding unit u = eps/2 of a floating dtype."""
    return float(torch.finfo(dtype).eps) / 2.0


@dataclass(frozen=True)
class Conditioning:
    """Magnitude measures of an instance, computed in float64 (see module docstring)."""

    kappa_grad: float
    kappa_influence: float
    contraction_sum: float
    max_step_jacobian_norm: float
    depth: int
    steps: int

    def gradient_budget(self, dtype: torch.dtype = torch.float64, c: float = C_PAIR) -> float:
        return roundoff_budget(unit_roundoff(dtype), self.depth, self.steps, self.kappa_grad, c)

    def influence_budget(self, dtype: torch.dtype = torch.float64, c: float = C_PAIR) -> float:
        return roundoff_budget(unit_roundoff(dtype), self.depth, self.steps, self.kappa_influence, c)


def roundoff_budget(u: float, depth: int, steps: int, kappa: float, c: float = C_PAIR) -> float:
    r"""Relative budget :math:`C\,u\,m\,T\,\kappa`."""
    return c * u * depth * steps * max(kappa, 1.0)


def conditioning(problem: Problem, theta: torch.Tensor, with_influence: bool = True) -> Conditioning:
    """Measure κ, κ_I and the contraction of ``problem`` at θ (in float64)."""
    P = problem.to(torch.float64)
    th = theta.detach().to(torch.float64)
    tvjp, lvjp = default_transition_vjp(P, th), default_loss_vjp(P, th)
    with torch.no_grad():
        states = P.rollout(th)
    T = P.T
    a = torch.zeros_like(states[0])
    total = torch.zeros_like(th)
    mags = 0.0
    for t in range(T, 0, -1):
        d_s, d_th = lvjp(t, states)
        a = a + d_s
        a_prev, d_theta = tvjp(t, states, a)
        c_t = d_th + d_theta
        mags += float(torch.linalg.vector_norm(c_t))
        total = total + c_t
        a = a_prev
    gnorm = float(torch.linalg.vector_norm(total))
    kappa_g = mags / gnorm if gnorm > 0 else math.inf

    # step Jacobians (summed over any batch: the Jacobian of a batched step is block
    # diagonal and its 2-norm is the max over the blocks)
    jn, fth = [], []
    for t in range(1, T + 1):
        x_t, s_prev = P.inputs[t - 1], states[t - 1]
        Js = jacrev(lambda s, x_t=x_t: P.transition(th, s, x_t))(s_prev)
        Jt = jacrev(lambda w, x_t=x_t, s_prev=s_prev: P.transition(w, s_prev, x_t))(th)
        N = states[0].numel()
        jn.append(_block_norm(Js.reshape(N, N), P))
        fth.append(float(torch.linalg.matrix_norm(Jt.reshape(-1, th.numel()))))
    contraction = _contraction_sum(jn)
    kappa_i = math.nan
    if with_influence:
        num = 0.0
        inf_norms = 0.0
        for t in range(1, T + 1):
            prod = 1.0
            for tau in range(t, 0, -1):
                num += prod * fth[tau - 1]
                prod *= jn[tau - 1]
        # the denominator must be the true size of the influence matrices, not a bound
        inf_norms = float(torch.linalg.vector_norm(influence_jacfwd(P, th).reshape(T, -1), dim=1).sum())
        kappa_i = num / inf_norms if inf_norms > 0 else math.inf
    depth = P.n + P.cell.input_size + P.readout.output_size
    return Conditioning(kappa_g, kappa_i, contraction, max(jn) if jn else 0.0, depth, T)


def _block_norm(J: torch.Tensor, problem: Problem) -> float:
    """2-norm of a (possibly batched, block-diagonal) step Jacobian."""
    n = problem.n
    nb = J.shape[-1] // n
    J = J.reshape(nb * n, nb * n)
    if nb == 1:
        return float(torch.linalg.matrix_norm(J.reshape(n, n), ord=2))
    blocks = J.reshape(nb, n, nb, n)
    return max(float(torch.linalg.matrix_norm(blocks[b, :, b, :], ord=2)) for b in range(nb))


def _contraction_sum(norms: list[float]) -> float:
    r""":math:`\sum_j \prod_{i>T-j} \|J_i\|` for the last state (a bound on Σ‖∂h_T/∂h_{T-j}‖)."""
    total, prod = 1.0, 1.0
    for jn in reversed(norms):
        prod *= jn
        total += prod
    return total
