r"""Batch-1 numpy RFLO and e-prop written as a user would, and their wraps (both *declared biased* approximations of
RTRL: rnn-verify measures how far they are, and where their papers say they are exact).

The tanh RNN of :mod:`verify.examples.numpy_rtrl` (:math:`h_t = \tanh(W_h h_{t-1} + W_x x_t + b_h)`, readout
:math:`o_t = W_y h_t + b_y`, loss :math:`\tfrac12\|o_t - y_t\|^2`; Murray's leak α = 1). Each unit i keeps an
eligibility trace for its own incoming parameters only, :math:`\epsilon_{i\cdot}` over
:math:`[W_{x,i\cdot}, W_{h,i\cdot}, b_{h,i}]`, and the gradient is :math:`L_i\,\epsilon_{i\cdot}` with the
symmetric learning signal :math:`L = W_y^\top e_t`:

* **RFLO** (Murray 2019, "Local online learning in recurrent networks with random feedback", eLife 8:e43299,
  the RFLO learning rule of its Results; equation numbers not checked):
  :math:`\epsilon^t_{i\cdot} = (1-\alpha)\epsilon^{t-1}_{i\cdot} + \alpha\phi'(a_{t,i})\,
  [x_t, h_{t-1}, 1]` -- at α = 1 the immediate derivative alone;
* **e-prop** (Bellec et al. 2020, "A solution to the learning dilemma for recurrent networks of spiking
  neurons", Nat. Commun. 11:3625, doi:10.1038/s41467-020-17236-y, eq. (3), (14)) for a rate unit whose output
  is its state:
  :math:`\epsilon^t_{i\cdot} = \frac{\partial h_{t,i}}{\partial h_{t-1,i}}\epsilon^{t-1}_{i\cdot} +
  \phi'(a_{t,i})[x_t, h_{t-1}, 1]`, the unit's own derivative :math:`\phi'(a_{t,i})W_{h,ii}` (self-connection
  kept, every cross-unit term dropped) -- the reading of :class:`verify.estimators.EProp`.

``wrong_unit=True`` seeds a transposed trace in e-prop: the decay of unit j (the presynaptic one) applied to the
synapse j -> i. No claim of this catalog exercises ``rtrl.rflo`` / ``rtrl.eprop`` yet: the examples load through
the fields' contract check (``--impl rflo=verify.examples.numpy_rflo:MyNumpyRFLO``, ``--impl
eprop=verify.examples.numpy_rflo:MyNumpyEProp``) and ``tests/test_examples_family.py`` compares them with the
toolkit's :class:`~verify.estimators.local.RFLO` and :class:`~verify.estimators.local.EProp` (equal to round-off;
the twin is not).
"""

from __future__ import annotations

import numpy as np


class NumpyLocalTrace:
    """RFLO (``eprop=False``) or e-prop (``eprop=True``) for a tanh RNN (batch 1); ``step(x, y)`` -> gradient dict."""

    def __init__(self, Wx, Wh, bh, Wy, by, h0=None, eprop=False, wrong_unit=False):  # type: ignore[no-untyped-def]
        self.Wx, self.Wh, self.bh, self.Wy, self.by = Wx, Wh, bh, Wy, by
        n, d = Wx.shape
        self.h = np.zeros(n) if h0 is None else np.array(h0, dtype=float)
        self.eps = np.zeros((n, d + n + 1))  # row i: unit i's trace over [Wx[i], Wh[i], bh[i]]
        self.eprop, self.wrong_unit = eprop, wrong_unit

    def step(self, x, y):  # type: ignore[no-untyped-def]
        n, d = self.Wx.shape
        h = np.tanh(self.Wh @ self.h + self.Wx @ x + self.bh)
        D = 1.0 - h * h
        immediate = D[:, None] * np.concatenate([x, self.h, [1.0]])[None, :]
        if self.eprop:
            own = D * np.diag(self.Wh)  # d h_{t,i} / d h_{t-1,i}
            decay = own[:, None] * np.ones_like(self.eps)
            if self.wrong_unit:  # the seeded bug: the presynaptic unit's decay on the recurrent synapses
                decay[:, d : d + n] = own[None, :]
            self.eps = decay * self.eps + immediate
        else:
            self.eps = immediate  # alpha = 1: no leak term
        self.h = h
        e = self.Wy @ h + self.by - y
        G = (self.Wy.T @ e)[:, None] * self.eps
        return {"Wx": G[:, :d], "Wh": G[:, d : d + n], "bh": G[:, d + n], "Wy": np.outer(e, h), "by": e}


# ------------------------------------------------------------ the wraps (what a user writes)
from verify.impl.adapters import Batch1  # noqa: E402


def _wrap(name, **kw):  # type: ignore[no-untyped-def]
    def make(ctx):  # type: ignore[no-untyped-def]
        p = ctx.params
        return NumpyLocalTrace(p["Wx"], p["Wh"], p["bh"], p["Wy"], p["by"], h0=ctx.s0, **kw)

    return Batch1(
        make,
        names={"Wx": "U", "Wh": "W", "bh": "b", "Wy": "V", "by": "c"},
        cells=("elman-tanh",),
        state=lambda est: est.h,
        name=name,
    )


MyNumpyRFLO = _wrap("numpy-rflo")
MyNumpyEProp = _wrap("numpy-eprop", eprop=True)
MyNumpyEPropWrongUnit = _wrap("numpy-eprop-wrong-unit", eprop=True, wrong_unit=True)
