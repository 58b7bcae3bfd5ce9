r"""KF-RTRL: Kronecker-factored real-time recurrent learning, for Elman cells.

Mujika, Meier & Steger 2018, "Approximating Real-Time Recurrent Learning with Random
Kronecker Factors" (NeurIPS 2018, arXiv:1805.10842), §4 (the Kronecker-sum lemma and
the KF-RTRL update). Equation numbers below are this module's: the paper's full text was not at hand, so
the reading is stated in full for a reviewer to check. It was checked (issue 26) against the one public
implementation found, omarschall/vanilla-rtrl ``learning_algorithms/KF_RTRL.py`` (read, not copied), whose
update is the same: row factor :math:`\hat a_t = (s_{t-1}, x_t, 1)`, column factors :math:`J_t A_{t-1}` and
:math:`\operatorname{diag}\phi'(p_t)` (times its leak α, 1 here), two zero-mean signs, and
:math:`\rho_1 = \sqrt{\|J_tA_{t-1}\|/\|u_{t-1}\|}`, :math:`\rho_2 = \sqrt{\|D_t\|/\|\hat a_t\|}`
(the lemma's variance-minimizing choice). The two differences are stated below: the zero start and the ε.

**Where the influence factors.** For a cell whose new state is an elementwise function of
one affine map, :math:`s_t = \phi(p_t)`, :math:`p_t = W_{full}\,a_t`,
:math:`a_t = (s_{t-1}, x_t, 1)`, :math:`W_{full} = [W\;U\;b]` (n × A, A = n + d + 1) --
in this toolkit the :class:`~verify.model.cells.ElmanCell` with φ = tanh or relu, and
nothing else (LSTM and GRU gate through several maps; the paper handles RHNs by one
factor per layer, not implemented here) -- the influence
:math:`G_t = \partial s_t/\partial\operatorname{vec}W_{full}` obeys

.. math::
    G_t = H_t\,G_{t-1} + a_t^\top\otimes D_t,\qquad H_t = D_t W,\quad D_t = \operatorname{diag}\phi'(p_t),
    \qquad G_0 = 0,                                                                     \tag{1}

where :math:`(u^\top\otimes A)_{k,(i,j)} = A_{k i}\,u_j` (∂s_t[k]/∂W_full[i, j]). If
:math:`G_{t-1}` is held as one Kronecker product :math:`u_{t-1}^\top\otimes A_{t-1}`
(u ∈ R^A, A ∈ R^{n×n}), eq. (1) is a sum of two Kronecker products
:math:`u_{t-1}^\top\otimes(H_tA_{t-1}) + a_t^\top\otimes D_t`, and the paper's lemma
replaces it by one, with two independent random signs :math:`c_1, c_2`:

.. math::
    u_t = c_1\,\rho_1\,u_{t-1} + c_2\,\rho_2\,a_t,\qquad
    A_t = \frac{c_1}{\rho_1}\,H_tA_{t-1} + \frac{c_2}{\rho_2}\,D_t,                     \tag{2}

:math:`E[u_t^\top\otimes A_t] = u_{t-1}^\top\otimes H_tA_{t-1} + a_t^\top\otimes D_t`
(:math:`c_1^2 = c_2^2 = 1`, :math:`E c_1c_2 = 0`), so by induction
:math:`E[u_t^\top\otimes A_t] = G_t` for frozen θ (the paper's unbiasedness theorem).
The variance-minimizing scales (the lemma's choice) are

.. math::
    \rho_1 = \sqrt{\frac{\|H_tA_{t-1}\|_F}{\|u_{t-1}\| + \varepsilon}} + \varepsilon,\qquad
    \rho_2 = \sqrt{\frac{\|D_t\|_F}{\|a_t\| + \varepsilon}} + \varepsilon,               \tag{3}

with UORO's ε = 1e-7 (Tallec & Ollivier 2017, Algorithm 1) added so that the zero start
:math:`u_0 = 0, A_0 = 0` (our reading of :math:`G_0 = 0`; public code starts from random
Gaussian factors instead, which is unbiased only over that random start) needs no special
case. Any positive, sign-independent ρ keeps eq. (2) unbiased; the ε only moves the variance.

**Gradient** (the paper reads the gradient off the updated factors):
:math:`\tilde g_t = \operatorname{vec}\big(((\partial\ell_t/\partial s_t)A_t)^\top u_t^\top\big)`
on the W, U, b entries of θ, plus :math:`\partial\ell_t/\partial\theta|_{s_t}` (the readout).

**Toolkit conventions.** Batched problems: each sequence carries its own
:math:`(u, A)` (its own :math:`a_t`, :math:`D_t`) and the two signs of a step are shared by
the batch (each sequence's estimate stays unbiased; the enumeration needs 2·T signs, not
2·T·|B|). Noise hook (:mod:`verify.estimators.noise`): one draw of shape (2,) per step and
sample, :math:`(c_1, c_2)`, from ``noise`` (default :class:`Rademacher`), so the toolkit can
enumerate every sign pattern. :meth:`KFRTRL.input_factor` (the Kronecker factor
:math:`a_t`), :meth:`KFRTRL.state_factor` (:math:`D_t`) and :meth:`KFRTRL.rho1` / :meth:`KFRTRL.rho2` (eq. (3))
are methods so the mutant catalog can override one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import torch

from verify._validate import require_positive, require_positive_int
from verify.errors import InvalidArgument
from verify.estimators.guarantee import Guarantee
from verify.estimators.online import _Named, check_problem_theta, check_step, expand_samples, shared
from verify.estimators.uoro import NoiseSource, Rademacher, noise_event_floor
from verify.model.cells import ElmanCell
from verify.model.problem import Problem

__all__ = ["KFRTRL", "KFRTRLState"]

_SIGNS = Rademacher()  #: the paper's law of (c1, c2): independent random signs (a frozen value, shared)


class KFRTRLState(NamedTuple):
    r"""KF-RTRL's state: the forward state and the factors of :math:`G_t \approx u_t^\top\otimes A_t`."""

    s: torch.Tensor  #: s_t, (M, *B, n)
    u: torch.Tensor  #: u_t, (M, *B, n + d + 1)
    A: torch.Tensor  #: A_t, (M, *B, n, n)
    c: torch.Tensor  #: the last signs (c1, c2) drawn (zeros before the first), (M, 2)


@dataclass(frozen=True)
class KFRTRL(_Named):
    r"""KF-RTRL (Mujika, Meier & Steger 2018, arXiv:1805.10842, §4) for Elman cells; see the module docstring.

    ``noise``: the law of the signs (c1, c2) (Rademacher, the paper's); ``eps``: the ε of eq. (3);
    ``label`` overrides ``name`` (default ``"kf-rtrl"``).
    """

    eps: float = 1e-7
    noise: NoiseSource = _SIGNS
    label: str = ""

    def __post_init__(self) -> None:
        require_positive("eps", self.eps)
        if not isinstance(self.noise, NoiseSource):
            raise InvalidArgument("noise", type(self.noise).__name__, "must be a NoiseSource (e.g. Rademacher())")
        object.__setattr__(self, "name", self.label or "kf-rtrl")

    @property
    def guarantee(self) -> Guarantee:
        """Unbiased at frozen θ (Mujika, Meier & Steger 2018, arXiv:1805.10842, §4)."""
        return Guarantee("unbiased", source="Mujika, Meier & Steger 2018 (arXiv:1805.10842), §4")

    @property
    def event_floor(self) -> float:
        """Declared as UORO's (:func:`~verify.estimators.uoro.noise_event_floor`): flipping one sign moves g̃."""
        return noise_event_floor(self.noise)

    @staticmethod
    def _cell(problem: Problem) -> ElmanCell:
        cell = problem.cell
        if not isinstance(cell, ElmanCell):
            raise InvalidArgument(
                "problem.cell",
                cell.describe(),
                "KF-RTRL needs an Elman cell s' = phi(W s + U x + b): its influence factors as a Kronecker "
                "product only for one elementwise map of one affine map (Mujika et al. 2018, §4)",
            )
        return cell

    def supports(self, problem: Problem) -> str | None:
        """None for an Elman cell, else why not (:mod:`verify.impl.capabilities`: a claim leaves the problem out)."""
        if isinstance(problem.cell, ElmanCell):
            return None
        return (
            f"KF-RTRL is defined here for Elman cells s' = phi(W s + U x + b) only, not {problem.cell.describe()} "
            "(Mujika et al. 2018, §4: one elementwise map of one affine map)"
        )

    # ----------------------------------------------------------- noise hook
    def noise_shape(self, problem: Problem) -> tuple[int, ...]:
        """One draw per step and sample: the two signs (c1, c2) of eq. (2), shared by the batch."""
        return (2,)

    def noise_draws(self, steps: int) -> int:
        return steps

    def with_noise(self, noise: NoiseSource) -> KFRTRL:
        return dataclasses.replace(self, noise=noise)

    # ------------------------------------------------------------ factors
    def input_factor(self, s_prev: torch.Tensor, x: torch.Tensor, s_next: torch.Tensor) -> torch.Tensor:
        r""":math:`a_t = (s_{t-1}, x_t, 1)`, the row factor of :math:`F_t = a_t^\top\otimes D_t` (eq. (1)), (*B, A)."""
        ones = torch.ones((*s_prev.shape[:-1], 1), dtype=s_prev.dtype, device=s_prev.device)
        return torch.cat([s_prev, x.expand(*s_prev.shape[:-1], x.shape[-1]), ones], dim=-1)

    def state_factor(self, dphi: torch.Tensor) -> torch.Tensor:
        r""":math:`D_t = \operatorname{diag}\phi'(p_t)` (eq. (1)), (*B, n, n)."""
        return torch.diag_embed(dphi)

    def rho1(self, HA: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        r""":math:`\rho_1 = \sqrt{\|H_tA_{t-1}\|_F/(\|u_{t-1}\| + \varepsilon)} + \varepsilon` (eq. (3))."""
        return torch.sqrt(torch.linalg.matrix_norm(HA) / (torch.linalg.vector_norm(u, dim=-1) + self.eps)) + self.eps

    def rho2(self, D: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        r""":math:`\rho_2 = \sqrt{\|D_t\|_F/(\|a_t\| + \varepsilon)} + \varepsilon` (eq. (3))."""
        return torch.sqrt(torch.linalg.matrix_norm(D) / (torch.linalg.vector_norm(a, dim=-1) + self.eps)) + self.eps

    def influence_estimate(self, problem: Problem, state: KFRTRLState) -> torch.Tensor:
        r""":math:`u_t^\top\otimes A_t` laid out as ∂s_t/∂θ (readout columns 0), shape (M, *B, n, p)."""
        K = torch.einsum("m...ki,m...j->m...kij", state.A, state.u)  # (M, *B, n, n, A): ∂s[k]/∂W_full[i, j]
        out = torch.zeros((*state.A.shape[:-1], problem.p), dtype=state.A.dtype, device=state.A.device)
        return self._scatter(problem, K, out)

    @staticmethod
    def _scatter(problem: Problem, K: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """(..., n, A) derivatives w.r.t. W_full -> ``out`` (..., p) in θ's layout (readout entries untouched)."""
        n, lay = problem.n, problem.layout
        d = problem.cell.input_size
        out[..., lay["cell.W"].slice] = K[..., :n].flatten(-2)
        out[..., lay["cell.U"].slice] = K[..., n : n + d].flatten(-2)
        out[..., lay["cell.b"].slice] = K[..., n + d]
        return out

    # ---------------------------------------------------------------- contract
    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> KFRTRLState:
        """:math:`u_0 = 0`, :math:`A_0 = 0` (:math:`G_0 = \\partial s_0/\\partial\\theta = 0`)."""
        M = require_positive_int("samples", samples)
        cell = self._cell(problem)
        check_problem_theta(problem, theta)
        B, n, A = problem.batch_shape, problem.n, problem.n + cell.input_size + 1
        dt, dev = problem.dtype, problem.device
        return KFRTRLState(
            s=expand_samples(problem.s0.clone(), M),
            u=torch.zeros(M, *B, A, dtype=dt, device=dev),
            A=torch.zeros(M, *B, n, n, dtype=dt, device=dev),
            c=torch.zeros(M, 2, dtype=dt, device=dev),
        )

    def step(
        self, problem: Problem, theta: torch.Tensor, state: KFRTRLState, t: int, rng: torch.Generator
    ) -> tuple[KFRTRLState, torch.Tensor]:
        """Eqs. (2)-(3) from t-1 to t, then g̃_t from the updated factors; returns (state, g̃_t (M, p))."""
        cell = self._cell(problem)
        B, n, d = problem.batch_shape, problem.n, cell.input_size
        spec = {"s": (*B, n), "u": (*B, n + d + 1), "A": (*B, n, n), "c": (2,)}
        theta, M = check_step(self.name, problem, theta, state, t, spec)
        s_prev = shared("state.s", state.s)
        x = problem.inputs[t - 1]
        params = problem.cell_params(theta.detach())
        W = params["W"]
        with torch.enable_grad():
            pre = cell.preactivation(params, s_prev, x).detach().requires_grad_(True)
            s_next = cell.phi(pre)
            (dphi,) = torch.autograd.grad(s_next, pre, grad_outputs=torch.ones_like(pre))  # φ'(p_t), elementwise
            th = theta.detach().clone().requires_grad_(True)
            s_leaf = s_next.detach().requires_grad_(True)
            loss = problem.step_loss(th, s_leaf, problem.targets[t - 1])
            dl_dth, dl_ds = torch.autograd.grad(loss, (th, s_leaf), allow_unused=True)
        s_next = s_next.detach()
        dl_dth = torch.zeros_like(theta) if dl_dth is None else dl_dth.detach()
        dl_ds = torch.zeros_like(s_next) if dl_ds is None else dl_ds.detach()
        # signs (c1, c2) of eq. (2), one pair per sample, shared by the batch
        c = self.noise.draw(rng, (M, 2), problem.dtype, problem.device, t - 1, state.c)
        if tuple(c.shape) != (M, 2):
            raise InvalidArgument("noise.draw(...)", f"shape {tuple(c.shape)}", f"expected {(M, 2)}")
        a_t = self.input_factor(s_prev, x, s_next)  # (*B, A)
        D = self.state_factor(dphi.detach())  # (*B, n, n)
        HA = torch.matmul(D @ W, state.A)  # H_t A_{t-1} = D_t W A_{t-1}, (M, *B, n, n)
        rho1 = self.rho1(HA, state.u)  # eq. (3), (M, *B)
        rho2 = self.rho2(D, a_t)  # eq. (3), (*B)
        cb = c.reshape(M, *(1,) * len(B), 2)
        c1, c2 = cb[..., 0], cb[..., 1]  # (M, *1)
        u = (c1 * rho1).unsqueeze(-1) * state.u + (c2 * rho2).unsqueeze(-1) * a_t  # eq. (2)
        A = (c1 / rho1)[..., None, None] * HA + (c2 / rho2)[..., None, None] * D  # eq. (2)
        # g̃_t: (∂ℓ_t/∂s_t) G_t with G_t ≈ u_t ⊗ A_t, summed over the batch, + ∂ℓ_t/∂θ at fixed s_t
        q = torch.einsum("...k,m...ki->m...i", dl_ds, A)  # (M, *B, n)
        Gw = torch.einsum("m...i,m...j->mij", q, u)  # (M, n, A)
        g = self._scatter(problem, Gw, torch.zeros(M, problem.p, dtype=Gw.dtype, device=Gw.device)) + dl_dth
        return KFRTRLState(expand_samples(s_next, M), u, A, c), g
