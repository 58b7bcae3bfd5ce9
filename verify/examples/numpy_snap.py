r"""A batch-1 numpy SnAp-n written as a user would (Menick, Elsen, Evci, Osindero, Simonyan & Graves 2021,
"Practical Real Time Recurrent Learning with a Sparse Approximation", arXiv:2006.07232, §3), and its wrap.

:class:`NumpySnAp` knows nothing of rnn-verify: the tanh RNN of :mod:`verify.examples.numpy_rtrl`
(:math:`h_t = \tanh(W_h h_{t-1} + W_x x_t + b_h)`, readout :math:`o_t = W_y h_t + b_y`, loss
:math:`\tfrac12\|o_t - y_t\|^2`) and RTRL's influence :math:`J_t = \partial h_t/\partial(W_x, W_h, b_h)` kept
only on SnAp-n's sparsity pattern:

.. math::
    \tilde J_t = \big(\mathrm{diag}(1 - h_t^2)\,(W_h \tilde J_{t-1} + \partial a_t/\partial\theta)\big)\odot M_n,

where :math:`M_n` keeps the entries (unit u, parameter of unit i) with u reachable from i in at most n - 1 steps of
the recurrent graph (:math:`u \leftarrow i` where :math:`W_{h,ui} \neq 0`; unit i itself at 0 steps): the pattern
of :math:`J_n` from :math:`J_0 = 0`, fixed from :math:`W_h`'s nonzeros when the object is built. SnAp-1 keeps a
unit's own parameters (diagonal in units), SnAp-n with n - 1 >= the graph's diameter is RTRL.

``transposed_pattern=True`` seeds a classic bug: the reachability built from :math:`(W_h \neq 0)^\top` (units
that *feed* u instead of those u feeds) -- the same as the right pattern for a diagonal or dense :math:`W_h`,
wrong on a directed ring::

    rnn-verify run --impl snap=verify.examples.numpy_snap:MyNumpySnAp --claims rtrl.snap-exactness
"""

from __future__ import annotations

import numpy as np


class NumpySnAp:
    """SnAp-n for a tanh RNN (batch 1). ``step(x, y)`` returns the gradient as a dict."""

    def __init__(self, Wx, Wh, bh, Wy, by, h0=None, order=1, transposed_pattern=False, new_state=False):  # type: ignore[no-untyped-def]
        self.Wx, self.Wh, self.bh, self.Wy, self.by = Wx, Wh, bh, Wy, by
        n, d = Wx.shape
        self.h = np.zeros(n) if h0 is None else np.array(h0, dtype=float)
        self.sizes = {"Wx": n * d, "Wh": n * n, "bh": n}
        self.J = np.zeros((n, sum(self.sizes.values())))
        edges = (Wh != 0).T if transposed_pattern else (Wh != 0)  # the seeded bug: edges reversed
        reach = np.eye(n, dtype=bool)
        for _ in range(order - 1):  # reachable in <= order - 1 steps: reach <- reach | edges @ reach
            reach = reach | ((edges.astype(int) @ reach.astype(int)) > 0)
        unit = np.concatenate([np.repeat(np.arange(n), d), np.repeat(np.arange(n), n), np.arange(n)])
        self.mask = reach[:, unit]  # (n, P): keep (u, k) when u is reachable from k's unit
        self.new_state = new_state  # the seeded bug: da/dWh from h_t instead of h_{t-1}

    def step(self, x, y):  # type: ignore[no-untyped-def]
        n = self.h.size
        I = np.eye(n)
        h = np.tanh(self.Wh @ self.h + self.Wx @ x + self.bh)
        prev = h if self.new_state else self.h
        dA = np.hstack([np.kron(I, x[None, :]), np.kron(I, prev[None, :]), I])  # da/d(Wx, Wh, bh)
        self.J = self.mask * ((1.0 - h * h)[:, None] * (self.Wh @ self.J + dA))
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


# ------------------------------------------------------------ the wrap (what a user writes)
from verify.impl.adapters import Batch1  # noqa: E402


def _wrap(order, name, **bugs):  # type: ignore[no-untyped-def]
    def make(ctx):  # type: ignore[no-untyped-def]
        p = ctx.params
        return NumpySnAp(p["Wx"], p["Wh"], p["bh"], p["Wy"], p["by"], h0=ctx.s0, order=order, **bugs)

    return Batch1(
        make,
        names={"Wx": "U", "Wh": "W", "bh": "b", "Wy": "V", "by": "c"},
        cells=("elman-tanh",),
        state=lambda est: est.h,
        name=f"{name} (n = {order})",
    )


def MyNumpySnAp(order=1):  # type: ignore[no-untyped-def]
    """The rtrl.snap factory: ``snap(order=n)`` -> the wrapped :class:`NumpySnAp`."""
    return _wrap(order, "numpy-snap")


def MyNumpySnApTransposed(order=1):  # type: ignore[no-untyped-def]
    """The seeded bug: the sparsity pattern from the transposed recurrent graph."""
    return _wrap(order, "numpy-snap-transposed-pattern", transposed_pattern=True)


def MyNumpySnAp1Only(order=1):  # type: ignore[no-untyped-def]
    """SnAp-1 code that implements no other order, as much published code does: it raises when asked for n = 2.
    The claims judge it at n = 1 and leave n = 2 out with this reason (issue 37), instead of FAILing it."""
    if order != 1:
        raise ValueError(f"only SnAp-1 is implemented (asked for order={order})")
    return _wrap(1, "numpy-snap-1-only")


def MyNumpySnAp1OnlyNewState(order=1):  # type: ignore[no-untyped-def]
    """SnAp-1-only code with a seeded bug (∂a/∂W_h formed from h_t instead of h_{t-1}): it FAILs at n = 1."""
    if order != 1:
        raise ValueError(f"only SnAp-1 is implemented (asked for order={order})")
    return _wrap(1, "numpy-snap-1-only-new-state", new_state=True)
