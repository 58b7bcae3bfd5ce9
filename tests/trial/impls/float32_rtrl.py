r"""RTRL in numpy FLOAT32 with Williams & Zipser's per-block sensitivities :math:`p^k_{ij}` (a trial implementation).

Williams & Zipser (1989): for each parameter block a sensitivity array :math:`P^X_t = \partial h_t/\partial X`
of shape (n, *X.shape), updated by :math:`P^X_t = \phi'(a_t)\circ(W P^X_{t-1} + \partial a_t/\partial X)` with
:math:`a_t = W h_{t-1} + U x_t + b`, φ = tanh; readout :math:`y = V h + c`, :math:`\ell = \tfrac12\|y-\hat y\|^2`.
Everything -- parameters, state, sensitivities -- is float32, and the wrap declares it
(``Batch1(..., dtype="float32")``): the exact claims then judge it against the predicted float32 budget.

Seeded bug (``bug=``):

* ``"b-no-recurrence"``: the bias block's sensitivity drops the recurrent term :math:`W P^b_{t-1}` (part: b).
"""

from __future__ import annotations

import numpy as np

from verify.impl.adapters import Batch1

F32 = np.float32
NAMES = {"rec": "W", "inp": "U", "bias": "b", "out": "V", "out_bias": "c"}


class WZRTRL32:
    def __init__(self, p: dict, h0: np.ndarray, bug: str | None = None):
        self.p = {k: v.astype(F32) for k, v in p.items()}
        self.h = h0.astype(F32)
        n = self.h.size
        self.P = {k: np.zeros((n, *self.p[k].shape), dtype=F32) for k in ("rec", "inp", "bias")}
        self.bug = bug

    def step(self, x: np.ndarray, y_hat: np.ndarray) -> dict:
        p, x, y_hat = self.p, x.astype(F32), y_hat.astype(F32)
        n = self.h.size
        h_prev = self.h
        h = np.tanh(p["rec"] @ h_prev + p["inp"] @ x + p["bias"])
        dphi = (1 - h * h)[:, None]
        eye = np.eye(n, dtype=F32)
        new = {}
        for k, direct in (("rec", eye[:, :, None] * h_prev), ("inp", eye[:, :, None] * x), ("bias", eye)):
            prev = self.P[k]
            rec = np.tensordot(p["rec"], prev, axes=(1, 0))
            if k == "bias" and self.bug == "b-no-recurrence":
                rec = np.zeros_like(rec)
            new[k] = dphi.reshape(n, *([1] * (prev.ndim - 1))) * (rec + direct)
        self.P, self.h = new, h
        err = p["out"] @ h + p["out_bias"] - y_hat
        delta = p["out"].T @ err
        g = {k: np.tensordot(delta, self.P[k], axes=(0, 0)) for k in self.P}
        g["out"], g["out_bias"] = np.outer(err, h), err
        return g


def _wrap(bug: str | None, name: str) -> Batch1:
    return Batch1(
        lambda ctx: WZRTRL32(ctx.params, ctx.s0, bug),
        names=NAMES,
        influence=lambda est: est.P,
        state=lambda est: est.h,
        dtype="float32",
        name=name,
    )


TrialF32RTRL = _wrap(None, "float32 numpy RTRL (Williams-Zipser sensitivities)")
TrialF32RTRLBiasNoRec = _wrap("b-no-recurrence", "float32 numpy RTRL (bug: b sensitivity without recurrence)")
