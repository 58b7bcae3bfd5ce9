r"""RTRL in numpy with ONE flat parameter vector θ (a trial implementation, not the toolkit's example).

Williams & Zipser (1989) real-time recurrent learning for the Elman cell
:math:`h_t = \tanh(W h_{t-1} + U x_t + b)`, readout :math:`y_t = V h_t + c`,
:math:`\ell_t = \tfrac12\|y_t - \hat y_t\|^2`. The object keeps θ as one flat vector in *its own* order
``[U, W, b, V, c]`` (input weights first, row-major) and slices the blocks out of it; the influence
:math:`J_t = \partial h_t/\partial\theta_{cell}` is one (n, p_cell) matrix updated by
:math:`J_t = D_t J_{t-1} + I_t`, :math:`D_t = \mathrm{diag}(1-h_t^2) W`,
:math:`I_t = \mathrm{diag}(1-h_t^2)\,[\,x_t^\top\otimes\cdot \mid h_{t-1}^\top\otimes\cdot \mid 1\,]`
(Tallec & Ollivier 2017, eq. (4)). The gradient is returned as a dict of its names (sliced from the flat one).

Seeded bugs (``bug=``):

* ``"u-sign"``: the U block of the immediate Jacobian I_t enters with the wrong sign (part: U);
* ``"f32-influence"``: J is stored in float32 between steps although the code says float64 (part: the influence's
  precision; a float64 implementation that loses precision mid-way).
"""

from __future__ import annotations

import numpy as np

from verify.impl.adapters import Batch1

ORDER = ("U", "W", "b", "V", "c")  # this code's own flat order


class FlatRTRL:
    def __init__(self, params: dict, h0: np.ndarray, bug: str | None = None):
        self.shapes = {k: params[k].shape for k in ORDER}
        self.sizes = {k: int(np.prod(self.shapes[k])) for k in ORDER}
        self.theta = np.concatenate([params[k].ravel() for k in ORDER])
        offs = np.cumsum([0] + [self.sizes[k] for k in ORDER])
        self.sl = {k: slice(int(offs[i]), int(offs[i + 1])) for i, k in enumerate(ORDER)}
        self.n = h0.size
        self.p_cell = self.sl["b"].stop  # U, W, b come first
        self.h = h0.astype(np.float64).copy()
        self.J = np.zeros((self.n, self.p_cell))
        self.bug = bug

    def block(self, k: str) -> np.ndarray:
        return self.theta[self.sl[k]].reshape(self.shapes[k])

    def step(self, x: np.ndarray, y_hat: np.ndarray) -> dict:
        U, W, b, V, c = (self.block(k) for k in ORDER)
        h_prev = self.h
        h = np.tanh(W @ h_prev + U @ x + b)
        dphi = 1.0 - h**2
        imm = np.zeros((self.n, self.p_cell))
        eye = np.eye(self.n)
        sign_u = -1.0 if self.bug == "u-sign" else 1.0
        imm[:, self.sl["U"]] = sign_u * dphi[:, None] * np.kron(eye, x[None, :])
        imm[:, self.sl["W"]] = dphi[:, None] * np.kron(eye, h_prev[None, :])
        imm[:, self.sl["b"]] = np.diag(dphi)
        J = (dphi[:, None] * W) @ self.J + imm
        if self.bug == "f32-influence":
            J = J.astype(np.float32).astype(np.float64)
        self.J, self.h = J, h
        err = V @ h + c - y_hat
        g = np.zeros_like(self.theta)
        g[: self.p_cell] = (V.T @ err) @ J
        g[self.sl["V"]] = np.outer(err, h).ravel()
        g[self.sl["c"]] = err
        return {k: g[self.sl[k]].reshape(self.shapes[k]) for k in ORDER}

    def influence(self) -> dict:
        return {k: self.J[:, self.sl[k]].reshape(self.n, *self.shapes[k]) for k in ("U", "W", "b")}


def _wrap(bug: str | None, name: str) -> Batch1:
    return Batch1(
        lambda ctx: FlatRTRL(ctx.params, ctx.s0, bug),
        influence=lambda est: est.influence(),
        state=lambda est: est.h,
        cells=("elman-tanh",),
        name=name,
    )


TrialFlatRTRL = _wrap(None, "flat-theta numpy RTRL")
TrialFlatRTRLUSign = _wrap("u-sign", "flat-theta numpy RTRL (bug: U-block sign)")
TrialFlatRTRLF32 = _wrap("f32-influence", "flat-theta numpy RTRL (bug: influence stored in float32)")
