r"""A batch-1 numpy UORO written as published code is (Tallec & Ollivier 2017, "Unbiased Online Recurrent
Optimization", arXiv:1702.05043, Algorithm 1), and its wrap for rnn-verify in under 30 lines.

:class:`NumpyUORO` knows nothing of rnn-verify: an Elman-tanh RNN :math:`h_t = \tanh(W_h h_{t-1} + W_x x_t +
b_h)` with a linear readout :math:`o_t = W_y h_t + b_y` and the loss :math:`\tfrac12\|o_t - y_t\|^2`, its own
parameter names, one sequence at a time, numpy arrays. Like several public implementations it forms
g̃ **after** the update of s̃, θ̃ (the post-update order: :math:`\tilde g_t = (\partial\ell_t/\partial h_t\cdot
\tilde s_t)\tilde\theta_t + \partial\ell_t/\partial\theta|_{h_t}`, unbiased as well: App. A). Its normalizers are
Algorithm 1's:

.. math::
    \rho_0 = \sqrt{\|\tilde\theta_{t-1}\|/(\|J_s\tilde s_{t-1}\| + \epsilon)} + \epsilon,\quad
    \rho_1 = \sqrt{\|\nu^\top J_\theta\|/(\|\nu\| + \epsilon)} + \epsilon,\quad \epsilon = 10^{-7}.

Three switches seed the bugs of the user-route demonstration (issue 21): ``rho0_lag`` (ρ₀ of the previous
step: still unbiased, another variance), ``bernoulli`` (ν ∈ {0, 1}: biased), ``rho1_one`` (ρ₁ ≡ 1: unbiased,
another variance). The wrap (:data:`MyNumpyUORO` ...) is what a user writes::

    rnn-verify run --impl uoro=verify.examples.numpy_uoro:MyNumpyUORO --impl-only
"""

from __future__ import annotations

import numpy as np

EPS = 1e-7


class NumpyUORO:
    """Online UORO for a tanh RNN (batch 1). ``step(x, y)`` returns the gradient estimate as a dict."""

    def __init__(self, Wx, Wh, bh, Wy, by, h0=None, rng=None, rho0_lag=False, bernoulli=False, rho1_one=False):  # type: ignore[no-untyped-def]
        self.params = {"Wx": Wx, "Wh": Wh, "bh": bh, "Wy": Wy, "by": by}
        self.h = np.zeros(Wh.shape[0]) if h0 is None else np.array(h0, dtype=float)
        self.s_tilde = np.zeros_like(self.h)
        self.theta_tilde = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.rng = rng if rng is not None else np.random.default_rng()
        self.rho0_lag, self.bernoulli, self.rho1_one = rho0_lag, bernoulli, rho1_one
        self.last_rho0 = 1.0

    def draw_signs(self, n):  # type: ignore[no-untyped-def]
        return self.rng.choice([-1.0, 1.0], size=n)

    def step(self, x, y):  # type: ignore[no-untyped-def]
        P = self.params
        h_prev = self.h
        h = np.tanh(P["Wh"] @ h_prev + P["Wx"] @ x + P["bh"])
        D = 1.0 - h * h
        nu = self.draw_signs(h.size)
        if self.bernoulli:  # the seeded bug: nu in {0, 1} (E nu nu^T != I)
            nu = (nu + 1.0) / 2.0
        s_fwd = D * (P["Wh"] @ self.s_tilde)  # J_s s~
        nD = nu * D  # nu^T J_theta, per parameter
        dth = {"Wx": np.outer(nD, x), "Wh": np.outer(nD, h_prev), "bh": nD, "Wy": 0 * P["Wy"], "by": 0 * P["by"]}
        norm_tt = np.sqrt(sum(np.sum(v * v) for v in self.theta_tilde.values()))
        norm_dth = np.sqrt(sum(np.sum(v * v) for v in dth.values()))
        rho0 = np.sqrt(norm_tt / (np.linalg.norm(s_fwd) + EPS)) + EPS
        rho1 = 1.0 if self.rho1_one else np.sqrt(norm_dth / (np.linalg.norm(nu) + EPS)) + EPS
        if self.rho0_lag:  # the seeded bug: the previous step's rho0
            rho0, self.last_rho0 = self.last_rho0, rho0
        self.s_tilde = rho0 * s_fwd + rho1 * nu
        self.theta_tilde = {k: self.theta_tilde[k] / rho0 + dth[k] / rho1 for k in P}
        self.h = h
        err = P["Wy"] @ h + P["by"] - y
        dl_dh = P["Wy"].T @ err
        c = float(dl_dh @ self.s_tilde)  # post-update g~ = (dl/dh . s~_t) theta~_t + dl/dtheta|_h
        grad = {k: c * v for k, v in self.theta_tilde.items()}
        grad["Wy"] = grad["Wy"] + np.outer(err, h)
        grad["by"] = grad["by"] + err
        return grad


# ------------------------------------------------------------ the wrap (what a user writes: 20 lines)
from verify.impl.adapters import Batch1  # noqa: E402


def _maker(**bugs):  # type: ignore[no-untyped-def]
    def make(ctx):  # type: ignore[no-untyped-def]
        p = ctx.params
        est = NumpyUORO(p["Wx"], p["Wh"], p["bh"], p["Wy"], p["by"], h0=ctx.s0, rng=ctx.rng, **bugs)
        est.draw_signs = ctx.noise  # type: ignore[method-assign]  # nu through the toolkit (tabulated where needed)
        return est

    return make


def _wrap(name, **bugs):  # type: ignore[no-untyped-def]
    return Batch1(
        _maker(**bugs),
        names={"Wx": "U", "Wh": "W", "bh": "b", "Wy": "V", "by": "c"},
        cells=("elman-tanh",),
        factors=lambda est: (est.s_tilde, est.theta_tilde),
        noise_hook=True,
        gtilde="post",
        name=name,
    )


MyNumpyUORO = _wrap("numpy-uoro")
MyNumpyUORORho0Lag = _wrap("numpy-uoro-rho0-lag", rho0_lag=True)
MyNumpyUOROBernoulli = _wrap("numpy-uoro-bernoulli", bernoulli=True)
MyNumpyUORORho1One = _wrap("numpy-uoro-rho1-one", rho1_one=True)
