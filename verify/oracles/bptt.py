r"""Exact reference gradients: BPTT through autograd and an independent explicit adjoint.

All functions take a :class:`~verify.model.problem.Problem` and a flat θ. They insist on
float64 (float32 is accepted for precision studies, never half precision).

Two independent reverse-mode computations:

* **BPTT** (:func:`bptt_gradient`, :func:`per_step_gradients`,
  :func:`influence_matrices`): PyTorch autograd through the whole unrolled graph.
* **Explicit adjoint recursion** (:func:`adjoint_gradient`): the backward pass
  written out as a loop of one-step vector-Jacobian products (``torch.func.vjp`` on
  a single transition), never autograd through the unrolled graph:

  .. math::
      a_T = \frac{\partial \ell_T}{\partial s_T},\qquad
      a_{t} = \frac{\partial \ell_t}{\partial s_t}
            + a_{t+1}\,\frac{\partial f}{\partial s}(s_t, x_{t+1}),\qquad
      \nabla L = \sum_t a_t \frac{\partial f}{\partial \theta}(s_{t-1}, x_t)
               + \sum_t \frac{\partial \ell_t}{\partial \theta}\Big|_{s_t}.

and one forward-mode computation, :func:`influence_jacfwd` (``torch.func.jacfwd`` of
the unrolled states), used to cross-check :func:`influence_matrices`.

Truncations (Miller & Hardt eq. (3) and truncated BPTT) are here too, as offline
references: :func:`truncated_model_states`, :func:`truncated_model_gradient`,
:func:`tbptt_gradient`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.func import jacfwd, vmap

from verify._func import forward_mode_ready, vjp
from verify._validate import require_memory, require_positive_int, require_reference_dtype
from verify.errors import InvalidArgument
from verify.model.problem import Problem

__all__ = [
    "LossVJP",
    "TransitionVJP",
    "adjoint_gradient",
    "bptt_gradient",
    "influence_jacfwd",
    "influence_matrices",
    "per_step_gradients",
    "tbptt_gradient",
    "truncated_model_gradient",
    "truncated_model_states",
]

#: (t, states, cotangent of s_t) -> (cotangent of s_{t-1}, cotangent of θ)
TransitionVJP = Callable[[int, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
#: (t, states) -> (∂ℓ_t/∂s_t, ∂ℓ_t/∂θ at fixed s_t)
LossVJP = Callable[[int, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def _prepare(problem: Problem, theta: torch.Tensor) -> torch.Tensor:
    require_reference_dtype("problem.dtype", problem.dtype)
    theta = problem.check_theta(theta)
    if theta.dtype != problem.dtype:
        raise InvalidArgument("theta", f"dtype {theta.dtype}", f"must match the problem's dtype {problem.dtype}")
    return theta


# --------------------------------------------------------------------------- BPTT
def bptt_gradient(problem: Problem, theta: torch.Tensor) -> torch.Tensor:
    r""":math:`\nabla_\theta L` by autograd through the unrolled graph (full BPTT), shape (p,).

    UORO (uoro-tallec-ollivier.md) §1: backpropagation through time, the exact reference.
    """
    theta = _prepare(problem, theta).detach().requires_grad_(True)
    with torch.enable_grad():
        loss = problem.total_loss(theta)
        (g,) = torch.autograd.grad(loss, theta)
    return g.detach()


def per_step_gradients(problem: Problem, theta: torch.Tensor) -> torch.Tensor:
    r""":math:`\partial\ell_t/\partial\theta` for t = 1..T by autograd, shape (T, p).

    UORO §1: the per-step losses :math:`\ell_t` whose sum is the objective.
    """
    theta = _prepare(problem, theta).detach().requires_grad_(True)
    T = problem.T
    require_memory(
        "problem", 8 * T * (problem.p + 4 * T * problem.n * max(1, _batch_numel(problem))), "per-step gradients"
    )
    with torch.enable_grad():
        losses = problem.losses(theta)
        eye = torch.eye(T, dtype=losses.dtype, device=losses.device)
        (G,) = torch.autograd.grad(losses, theta, grad_outputs=eye, is_grads_batched=True)
    return G.detach()


def influence_matrices(problem: Problem, theta: torch.Tensor, chunk: int = 1024) -> torch.Tensor:
    r"""Influence matrices :math:`\partial s_t/\partial\theta`, t = 1..T, by reverse mode.

    UORO eq. (4): the quantity RTRL propagates forward.

    Shape (T, *B, n, p). Computed by backpropagating every basis cotangent of the
    unrolled states through the autograd graph (in chunks of ``chunk`` cotangents).
    The memory needed is estimated first and refused when it would not fit.
    """
    theta = _prepare(problem, theta).detach().requires_grad_(True)
    T, n, p, nb = problem.T, problem.n, problem.p, _batch_numel(problem)
    m = T * nb * n
    require_memory("problem", 8 * (m * p + min(chunk, m) * (m + p) * 3), f"influence matrices ({m}x{p})")
    with torch.enable_grad():
        states = problem.rollout(theta)[1:].reshape(-1)
        rows = []
        for lo in range(0, m, chunk):
            hi = min(m, lo + chunk)
            cot = torch.zeros(hi - lo, m, dtype=states.dtype, device=states.device)
            cot[torch.arange(hi - lo), torch.arange(lo, hi)] = 1.0
            (J,) = torch.autograd.grad(states, theta, grad_outputs=cot, is_grads_batched=True, retain_graph=hi < m)
            rows.append(J)
    return torch.cat(rows).reshape(T, *problem.batch_shape, n, p).detach()


def influence_jacfwd(problem: Problem, theta: torch.Tensor) -> torch.Tensor:
    r""":math:`\partial s_t/\partial\theta` by forward mode (``torch.func.jacfwd`` of the unrolled states).

    Shape (T, *B, n, p): an independent cross-check of :func:`influence_matrices`.
    """
    theta = _prepare(problem, theta).detach()
    T, n, p, nb = problem.T, problem.n, problem.p, _batch_numel(problem)
    require_memory("problem", 8 * 4 * T * nb * n * p, f"forward-mode influence ({T * nb * n}x{p})")
    forward_mode_ready()
    J: torch.Tensor = jacfwd(lambda th: problem.rollout(th)[1:])(theta)
    return J.detach()


# ------------------------------------------------------------------ explicit adjoint
def default_transition_vjp(problem: Problem, theta: torch.Tensor) -> TransitionVJP:
    """One-step VJP of :math:`f_\\theta(s_{t-1}, x_t)` linearised at the stored :math:`s_{t-1}`."""

    def tvjp(t: int, states: torch.Tensor, cot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x_t = problem.inputs[t - 1]
        _, pull = vjp(lambda th, s: problem.transition(th, s, x_t), theta, states[t - 1])
        d_theta, d_s = pull(cot)
        return d_s, d_theta

    return tvjp


def default_loss_vjp(problem: Problem, theta: torch.Tensor) -> LossVJP:
    """:math:`(\\partial\\ell_t/\\partial s_t, \\partial\\ell_t/\\partial\\theta)` at the stored :math:`s_t`."""

    def lvjp(t: int, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        target = problem.targets[t - 1]
        loss, pull = vjp(lambda th, s: problem.step_loss(th, s, target), theta, states[t])
        d_theta, d_s = pull(torch.ones_like(loss))
        return d_s, d_theta

    return lvjp


def adjoint_gradient(
    problem: Problem,
    theta: torch.Tensor,
    *,
    per_step: bool = False,
    transition_vjp: TransitionVJP | None = None,
    loss_vjp: LossVJP | None = None,
) -> torch.Tensor:
    r"""Gradient by the explicit adjoint recursion (see module docstring).

    UORO (uoro-tallec-ollivier.md) §1: the backward pass as a row vector times the step Jacobians.

    With ``per_step=False`` returns :math:`\nabla L` (p,); with ``per_step=True``
    returns :math:`\partial\ell_t/\partial\theta` for every t (T, p), by carrying one
    adjoint per loss (a (T, *B, n) block, advanced with a vmapped VJP).

    ``transition_vjp``/``loss_vjp`` replace the two primitives of the recursion;
    they exist so that the toolkit can be tested against deliberately broken
    recursions (:mod:`verify.impl.mutants.reference`). Leave them alone otherwise.
    """
    theta = _prepare(problem, theta).detach()
    tvjp = transition_vjp or default_transition_vjp(problem, theta)
    lvjp = loss_vjp or default_loss_vjp(problem, theta)
    with torch.no_grad():
        states = problem.rollout(theta)
    T = problem.T
    if not per_step:
        a = torch.zeros_like(states[0])
        g = torch.zeros_like(theta)
        for t in range(T, 0, -1):
            d_s, d_th = lvjp(t, states)
            a = a + d_s  # a_t = dl_t/ds_t + a_{t+1} df/ds
            g = g + d_th
            a, d_theta = tvjp(t, states, a)
            g = g + d_theta
        return g
    # one adjoint per loss: A[tau] is the adjoint of s_t for the loss l_tau
    A = torch.zeros((T, *states.shape[1:]), dtype=states.dtype, device=states.device)
    G = torch.zeros(T, theta.shape[0], dtype=theta.dtype, device=theta.device)
    for t in range(T, 0, -1):
        d_s, d_th = lvjp(t, states)
        A = A.clone()
        A[t - 1] = A[t - 1] + d_s
        G[t - 1] = G[t - 1] + d_th
        d_s_all, d_theta_all = vmap(lambda c, t=t: tvjp(t, states, c))(A)
        A, G = d_s_all, G + d_theta_all
    return G


# ---------------------------------------------------------------------- truncation
def truncated_model_states(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    r"""States :math:`h_t^k` of the truncated model (Miller & Hardt eq. (3)), t = 1..T.

    .. math:: h_t^k = \phi_w(h_{t-1}^k, x_t),\qquad h_{t-k}^k = 0,

    i.e. each :math:`h_t^k` restarts from the zero state k steps back and applies the
    last k transitions. Where t ≤ k the window reaches the start of the sequence
    and the model starts from the problem's :math:`s_0` (so :math:`h_t^k = h_t`).
    Shape (T, *B, n).
    """
    k = require_positive_int("k", k)
    out = []
    for t in range(1, problem.T + 1):
        start = t - k
        s = problem.s0 if start <= 0 else torch.zeros_like(problem.s0)
        for tau in range(max(start, 0) + 1, t + 1):
            s = problem.transition(theta, s, problem.inputs[tau - 1])
        out.append(s)
    return torch.stack(out)


def truncated_model_gradient(problem: Problem, theta: torch.Tensor, k: int, *, which: str = "final") -> torch.Tensor:
    r""":math:`\nabla_w p_T^k`: gradient of the truncated model's loss (Miller & Hardt §4).

    ``which="final"``: :math:`p_T^k = \ell_T(h_T^k)` -- the loss after T steps, as in
    Lemma 2; ``which="total"``: :math:`\sum_t \ell_t(h_t^k)`.
    """
    theta = _prepare(problem, theta).detach().requires_grad_(True)
    if which not in ("final", "total"):
        raise InvalidArgument("which", which, "must be 'final' or 'total'")
    with torch.enable_grad():
        if which == "final":
            k = require_positive_int("k", k)
            start = problem.T - k
            s = problem.s0 if start <= 0 else torch.zeros_like(problem.s0)
            for tau in range(max(start, 0) + 1, problem.T + 1):
                s = problem.transition(theta, s, problem.inputs[tau - 1])
            loss = problem.step_loss(theta, s, problem.targets[-1])
        else:
            hk = truncated_model_states(problem, theta, k)
            loss = torch.stack([problem.step_loss(theta, hk[t], problem.targets[t]) for t in range(problem.T)]).sum()
        (g,) = torch.autograd.grad(loss, theta)
    return g.detach()


def tbptt_gradient(problem: Problem, theta: torch.Tensor, k: int, *, which: str = "total") -> torch.Tensor:
    r"""Truncated BPTT on the full model: forward states exact, gradient truncated to k steps.

    Miller & Hardt §3 (truncated BPTT); rtrl-convergence-analysis.md §1.

    .. math:: \hat g_t^k = \frac{\partial \ell_t}{\partial \theta}\Big|_{s_{t-k}\ \text{fixed}}

    i.e. the state :math:`s_{t-k}` of the exact trajectory is treated as a constant
    and the last k transitions are differentiated. ``which="final"`` returns
    :math:`\hat g_T^k`, ``"total"`` :math:`\sum_t \hat g_t^k`, ``"per_step"`` the (T, p) stack.
    """
    theta = _prepare(problem, theta).detach()
    k = require_positive_int("k", k)
    if which not in ("final", "total", "per_step"):
        raise InvalidArgument("which", which, "must be 'final', 'total' or 'per_step'")
    with torch.no_grad():
        states = problem.rollout(theta)
    ts = [problem.T] if which == "final" else list(range(1, problem.T + 1))
    th = theta.clone().requires_grad_(True)
    grads = []
    with torch.enable_grad():
        for t in ts:
            start = max(t - k, 0)
            s = states[start]
            for tau in range(start + 1, t + 1):
                s = problem.transition(th, s, problem.inputs[tau - 1])
            (g,) = torch.autograd.grad(problem.step_loss(th, s, problem.targets[t - 1]), th)
            grads.append(g)
    G = torch.stack(grads).detach()
    if which == "per_step":
        return G
    return G.sum(0)


def _batch_numel(problem: Problem) -> int:
    out = 1
    for b in problem.batch_shape:
        out *= b
    return out
