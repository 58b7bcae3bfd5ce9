r"""The independent Algorithm 1 oracle (Tallec & Ollivier 2018, "Unbiased Online Recurrent Optimization",
arXiv:1702.05043, Algorithm 1 and eqs. (5)-(6)): dense per-step Jacobians, the paper's normalizers and
alternatives, Algorithm 1 evaluated for given noise, and the **exact** law of its squared errors by
enumeration of every Rademacher sign pattern.

Nothing here shares code with :mod:`verify.estimators.uoro`: the checks compare the implementation under test
with this evaluation (conformance under tabulated noise, second moments), so a mistake common to both would
need to be made twice, independently.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch.func import grad

from verify.errors import InvalidArgument
from verify.model.problem import Problem
from verify.oracles.budget import step_jacobians as budget_step_jacobians

__all__ = [
    "EPS",
    "NORMALIZERS",
    "ExactMoments",
    "ReferenceRun",
    "Rule",
    "StepJacobians",
    "algorithm1_reference",
    "exact_squared_error_moments",
    "gaussian",
    "rademacher",
    "step_jacobians",
]

EPS = 1e-7  # Algorithm 1's ε


class StepJacobians(NamedTuple):
    """Explicit per-step Jacobians on the (deterministic, frozen-θ) trajectory, t = 1..T (index t-1)."""

    J_s: torch.Tensor  #: ∂f/∂s at (s_{t-1}, x_t), (T, n, n)
    J_th: torch.Tensor  #: ∂f/∂θ at (s_{t-1}, x_t), (T, n, p)
    dl_ds: torch.Tensor  #: ∂ℓ_t/∂s_t, (T, n)
    dl_dth: torch.Tensor  #: ∂ℓ_t/∂θ at fixed s_t (the readout's own gradient), (T, p)
    states: torch.Tensor  #: s_0..s_T, (T+1, n)


def step_jacobians(problem: Problem, theta: torch.Tensor) -> StepJacobians:
    """Dense one-step Jacobians (:func:`verify.oracles.budget.step_jacobians`, ``torch.func.jacrev``; independent of
    the estimators' VJP/JVP code) and the per-step loss gradients."""
    if problem.batch_shape:
        raise InvalidArgument(
            "problem", problem.describe(), "the explicit Algorithm 1 reference is for unbatched problems"
        )
    th = theta.detach()
    states = problem.rollout(th)
    Js, Jt = budget_step_jacobians(problem, th, states[:-1], problem.inputs)
    ls, lt = [], []
    for t in range(1, problem.T + 1):
        s1, y = states[t], problem.targets[t - 1]
        ls.append(grad(lambda ss, y=y: problem.step_loss(th, ss, y))(s1))
        lt.append(grad(lambda tt, s1=s1, y=y: problem.step_loss(tt, s1, y))(th))
    return StepJacobians(Js, Jt, torch.stack(ls), torch.stack(lt), states)


#: a normalizer rule of the reference: (theta_tilde, s_forward, nu, delta_theta_g) norms -> rho (M, r)
Rule = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def _paper_rho0(nt: torch.Tensor, ns: torch.Tensor, nn: torch.Tensor, ng: torch.Tensor) -> torch.Tensor:
    return torch.sqrt(nt / (ns + EPS)) + EPS  # Algorithm 1, rho_0


def _paper_rho1(nt: torch.Tensor, ns: torch.Tensor, nn: torch.Tensor, ng: torch.Tensor) -> torch.Tensor:
    return torch.sqrt(ng / (nn + EPS)) + EPS  # Algorithm 1, rho_1


def _one(nt: torch.Tensor, ns: torch.Tensor, nn: torch.Tensor, ng: torch.Tensor) -> torch.Tensor:
    return torch.ones_like(nt)


def _inverted_rho0(nt: torch.Tensor, ns: torch.Tensor, nn: torch.Tensor, ng: torch.Tensor) -> torch.Tensor:
    return torch.sqrt(ns / (nt + EPS)) + EPS


def _no_sqrt_rho1(nt: torch.Tensor, ns: torch.Tensor, nn: torch.Tensor, ng: torch.Tensor) -> torch.Tensor:
    return ng / (nn + EPS) + EPS


#: normalizer pairs compared in the report ("how the paper's normalizers compare with the alternatives")
NORMALIZERS: dict[str, tuple[Rule, Rule]] = {
    "paper (Algorithm 1)": (_paper_rho0, _paper_rho1),
    "rho0 = 1": (_one, _paper_rho1),
    "rho1 = 1": (_paper_rho0, _one),
    "rho0 = rho1 = 1": (_one, _one),
    "rho0 inverted": (_inverted_rho0, _paper_rho1),
    "rho1 without sqrt": (_paper_rho0, _no_sqrt_rho1),
}


class ReferenceRun(NamedTuple):
    """Algorithm 1 evaluated from explicit Jacobians: per step t = 1..T (index t-1)."""

    g: torch.Tensor  #: g̃_t, (T, M, p)
    s_tilde: torch.Tensor  #: s̃_t, (T, M, r, n)
    theta_tilde: torch.Tensor  #: θ̃_t, (T, M, r, p)
    g_post: torch.Tensor  #: the post-update form (∂ℓ_t/∂s_t · s̃_t) θ̃_t + ∂ℓ_t/∂θ|_{s_t}, (T, M, p) (unbiased too)


def algorithm1_reference(
    jac: StepJacobians, nus: torch.Tensor, *, rho0: Rule = _paper_rho0, rho1: Rule = _paper_rho1
) -> ReferenceRun:
    r"""Algorithm 1 of Tallec & Ollivier written out with dense Jacobians, for given noise ``nus`` (T, M, r, n).

    .. math::
        \tilde g_t = (\delta s\cdot\tilde s_{t-1})\tilde\theta_{t-1} + \delta\theta,\quad
        \tilde s_t = \rho_0 J_s\tilde s_{t-1} + \rho_1\nu,\quad
        \tilde\theta_t = \tilde\theta_{t-1}/\rho_0 + \nu^\top J_\theta/\rho_1

    with :math:`\delta s = \partial\ell_t/\partial s_t\,J_s`,
    :math:`\delta\theta = \partial\ell_t/\partial s_t\,J_\theta + \partial\ell_t/\partial\theta|_{s_t}`
    (the backprop of ∂ℓ/∂o through :math:`F_{out}` at :math:`(x_t, s_{t-1}, θ)`), ρ₀, ρ₁ as in
    Algorithm 1 (ε = 1e-7) unless other rules are
    given, g̃ averaged over the r pairs (§3). An independent evaluation: no autograd
    through the estimator's graph, no shared code with :mod:`verify.estimators.uoro`.
    """
    T, M, r, n = nus.shape
    p = jac.J_th.shape[-1]
    dt = jac.J_th.dtype
    st = torch.zeros(M, r, n, dtype=dt)
    tt = torch.zeros(M, r, p, dtype=dt)
    gs, ss, ts, gp = [], [], [], []
    for t in range(T):
        Js, Jt = jac.J_s[t], jac.J_th[t]
        d_s = jac.dl_ds[t] @ Js  # backprop of dl/do through F_out: delta s
        d_th = jac.dl_ds[t] @ Jt + jac.dl_dth[t]  # delta theta
        g = ((st @ d_s).unsqueeze(-1) * tt).mean(1) + d_th  # Algorithm 1: g~ = (ds . s~) theta~ + dtheta
        nu = nus[t]
        s_fwd = st @ Js.T  # forwarddiff (eq. (1))
        dthg = nu @ Jt  # backprop of nu^T
        nt, ns = torch.linalg.vector_norm(tt, dim=-1), torch.linalg.vector_norm(s_fwd, dim=-1)
        nn, ng = torch.linalg.vector_norm(nu, dim=-1), torch.linalg.vector_norm(dthg, dim=-1)
        r0, r1 = rho0(nt, ns, nn, ng), rho1(nt, ns, nn, ng)
        st = r0.unsqueeze(-1) * s_fwd + r1.unsqueeze(-1) * nu  # eq. (5)
        tt = tt / r0.unsqueeze(-1) + dthg / r1.unsqueeze(-1)  # eq. (6)
        gs.append(g)
        ss.append(st)
        ts.append(tt)
        gp.append(((st @ jac.dl_ds[t]).unsqueeze(-1) * tt).mean(1) + jac.dl_dth[t])  # E[s~ x th~] = ds_t/dth too
    return ReferenceRun(torch.stack(gs), torch.stack(ss), torch.stack(ts), torch.stack(gp))


def gaussian(T: int, M: int, r: int, n: int, gen: torch.Generator) -> torch.Tensor:
    """(T, M, r, n) independent standard normal ν (float64) from ``gen``: a known variant of Algorithm 1's law
    (E[ν νᵀ] = I: unbiased, another variance)."""
    return torch.randn(T, M, r, n, generator=gen, dtype=torch.float64)


def rademacher(T: int, M: int, r: int, n: int, gen: torch.Generator) -> torch.Tensor:
    """(T, M, r, n) independent Rademacher signs ±1 (float64) from ``gen``: Algorithm 1's ν."""
    return (2 * torch.randint(0, 2, (T, M, r, n), generator=gen) - 1).to(torch.float64)


class ExactMoments(NamedTuple):
    r"""Exact first two moments of q = ‖ĝ − g‖² over every Rademacher pattern of a rank-1 Algorithm 1 run.

    ``mean``/``var`` are per statistic, in the order of :func:`exact_squared_error_moments`'s ``statistics``
    (the total gradient :math:`\sum_t\tilde g_t`, then :math:`\tilde g_T`); ``patterns`` = :math:`2^{nT}`.
    """

    mean: tuple[float, ...]
    var: tuple[float, ...]
    patterns: int


#: largest sign-pattern enumeration :func:`exact_squared_error_moments` accepts (n·T ≤ 20: ~1e6 runs)
MAX_ENUMERATED_SIGNS = 20


def exact_squared_error_moments(
    jac: StepJacobians,
    g_total: torch.Tensor,
    g_last: torch.Tensor,
    rules: tuple[Rule, Rule],
    *,
    chunk: int = 1 << 14,
) -> ExactMoments:
    r"""E q and Var q of q = ‖Σ_t g̃_t − g‖² and q = ‖g̃_T − g_T‖², exactly: every ν ∈ {±1}^{n×T} enumerated.

    Algorithm 1 (rank 1) with normalizers ``rules`` is run on all :math:`2^{nT}` sign patterns
    (equally likely under Algorithm 1's noise law), in chunks; the moments are the pattern averages
    (float64, accumulated in a compensated sum per chunk). Used to *plan* a variance comparison: the
    separation between two normalizer rules is a property of the problem, not of a sample, so the draws a
    two-sample test needs to tell them apart with a stated power follow from these numbers
    (:func:`verify.stats.variance.draws_to_separate`).
    """
    T, n = int(jac.J_s.shape[0]), int(jac.J_s.shape[1])
    k = n * T
    if k > MAX_ENUMERATED_SIGNS:
        raise InvalidArgument("problem", f"n*T = {k}", f"exact enumeration needs n*T <= {MAX_ENUMERATED_SIGNS}")
    total = 1 << k
    shifts = torch.arange(k)
    parts1: list[list[float]] = [[], []]
    parts2: list[list[float]] = [[], []]
    for lo in range(0, total, chunk):
        idx = torch.arange(lo, min(lo + chunk, total))
        bits = ((idx.unsqueeze(1) >> shifts) & 1).to(torch.float64) * 2 - 1  # (m, n*T): pattern -> signs
        nus = bits.reshape(-1, T, 1, n).permute(1, 0, 2, 3)  # (T, m, 1, n)
        run = algorithm1_reference(jac, nus, rho0=rules[0], rho1=rules[1])
        for i, (est, truth) in enumerate(((run.g.sum(0), g_total), (run.g[-1], g_last))):
            q = ((est - truth) ** 2).sum(1)
            parts1[i].append(float(q.sum()))
            parts2[i].append(float((q * q).sum()))
    means = tuple(math.fsum(parts1[i]) / total for i in range(2))
    var = tuple(max(0.0, math.fsum(parts2[i]) / total - means[i] ** 2) for i in range(2))
    return ExactMoments(means, var, total)
