r"""RTRL for a GRU ONLY, in the functional style: pure torch functions, derivatives by ``torch.func.jacrev``.

Williams & Zipser (1989) RTRL, :math:`J_t = \frac{\partial F}{\partial s}(h_{t-1}, x_t)\,J_{t-1} +
\frac{\partial F}{\partial\theta}(h_{t-1}, x_t)` (Tallec & Ollivier 2017, eq. (4)), for the GRU of the toolkit's
problem model (PyTorch's form with one candidate bias: gates r, z, n stacked in ``weight_hh`` (3n, n),
``weight_ih`` (3n, d), ``bias`` (3n)): :math:`r = \sigma(W_r h + U_r x + b_r)`, :math:`z = \sigma(W_z h + U_z x +
b_z)`, :math:`\tilde h = \tanh(U_n x + r\circ(W_n h) + b_n)`, :math:`h' = (1-z)\circ\tilde h + z\circ h`; readout
:math:`y = H h + \beta`, :math:`\ell = \tfrac12\|y-\hat y\|^2`. No class holds state: ``init`` and ``step`` are pure
functions of (params, carry), wrapped by :class:`verify.impl.torch_route.TorchStep`, which declares
``cells=("gru",)``: the claims judge it on GRU problems and leave the others out.

Seeded bugs (``bug=``, bound with ``functools.partial``):

* ``"stale-h"``: ∂F/∂θ evaluated at :math:`(h_t, x_t)` instead of :math:`(h_{t-1}, x_t)` -- h_t used for h_{t-1}
  (part: the immediate Jacobian ∂F/∂θ);
* ``"transposed-ds"``: the recurrence uses :math:`(\partial F/\partial s)^\top` (part: the state Jacobian
  ∂F/∂s; equal to RTRL at t = 1, wrong from t = 2).
"""

from __future__ import annotations

from functools import partial

import torch
from torch.func import jacrev

from verify.impl.torch_route import TorchStep

CELL = ("weight_hh", "weight_ih", "bias")
NAMES = {"weight_hh": "W", "weight_ih": "U", "bias": "b", "head_w": "V", "head_b": "c"}


def gru(cp: dict, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    Wr, Wz, Wn = cp["weight_hh"].chunk(3, 0)
    Ur, Uz, Un = cp["weight_ih"].chunk(3, 0)
    br, bz, bn = cp["bias"].chunk(3, 0)
    r = torch.sigmoid(Wr @ h + Ur @ x + br)
    z = torch.sigmoid(Wz @ h + Uz @ x + bz)
    cand = torch.tanh(Un @ x + r * (Wn @ h) + bn)
    return (1 - z) * cand + z * h


def init(params: dict, s0: torch.Tensor) -> dict:
    p_cell = sum(params[k].numel() for k in CELL)
    return {"h": s0, "J": torch.zeros(s0.shape[0], p_cell, dtype=s0.dtype)}


def step(params: dict, carry: dict, x: torch.Tensor, y: torch.Tensor, nu: object, bug: str | None = None):
    cp = {k: params[k] for k in CELL}
    h_prev = carry["h"]
    n = h_prev.shape[0]
    h = gru(cp, h_prev, x)
    ds = jacrev(gru, argnums=1)(cp, h_prev, x)  # (n, n)
    if bug == "transposed-ds":
        ds = ds.T
    at = h if bug == "stale-h" else h_prev
    dth = jacrev(gru, argnums=0)(cp, at, x)  # name -> (n, *shape)
    imm = torch.cat([dth[k].reshape(n, -1) for k in CELL], dim=1)
    J = ds @ carry["J"] + imm
    err = params["head_w"] @ h + params["head_b"] - y
    gcell = (params["head_w"].T @ err) @ J
    sizes = [params[k].numel() for k in CELL]
    grads = {k: g.reshape(params[k].shape) for k, g in zip(CELL, gcell.split(sizes), strict=True)}
    grads["head_w"] = torch.outer(err, h)
    grads["head_b"] = err
    return {"h": h, "J": J}, grads


def _influence(carry: dict) -> torch.Tensor:
    return carry["J"]  # (n, p_cell): the cell's columns in the toolkit's order W, U, b (= CELL)


def _wrap(bug: str | None, name: str) -> TorchStep:
    return TorchStep(
        init,
        partial(step, bug=bug),
        names=NAMES,
        cells=("gru",),
        state=lambda c: c["h"],
        influence=lambda c: {k: v for k, v in zip(CELL, _split(c["J"]), strict=True)},
        name=name,
    )


def _split(J: torch.Tensor) -> list[torch.Tensor]:
    n = J.shape[0]
    d = (J.shape[1] - 3 * n * n - 3 * n) // (3 * n)
    w, u, b = J.split([3 * n * n, 3 * n * d, 3 * n], dim=1)
    return [w.reshape(n, 3 * n, n), u.reshape(n, 3 * n, d), b]


TrialGRURTRL = _wrap(None, "functional torch GRU RTRL")
TrialGRURTRLStaleH = _wrap("stale-h", "functional torch GRU RTRL (bug: h_t for h_(t-1) in dF/dtheta)")
TrialGRURTRLTransposedDs = _wrap("transposed-ds", "functional torch GRU RTRL (bug: dF/ds transposed)")
