r"""KKT recovery as λ grows (Thm 2, Prop. 1-3, App. B.2 Lemma 1) and the penalty-path solver.

Paper: ``fpp-explicit-state-variables.md`` §4.2 and App. B.2 (T = 1). The RNN
objective eq. (10) over :math:`(W, \beta, s_0)` and its constrained FPP form eq. (12):

.. math::
    E(W, \beta, s_0) = \sum_{i=1}^n \ell_\beta(s_i; y_i),\quad s_i = f_W(s_{i-1}, o_i)   \qquad (10)\\
    E_{fpp} = \sum_{i=1}^n \ell_\beta(f_W(s_{i-1}, o_i); y_i)
    \ \text{s.t.}\ h_i = f_W(s_{i-1}, o_i) - s_i = 0                                         \qquad (12)

with Lagrangian eq. (16) :math:`\mathcal{L} = E_{fpp} - \sum_i \lambda_i^\top(f_W(s_{i-1}, o_i) - s_i)`
and the closed-form multipliers of Lemma 1 (:math:`\lambda_n = 0`):

.. math::
    \lambda_j^\top = -\sum_{i=j}^{n-1}\frac{\partial\ell_{i+1}}{\partial f}
                     \prod_{l=j}^{i}\frac{\partial f(s_l, o_{l+1})}{\partial s_l}
    = -\Big(\frac{\partial \ell_{j+1}}{\partial f} - \lambda_{j+1}^\top\Big)
      \frac{\partial f(s_j, o_{j+1})}{\partial s_j},

i.e. minus the adjoint of :math:`s_j` with respect to the *later* losses
:math:`\ell_{j+1}..\ell_n` only (the loss at step j is a function of
:math:`\hat s_j = f(s_{j-1}, o_j)`, not of :math:`s_j`).

Scaling (DESIGN.md): the penalty of eq. (11) is not divided by n while the loss
is. :math:`nL_\lambda = E_{fpp} + \frac{n\lambda}{2}\sum\|s_i - \hat s_i\|^2`, so at a
stationary point :math:`n\lambda(s_i - \hat s_i)` plays the role of
:math:`\lambda_i`: the multiplier estimate is
:math:`\lambda(s_i - \hat s_i) \to \lambda_i / n` (:func:`multiplier_estimates`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch
from torch.func import grad, hessian, jacrev

from verify._func import forward_mode_ready, vjp
from verify._validate import require_positive, require_positive_int
from verify.errors import InvalidArgument
from verify.fpp.objective import FPPVariables, flatten_variables, penalty_objective, prediction_loss
from verify.model.problem import Problem

__all__ = [
    "MultiplierFn",
    "NewtonResult",
    "PathPoint",
    "constraint_jacobian",
    "constraint_residuals",
    "full_loss_adjoints",
    "kkt_path",
    "lagrangian",
    "lemma1_multipliers",
    "multiplier_estimates",
    "newton_minimize",
    "rnn_gradient",
    "rnn_objective",
    "solve_rnn_stationary",
]

#: (problem, θ, states (n+1, k)) -> multipliers λ_0..λ_n, shape (n+1, k)
MultiplierFn = Callable[[Problem, torch.Tensor, torch.Tensor], torch.Tensor]


# ------------------------------------------------------------------- objectives
def rnn_objective(problem: Problem, theta: torch.Tensor, s0: torch.Tensor) -> torch.Tensor:
    r"""Eq. (10): :math:`E(W, \beta, s_0) = \sum_i \ell_\beta(s_i; y_i)` along the rollout from s₀."""
    return problem.losses(theta, s0).sum()  # eq. (10)


def rnn_gradient(problem: Problem, theta: torch.Tensor, s0: torch.Tensor) -> torch.Tensor:
    r""":math:`(\nabla_{W,\beta} E, \nabla_{s_0} E)` of eq. (13)-(15) by autograd, concatenated (p + k,)."""
    g_th, g_s0 = grad(lambda th, s: rnn_objective(problem, th, s), argnums=(0, 1))(theta, s0)
    return torch.cat([g_th, g_s0])


def constraint_residuals(problem: Problem, variables: FPPVariables) -> torch.Tensor:
    r""":math:`h_i = f_W(s_{i-1}, o_i) - s_i` for i = 1..n (eq. (19)), shape (n, k)."""
    S = variables.states
    s_hat = problem.transition(variables.theta, S[:-1], problem.inputs)
    return s_hat - S[1:]  # eq. (19)


def constraint_jacobian(problem: Problem, variables: FPPVariables) -> torch.Tensor:
    r"""Prop. 3: :math:`\nabla h` with respect to x = (θ, S), shape (nk, z) (β columns are zero)."""
    p = problem.p
    k = variables.states.shape[-1]

    def h(x: torch.Tensor) -> torch.Tensor:
        return constraint_residuals(problem, FPPVariables(x[:p], x[p:].reshape(-1, k))).reshape(-1)

    J: torch.Tensor = jacrev(h)(flatten_variables(variables))
    return J


def lemma1_multipliers(problem: Problem, theta: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
    r"""App. B.2 Lemma 1: λ_0..λ_n (shape (n+1, k)) at the states S, by the backward recursion of eq. (18).

    .. math::
        \lambda_n = 0,\qquad \lambda_j^\top = -\Big(\frac{\partial\ell_{j+1}}{\partial f} - \lambda_{j+1}^\top\Big)
        \frac{\partial f(s_j, o_{j+1})}{\partial s_j}\quad (j = n-1, \dots, 0)

    which unrolls to the sum-of-products formula of Lemma 1 (tested). The paper
    sets :math:`\lambda_0 := 0` "for convenience" in eq. (16), where no constraint
    0 exists; the value returned in row 0 is the recursion's, i.e. minus the
    adjoint of :math:`s_0` (eq. (15) is then :math:`-\lambda_0 = \nabla_{s_0}E`).
    """
    n = problem.T
    lam = [torch.zeros_like(states[0]) for _ in range(n + 1)]
    for j in range(n - 1, -1, -1):
        x_next, y_next = problem.inputs[j], problem.targets[j]
        s_hat, pull = vjp(lambda s, x=x_next: problem.transition(theta, s, x), states[j])
        d_ell = grad(lambda s, y=y_next: prediction_loss(problem, theta, s, y))(s_hat)
        (lam_j,) = pull(d_ell - lam[j + 1])
        lam[j] = -lam_j  # Lemma 1 / eq. (18)
    return torch.stack(lam)


def full_loss_adjoints(problem: Problem, theta: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
    r"""Minus the adjoint of :math:`s_j` for ALL losses ℓ_j..ℓ_n (the *wrong* multiplier target, for contrast).

    :math:`-\big(\partial\ell_j/\partial s_j + \text{adjoint w.r.t. later losses}\big)`, rows 0..n
    (row 0 has no loss of its own). Lemma 1's multiplier excludes ℓ_j.
    """
    lam = lemma1_multipliers(problem, theta, states)
    own = [torch.zeros_like(states[0])]
    for j in range(1, problem.T + 1):
        own.append(grad(lambda s, y=problem.targets[j - 1]: prediction_loss(problem, theta, s, y))(states[j]))
    return lam - torch.stack(own)


def lagrangian(problem: Problem, variables: FPPVariables, multipliers: torch.Tensor) -> torch.Tensor:
    r"""Eq. (16): :math:`\sum_i \ell_\beta(f_W(s_{i-1}, o_i); y_i) - \lambda_i^\top(f_W(s_{i-1}, o_i) - s_i)`.

    ``multipliers`` has rows λ_0..λ_n (row 0 unused: there is no constraint 0).
    """
    S = variables.states
    s_hat = problem.transition(variables.theta, S[:-1], problem.inputs)
    ell = prediction_loss(problem, variables.theta, s_hat, problem.targets).sum()
    return ell - (multipliers[1:] * (s_hat - S[1:])).sum()  # eq. (16)


def multiplier_estimates(problem: Problem, variables: FPPVariables, lam: float) -> torch.Tensor:
    r""":math:`\lambda(s_i - \hat s_i)` for i = 1..n (shape (n, k)); tends to :math:`\lambda_i/n` (module docstring)."""
    return lam * (-constraint_residuals(problem, variables))


# ----------------------------------------------------------------------- Newton
class NewtonResult(NamedTuple):
    """Minimiser found, its gradient norm, iterations, whether ‖∇‖ ≤ tol, the final Hessian's extreme eigenvalues."""

    x: torch.Tensor
    grad_norm: float
    iterations: int
    converged: bool
    eig_min: float
    eig_max: float


def newton_minimize(
    fun: Callable[[torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    *,
    tol: float = 1e-10,
    max_iter: int = 60,
) -> NewtonResult:
    r"""Damped Newton / Levenberg-Marquardt with the exact Hessian (``torch.func.hessian``).

    Used for FPP Thm 2 (penalty problems eq. (11) along λ_k).

    Each iteration solves :math:`(H + \mu I)d = -\nabla\phi` with μ = 0 while H is
    positive definite (pure Newton: quadratic convergence near a strict minimum)
    and μ > 0 otherwise, raising μ until the step satisfies Armijo's condition
    :math:`\phi(x + d) \le \phi(x) + 10^{-4}\nabla\phi^\top d`; once φ's changes are
    below its round-off, a step is accepted when it lowers ‖∇φ‖. Once ‖∇φ‖ ≤
    ``tol`` it keeps polishing while a step still halves ‖∇φ‖ (a gradient norm at
    the tolerance can leave the iterate off along weakly curved directions), and
    stops at the round-off floor, after ``max_iter`` iterations, or when three
    iterations in a row (with φ flat to round-off) fail to lower ‖∇φ‖ by 1 %: ``converged`` says whether the
    tolerance was reached; the norm reached is always reported.
    """
    require_positive("tol", tol)
    require_positive_int("max_iter", max_iter)
    gfun = grad(fun)
    forward_mode_ready()
    hfun = hessian(fun)
    x = x0.detach().clone()
    f = float(fun(x))
    g = gfun(x)
    gn = float(torch.linalg.vector_norm(g))
    it = 0
    eye = torch.eye(x.shape[0], dtype=x.dtype, device=x.device)
    slow = 0
    floor_hit = False
    while it < max_iter and slow < 3 and not floor_hit and gn > 1e-3 * tol:
        it += 1
        H = hfun(x)
        H = 0.5 * (H + H.T)
        step = _damped_step(fun, gfun, x, f, g, gn, H, eye)
        if step is None:
            break
        x, f = step[0], step[1]
        g = gfun(x) if step[2] is None else step[2]
        gn_new = float(torch.linalg.vector_norm(g))
        # progress is judged by φ while φ still decreases beyond round-off, by ‖∇φ‖ once it is flat
        slow = slow + 1 if step[2] is not None and gn_new > 0.99 * gn else 0
        floor_hit = gn_new <= tol and gn_new > 0.5 * gn
        gn = gn_new
    H = hfun(x)
    ev = torch.linalg.eigvalsh(0.5 * (H + H.T))
    return NewtonResult(x, gn, it, gn <= tol, float(ev[0]), float(ev[-1]))


_Step = tuple[torch.Tensor, float, torch.Tensor | None]


def _damped_step(
    fun: Callable[[torch.Tensor], torch.Tensor], gfun: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
    f: float, g: torch.Tensor, gn: float, H: torch.Tensor, eye: torch.Tensor,
) -> _Step | None:  # fmt: skip
    r"""One iteration of :func:`newton_minimize`: solve :math:`(H + \mu I)d = -\nabla\phi`, raising μ until Armijo
    holds beyond round-off, or (φ flat to round-off) ‖∇φ‖ falls; (x + d, φ(x + d), ∇φ(x + d) or None) or None."""
    ev = torch.linalg.eigvalsh(H)
    lo, hi = float(ev[0]), float(ev[-1])
    scale = max(abs(hi), 1.0)
    mu = 0.0 if lo > 1e-12 * scale else (-lo + 1e-6 * scale)
    noise = 64 * math.ulp(max(abs(f), 1e-300)) * max(1.0, x.shape[0] ** 0.5)
    step: _Step | None = None
    flat = 0
    for _ in range(40):
        d = torch.linalg.solve(H + mu * eye, -g)
        xn = x + d
        fn = float(fun(xn))
        slope = float(g @ d)
        if math.isfinite(fn) and fn <= f + 1e-4 * slope and fn < f - noise:
            step = (xn, fn, None)
            break
        if math.isfinite(fn) and abs(fn - f) <= noise:
            gn_try = gfun(xn)
            if float(torch.linalg.vector_norm(gn_try)) < gn:
                step = (xn, fn, gn_try)
                break
            flat += 1
            if flat >= 3:  # φ flat to round-off and ‖∇φ‖ not improving: the floor
                break
        mu = max(mu * 10.0, 1e-8 * scale)
    return step


def solve_rnn_stationary(
    problem: Problem, theta0: torch.Tensor, s00: torch.Tensor, *, tol: float = 1e-10, max_iter: int = 80
) -> tuple[torch.Tensor, torch.Tensor, NewtonResult]:
    """A stationary point of eq. (10) over (W, β, s₀) by :func:`newton_minimize` from (θ₀, s₀⁰)."""
    p = problem.p

    def E(z: torch.Tensor) -> torch.Tensor:
        return rnn_objective(problem, z[:p], z[p:])

    res = newton_minimize(E, torch.cat([theta0, s00]), tol=tol, max_iter=max_iter)
    return res.x[:p].clone(), res.x[p:].clone(), res


# ------------------------------------------------------------------- the path
class PathPoint(NamedTuple):
    """One penalty solve of eq. (11) along λ_k and the Thm 2 quantities measured there."""

    lam: float
    variables: FPPVariables
    solve: NewtonResult
    residual: float  # max_i ‖s_i − f(s_{i−1}, o_i)‖
    rnn_grad_norm: float  # ‖∇E(W_k, β_k, s₀ᵏ)‖
    multipliers: torch.Tensor  # λ_k (s_i − ŝ_i), (n, k)


def kkt_path(
    problem: Problem,
    start: FPPVariables,
    lams: Sequence[float],
    *,
    tol: float = 1e-10,
    max_iter: int = 60,
) -> list[PathPoint]:
    r"""Follow λ_k (increasing) warm-started, minimising eq. (11) to ‖∇L_λ‖ ≤ ``tol`` by Newton (Thm 2).

    ``start`` is the first warm start (e.g. a stationary point of eq. (10) and its
    rollout). λ must be positive and increasing (InvalidArgument otherwise).
    """
    if not lams:
        raise InvalidArgument("lams", lams, "need at least one penalty weight")
    prev = 0.0
    for lam in lams:
        require_positive("lams", lam)
        if lam <= prev:
            raise InvalidArgument("lams", list(lams), "the penalty weights must increase")
        prev = lam
    p = problem.p
    k = start.states.shape[-1]
    x = flatten_variables(start)
    out: list[PathPoint] = []
    for lam in lams:

        def L(z: torch.Tensor, lam: float = lam) -> torch.Tensor:
            return penalty_objective(problem, FPPVariables(z[:p], z[p:].reshape(-1, k)), lam)  # eq. (11)

        res = newton_minimize(L, x, tol=tol, max_iter=max_iter)
        x = res.x
        var = FPPVariables(x[:p].clone(), x[p:].reshape(-1, k).clone())
        h = constraint_residuals(problem, var)
        resid = float(torch.linalg.vector_norm(h, dim=-1).max())
        gE = float(torch.linalg.vector_norm(rnn_gradient(problem, var.theta, var.states[0])))
        out.append(PathPoint(float(lam), var, res, resid, gE, multiplier_estimates(problem, var, lam)))
    return out
