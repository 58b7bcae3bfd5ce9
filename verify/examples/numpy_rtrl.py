r"""A batch-1 numpy RTRL written as published code is (Williams & Zipser 1989; the influence recursion of
Tallec & Ollivier 2017, "Unbiased Online Recurrent Optimization", arXiv:1702.05043, eq. (4)), and its wrap.

:class:`NumpyRTRL` knows nothing of rnn-verify: an Elman-tanh RNN :math:`h_t = \tanh(W_h h_{t-1} + W_x x_t + b_h)`,
readout :math:`o_t = W_y h_t + b_y`, loss :math:`\tfrac12\|o_t - y_t\|^2`, one sequence at a time, numpy. It
carries the influence :math:`J_t = \partial h_t/\partial(W_x, W_h, b_h)` as one (n, P) matrix:

.. math::
    J_t = \mathrm{diag}(1 - h_t^2)\,\big(W_h J_{t-1} + \partial a_t/\partial\theta\big),\qquad
    \nabla_\theta\ell_t = (W_y^\top e_t)^\top J_t \;(+\; e_t h_t^\top,\ e_t \text{ for } W_y, b_y).

``transpose_js=True`` seeds the classic bug: :math:`W_h^\top J_{t-1}` (∂F/∂s transposed)::

    rnn-verify run --impl rtrl=verify.examples.numpy_rtrl:MyNumpyRTRL --impl-only
"""

from __future__ import annotations

import numpy as np


class NumpyRTRL:
    """Real-time recurrent learning for a tanh RNN (batch 1). ``step(x, y)`` returns the gradient as a dict."""

    def __init__(self, Wx, Wh, bh, Wy, by, h0=None, transpose_js=False):  # type: ignore[no-untyped-def]
        self.Wx, self.Wh, self.bh, self.Wy, self.by = Wx, Wh, bh, Wy, by
        n, d = Wx.shape
        self.h = np.zeros(n) if h0 is None else np.array(h0, dtype=float)
        self.sizes = {"Wx": n * d, "Wh": n * n, "bh": n}
        self.J = np.zeros((n, sum(self.sizes.values())))  # dh/d(Wx, Wh, bh), row-major blocks
        self.transpose_js = transpose_js

    def step(self, x, y):  # type: ignore[no-untyped-def]
        n = self.h.size
        I = np.eye(n)
        dA = np.hstack([np.kron(I, x[None, :]), np.kron(I, self.h[None, :]), I])  # da/d(Wx, Wh, bh)
        Js = self.Wh.T if self.transpose_js else self.Wh  # the seeded bug: dF/ds transposed
        h = np.tanh(self.Wh @ self.h + self.Wx @ x + self.bh)
        self.J = (1.0 - h * h)[:, None] * (Js @ self.J + dA)
        self.h = h
        e = self.Wy @ h + self.by - y
        g = (self.Wy.T @ e) @ self.J
        out, i = {}, 0
        for name, shape in (("Wx", self.Wx.shape), ("Wh", self.Wh.shape), ("bh", self.bh.shape)):
            k = self.sizes[name]
            out[name] = g[i : i + k].reshape(shape)
            i += k
        out["Wy"], out["by"] = np.outer(e, h), e
        return out

    def influence(self):  # type: ignore[no-untyped-def]
        """dh_t/dtheta per parameter: name -> (n, *shape)."""
        n, out, i = self.h.size, {}, 0
        for name, shape in (("Wx", self.Wx.shape), ("Wh", self.Wh.shape), ("bh", self.bh.shape)):
            k = self.sizes[name]
            out[name] = self.J[:, i : i + k].reshape(n, *shape)
            i += k
        return out


# ------------------------------------------------------------ the wrap (what a user writes)
from verify.impl.adapters import Batch1  # noqa: E402


def _wrap(name, **bugs):  # type: ignore[no-untyped-def]
    def make(ctx):  # type: ignore[no-untyped-def]
        p = ctx.params
        return NumpyRTRL(p["Wx"], p["Wh"], p["bh"], p["Wy"], p["by"], h0=ctx.s0, **bugs)

    return Batch1(
        make,
        names={"Wx": "U", "Wh": "W", "bh": "b", "Wy": "V", "by": "c"},
        cells=("elman-tanh",),
        influence=lambda est: est.influence(),
        state=lambda est: est.h,
        name=name,
    )


MyNumpyRTRL = _wrap("numpy-rtrl")
MyNumpyRTRLTransposed = _wrap("numpy-rtrl-transposed-js", transpose_js=True)
