r"""KF-RTRL in numpy, BATCH-FIRST: every array is (batch, ...), the batch being the toolkit's M samples.

Mujika, Meier & Steger 2018 (arXiv:1805.10842), §4, for the Elman cell :math:`h_t = \tanh(a_t)`,
:math:`a_t = \Theta\,\hat h_t` with :math:`\Theta = [W\;U\;b]` (n × m, m = n + d + 1) and
:math:`\hat h_t = (h_{t-1}, x_t, 1)`. The influence :math:`\partial h_t/\partial\Theta` is kept as one
Kronecker product :math:`u_t \otimes A_t` (:math:`\partial h_{t,k}/\partial\Theta_{ij} = u_j A_{k,i}`), and one
step of RTRL, :math:`u_{t-1}\otimes D_t A_{t-1} + \hat h_t \otimes H_t` (:math:`H_t = \mathrm{diag}(1-h_t^2)`,
:math:`D_t = H_t W`), is reduced to one product with two random signs :math:`c_1, c_2` (the Kronecker-sum lemma):
:math:`u_t = c_1\rho_1 u_{t-1} + c_2\rho_2\hat h_t`, :math:`A_t = c_1 D_t A_{t-1}/\rho_1 + c_2 H_t/\rho_2`,
:math:`\rho_1 = \sqrt{\|D_t A_{t-1}\|/\|u_{t-1}\|}`, :math:`\rho_2 = \sqrt{\|H_t\|/\|\hat h_t\|}` (at t = 1 the
first term is 0 and is dropped). Gradient: :math:`\partial\ell_t/\partial\Theta \approx (A_t^\top\delta_t)
\otimes u_t`, :math:`\delta_t = V^\top(y_t-\hat y_t)`; the readout's is exact.

This is written directly against the toolkit's online-estimator contract (``init``/``step`` over an explicit
state whose arrays carry the batch first), not through an adapter: the M samples of a claim are one numpy batch.
The signs come through the noise hook (``noise.draw`` with shape (M, 2), one draw per step), so the claims can
enumerate them.

Seeded bugs (``bug=``):

* ``"u-new-state"``: the recurrent part of :math:`\hat h_t` is :math:`h_t` instead of :math:`h_{t-1}` (part: W
  block's factor u);
* ``"rho2-inverted"``: the immediate term enters A as :math:`c_2\rho_2 H_t` instead of :math:`c_2 H_t/\rho_2`
  (part: the normalizer ρ₂ of the immediate term).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
import torch

from verify.errors import NotApplicable
from verify.estimators.uoro import Rademacher


class KFState(NamedTuple):
    h: torch.Tensor  # (M, n)
    u: torch.Tensor  # (M, m)
    A: torch.Tensor  # (M, n, n)
    prev: torch.Tensor  # (M, 2): the last draw (zeros before the first)


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float64)


@dataclass(frozen=True)
class BatchFirstKFRTRL:
    bug: str | None = None
    noise: Any = field(default_factory=Rademacher)
    name: str = "batch-first numpy KF-RTRL"

    # -- capabilities and the noise hook
    def supports(self, problem: Any) -> str | None:
        act = getattr(problem.cell, "activation", None)
        if problem.cell.name != "elman" or act != "tanh":
            kind = problem.cell.name + (f"-{act}" if act else "")
            return f"{self.name} implements the Elman tanh cell only (this problem: {kind})"
        if problem.loss.name != "squared-error" or problem.batch_shape or problem.readout.name != "linear":
            return f"{self.name} implements unbatched squared-error problems with a linear readout only"
        return None

    def noise_shape(self, problem: Any) -> tuple[int, ...]:
        return (2,)

    def noise_draws(self, steps: int) -> int:
        return steps

    def with_noise(self, noise: Any) -> BatchFirstKFRTRL:
        return replace(self, noise=noise)

    # -- the contract
    def _params(self, problem: Any, theta: torch.Tensor) -> dict[str, np.ndarray]:
        why = self.supports(problem)
        if why is not None:
            raise NotApplicable(self.name, why)
        flat = problem.layout.unflatten(theta.detach(), "")
        return {k.split(".")[-1]: _np(v) for k, v in flat.items()}

    def init(self, problem: Any, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> KFState:
        p = self._params(problem, theta)
        n, m = problem.n, problem.n + p["U"].shape[1] + 1
        h0 = np.broadcast_to(_np(problem.s0), (samples, n))
        as_t = lambda a: torch.as_tensor(np.array(a, dtype=np.float64), dtype=problem.dtype)  # noqa: E731
        return KFState(
            as_t(h0), as_t(np.zeros((samples, m))), as_t(np.zeros((samples, n, n))), as_t(np.zeros((samples, 2)))
        )

    def step(self, problem: Any, theta: torch.Tensor, state: KFState, t: int, rng: torch.Generator):
        p = self._params(problem, theta)
        W, U, b, V, c = p["W"], p["U"], p["b"], p["V"], p["c"]
        h_prev, u, A = _np(state.h), _np(state.u), _np(state.A)
        M, n = h_prev.shape
        x = np.broadcast_to(_np(problem.inputs[t - 1]), (M, U.shape[1]))
        y_hat = np.broadcast_to(_np(problem.targets[t - 1]), (M, V.shape[0]))
        h = np.tanh(h_prev @ W.T + x @ U.T + b)
        dphi = 1.0 - h**2  # (M, n)
        rec = h if self.bug == "u-new-state" else h_prev
        hhat = np.concatenate([rec, x, np.ones((M, 1))], axis=1)  # (M, m)
        signs = self.noise.draw(rng, (M, 2), problem.dtype, problem.device, t - 1, state.prev)
        c1, c2 = (_np(signs)[:, i, None] for i in (0, 1))
        DA = dphi[:, :, None] * np.einsum("ij,bjk->bik", W, A)  # D_t A_{t-1}
        H = np.einsum("bi,ij->bij", dphi, np.eye(n))
        nu_, nDA = np.linalg.norm(u, axis=1), np.linalg.norm(DA, axis=(1, 2))
        first = (nu_ > 0) & (nDA > 0)
        rho1 = np.where(first, np.sqrt(np.where(first, nDA, 1.0) / np.where(first, nu_, 1.0)), 1.0)[:, None]
        rho2 = np.sqrt(np.linalg.norm(H, axis=(1, 2)) / np.linalg.norm(hhat, axis=1))[:, None]
        keep = first[:, None].astype(np.float64)
        u_new = keep * c1 * rho1 * u + c2 * rho2 * hhat
        a_imm = c2 * (rho2 if self.bug == "rho2-inverted" else 1.0 / rho2)
        A_new = keep[:, :, None] * (c1 / rho1)[:, :, None] * DA + a_imm[:, :, None] * H
        err = h @ V.T + c - y_hat  # (M, k)
        delta = err @ V  # (M, n)
        gTheta = np.einsum("bki,bk->bi", A_new, delta)[:, :, None] * u_new[:, None, :]  # (M, n, m)
        d = U.shape[1]
        g = np.concatenate(
            [
                gTheta[:, :, :n].reshape(M, -1),
                gTheta[:, :, n : n + d].reshape(M, -1),
                gTheta[:, :, n + d],
                np.einsum("bk,bj->bkj", err, h).reshape(M, -1),
                err,
            ],
            axis=1,
        )
        order = [e.name.split(".")[-1] for e in problem.layout.entries]
        assert order == ["W", "U", "b", "V", "c"], order
        as_t = lambda a: torch.as_tensor(np.array(a, dtype=np.float64), dtype=problem.dtype)  # noqa: E731
        return KFState(as_t(h), as_t(u_new), as_t(A_new), signs.to(problem.dtype)), as_t(g)

    def influence_estimate(self, problem: Any, state: KFState) -> torch.Tensor:
        """∂h_t/∂θ ≈ u_t ⊗ A_t, (M, n, p) in θ's layout (the readout's columns 0)."""
        u, A = _np(state.u), _np(state.A)
        M, n = u.shape[0], A.shape[1]
        d = u.shape[1] - n - 1
        full = np.einsum("bki,bj->bkij", A, u)  # (M, n, n_rows i, m)
        cols = [
            full[..., :n].reshape(M, n, -1),
            full[..., n : n + d].reshape(M, n, -1),
            full[..., n + d],
            np.zeros((M, n, problem.p - n * (n + d + 1))),
        ]
        return torch.as_tensor(np.concatenate(cols, axis=2), dtype=problem.dtype)


def kfrtrl() -> BatchFirstKFRTRL:
    return BatchFirstKFRTRL()


def kfrtrl_u_new_state() -> BatchFirstKFRTRL:
    return BatchFirstKFRTRL(bug="u-new-state", name="batch-first numpy KF-RTRL (bug: h_t in u)")


def kfrtrl_rho2_inverted() -> BatchFirstKFRTRL:
    return BatchFirstKFRTRL(bug="rho2-inverted", name="batch-first numpy KF-RTRL (bug: rho2 inverted)")
