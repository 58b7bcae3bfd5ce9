r"""UORO in the ``torch.func`` style with GAUSSIAN ν, a TUPLE carry and a FLAT θ̃ (a trial implementation).

Tallec & Ollivier 2017, Algorithm 1 and eq. (5)-(6), for :math:`h_t = \tanh(W h_{t-1} + U x_t + b)`,
:math:`y_t = V h_t + c`, :math:`\ell_t = \tfrac12\|y_t-\hat y_t\|^2`: ``s̃_t = ρ₀ (∂F/∂s) s̃_{t-1} + ρ₁ ν`` by
``torch.func.jvp``, ``θ̃_t = θ̃_{t-1}/ρ₀ + ν^T(∂F/∂θ)/ρ₁`` by ``torch.func.vjp`` (θ̃ one flat vector over all of θ in
the toolkit's order W, U, b, V, c; the readout's entries stay 0), ρ₀, ρ₁ as in Algorithm 1 (ε = 1e-7). ν is
drawn by the step itself, standard normal (``torch.randn``: unbiased for any ν with E[ν νᵀ] = I, Prop. 1's proof),
declared ``noise_law="gaussian"``. g̃ is formed from the *updated* factors (``gtilde="post"``):
:math:`\tilde g_t = (\partial\ell_t/\partial h_t\cdot\tilde s_t)\,\tilde\theta_t + \partial\ell_t/\partial(V, c)`.
The carry is a tuple ``(h, s̃, θ̃)``; the gradient is returned flat.

Seeded bug (``bug=``):

* ``"fresh-nu"``: the θ̃ update uses a second, independent draw ν' instead of the ν that went into s̃ (part: the
  noise ν shared by eq. (5) and (6); E[ν ν'ᵀ] = 0 drops ∂F/∂θ: biased).
"""

from __future__ import annotations

from functools import partial

import torch
from torch.func import jvp, vjp

from verify.impl.torch_route import TorchStep

EPS = 1e-7
ORDER = ("W", "U", "b", "V", "c")  # the toolkit's layout order; names below are the toolkit's own


def cell(W, U, b, h, x):
    return torch.tanh(W @ h + U @ x + b)


def init(params, s0):
    p = sum(params[k].numel() for k in ORDER)
    return (s0, torch.zeros_like(s0), torch.zeros(p, dtype=s0.dtype))


def step(params, carry, x, y, nu, bug=None):
    W, U, b, V, c = (params[k] for k in ORDER)
    h_prev, s_tilde, theta_tilde = carry
    n = h_prev.shape[0]
    h, s_fwd = jvp(lambda s: cell(W, U, b, s, x), (h_prev,), (s_tilde,))
    nu = torch.randn(n, dtype=h.dtype)
    _, pull = vjp(lambda W_, U_, b_: cell(W_, U_, b_, h_prev, x), W, U, b)
    nu_theta = torch.randn(n, dtype=h.dtype) if bug == "fresh-nu" else nu
    gW, gU, gb = pull(nu_theta)
    dtheta_g = torch.cat([gW.reshape(-1), gU.reshape(-1), gb, torch.zeros(V.numel() + c.numel(), dtype=h.dtype)])
    rho0 = torch.sqrt(theta_tilde.norm() / (s_fwd.norm() + EPS)) + EPS
    rho1 = torch.sqrt(dtheta_g.norm() / (nu.norm() + EPS)) + EPS
    s_tilde = rho0 * s_fwd + rho1 * nu
    theta_tilde = theta_tilde / rho0 + dtheta_g / rho1
    err = V @ h + c - y
    g = (V.T @ err) @ s_tilde * theta_tilde
    g = g + torch.cat(
        [torch.zeros(theta_tilde.numel() - V.numel() - c.numel(), dtype=h.dtype), torch.outer(err, h).reshape(-1), err]
    )
    return (h, s_tilde, theta_tilde), g


def _wrap(bug, name):
    return TorchStep(
        init,
        partial(step, bug=bug),
        names={k: k for k in ORDER},
        state=lambda c: c[0],
        factors=lambda c: (c[1], c[2]),
        noise_law="gaussian",
        gtilde="post",
        name=name,
    )


TrialTorchFuncUORO = _wrap(None, "torch.func UORO, Gaussian nu")
TrialTorchFuncUOROFreshNu = _wrap("fresh-nu", "torch.func UORO, Gaussian nu (bug: fresh nu in theta~)")
