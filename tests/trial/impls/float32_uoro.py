r"""UORO in numpy FLOAT32 (a trial implementation), one object per sequence, ν through the noise hook.

Tallec & Ollivier 2017, Algorithm 1 (g̃ before the reduction, ``pre``), eq. (5)-(6), ρ₀, ρ₁ with ε = 1e-7, for
:math:`h_t = \tanh(W h_{t-1} + U x_t + b)`, :math:`y_t = V h_t + c`, :math:`\ell_t = \tfrac12\|y_t-\hat y_t\|^2`;
every array float32. θ̃ spans all of θ (the readout's entries 0). Two wraps: ``TrialF32UORO`` declares the
precision (``Batch1(..., dtype="float32")``), ``TrialF32UOROUndeclared`` does not (run it with ``--dtype
float32``).

Seeded bug (``bug=``):

* ``"rho0-times"``: θ̃ is multiplied by ρ₀ instead of divided (part: θ̃'s normalizer ρ₀; biased).
"""

from __future__ import annotations

import numpy as np

from verify.impl.adapters import Batch1

F32 = np.float32
EPS = F32(1e-7)
NAMES = {"Whh": "W", "Wxh": "U", "bh": "b", "Why": "V", "by": "c"}


class UORO32:
    def __init__(self, p: dict, h0: np.ndarray, draw, bug: str | None = None):
        self.p = {k: v.astype(F32) for k, v in p.items()}
        self.h, self.draw, self.bug = h0.astype(F32), draw, bug
        self.st = np.zeros_like(self.h)
        self.tt = {k: np.zeros_like(v) for k, v in self.p.items()}

    def step(self, x: np.ndarray, y_hat: np.ndarray) -> dict:
        p, x, y_hat, h0 = self.p, x.astype(F32), y_hat.astype(F32), self.h
        h = np.tanh(p["Whh"] @ h0 + p["Wxh"] @ x + p["bh"])
        dphi = 1 - h * h
        err = p["Why"] @ h + p["by"] - y_hat
        a = dphi * (p["Why"].T @ err)
        ds = p["Whh"].T @ a
        dth = {"Whh": np.outer(a, h0), "Wxh": np.outer(a, x), "bh": a, "Why": np.outer(err, h), "by": err}
        k = F32(ds @ self.st)
        g = {name: k * self.tt[name] + dth[name] for name in p}
        nu = self.draw().astype(F32)
        sf = dphi * (p["Whh"] @ self.st)
        nd = dphi * nu
        dg = {
            "Whh": np.outer(nd, h0),
            "Wxh": np.outer(nd, x),
            "bh": nd,
            "Why": np.zeros_like(p["Why"]),
            "by": np.zeros_like(p["by"]),
        }
        ntt = np.sqrt(sum((v * v).sum() for v in self.tt.values()))
        ndg = np.sqrt(sum((v * v).sum() for v in dg.values()))
        rho0 = np.sqrt(ntt / (np.linalg.norm(sf) + EPS)) + EPS
        rho1 = np.sqrt(ndg / (np.linalg.norm(nu) + EPS)) + EPS
        self.st = rho0 * sf + rho1 * nu
        scale = rho0 if self.bug == "rho0-times" else F32(1) / rho0
        self.tt = {name: self.tt[name] * scale + dg[name] / rho1 for name in p}
        self.h = h
        return g


def _wrap(bug: str | None, name: str, dtype: str | None = "float32") -> Batch1:
    return Batch1(
        lambda ctx: UORO32(ctx.params, ctx.s0, ctx.noise, bug),
        names=NAMES,
        factors=lambda est: (est.st, est.tt),
        state=lambda est: est.h,
        noise_hook=True,
        gtilde="pre",
        dtype=dtype,
        name=name,
    )


TrialF32UORO = _wrap(None, "float32 numpy UORO (declared)")
TrialF32UOROUndeclared = _wrap(None, "float32 numpy UORO (undeclared)", dtype=None)
TrialF32UORORho0 = _wrap("rho0-times", "float32 numpy UORO (bug: theta~ times rho0)")
