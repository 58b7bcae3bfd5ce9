r"""UORO in numpy with TRANSPOSED weights, stored (in, out) and applied as ``h @ W`` (a trial implementation).

Tallec & Ollivier 2017, Algorithm 1, for :math:`h_t = \tanh(h_{t-1} W_{hh} + x_t W_{xh} + b_h)`,
:math:`y_t = h_t W_{hy} + b_y` (row-vector convention: ``W_hh`` is the toolkit's Wᵀ, ``W_xh`` Uᵀ, ``W_hy`` Vᵀ),
:math:`\ell_t = \tfrac12\|y_t-\hat y_t\|^2`. g̃ is formed *before* the reduction (Algorithm 1's order, ``pre``):
:math:`\tilde g_t = (\delta s\cdot\tilde s_{t-1})\tilde\theta_{t-1} + \delta\theta` with δs, δθ the backprop of
∂ℓ_t/∂y through one step (readout after the state update); then :math:`\tilde s_t = \rho_0 D_t \tilde s_{t-1} +
\rho_1\nu`, :math:`\tilde\theta_t = \tilde\theta_{t-1}/\rho_0 + \nu^\top (\partial F/\partial\theta)/\rho_1`
(eq. (5)-(6)), :math:`\rho_0 = \sqrt{\|\tilde\theta\|/(\|D\tilde s\|+\varepsilon)}+\varepsilon`,
:math:`\rho_1 = \sqrt{\|\delta\theta_g\|/(\|\nu\|+\varepsilon)}+\varepsilon`, ε = 1e-7. ν comes from the
toolkit's noise hook (``ctx.noise()``). θ̃ spans all parameters (the readout's entries stay 0).

Seeded bugs (``bug=``):

* ``"rho1-theta"``: the θ̃ update adds δθ_g without dividing by ρ₁ (part: θ̃'s normalizer ρ₁; biased);
* ``"stale-theta"``: g̃ uses θ̃ from one step earlier than Algorithm 1 says (part: θ̃ in g̃; biased).
"""

from __future__ import annotations

import numpy as np

from verify.impl.adapters import Batch1

EPS = 1e-7
NAMES = {"W_hh": "W.T", "W_xh": "U.T", "b_h": "b", "W_hy": "V.T", "b_y": "c"}


class TransposedUORO:
    def __init__(self, p: dict, h0: np.ndarray, draw, bug: str | None = None):
        self.p = {k: v.copy() for k, v in p.items()}
        self.h = h0.copy()
        self.draw = draw
        self.bug = bug
        self.s_tilde = np.zeros_like(h0)
        self.theta_tilde = {k: np.zeros_like(v) for k, v in p.items()}
        self.older_theta_tilde = {k: np.zeros_like(v) for k, v in p.items()}

    @staticmethod
    def _norm(d: dict) -> float:
        return float(np.sqrt(sum(float((v**2).sum()) for v in d.values())))

    def step(self, x: np.ndarray, y_hat: np.ndarray) -> dict:
        p, h_prev = self.p, self.h
        h = np.tanh(h_prev @ p["W_hh"] + x @ p["W_xh"] + p["b_h"])
        dphi = 1.0 - h**2
        err = h @ p["W_hy"] + p["b_y"] - y_hat
        # backprop of dl/dy through one step F (readout of the new state): to s_{t-1} and to theta
        a = (p["W_hy"] @ err) * dphi  # dl/d(preactivation)
        delta_s = p["W_hh"] @ a
        delta_theta = {
            "W_hh": np.outer(h_prev, a),
            "W_xh": np.outer(x, a),
            "b_h": a,
            "W_hy": np.outer(h, err),
            "b_y": err,
        }
        used = self.older_theta_tilde if self.bug == "stale-theta" else self.theta_tilde
        coef = float(delta_s @ self.s_tilde)
        g = {k: coef * used[k] + delta_theta[k] for k in p}
        # reduction
        nu = self.draw()
        s_fwd = (self.s_tilde @ p["W_hh"]) * dphi  # forwarddiff of F_state along s~
        nd = nu * dphi
        dtheta_g = {
            "W_hh": np.outer(h_prev, nd),
            "W_xh": np.outer(x, nd),
            "b_h": nd,
            "W_hy": np.zeros_like(p["W_hy"]),
            "b_y": np.zeros_like(p["b_y"]),
        }
        rho0 = np.sqrt(self._norm(self.theta_tilde) / (np.linalg.norm(s_fwd) + EPS)) + EPS
        rho1 = np.sqrt(self._norm(dtheta_g) / (np.linalg.norm(nu) + EPS)) + EPS
        div1 = 1.0 if self.bug == "rho1-theta" else rho1
        self.older_theta_tilde = self.theta_tilde
        self.s_tilde = rho0 * s_fwd + rho1 * nu
        self.theta_tilde = {k: self.theta_tilde[k] / rho0 + dtheta_g[k] / div1 for k in p}
        self.h = h
        return g


def _wrap(bug: str | None, name: str) -> Batch1:
    return Batch1(
        lambda ctx: TransposedUORO(ctx.params, ctx.s0, ctx.noise, bug),
        names=NAMES,
        factors=lambda est: (est.s_tilde, est.theta_tilde),
        state=lambda est: est.h,
        cells=("elman-tanh",),
        noise_hook=True,
        gtilde="pre",
        name=name,
    )


TrialTransposedUORO = _wrap(None, "transposed-W numpy UORO")
TrialTransposedUORORho1 = _wrap("rho1-theta", "transposed-W numpy UORO (bug: theta~ without 1/rho1)")
TrialTransposedUOROStale = _wrap("stale-theta", "transposed-W numpy UORO (bug: stale theta~ in g~)")
