r"""UORO whose θ̃ spans the RECURRENT parameters only, the readout's gradient exact (a trial implementation).

Tallec & Ollivier 2017, Algorithm 1 in the form the paper writes it when F_out's parameters do not enter F_state:
θ̃ is a row vector over the parameters of F_state (here W, U, b of :math:`h_t = \tanh(W h_{t-1} + U x_t + b)`),
and the readout :math:`y_t = V h_t + c` gets its exact gradient. Written as a class with a dict of parameters;
g̃ before the reduction (``pre``); ν through the noise hook; ρ₀, ρ₁ with ε = 1e-7. The factors are returned as
they are kept: (s̃, θ̃ over W, U, b).

Seeded bug (``bug=``):

* ``"no-rho"``: ρ₀ = ρ₁ = 1 (no variance normalization; still unbiased, Prop. 1 holds for any ρ₀, ρ₁ > 0) -- part:
  the normalizers ρ₀, ρ₁ (only the formula conformance with Algorithm 1 can see it).
"""

from __future__ import annotations

import numpy as np

from verify.impl.adapters import Batch1

EPS = 1e-7
REC = ("W", "U", "b")


class RecurrentUORO:
    def __init__(self, p: dict, h0: np.ndarray, draw, bug: str | None = None):
        self.p, self.h, self.draw, self.bug = p, h0.copy(), draw, bug
        self.s_tilde = np.zeros_like(h0)
        self.theta_tilde = {k: np.zeros_like(p[k]) for k in REC}

    def step(self, x: np.ndarray, y_hat: np.ndarray) -> dict:
        W, U, b, V, c = (self.p[k] for k in ("W", "U", "b", "V", "c"))
        h_prev = self.h
        h = np.tanh(W @ h_prev + U @ x + b)
        dphi = 1 - h**2
        err = V @ h + c - y_hat
        a = dphi * (V.T @ err)
        coef = float((W.T @ a) @ self.s_tilde)
        imm = {"W": np.outer(a, h_prev), "U": np.outer(a, x), "b": a}
        g = {k: coef * self.theta_tilde[k] + imm[k] for k in REC}
        g["V"], g["c"] = np.outer(err, h), err
        nu = self.draw()
        s_fwd = dphi * (W @ self.s_tilde)
        nd = dphi * nu
        dtheta_g = {"W": np.outer(nd, h_prev), "U": np.outer(nd, x), "b": nd}
        norm = lambda d: np.sqrt(sum((v**2).sum() for v in d.values()))  # noqa: E731
        if self.bug == "no-rho":
            rho0 = rho1 = 1.0
        else:
            rho0 = np.sqrt(norm(self.theta_tilde) / (np.linalg.norm(s_fwd) + EPS)) + EPS
            rho1 = np.sqrt(norm(dtheta_g) / (np.linalg.norm(nu) + EPS)) + EPS
        self.s_tilde = rho0 * s_fwd + rho1 * nu
        self.theta_tilde = {k: self.theta_tilde[k] / rho0 + dtheta_g[k] / rho1 for k in REC}
        self.h = h
        return g


def _wrap(bug: str | None, name: str) -> Batch1:
    return Batch1(
        lambda ctx: RecurrentUORO(ctx.params, ctx.s0, ctx.noise, bug),
        factors=lambda est: (est.s_tilde, est.theta_tilde),
        state=lambda est: est.h,
        noise_hook=True,
        gtilde="pre",
        name=name,
    )


TrialRecurrentUORO = _wrap(None, "numpy UORO, theta~ over W, U, b")
TrialRecurrentUORONoRho = _wrap("no-rho", "numpy UORO, theta~ over W, U, b (bug: rho0 = rho1 = 1)")
