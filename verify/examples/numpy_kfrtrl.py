r"""A batch-1 numpy KF-RTRL written as a user would (Mujika, Meier & Steger 2018, "Approximating Real-Time
Recurrent Learning with Random Kronecker Factors", arXiv:1805.10842, §4), and its wrap.

:class:`NumpyKFRTRL` knows nothing of rnn-verify: the tanh RNN of :mod:`verify.examples.numpy_rtrl`
(:math:`h_t = \tanh(W_h h_{t-1} + W_x x_t + b_h)`, readout :math:`o_t = W_y h_t + b_y`, loss
:math:`\tfrac12\|o_t - y_t\|^2`), the recurrent parameters as one matrix :math:`[W_h, W_x, b_h]` (n × m,
m = n + d + 1) acting on :math:`a_t = [h_{t-1}, x_t, 1]`. RTRL's influence obeys
:math:`G_t = H_t G_{t-1} + a_t^\top\otimes D_t` (:math:`D_t = \mathrm{diag}(1 - h_t^2)`, :math:`H_t = D_t W_h`);
KF-RTRL keeps :math:`G_t \approx u_t\otimes A_t` (u ∈ R^m, A ∈ R^{n×n}) and, with two independent random signs
:math:`c_1, c_2` per step,

.. math::
    u_t = c_1\rho_1 u_{t-1} + c_2\rho_2 a_t,\qquad A_t = \tfrac{c_1}{\rho_1} H_t A_{t-1} + \tfrac{c_2}{\rho_2} D_t,
    \qquad \rho_1 = \sqrt{\|H_t A_{t-1}\|/(\|u_{t-1}\| + \epsilon)} + \epsilon,\quad
    \rho_2 = \sqrt{\|D_t\|/(\|a_t\| + \epsilon)} + \epsilon,

so that :math:`E[u_t\otimes A_t] = u_{t-1}\otimes H_t A_{t-1} + a_t\otimes D_t` (unbiased, by induction from
:math:`u_0 = 0, A_0 = 0`). The gradient of the recurrent parameters is :math:`(q^\top A_t)_i\,(u_t)_j` with
:math:`q = W_y^\top e_t`, from the factors after this step's update.

The signs come through the toolkit's noise hook: one draw of n signs per step, of which :math:`c_1, c_2` are the
first two (so the exact enumeration over all sign patterns is KF-RTRL's expectation). ``rho_both=True`` seeds
a wrong Kronecker factor: :math:`A_t = c_1\rho_1 H_t A_{t-1} + \dots` (ρ₁ multiplies where 1/ρ₁ belongs), so
:math:`E[u_t\otimes A_t] = \rho_1^2\,u_{t-1}\otimes H_t A_{t-1} + a_t\otimes D_t` -- biased. (One sign for both
terms, :math:`c_2 = c_1`, is *not* such a bug: the cross terms it adds are odd in the previous step's sign and
vanish in expectation -- unbiased, with another variance.)

KF-RTRL is an unbiased estimator of the UORO family, so the UORO unbiasedness claims judge it today::

    rnn-verify run --impl uoro=verify.examples.numpy_kfrtrl:MyNumpyKFRTRL --claims uoro.exact-expectation

(the claims that compare with Algorithm 1's *variance* or formulas are about UORO itself and FAIL on any
other estimator, KF-RTRL included). Its own field is ``--impl kfrtrl=...`` (``uoro.kfrtrl``).
"""

from __future__ import annotations

import numpy as np

EPS = 1e-7


class NumpyKFRTRL:
    """KF-RTRL for a tanh RNN (batch 1). ``step(x, y)`` returns the gradient estimate as a dict."""

    def __init__(self, Wx, Wh, bh, Wy, by, h0=None, rng=None, rho_both=False):  # type: ignore[no-untyped-def]
        self.Wx, self.Wh, self.bh, self.Wy, self.by = Wx, Wh, bh, Wy, by
        n, d = Wx.shape
        self.h = np.zeros(n) if h0 is None else np.array(h0, dtype=float)
        self.u = np.zeros(n + d + 1)  # over a_t = [h_{t-1}, x_t, 1]
        self.A = np.zeros((n, n))
        self.rng = rng if rng is not None else np.random.default_rng()
        self.rho_both = rho_both

    def draw_signs(self, n):  # type: ignore[no-untyped-def]
        return self.rng.choice([-1.0, 1.0], size=n)

    def step(self, x, y):  # type: ignore[no-untyped-def]
        n = self.h.size
        a = np.concatenate([self.h, x, [1.0]])
        h = np.tanh(self.Wh @ self.h + self.Wx @ x + self.bh)
        D = np.diag(1.0 - h * h)
        HA = D @ self.Wh @ self.A
        nu = self.draw_signs(n)
        c1, c2 = nu[0], nu[1]
        rho1 = np.sqrt(np.linalg.norm(HA) / (np.linalg.norm(self.u) + EPS)) + EPS
        rho2 = np.sqrt(np.linalg.norm(D) / (np.linalg.norm(a) + EPS)) + EPS
        self.u = c1 * rho1 * self.u + c2 * rho2 * a
        f1 = rho1 if self.rho_both else 1.0 / rho1  # the seeded bug: rho1 where 1/rho1 belongs
        self.A = (c1 * f1) * HA + (c2 / rho2) * D
        self.h = h
        e = self.Wy @ h + self.by - y
        G = np.outer((self.Wy.T @ e) @ self.A, self.u)  # (n, m): d l / d [Wh, Wx, bh]
        d = self.Wx.shape[1]
        return {"Wh": G[:, :n], "Wx": G[:, n : n + d], "bh": G[:, n + d], "Wy": np.outer(e, h), "by": e}


# ------------------------------------------------------------ the wrap (what a user writes)
from verify.impl.adapters import Batch1  # noqa: E402


def _wrap(name, **bugs):  # type: ignore[no-untyped-def]
    def make(ctx):  # type: ignore[no-untyped-def]
        p = ctx.params
        est = NumpyKFRTRL(p["Wx"], p["Wh"], p["bh"], p["Wy"], p["by"], h0=ctx.s0, rng=ctx.rng, **bugs)
        est.draw_signs = ctx.noise  # type: ignore[method-assign]  # the signs through the toolkit
        return est

    return Batch1(
        make,
        names={"Wx": "U", "Wh": "W", "bh": "b", "Wy": "V", "by": "c"},
        cells=("elman-tanh",),
        state=lambda est: est.h,
        noise_hook=True,
        gtilde="post",
        name=name,
    )


MyNumpyKFRTRL = _wrap("numpy-kfrtrl")
MyNumpyKFRTRLRhoBoth = _wrap("numpy-kfrtrl-rho-both", rho_both=True)
