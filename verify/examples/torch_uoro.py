r"""UORO in torch as ``torch.func`` code is written (pure per-sample functions over a carry), and its wrap.

Tallec & Ollivier 2017, "Unbiased Online Recurrent Optimization", arXiv:1702.05043, Algorithm 1, for an
Elman-tanh RNN :math:`h_t = \tanh(W_{hh} h_{t-1} + W_{ih} x_t + b_h)` with the readout :math:`o_t = W_{out} h_t +
b_{out}` (PyTorch's ``nn.Linear`` convention: ``W_out`` is (k, n)) and the loss :math:`\ell_t = \tfrac12\|o_t -
y_t\|^2`. With :math:`F_{state}(x, h, \theta) = \tanh(W_{hh} h + W_{ih} x + b_h)` and :math:`F_{out}(x, h,
\theta) = W_{out} F_{state}(x, h, \theta) + b_{out}` (the output read from the new state), one step is

.. math::
    (\delta s, \delta\theta) &= \partial\ell_t/\partial(h_{t-1}, \theta) \text{ through } F_{out}
        \text{ (backprop)},\qquad \tilde g_t = (\delta s\cdot\tilde s_{t-1})\,\tilde\theta_{t-1} + \delta\theta, \\
    \rho_0 &= \sqrt{\|\tilde\theta_{t-1}\| / (\|J_s\tilde s_{t-1}\| + \varepsilon)} + \varepsilon,\quad
    \rho_1 = \sqrt{\|\nu^\top J_\theta\| / (\|\nu\| + \varepsilon)} + \varepsilon,\quad \varepsilon = 10^{-7}, \\
    \tilde s_t &= \rho_0 J_s\tilde s_{t-1} + \rho_1\nu \quad (5), \qquad
    \tilde\theta_t = \tilde\theta_{t-1}/\rho_0 + \nu^\top J_\theta/\rho_1 \quad (6),

:math:`J_s\tilde s` by forward mode (``torch.func.jvp``), :math:`\nu^\top J_\theta` by reverse mode
(``torch.func.vjp``), the backprop by ``torch.func.grad``; ν random signs (the toolkit's noise hook),
:math:`\tilde s_0 = 0`, :math:`\tilde\theta_0 = 0`; g̃ formed *before* the update (Algorithm 1's order:
``gtilde="pre"``).

The wraps (what a user writes, :class:`~verify.impl.torch_route.TorchStep`)::

    rnn-verify run --impl uoro=verify.examples.torch_uoro:TorchUORO --impl-only
    rnn-verify run --impl uoro=verify.examples.torch_uoro:TorchUORONoRho1 --impl-only   # seeded bug: FAILs

:data:`TorchUORONoRho1` seeds a bias: ρ₁ left out of eq. (5) only (:math:`\tilde s_t = \rho_0 J_s\tilde s_{t-1} +
\nu` while eq. (6) still divides by ρ₁): the new term of :math:`\tilde s\tilde\theta^\top` is
:math:`\nu\nu^\top J_\theta/\rho_1`, whose expectation is not :math:`J_\theta` (ρ₁ depends on ν).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.func import grad, jvp, vjp

EPS = 1e-7
Params = dict[str, torch.Tensor]


def f_state(p: Params, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """F_state: the Elman-tanh transition."""
    return torch.tanh(p["W_hh"] @ h + p["W_ih"] @ x + p["b_h"])


def loss(p: Params, h_prev: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """ℓ_t through F_out (the output read from the new state)."""
    o = p["W_out"] @ f_state(p, h_prev, x) + p["b_out"]
    return 0.5 * ((o - y) ** 2).sum()


def _norm(tree: Params) -> torch.Tensor:
    return torch.sqrt(sum((v * v).sum() for v in tree.values()))  # type: ignore[arg-type]


def uoro_init(params: Params, h0: torch.Tensor) -> dict[str, Any]:
    """s̃_0 = 0, θ̃_0 = 0 (Algorithm 1)."""
    return {
        "h": h0,
        "s_tilde": torch.zeros_like(h0),
        "theta_tilde": {k: torch.zeros_like(v) for k, v in params.items()},
    }


def uoro_step(
    params: Params, carry: dict[str, Any], x: torch.Tensor, y: torch.Tensor, nu: torch.Tensor, no_rho1: bool = False
) -> tuple[dict[str, Any], Params]:
    """One step of Algorithm 1 (see the module docstring); returns the new carry and g̃_t."""
    h, s_t, th_t = carry["h"], carry["s_tilde"], carry["theta_tilde"]
    d_theta, d_s = grad(loss, argnums=(0, 1))(params, h, x, y)  # backprop of l_t through F_out
    c = torch.dot(d_s, s_t)
    g = {k: c * th_t[k] + d_theta[k] for k in params}  # g~ before the update (Alg. 1)
    h_new, js = jvp(lambda hh: f_state(params, hh, x), (h,), (s_t,))  # type: ignore[misc]  # J_s s~ (forward mode)
    _, pull = vjp(lambda pp: f_state(pp, h, x), params)  # type: ignore[misc]
    (nu_j,) = pull(nu)  # nu^T J_theta (reverse mode); zero on W_out, b_out
    rho0 = torch.sqrt(_norm(th_t) / (torch.linalg.norm(js) + EPS)) + EPS
    rho1 = torch.sqrt(_norm(nu_j) / (torch.linalg.norm(nu) + EPS)) + EPS
    s_new = rho0 * js + (1.0 if no_rho1 else rho1) * nu  # eq. (5); the seeded bug leaves rho1 out here only
    th_new = {k: th_t[k] / rho0 + nu_j[k] / rho1 for k in params}  # eq. (6)
    return {"h": h_new, "s_tilde": s_new, "theta_tilde": th_new}, g


# ------------------------------------------------------------ the wrap (what a user writes)
from verify.impl.torch_route import TorchStep  # noqa: E402

NAMES = {"W_ih": "U", "W_hh": "W", "b_h": "b", "W_out": "V", "b_out": "c"}


def _wrap(name: str, **bug: bool) -> TorchStep:
    return TorchStep(
        uoro_init,
        lambda p, c, x, y, nu: uoro_step(p, c, x, y, nu, **bug),
        names=NAMES,
        state=lambda c: c["h"],
        factors=lambda c: (c["s_tilde"], c["theta_tilde"]),
        noise_hook=True,
        gtilde="pre",
        name=name,
    )


TorchUORO = _wrap("torch-uoro")
TorchUORONoRho1 = _wrap("torch-uoro-no-rho1", no_rho1=True)
