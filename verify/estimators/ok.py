r"""OK: the optimal Kronecker-sum approximation of RTRL, for Elman cells.

Benzing, Gauy, Mujika, Martinsson & Steger 2019, "Optimal Kronecker-Sum Approximation of Real
Time Recurrent Learning" (ICML 2019, arXiv:1902.03993). The paper's text was not at hand when
this module was written (its abstract was: "We prove that OK is optimal for a class of
approximations of RTRL, which includes all approaches published so far"); the reading below is
reconstructed from that abstract and the optimal unbiased low-rank approximation it rests on, and
is stated in full so a reviewer can check it against the paper. **Equation numbers (1)-(2) are
this module's**; the paper's theorem and equation numbers were not checked.

**Kronecker sums.** As in KF-RTRL (:mod:`verify.estimators.kfrtrl`, eq. (1) there), for a cell
:math:`s_t = \phi(W_{full}a_t)`, :math:`a_t = (s_{t-1}, x_t, 1)`, the influence obeys
:math:`G_t = H_tG_{t-1} + a_t^\top\otimes D_t` with :math:`H_t = D_tW`,
:math:`D_t = \operatorname{diag}\phi'(p_t)`. OK holds :math:`G_{t-1}` as a sum of ``rank`` = r
Kronecker products :math:`\sum_{i\le r} u_i^\top\otimes A_i` (u_i ∈ R^{n+d+1}, A_i ∈ R^{n×n}),
so the exact update is a sum of r + 1 of them,

.. math::
    G_t' = \sum_{i\le r} u_i^\top\otimes(H_tA_i) + a_t^\top\otimes D_t .                 \tag{1}

Rearranging each product as the matrix :math:`\operatorname{vec}(A_i)\,u_i^\top`
(n² × (n+d+1)) is an isometry for the Frobenius norm, so eq. (1) is the matrix
:math:`C = \sum_i \operatorname{vec}(B_i)u_i^\top` of rank k ≤ r + 1, and reducing it to r
Kronecker products is a rank-r approximation of C.

**The optimal unbiased rank-r approximation** (the paper's theorem on optimal unbiased low-rank
approximation; our statement). Let :math:`\sigma_1\ge\dots\ge\sigma_k` be C's singular values,
m the smallest integer ≥ 0 with :math:`(r-m)\,\sigma_{m+1}\le s_1 := \sum_{i>m}\sigma_i`, and
:math:`s_2 := \sum_{i>m}\sigma_i^2`. Every random C' of rank ≤ r with E[C'] = C has

.. math::
    E\,\|C' - C\|_F^2 \;\ge\; \frac{s_1^2}{r-m} - s_2,                                   \tag{2}

and the bound is attained. Our construction (any attaining one is "OK"; the paper builds its own
from random signs -- where it differs it is another member of the same optimal family):
keep the m leading singular triplets exactly; among the others choose exactly r − m at random,
component i with inclusion probability :math:`p_i = (r-m)\sigma_i/s_1` (≤ 1 by the choice of m,
:math:`\sum p_i = r - m`), by **systematic sampling** (one uniform U ∈ [0, 1) per step: i is
chosen iff an integer lies in :math:`[c_{i-1} - U, c_i - U)`, :math:`c_i = \sum_{j\le i}p_j`),
and give each chosen one the weight :math:`\sigma_i/p_i = s_1/(r-m)`. Then
:math:`C' - C = \sum_{i>m}\sigma_i(Z_i/p_i - 1)\,l_ir_i^\top` with orthogonal terms, so
E[C'] = C and :math:`E\|C'-C\|^2 = \sum_{i>m}\sigma_i^2(1/p_i - 1) = s_1^2/(r-m) - s_2`:
eq. (2) with equality, whatever the joint law of the Z_i. When k ≤ r nothing is random
(m = k): OK with rank r equals RTRL for the first r steps from :math:`G_0 = 0`.

Each kept triplet :math:`(\sigma, l, r)` becomes the factors :math:`u = \sqrt{w}\,r`,
:math:`A = \sqrt{w}\operatorname{mat}(l)` (w = σ kept, s_1/(r−m) chosen): the product is what
counts, the split only balances the norms. The SVD of C costs O((n² + n + d) k²) by two thin QRs
and the k × k core. By induction, E[Σ u_i ⊗ A_i] = G_t at frozen θ (Guarantee "unbiased").
**r = 1 against KF-RTRL**: both reduce 2 terms to 1 unbiasedly; by eq. (2) OK's step variance
:math:`2\sigma_1\sigma_2` never exceeds KF-RTRL's (equal when the two terms are orthogonal in
both factors) -- per step, with the same input; along a trajectory the inputs differ.

**Gradient** as KF-RTRL's:
:math:`\tilde g_t = \sum_i\operatorname{vec}(((\partial\ell_t/\partial s_t)A_i)^\top u_i^\top)`
on W, U, b, plus :math:`\partial\ell_t/\partial\theta|_{s_t}`. Batched problems: each sequence
carries its own sum and its own SVD; the uniform U of a step is shared by the batch (each
sequence's estimate stays unbiased).

**Noise** (:mod:`verify.estimators.noise`): one draw of shape (1,) per step and sample, U, from
``noise`` (default :class:`Uniform01`). Not a finite set of signs (``support`` is None), so the
generic sign enumeration cannot run; an exact expectation is still possible, since a step has at
most k + 1 distinct outcomes as U sweeps [0, 1) (the breakpoints are the fractional parts of the
:math:`c_i`): :func:`exact_expectation` enumerates them along every path with their probabilities
(interval lengths). No event floor holds (an outcome's probability can be arbitrarily small).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from verify._validate import require_positive_int
from verify.errors import InvalidArgument
from verify.estimators.guarantee import Guarantee
from verify.estimators.kfrtrl import KFRTRL
from verify.estimators.online import _Named, check_problem_theta, check_step, expand_samples, shared
from verify.estimators.uoro import IIDNoise, NoiseSource, Tabulated
from verify.model.cells import ElmanCell
from verify.model.problem import Problem

__all__ = [
    "OK",
    "OKState",
    "Uniform01",
    "exact_expectation",
    "optimal_plan",
    "optimal_reduction",
    "optimal_variance",
    "plan_breakpoints",
    "reduction_breakpoints",
    "sampled_reduction",
    "spectrum",
]

_SOURCE = "Benzing, Gauy, Mujika, Martinsson & Steger 2019 (arXiv:1902.03993)"


@dataclass(frozen=True)
class Uniform01(IIDNoise):
    """Independent uniform draws on [0, 1) (OK's systematic sampling); continuous: no sign enumeration."""

    support: tuple[float, ...] | None = None

    def sample(self, rng: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.rand(shape, generator=rng, device=rng.device, dtype=torch.float64)


_UNIFORM = Uniform01()


# ------------------------------------------------------------ the reduction (eq. (2))
def spectrum(us: torch.Tensor, Bs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""The SVD of :math:`C = \sum_i\operatorname{vec}(B_i)u_i^\top` from its k terms.

    ``us`` (N, k, a), ``Bs`` (N, k, b, c) -> (σ (N, K) descending, left (N, b·c, K), right (N, a, K)).
    """
    Q1, R1 = torch.linalg.qr(Bs.flatten(-2).transpose(-1, -2))  # (N, bc, K1), (N, K1, k)
    Q2, R2 = torch.linalg.qr(us.transpose(-1, -2))  # (N, a, K2), (N, K2, k)
    X, S, Yh = torch.linalg.svd(R1 @ R2.transpose(-1, -2), full_matrices=False)
    return S, Q1 @ X, Q2 @ Yh.transpose(-1, -2)


Plan = Callable[[torch.Tensor, int], tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]


def _plan(sigma: torch.Tensor, rank: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(σ padded to ≥ rank + 1 entries, m (N,), inclusion probabilities p (N, K), s_1 / (r − m) (N,))."""
    K = sigma.shape[-1]
    if K < rank + 1:
        sigma = torch.nn.functional.pad(sigma, (0, rank + 1 - K))
    K = sigma.shape[-1]
    idx = torch.arange(K, device=sigma.device)
    tail = sigma.flip(-1).cumsum(-1).flip(-1)  # Σ_{i ≥ j} σ_i
    cond = (rank - idx[:rank]) * sigma[..., :rank] <= tail[..., :rank]
    m = torch.where(cond, idx[:rank], rank).min(dim=-1).values  # first j with (r − j) σ_{j+1} ≤ s_1 (0-based)
    rand = idx >= m[..., None]
    s1 = torch.where(rand, sigma, 0.0).sum(-1)
    r_rest = (rank - m).to(sigma.dtype)
    safe = torch.where(s1 > 0, s1, 1.0)
    p = torch.where(rand & (s1[..., None] > 0), r_rest[..., None] * sigma / safe[..., None], 0.0).clamp(max=1.0)
    return sigma, m, p, s1 / r_rest


def optimal_plan(sigma: torch.Tensor, rank: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eq. (2)'s sampling plan for singular values σ (N, K): (σ padded to ≥ rank + 1 entries, m (N,) kept
    exactly, inclusion probabilities p (N, K), the weight σ_i / p_i of each chosen triplet (N, K))."""
    sigma, m, p, scale = _plan(sigma, rank)
    return sigma, m, p, scale[..., None].expand_as(sigma)


def optimal_variance(us: torch.Tensor, Bs: torch.Tensor, rank: int) -> torch.Tensor:
    r"""The minimum of eq. (2), :math:`s_1^2/(r-m) - s_2`, for each of the N sums (N,)."""
    sigma, m, _p, scale = _plan(spectrum(us, Bs)[0], require_positive_int("rank", rank))
    rand = torch.arange(sigma.shape[-1], device=sigma.device) >= m[..., None]
    s1 = torch.where(rand, sigma, 0.0).sum(-1)
    s2 = torch.where(rand, sigma**2, 0.0).sum(-1)
    return (s1 * scale - s2).clamp(min=0.0)


def reduction_breakpoints(us: torch.Tensor, Bs: torch.Tensor, rank: int) -> torch.Tensor:
    """The values of U at which the systematic sample can change, (N, K): the fractional parts of the c_i."""
    _, _, p, _ = _plan(spectrum(us, Bs)[0], require_positive_int("rank", rank))
    return plan_breakpoints(p)


def plan_breakpoints(p: torch.Tensor) -> torch.Tensor:
    """The values of U at which a systematic sample with inclusion probabilities p (N, K) can change (N, K)."""
    c = p.cumsum(-1)
    return c - torch.floor(c)


def optimal_reduction(
    us: torch.Tensor, Bs: torch.Tensor, rank: int, U: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. (2)'s optimal unbiased reduction of the N sums of k terms to ``rank`` terms, given U (N,) in [0, 1).

    ``us`` (N, k, a), ``Bs`` (N, k, b, c) -> (N, rank, a), (N, rank, b, c); unused slots are zero.
    """
    return sampled_reduction(us, Bs, rank, U, optimal_plan)


def sampled_reduction(
    us: torch.Tensor, Bs: torch.Tensor, rank: int, U: torch.Tensor, plan: Plan
) -> tuple[torch.Tensor, torch.Tensor]:
    """The reduction of the N sums to ``rank`` terms by systematic sampling of C's singular triplets under
    ``plan`` (σ, rank) -> (σ padded, m kept, p, weights of the chosen): unbiased whenever the weights are σ_i / p_i
    (eq. (2)'s optimal plan is :func:`optimal_plan`)."""
    rank = require_positive_int("rank", rank)
    S, L, R = spectrum(us, Bs)
    sigma, m, p, wch = plan(S, rank)
    K, K0 = sigma.shape[-1], S.shape[-1]
    if K > K0:
        L = torch.nn.functional.pad(L, (0, K - K0))
        R = torch.nn.functional.pad(R, (0, K - K0))
    idx = torch.arange(K, device=sigma.device)
    c = p.cumsum(-1)
    Ub = U[..., None]
    chosen = (torch.ceil(c - Ub) - torch.ceil(c - p - Ub) > 0.5) & (p > 0)  # systematic sampling
    kept = idx < m[..., None]
    w = torch.where(kept, sigma, torch.where(chosen, wch, 0.0))
    include = kept | chosen
    slot = include.to(torch.int64).cumsum(-1) - 1
    valid = include & (slot < rank)
    P = torch.nn.functional.one_hot(slot.clamp(0, rank - 1), rank).to(sigma.dtype) * valid[..., None]  # (N, K, r)
    root = torch.sqrt(w)
    u_new = torch.einsum("nkr,nak,nk->nra", P, R, root)
    B_new = torch.einsum("nkr,nbk,nk->nrb", P, L, root).reshape(*Bs.shape[:-3], rank, *Bs.shape[-2:])
    return u_new, B_new


# ------------------------------------------------------------------ the estimator
class OKState(NamedTuple):
    r"""OK's state: the forward state and the r Kronecker terms of :math:`G_t\approx\sum_i u_i^\top\otimes A_i`."""

    s: torch.Tensor  #: s_t, (M, *B, n)
    u: torch.Tensor  #: u_i, (M, *B, r, n + d + 1)
    A: torch.Tensor  #: A_i, (M, *B, r, n, n)
    U: torch.Tensor  #: the last uniform drawn (zeros before the first), (M, 1)


class _Terms(NamedTuple):
    us: torch.Tensor  # (M, *B, r + 1, A)
    Bs: torch.Tensor  # (M, *B, r + 1, n, n)
    s_next: torch.Tensor
    dl_ds: torch.Tensor
    dl_dth: torch.Tensor


@dataclass(frozen=True)
class OK(_Named):
    r"""OK with ``rank`` Kronecker terms (Benzing et al. 2019, arXiv:1902.03993) for Elman cells; see the module
    docstring. ``noise``: the law of U (default :class:`Uniform01`); ``label`` overrides ``name`` (``"ok-r{rank}"``)."""

    rank: int = 1
    noise: NoiseSource = _UNIFORM
    label: str = ""

    def __post_init__(self) -> None:
        require_positive_int("rank", self.rank)
        if not isinstance(self.noise, NoiseSource):
            raise InvalidArgument("noise", type(self.noise).__name__, "must be a NoiseSource (e.g. Uniform01())")
        object.__setattr__(self, "name", self.label or f"ok-r{self.rank}")

    @property
    def guarantee(self) -> Guarantee:
        """Unbiased at frozen θ (eq. (2)'s reduction is unbiased; Benzing et al. 2019)."""
        return Guarantee("unbiased", source=_SOURCE)

    @staticmethod
    def _cell(problem: Problem) -> ElmanCell:
        cell = problem.cell
        if not isinstance(cell, ElmanCell):
            raise InvalidArgument(
                "problem.cell",
                cell.describe(),
                "OK needs an Elman cell s' = phi(W s + U x + b): its influence is a sum of Kronecker products "
                "only for one elementwise map of one affine map (Benzing et al. 2019, as KF-RTRL)",
            )
        return cell

    def exact_mean(self, problem: Problem, theta: torch.Tensor) -> torch.Tensor:
        """E[g̃_t] for t = 1..T (T, p), exactly (:func:`exact_expectation`; InvalidArgument past 20 000 paths)."""
        return exact_expectation(self, problem, theta, problem.T, max_paths=20_000)[0]

    # ----------------------------------------------------------- noise hook
    def noise_shape(self, problem: Problem) -> tuple[int, ...]:
        """One draw per step and sample: the uniform U of the systematic sample, shared by the batch."""
        return (1,)

    def noise_draws(self, steps: int) -> int:
        return steps

    def with_noise(self, noise: NoiseSource) -> OK:
        return dataclasses.replace(self, noise=noise)

    # ------------------------------------------------------------ reduction
    def reduce(self, us: torch.Tensor, Bs: torch.Tensor, U: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Eq. (2) on (N, k, ·) terms (a method so the mutant catalog can override it)."""
        return optimal_reduction(us, Bs, self.rank, U)

    def breakpoints(self, us: torch.Tensor, Bs: torch.Tensor) -> torch.Tensor:
        """The values of U (N, K) at which :meth:`reduce` can change its outcome (for the exact expectation; a
        method so a reduction with another sampling plan can say where its own outcomes change)."""
        return reduction_breakpoints(us, Bs, self.rank)

    def influence_estimate(self, problem: Problem, state: OKState) -> torch.Tensor:
        r""":math:`\sum_i u_i^\top\otimes A_i` laid out as ∂s_t/∂θ (readout columns 0), shape (M, *B, n, p)."""
        K = torch.einsum("m...rki,m...rj->m...kij", state.A, state.u)
        out = torch.zeros((*state.s.shape, problem.p), dtype=state.A.dtype, device=state.A.device)
        return KFRTRL._scatter(problem, K, out)

    # ---------------------------------------------------------------- contract
    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> OKState:
        """All r terms zero (:math:`G_0 = 0`)."""
        M = require_positive_int("samples", samples)
        cell = self._cell(problem)
        check_problem_theta(problem, theta)
        B, n, A, r = problem.batch_shape, problem.n, problem.n + cell.input_size + 1, self.rank
        dt, dev = problem.dtype, problem.device
        return OKState(
            s=expand_samples(problem.s0.clone(), M),
            u=torch.zeros(M, *B, r, A, dtype=dt, device=dev),
            A=torch.zeros(M, *B, r, n, n, dtype=dt, device=dev),
            U=torch.zeros(M, 1, dtype=dt, device=dev),
        )

    def terms(self, problem: Problem, theta: torch.Tensor, state: OKState, t: int) -> _Terms:
        """The r + 1 terms of eq. (1) at step t, and what the gradient needs."""
        cell = self._cell(problem)
        B, n, d, r = problem.batch_shape, problem.n, cell.input_size, self.rank
        spec = {"s": (*B, n), "u": (*B, r, n + d + 1), "A": (*B, r, n, n), "U": (1,)}
        theta, _ = check_step(self.name, problem, theta, state, t, spec)
        s_prev = shared("state.s", state.s)
        x = problem.inputs[t - 1]
        params = problem.cell_params(theta.detach())
        with torch.enable_grad():
            pre = cell.preactivation(params, s_prev, x).detach().requires_grad_(True)
            s_next = cell.phi(pre)
            (dphi,) = torch.autograd.grad(s_next, pre, grad_outputs=torch.ones_like(pre))
            th = theta.detach().clone().requires_grad_(True)
            s_leaf = s_next.detach().requires_grad_(True)
            loss = problem.step_loss(th, s_leaf, problem.targets[t - 1])
            dl_dth, dl_ds = torch.autograd.grad(loss, (th, s_leaf), allow_unused=True)
        s_next = s_next.detach()
        dl_dth = torch.zeros_like(theta) if dl_dth is None else dl_dth.detach()
        dl_ds = torch.zeros_like(s_next) if dl_ds is None else dl_ds.detach()
        D = torch.diag_embed(dphi.detach())  # D_t, (*B, n, n)
        a_t = KFRTRL.input_factor(KFRTRL(), s_prev, x, s_next)  # (*B, A)
        HA = torch.matmul((D @ params["W"]).unsqueeze(-3), state.A)  # H_t A_i, (M, *B, r, n, n)
        lead = state.u.shape[:-2]
        us = torch.cat([state.u, a_t.unsqueeze(-2).expand(*lead, 1, a_t.shape[-1])], dim=-2)
        Bs = torch.cat([HA, D.unsqueeze(-3).expand(*lead, 1, n, n)], dim=-3)
        return _Terms(us, Bs, s_next, dl_ds, dl_dth)

    def step(
        self, problem: Problem, theta: torch.Tensor, state: OKState, t: int, rng: torch.Generator
    ) -> tuple[OKState, torch.Tensor]:
        """Eq. (1), then eq. (2)'s reduction, then g̃_t from the new terms; returns (state, g̃_t (M, p))."""
        tm = self.terms(problem, theta, state, t)
        M = state.u.shape[0]
        U = self.noise.draw(rng, (M, 1), problem.dtype, problem.device, t - 1, state.U)
        if tuple(U.shape) != (M, 1):
            raise InvalidArgument("noise.draw(...)", f"shape {tuple(U.shape)}", f"expected {(M, 1)}")
        if bool(((U < 0) | (U >= 1)).any()):
            raise InvalidArgument("noise.draw(...)", f"values in [{float(U.min())}, {float(U.max())}]", "need [0, 1)")
        lead = tm.us.shape[:-2]
        Ub = U.reshape(M, *(1,) * (len(lead) - 1)).expand(lead)
        k, a = tm.us.shape[-2:]
        n = tm.Bs.shape[-1]
        u_new, B_new = self.reduce(tm.us.reshape(-1, k, a), tm.Bs.reshape(-1, k, n, n), Ub.reshape(-1))
        u_new = u_new.reshape(*lead, self.rank, a)
        B_new = B_new.reshape(*lead, self.rank, n, n)
        q = torch.einsum("...k,m...rki->m...ri", tm.dl_ds, B_new)
        Gw = torch.einsum("m...ri,m...rj->mij", q, u_new)
        g = KFRTRL._scatter(problem, Gw, torch.zeros(M, problem.p, dtype=Gw.dtype, device=Gw.device)) + tm.dl_dth
        return OKState(expand_samples(tm.s_next, M), u_new, B_new, U), g


# ------------------------------------------------------------------ exact expectation
def exact_expectation(
    est: OK, problem: Problem, theta: torch.Tensor, steps: int, *, max_paths: int = 100_000
) -> tuple[torch.Tensor, torch.Tensor]:
    """E[g̃_t] (steps, p) and E[influence estimate after ``steps``] (*B, n, p), exactly, over U's outcomes.

    Each step has finitely many outcomes as U sweeps [0, 1) (intervals between the breakpoints, shared by
    the batch); every path is followed with its probability (the product of interval lengths; intervals shorter
    than 1e-14, slivers left by round-off of the breakpoints, are skipped: mass < 1e-14 each). Refuses
    (InvalidArgument ``max_paths``) when the tree grows past ``max_paths`` leaves.
    """
    steps = require_positive_int("steps", steps)
    gen = torch.Generator().manual_seed(0)
    g_sum = torch.zeros(steps, problem.p, dtype=problem.dtype)
    paths = [0]

    def visit(state: OKState, t: int, prob: float, est_t: OK) -> torch.Tensor:
        if t > steps:
            paths[0] += 1
            if paths[0] > max_paths:
                raise InvalidArgument("max_paths", max_paths, "the enumeration tree has more leaves")
            return prob * est_t.influence_estimate(problem, state)[0]
        tm = est.terms(problem, theta, state, t)
        k, a = tm.us.shape[-2:]
        n = tm.Bs.shape[-1]
        bp = est.breakpoints(tm.us.reshape(-1, k, a), tm.Bs.reshape(-1, k, n, n)).flatten()
        cuts = torch.unique(torch.cat([bp, torch.tensor([0.0, 1.0], dtype=bp.dtype)]).clamp(0.0, 1.0))
        total: Any = 0.0
        for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            if hi - lo <= 1e-14:  # a sliver from round-off of the c_i (its midpoint may round to 1): mass < 1e-14
                continue
            table = torch.full((steps, 1, 1), 0.5 * (lo + hi), dtype=problem.dtype)
            table.clamp_(max=1.0 - torch.finfo(problem.dtype).eps)  # a midpoint that rounds to 1 in float32
            nxt, g = est.with_noise(Tabulated(table)).step(problem, theta, state, t, gen)
            g_sum[t - 1] += (prob * (hi - lo)) * g[0]
            total = total + visit(nxt, t + 1, prob * (hi - lo), est_t)
        return torch.as_tensor(total)

    infl = visit(est.init(problem, theta, gen), 1, 1.0, est)
    return g_sum, infl
