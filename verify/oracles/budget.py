r"""Predicted round-off budgets for comparing two computations of the same derivative.

Two budget models live here. Both rest on the same fact: the error of a sum of
terms is bounded by the rounding unit times the sum of the terms' *magnitudes*,
not by the size of the result (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., §3.1 and Lemma 3.1: for an inner product of length m,
:math:`|\widehat{a^\top b} - a^\top b| \le \gamma_m\,|a|^\top|b|`,
:math:`\gamma_m = m u/(1 - m u)`).

1. The reference self-check model (float64 vs float64)
------------------------------------------------------
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

2. The device-parity model (another dtype, device or reduction order vs float64)
--------------------------------------------------------------------------------
Used by :mod:`verify.gpu.parity` (claims ``device.float32-standin`` and
``device.cuda-parity``). A candidate result :math:`\hat r` (float32, TF32 or
float64 on another device or in another summation order) is compared with the CPU
float64 result r of the same algorithm **on the same rounded inputs** (θ, x,
targets, s₀ and any noise or state variables rounded to the candidate's dtype and
cast back), so that only arithmetic error is measured. Every compared array is cut
in rows (one row per time step and sample, or per FPP sample) and each row must
satisfy

.. math::
    \|\hat r_{row} - r_{row}\|_2 \;\le\; C\,(u_{cand} + u_{ref})\,\sqrt{D}\,\|\bar r_{row}\|_2,
    \qquad D = m\,L_{eff} + T_{sum},

with

* :math:`\bar r \ge |r|` the **magnitude** of the result: the same computation
  carried out on absolute values in float64, i.e. every sum replaced by the sum
  of the magnitudes of its terms (:math:`|a|^\top|b|`). BPTT:
  :math:`\bar a_t = \bar\ell^s_t + |J_s(t+1)|^\top\bar a_{t+1}`,
  :math:`\bar g = \sum_t |J_\theta(t)|^\top\bar a_t + \bar\ell^\theta_t`; RTRL:
  :math:`\bar I_t = |J_s(t)|\bar I_{t-1} + |J_\theta(t)|`,
  :math:`\bar g_t = (\bar\ell^s_t)^\top\bar I_t + \bar\ell^\theta_t`; truncated BPTT and
  the truncated model: the same, over their windows (the truncated model along its
  restarted trajectory); UORO with tabulated noise: the recursion of its updates on
  magnitudes with the float64 normalizers :math:`\rho_0, \rho_1`
  (:math:`\bar s_t = \rho_0|J_s|\bar s_{t-1} + \rho_1|\nu|`,
  :math:`\bar\theta_t = \bar\theta_{t-1}/\rho_0 + |J_\theta|^\top|\nu|/\rho_1`,
  :math:`\bar g_t = (|\delta s|\cdot\bar s_{t-1})\,\bar\theta_{t-1} + |\delta\theta|`);
  preactivation UORO likewise with its γ, β; FPP's per-sample gradients of eq. (7):
  one window's :math:`|J|` applied to :math:`|\nabla\ell| + \lambda(|s_i| + |\hat s_i|)`.
  :math:`J_s, J_\theta` are the explicit one-step Jacobians (``jacrev``).
  The loss terms :math:`\bar\ell^s, \bar\ell^\theta` use the magnitude of the output
  residual, not its value: squared error :math:`|V||h| + |c| + |\hat y|`, softmax
  cross-entropy :math:`\mathrm{softmax}(y) + \hat q` (a residual that cancels, e.g. a
  fitted target, still carries the rounding error of its terms).
* :math:`u` the rounding unit of each side: :math:`2^{-53}` (float64), :math:`2^{-24}`
  (float32), :math:`2^{-11}` for float32 with TF32 matmuls enabled (TF32 keeps 10
  mantissa bits; every step of every algorithm here runs a matmul, so the TF32
  unit is used for the whole computation).
* :math:`m = n + d + k` the accumulation length of one step's inner products
  (state, input and output sizes; :func:`accumulation_length`).
* :math:`L_{eff} \in [1, T]` the **effective memory** of the instance
  (:func:`effective_memory`): an error committed at step τ reaches a result at
  step t through the product of the |J| of the steps in between, which also
  weighs the magnitudes, so the relative error of a chain grows with the
  magnitude-weighted mean chain length
  :math:`L(t) = \sum_{j\ge 0}(j+1)\pi_j(t) / \sum_{j\ge0}\pi_j(t)`,
  :math:`\pi_j(t) = \prod_{i=t-j+1}^{t}\||J_s(i)|\|_2` (a contraction λ gives
  :math:`L \approx 1/(1-\lambda)`; an expanding instance gives L → t);
  :math:`L_{eff} = \max_t L(t)` over both time directions, capped by the
  algorithm's window (k for truncations, T for FPP).
* :math:`T_{sum}` the number of per-step terms summed into one output entry (T for
  the BPTT total gradient, 1 for per-step estimates).
* :math:`C` = :data:`C_PARITY`, calibrated (below).

Why :math:`\sqrt D` and not D. The deterministic first-order bound is
:math:`\gamma_D|\bar r| \approx D u |\bar r|` (errors aligned). The calibration
(below) measured the normalised error :math:`e = \|\hat r - r\| / ((u_c+u_r)\|\bar r\|)`
over D = 8 … 3000 and found it flat: e ≤ 2.5 everywhere (median 0.5 for float32,
0.15 for float64 reordered), because the magnitudes grow with the sums as fast as
the random-sign accumulation of their rounding errors. A sum of m terms of one
sign is the exception: there the error relative to the magnitude grows like
:math:`\sqrt m` (the probabilistic rounding-error bound of Higham & Mary, SIAM J.
Sci. Comput. 41 (2019): :math:`\lambda\sqrt{D}\,u` with high probability). The
budget uses that :math:`\sqrt D` growth: it covers long one-signed sums (large n on
a GPU) and is still 4-30× looser than needed at the calibrated depths, instead
of the 100-1000× of the worst-case D.

**Calibration** (``python -m verify.bench.gpu --calibrate``; numbers and figures in
the issue-8 handoff). Over seeds × the five cell kinds × both losses × the
algorithms (BPTT, TBPTT(k), truncated model(k), RTRL, UORO rank 1 and 2,
preactivation UORO, FPP eq. (7); k, T_FPP ∈ {2, 5, 8}) × sizes (n = 2 … 16,
T = 3 … 60, batch 1-2, recurrent scale 0.5-1.2), three reduction orders were
measured: float32 vs float64 (natural order), float32 with the hidden units
permuted (every inner product summed in another order) vs float64, and float64
permuted vs float64 (the float64 branch of the model, as a second device would
see it). The largest observed raw ratio
:math:`\|\hat r - r\| / ((u_c + u_r)\sqrt D\|\bar r\|)` is
:data:`CALIBRATED_MAX_RATIO`; :data:`C_PARITY` puts a margin of
:data:`CALIBRATION_MARGIN` on it, so a calibrated instance uses at most
1/margin of its budget. A float16 computation uses about 2¹³ times more
(bfloat16 2¹⁶), which the negative controls show.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.func import grad, jacrev, vmap

from verify.errors import InvalidArgument
from verify.model.losses import LinearReadout, SelectReadout, SoftmaxCrossEntropy, SquaredError
from verify.model.problem import Problem
from verify.oracles.bptt import default_loss_vjp, default_transition_vjp, influence_jacfwd

__all__ = [
    "CALIBRATED_MAX_RATIO",
    "CALIBRATION_MARGIN",
    "C_PARITY",
    "U_TF32",
    "Conditioning",
    "ParityBudget",
    "Trajectory",
    "Window",
    "accumulation_length",
    "backward_magnitudes",
    "bptt_magnitude",
    "conditioning",
    "effective_memory",
    "loss_magnitudes",
    "pair_unit",
    "preactivation_uoro_magnitudes",
    "projected_gd_roundoff",
    "rounding_unit",
    "roundoff_budget",
    "rtrl_magnitudes",
    "step_jacobians",
    "tbptt_magnitudes",
    "trajectory",
    "truncated_model_magnitudes",
    "unit_roundoff",
    "uoro_magnitudes",
    "window",
]

#: number of independently rounded computations in a pairwise comparison
C_PAIR = 2.0


def unit_roundoff(dtype: torch.dtype) -> float:
    """Rounding unit u = eps/2 of a floating dtype."""
    return float(torch.finfo(dtype).eps) / 2.0


def pair_unit(candidate: torch.dtype, reference: torch.dtype = torch.float64) -> float:
    r"""The rounding unit per side of a comparison of a ``candidate`` computation with a ``reference``:
    :math:`(u_{cand} + u_{ref})/2`, so that the pair budget :math:`C\,u\,m\,T\,\kappa` with C = :data:`C_PAIR` = 2
    carries :math:`u_{cand} + u_{ref}` -- each side its own rounding (a user's float32 code against the float64
    reference: :mod:`verify.impl.precision`). Equal dtypes give that dtype's unit: the float64 budgets are
    unchanged."""
    return (unit_roundoff(candidate) + unit_roundoff(reference)) / 2.0


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
    r"""Relative budget :math:`C\,u\,m\,T\,\kappa`.

    DESIGN.md 'Numerical policy' (exactness judged against a predicted budget).
    """
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


# =============================================================================
# 2. The device-parity model (see the module docstring, section 2)
# =============================================================================

#: rounding unit of a TF32 matmul (10 explicit mantissa bits, round to nearest)
U_TF32 = 2.0**-11

#: largest raw ratio ||r̂ − r|| / ((u_c + u_r) √D ||r̄||) over the calibration runs (module docstring)
CALIBRATED_MAX_RATIO = 0.6
#: safety factor on the calibrated ratio
CALIBRATION_MARGIN = 4.0
#: the constant C of the parity budget
C_PARITY = CALIBRATED_MAX_RATIO * CALIBRATION_MARGIN


def rounding_unit(dtype: torch.dtype, *, tf32: bool = False) -> float:
    """Effective rounding unit of a computation in ``dtype`` (TF32 matmuls: :data:`U_TF32` for float32)."""
    if not dtype.is_floating_point:
        raise InvalidArgument("dtype", str(dtype), "a rounding unit needs a floating dtype")
    u = unit_roundoff(dtype)
    if tf32 and dtype == torch.float32:
        return max(u, U_TF32)
    return u


def accumulation_length(problem: Problem) -> int:
    """m = n + d + k: the accumulation length of one step's inner products (state, input, output)."""
    return problem.n + problem.cell.input_size + problem.readout.output_size


@dataclass(frozen=True)
class ParityBudget:
    r"""The budget of one comparison: :math:`C\,(u_{cand}+u_{ref})\,\sqrt{m L_{eff} + T_{sum}}\,\|\bar r_{row}\|`."""

    u_candidate: float
    u_reference: float
    accumulation: int
    memory: float
    summed: int = 1
    constant: float = C_PARITY

    @property
    def depth(self) -> float:
        """D = m·L_eff + T_sum."""
        return self.accumulation * self.memory + self.summed

    @property
    def factor(self) -> float:
        """C (u_cand + u_ref) √D: the budget per unit of magnitude."""
        return self.constant * (self.u_candidate + self.u_reference) * math.sqrt(self.depth)

    def row_budgets(self, magnitudes: torch.Tensor) -> torch.Tensor:
        """Budget of every row of a (rows, q) magnitude array."""
        out: torch.Tensor = self.factor * torch.linalg.vector_norm(magnitudes.reshape(magnitudes.shape[0], -1), dim=1)
        return out


def effective_memory(abs_norms: Sequence[float] | torch.Tensor, window: int | None = None) -> float:
    r"""L_eff: magnitude-weighted mean chain length (module docstring), in [1, min(T, window)].

    ``abs_norms[i-1]`` = :math:`\||J_s(i)|\|_2`. Chains run backward from every anchor
    t (forward sensitivities, RTRL) and forward from it (adjoints, BPTT); the
    larger mean length over all anchors is returned. ``window`` caps the chain
    length (truncated algorithms).
    """
    norms = [float(v) for v in (abs_norms.tolist() if isinstance(abs_norms, torch.Tensor) else abs_norms)]
    T = len(norms)
    if window is not None and window < 1:
        raise InvalidArgument("window", window, "must be >= 1")
    cap = T if window is None else min(window, T)
    best = 1.0
    for seq in (norms, norms[::-1]):
        for t in range(1, T + 1):
            num = den = 0.0
            prod = 1.0
            for j in range(min(t, cap)):
                num += (j + 1) * prod
                den += prod
                prod *= seq[t - 1 - j]
                if not math.isfinite(prod) or prod > 1e300:
                    break
            best = max(best, num / den)
    return min(best, float(max(cap, 1)))


def _batch_numel(problem: Problem) -> int:
    return math.prod(problem.batch_shape)


def step_jacobians(
    problem: Problem, theta: torch.Tensor, s_prev: torch.Tensor, x: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Explicit one-step Jacobians at L points: (∂f/∂s (L, n, n), ∂f/∂θ (L, n, p)).

    ``s_prev`` (L, n), ``x`` (L, d): one unbatched transition per row (the cells
    broadcast, so a batched problem's sequences are rows too).
    """

    def f(s: torch.Tensor, th: torch.Tensor, xx: torch.Tensor) -> torch.Tensor:
        return problem.transition(th, s, xx)

    Js, Jt = vmap(jacrev(f, argnums=(0, 1)), in_dims=(0, None, 0))(s_prev, theta, x)
    return Js, Jt


def _observe_matrix(problem: Problem) -> torch.Tensor:
    """|∂ obs(s)/∂s| (m_obs, n): the cells' observe maps are linear selections."""
    z = torch.zeros(problem.n, dtype=torch.float64, device=problem.device)
    O: torch.Tensor = jacrev(problem.cell.observe)(z)
    return O.abs()


def loss_magnitudes(
    problem: Problem, theta: torch.Tensor, states: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Magnitudes of :math:`\partial\ell/\partial s` (L, n) and :math:`\partial\ell/\partial\theta|_s` (L, p) per row.

    ``states`` (L, n), ``targets`` (L, k) in float64. Linear readout or selection
    with squared error or softmax cross-entropy use the residual's magnitude
    (module docstring); any other readout/loss falls back to the absolute value
    of the exact derivatives (no cancellation accounted for).
    """
    P, th = problem, theta
    obs = P.cell.observe(states)
    ro, loss = P.readout, P.loss
    known_loss = isinstance(loss, (SquaredError, SoftmaxCrossEntropy))
    if isinstance(ro, (LinearReadout, SelectReadout)) and known_loss:
        params = P.readout_params(th)
        y = ro(params, obs)
        if isinstance(loss, SquaredError):
            if isinstance(ro, LinearReadout):
                resid = obs.abs() @ params["V"].abs().transpose(0, 1) + params["c"].abs() + targets.abs()
            else:
                resid = y.abs() + targets.abs()
        else:
            resid = torch.softmax(y, dim=-1) * targets.abs().sum(-1, keepdim=True) + targets.abs()
        l_theta = torch.zeros(states.shape[0], P.p, dtype=states.dtype, device=states.device)
        if isinstance(ro, LinearReadout):
            d_obs = resid @ params["V"].abs()
            l_theta[:, P.layout["readout.V"].slice] = (resid.unsqueeze(-1) * obs.abs().unsqueeze(-2)).flatten(1)
            l_theta[:, P.layout["readout.c"].slice] = resid
        else:
            d_obs = torch.zeros_like(obs)
            d_obs[:, list(ro.indices)] = resid
        l_s = d_obs @ _observe_matrix(P)
        return l_s, l_theta

    # fallback: |exact derivatives|
    def ell(th_: torch.Tensor, s_: torch.Tensor, y_: torch.Tensor) -> torch.Tensor:
        return P.step_loss(th_, s_, y_)

    g_th, g_s = vmap(grad(ell, argnums=(0, 1)), in_dims=(None, 0, 0))(th, states, targets)
    return g_s.abs(), g_th.abs()


@dataclass(frozen=True)
class Trajectory:
    """Float64 data of an instance along its exact trajectory (rows = the |B| sequences).

    ``jac_s`` (T, nb, n, n) and ``jac_theta`` (T, nb, n, p) hold |∂f/∂s| and
    |∂f/∂θ| at step t; ``loss_s`` (T, nb, n), ``loss_theta`` (T, p, summed over the
    batch) the loss magnitudes; ``abs_norms`` (T,) the largest ‖|J_s(t)|‖₂ over
    the batch.
    """

    problem: Problem
    theta: torch.Tensor
    states: torch.Tensor
    jac_s: torch.Tensor
    jac_theta: torch.Tensor
    loss_s: torch.Tensor
    loss_theta: torch.Tensor
    abs_norms: torch.Tensor

    @property
    def T(self) -> int:
        return int(self.jac_s.shape[0])

    def memory(self, window: int | None = None) -> float:
        """:func:`effective_memory` of this instance (optionally capped by a window)."""
        return effective_memory(self.abs_norms, window)


def _as64(problem: Problem, theta: torch.Tensor) -> tuple[Problem, torch.Tensor]:
    P = problem.to(torch.float64)
    th = P.check_theta(theta.detach().to(dtype=torch.float64, device=P.device))
    return P, th


def trajectory(problem: Problem, theta: torch.Tensor) -> Trajectory:
    """Rollout, explicit |Jacobians| and loss magnitudes of ``problem`` at θ (float64)."""
    P, th = _as64(problem, theta)
    T, n, nb = P.T, P.n, _batch_numel(P)
    with torch.no_grad():
        states = P.rollout(th)
        s_prev = states[:-1].reshape(T * nb, n)
        x = P.inputs.reshape(T * nb, -1)
        Js, Jt = step_jacobians(P, th, s_prev, x)
        Js, Jt = Js.abs().reshape(T, nb, n, n), Jt.abs().reshape(T, nb, n, P.p)
        l_s, l_th = loss_magnitudes(P, th, states[1:].reshape(T * nb, n), P.targets.reshape(T * nb, -1))
        norms = torch.linalg.matrix_norm(Js, ord=2).amax(dim=1)
    return Trajectory(P, th, states, Js, Jt, l_s.reshape(T, nb, n), l_th.reshape(T, nb, P.p).sum(1), norms)


def bptt_magnitude(traj: Trajectory) -> torch.Tensor:
    r"""Magnitude of the BPTT gradient, (p,): :math:`\bar a_t = \bar\ell^s_t + |J_s(t+1)|^\top\bar a_{t+1}`."""
    a = torch.zeros_like(traj.loss_s[0])
    g = traj.loss_theta.sum(0)
    for t in range(traj.T, 0, -1):
        a = a + traj.loss_s[t - 1]
        g = g + torch.einsum("bi,bip->p", a, traj.jac_theta[t - 1])
        a = torch.einsum("bi,bij->bj", a, traj.jac_s[t - 1])
    return g


def tbptt_magnitudes(traj: Trajectory, k: int) -> torch.Tensor:
    """Magnitudes of truncated BPTT's per-step estimates (T, p): the BPTT recursion over the last k steps."""
    out = []
    for t in range(1, traj.T + 1):
        a = traj.loss_s[t - 1]
        g = traj.loss_theta[t - 1].clone()
        for tau in range(t, max(t - k, 0), -1):
            g = g + torch.einsum("bi,bip->p", a, traj.jac_theta[tau - 1])
            a = torch.einsum("bi,bij->bj", a, traj.jac_s[tau - 1])
        out.append(g)
    return torch.stack(out)


def rtrl_magnitudes(traj: Trajectory) -> torch.Tensor:
    r"""Magnitudes of RTRL's per-step gradients (T, p): :math:`\bar I_t = |J_s|\bar I_{t-1} + |J_\theta|`."""
    I = torch.zeros_like(traj.jac_theta[0])
    out = []
    for t in range(1, traj.T + 1):
        I = torch.bmm(traj.jac_s[t - 1], I) + traj.jac_theta[t - 1]  # eq. (4) on magnitudes
        out.append(torch.einsum("bi,bip->p", traj.loss_s[t - 1], I) + traj.loss_theta[t - 1])
    return torch.stack(out)


@dataclass(frozen=True)
class Window:
    """The explicit |Jacobians| along L independent windows of w transitions (float64).

    ``states`` (w+1, L, n): the window's trajectory from its start; ``jac_s`` (w, L, n, n),
    ``jac_theta`` (w, L, n, p): |∂f/∂s|, |∂f/∂θ| at each transition; ``abs_norms`` (w,).
    """

    states: torch.Tensor
    jac_s: torch.Tensor
    jac_theta: torch.Tensor
    abs_norms: torch.Tensor


def window(problem: Problem, theta: torch.Tensor, start: torch.Tensor, inputs: torch.Tensor) -> Window:
    """Roll L windows forward from ``start`` (L, n) over ``inputs`` (w, L, d) and take their |Jacobians|."""
    P, th = problem, theta
    w, L = inputs.shape[0], start.shape[0]
    with torch.no_grad():
        s = start
        states = [s]
        for i in range(w):
            s = P.transition(th, s, inputs[i])
            states.append(s)
        S = torch.stack(states)
        Js, Jt = step_jacobians(P, th, S[:-1].reshape(w * L, -1), inputs.reshape(w * L, -1))
        n = P.n
        Js, Jt = Js.abs().reshape(w, L, n, n), Jt.abs().reshape(w, L, n, P.p)
        norms = torch.linalg.matrix_norm(Js, ord=2).amax(dim=1) if w else torch.zeros(0, dtype=S.dtype)
    return Window(S, Js, Jt, norms)


def backward_magnitudes(win: Window, a_end: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Backpropagate magnitudes ``a_end`` (L, n) through a window: (Σ_τ |J_θ|ᵀā_τ (L, p), ā at the start (L, n))."""
    a = a_end
    g = torch.zeros(a.shape[0], win.jac_theta.shape[-1], dtype=a.dtype, device=a.device)
    for i in range(win.jac_s.shape[0] - 1, -1, -1):
        g = g + torch.einsum("li,lip->lp", a, win.jac_theta[i])
        a = torch.einsum("li,lij->lj", a, win.jac_s[i])
    return g, a


def truncated_model_magnitudes(problem: Problem, theta: torch.Tensor, k: int) -> tuple[torch.Tensor, float]:
    """Magnitudes of the truncated model's per-step gradients (T, p) along its restarted windows, and its L_eff.

    Miller & Hardt eq. (3): :math:`h^k_t` restarts from 0 at t−k (from s₀ when t ≤ k).
    """
    P, th = _as64(problem, theta)
    nb, n = _batch_numel(P), P.n
    s0 = P.s0.reshape(nb, n)
    out = []
    memory = 1.0
    for t in range(1, P.T + 1):
        start = t - k
        lo = max(start, 0)
        s_start = s0 if start <= 0 else torch.zeros_like(s0)
        xs = P.inputs[lo:t].reshape(t - lo, nb, -1)
        win = window(P, th, s_start, xs)
        l_s, l_th = loss_magnitudes(P, th, win.states[-1], P.targets[t - 1].reshape(nb, -1))
        g, _ = backward_magnitudes(win, l_s)
        out.append(g.sum(0) + l_th.sum(0))
        memory = max(memory, effective_memory(win.abs_norms))
    return torch.stack(out), memory


def uoro_magnitudes(traj: Trajectory, nu: torch.Tensor, rho0: torch.Tensor, rho1: torch.Tensor) -> torch.Tensor:
    r"""Magnitudes of UORO's per-step estimates (T, M, p) for given noise and float64 normalizers.

    ``nu`` (T, M, r, *B, n): the draws used at each step; ``rho0``, ``rho1`` (T, M, r):
    Algorithm 1's normalizers applied at each step (of the float64 run). Block 1
    (UORO-T is not modelled). The recursion of Algorithm 1 on magnitudes:

    .. math::
        \bar g_t = \tfrac1r\textstyle\sum_{pairs}(|\delta s|\cdot\bar s_{t-1})\,\bar\theta_{t-1} + |\delta\theta|,\quad
        \bar s_t = \rho_0|J_s|\bar s_{t-1} + \rho_1|\nu|,\quad
        \bar\theta_t = \bar\theta_{t-1}/\rho_0 + |J_\theta|^\top|\nu|/\rho_1 .
    """
    T, M, r = nu.shape[0], nu.shape[1], nu.shape[2]
    nb, n = traj.jac_s.shape[1], traj.jac_s.shape[2]
    st = torch.zeros(M, r, nb, n, dtype=torch.float64, device=traj.jac_s.device)
    tt = torch.zeros(M, r, traj.jac_theta.shape[-1], dtype=torch.float64, device=traj.jac_s.device)
    out = []
    for t in range(1, T + 1):
        Js, Jt = traj.jac_s[t - 1], traj.jac_theta[t - 1]
        ls = traj.loss_s[t - 1]
        d_s = torch.einsum("bi,bij->bj", ls, Js)  # |δs| = |∂ℓ_t/∂s_{t-1}|
        d_th = torch.einsum("bi,bip->p", ls, Jt) + traj.loss_theta[t - 1]  # |δθ|
        coef = (d_s * st).sum((-2, -1))  # (M, r)
        out.append((coef.unsqueeze(-1) * tt).mean(1) + d_th)  # Algorithm 1, g̃ (eq. (7)) on magnitudes
        a_nu = nu[t - 1].abs().reshape(M, r, nb, n).to(torch.float64)
        r0, r1 = rho0[t - 1].to(torch.float64), rho1[t - 1].to(torch.float64)
        fwd = torch.einsum("bij,mrbj->mrbi", Js, st)
        st = r0[..., None, None] * fwd + r1[..., None, None] * a_nu  # eq. (5) on magnitudes
        tt = tt / r0[..., None] + torch.einsum("mrbi,bip->mrp", a_nu, Jt) / r1[..., None]  # eq. (6) on magnitudes
    return torch.stack(out)


def preactivation_uoro_magnitudes(traj: Trajectory, gamma: torch.Tensor, beta: torch.Tensor, rank: int) -> torch.Tensor:
    r"""Magnitudes of preactivation-space UORO's per-step estimates (T, M, p) for the float64 γ, β (T, M, r).

    Elman cells (:class:`~verify.estimators.PreactivationUORO`):
    :math:`\bar H_t = \gamma|J_s|\bar H_{t-1} + \beta|D_t|`,
    :math:`\bar a_t = \bar a_{t-1}/\gamma + |a_t|/\beta`,
    :math:`\bar g_t = \mathrm{vec}((|\delta s|\bar H_{t-1})^\top\bar a_{t-1}^\top) + |\delta\theta|`,
    with :math:`|D_t| = |\phi'(p_t)|` read off ∂f/∂b and :math:`a_t = (s_{t-1}, x_t, 1)`.
    """
    P = traj.problem
    lay = P.layout
    T, M = gamma.shape[0], gamma.shape[1]
    nb, n, d = traj.jac_s.shape[1], P.n, P.cell.input_size
    A = n + d + 1
    dev = traj.jac_s.device
    H = torch.zeros(M, rank, nb, n, n, dtype=torch.float64, device=dev)
    a = torch.zeros(M, rank, nb, A, dtype=torch.float64, device=dev)
    xs = P.inputs.reshape(T, nb, d)
    s_prev = traj.states[:-1].reshape(T, nb, n)
    out = []
    for t in range(1, T + 1):
        Js, Jt = traj.jac_s[t - 1], traj.jac_theta[t - 1]
        ls = traj.loss_s[t - 1]
        d_s = torch.einsum("bi,bij->bj", ls, Js)
        d_th = torch.einsum("bi,bip->p", ls, Jt) + traj.loss_theta[t - 1]
        u = torch.einsum("bi,mrbij->mrbj", d_s, H)
        G = torch.einsum("mrbj,mrbk->mjk", u, a) / rank
        g = torch.zeros(M, P.p, dtype=torch.float64, device=dev)
        g[:, lay["cell.W"].slice] = G[..., :n].flatten(1)
        g[:, lay["cell.U"].slice] = G[..., n : n + d].flatten(1)
        g[:, lay["cell.b"].slice] = G[..., n + d]
        out.append(g + d_th)
        dphi = Jt[:, :, lay["cell.b"].slice].diagonal(dim1=-2, dim2=-1)  # |φ'(p_t)|, (nb, n)
        a_t = torch.cat([s_prev[t - 1].abs(), xs[t - 1].abs(), torch.ones(nb, 1, dtype=torch.float64, device=dev)], -1)
        gm, bt = gamma[t - 1].to(torch.float64), beta[t - 1].to(torch.float64)
        JH = torch.einsum("bij,mrbjk->mrbik", Js, H)
        H = gm[..., None, None, None] * JH + bt[..., None, None, None] * torch.diag_embed(dphi)  # H̃_t on magnitudes
        a = a / gm[..., None, None] + a_t / bt[..., None, None]  # ã_t on magnitudes
    return torch.stack(out)


#: unit roundoff of float64
_U64 = 2.0**-53


def projected_gd_roundoff(lam: float, n: int, steps: int) -> list[float]:
    r"""Round-off allowance of :math:`\delta_t = \|W^t_{recurr} - W^t_{trunc}\|_F`, t = 1..``steps`` (float64).

    Two float64 trajectories cannot be told apart below their rounding: a projected step
    :math:`W \leftarrow \Pi_\Omega(W - \alpha_t\nabla p)` rounds every entry of W at the unit roundoff u
    (subtraction, scaling; the projection's SVD and rescaling a few u more), so one trajectory gains at most
    :math:`c\,u\|W\|_F` per step with :math:`\|W\|_F \le \lambda\sqrt n` on Ω; c = 8 covers those operations,
    a factor 2 the two trajectories and a factor 2 the propagation of earlier rounding (at ci sizes
    :math:`t^{\alpha\beta} \le 1.4` where δ_t is at round-off: the tanh runs, αβ_emp < 0.1):
    :math:`\rho_t = 32\,t\,u\,\lambda\sqrt n`, 3e-13 at t = 40, n = 8. Found by the 200-seed gate sweep: on 5 seeds
    the tanh runs' truncation error was itself at round-off (γ_emp ~ 3e-13) and δ_t ~ 2e-14 "exceeded" a bound of
    5e-15 -- round-off, not a violation of Prop. 2 (Miller & Hardt 2018, "When Recurrent Models Don't Need To Be
    Recurrent") -- round-off is not a deviation.
    """
    per_step = 32.0 * _U64 * lam * math.sqrt(n)
    return [per_step * t for t in range(1, steps + 1)]
