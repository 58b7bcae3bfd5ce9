r"""SnAp-1 ONLY, in numpy (a trial implementation): declares ``orders = (1,)`` and refuses any other order.

Menick et al. 2021, §3: SnAp-n keeps the influence :math:`J_t = \partial h_t/\partial\theta` only on the entries
that parameter can reach in n steps; for n = 1 a parameter of unit i's row (:math:`W_{ij}`, :math:`U_{ij}`,
:math:`b_i`) keeps unit i's entry only, :math:`J_t = M \circ (I_t + D_t J_{t-1})`. For the Elman tanh cell
(:math:`D_t = \mathrm{diag}(\phi'_t)W`) that is one number per parameter:
:math:`j^{W}_{ij,t} = \phi'_{i,t}(h_{j,t-1} + W_{ii}\,j^{W}_{ij,t-1})`, the same with :math:`x_{j,t}` for U and 1
for b. Readout :math:`y = V h + c`, :math:`\ell = \tfrac12\|y-\hat y\|^2`; gradient
:math:`\partial\ell/\partial X_{ij} \approx \delta_i\,j^X_{ij}`, :math:`\delta = V^\top(y-\hat y)`.

``snap1(order=n)`` is the factory ``--impl snap=`` calls; it raises ``NotImplementedError`` for n != 1 and says
so beforehand with the attribute ``orders = (1,)``.

Seeded bug (``bug=``):

* ``"b-no-decay"``: the bias block's trace drops :math:`W_{ii}` (keeps :math:`j^b_{i,t-1}` undamped) (part: b).
"""

from __future__ import annotations

import numpy as np

from verify.impl.adapters import Batch1


class SnAp1:
    def __init__(self, p: dict, h0: np.ndarray, bug: str | None = None):
        self.W, self.U, self.b, self.V, self.c = (p[k] for k in ("W", "U", "b", "V", "c"))
        self.h, self.bug = h0.copy(), bug
        n, d = self.U.shape
        self.jW, self.jU, self.jb = np.zeros((n, n)), np.zeros((n, d)), np.zeros(n)

    def step(self, x: np.ndarray, y_hat: np.ndarray) -> dict:
        h_prev = self.h
        h = np.tanh(self.W @ h_prev + self.U @ x + self.b)
        dphi = 1 - h**2
        wii = np.diag(self.W)
        self.jW = dphi[:, None] * (h_prev[None, :] + wii[:, None] * self.jW)
        self.jU = dphi[:, None] * (x[None, :] + wii[:, None] * self.jU)
        decay = np.ones_like(wii) if self.bug == "b-no-decay" else wii
        self.jb = dphi * (1.0 + decay * self.jb)
        self.h = h
        err = self.V @ h + self.c - y_hat
        delta = self.V.T @ err
        return {
            "W": delta[:, None] * self.jW,
            "U": delta[:, None] * self.jU,
            "b": delta * self.jb,
            "V": np.outer(err, h),
            "c": err,
        }

    def influence(self) -> dict:
        n = self.h.size
        eye = np.eye(n)
        return {"W": eye[:, :, None] * self.jW[None], "U": eye[:, :, None] * self.jU[None], "b": np.diag(self.jb)}


def _factory(bug: str | None, label: str):
    def snap1(order: int = 1) -> Batch1:
        if order != 1:
            raise NotImplementedError(f"{label} implements SnAp-1 only, asked for order={order}")
        return Batch1(
            lambda ctx: SnAp1(ctx.params, ctx.s0, bug),
            influence=lambda est: est.influence(),
            state=lambda est: est.h,
            name=label,
        )

    snap1.orders = (1,)  # type: ignore[attr-defined]
    return snap1


snap1 = _factory(None, "numpy SnAp-1")
snap1_b_no_decay = _factory("b-no-decay", "numpy SnAp-1 (bug: b trace without W_ii)")
