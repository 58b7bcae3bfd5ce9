r"""UORO in JAX as published JAX code is written (pure functions over a carry), and its wrap for rnn-verify.

Tallec & Ollivier 2017, "Unbiased Online Recurrent Optimization", arXiv:1702.05043, Algorithm 1, for an
Elman-tanh RNN :math:`h_t = \tanh(W_h h_{t-1} + W_x x_t + b_h)` with the readout :math:`o_t = h_t W_y + b_y`
(``Wy`` is (n, k), Flax's convention: the wrap maps it to the toolkit's V transposed) and the loss
:math:`\ell_t = \tfrac12\|o_t - y_t\|^2`. With :math:`F_{state}(x, h, \theta) = \tanh(W_h h + W_x x + b_h)` and
:math:`F_{out}(x, h, \theta) = F_{state}(x, h, \theta) W_y + b_y` (the output read from the new state), one step
of Algorithm 1 is

.. math::
    (\delta s, \delta\theta) &= \partial\ell_t/\partial(h_{t-1}, \theta) \text{ through } F_{out}
        \text{ (backprop)},\qquad \tilde g_t = (\delta s\cdot\tilde s_{t-1})\,\tilde\theta_{t-1} + \delta\theta, \\
    \rho_0 &= \sqrt{\|\tilde\theta_{t-1}\| / (\|J_s\tilde s_{t-1}\| + \varepsilon)} + \varepsilon,\quad
    \rho_1 = \sqrt{\|\nu^\top J_\theta\| / (\|\nu\| + \varepsilon)} + \varepsilon,\quad \varepsilon = 10^{-7}, \\
    \tilde s_t &= \rho_0 J_s\tilde s_{t-1} + \rho_1\nu \quad (5), \qquad
    \tilde\theta_t = \tilde\theta_{t-1}/\rho_0 + \nu^\top J_\theta/\rho_1 \quad (6),

:math:`J_s\tilde s` by forward mode (``jax.jvp``), :math:`\nu^\top J_\theta` by reverse mode (``jax.vjp``), ν
random signs, :math:`\tilde s_0 = 0`, :math:`\tilde\theta_0 = 0`. g̃ is formed *before* the update (Algorithm 1's
order: ``gtilde="pre"``).

The wraps (what a user writes, :class:`~verify.impl.jax_route.JaxStep`)::

    rnn-verify run --impl uoro=verify.examples.jax_uoro:JaxUORO --impl-only
    rnn-verify run --impl uoro=verify.examples.jax_uoro:JaxUOROBernoulli --impl-only   # seeded bug: FAILs

:data:`JaxUOROBernoulli` seeds a bias: ν ∈ {0, 1} (:math:`E[\nu\nu^\top] \neq I`: Prop. 1's premise broken).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)  # the toolkit's references are float64

EPS = 1e-7
CELL = ("Wx", "Wh", "bh")


def f_state(p: dict[str, Any], h: Any, x: Any) -> Any:
    """F_state: the Elman-tanh transition."""
    return jnp.tanh(p["Wh"] @ h + p["Wx"] @ x + p["bh"])


def loss(p: dict[str, Any], h_prev: Any, x: Any, y: Any) -> Any:
    """ℓ_t through F_out (the output read from the new state)."""
    o = f_state(p, h_prev, x) @ p["Wy"] + p["by"]
    return 0.5 * jnp.sum((o - y) ** 2)


def _norm(tree: Any) -> Any:
    return jnp.sqrt(sum(jnp.sum(v * v) for v in jax.tree_util.tree_leaves(tree)))


def uoro_init(params: dict[str, Any], h0: Any, key: Any) -> dict[str, Any]:
    """s̃_0 = 0, θ̃_0 = 0 (Algorithm 1)."""
    return {"h": h0, "s_tilde": jnp.zeros_like(h0), "theta_tilde": jax.tree_util.tree_map(jnp.zeros_like, params)}


def uoro_step(
    params: dict[str, Any], carry: dict[str, Any], x: Any, y: Any, nu: Any, bernoulli: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One step of Algorithm 1 (see the module docstring); returns the new carry and g̃_t."""
    h, s_t, th_t = carry["h"], carry["s_tilde"], carry["theta_tilde"]
    d_theta, d_s = jax.grad(loss, argnums=(0, 1))(params, h, x, y)  # backprop of l_t through F_out
    c = jnp.dot(d_s, s_t)
    g = jax.tree_util.tree_map(lambda tt, dt: c * tt + dt, th_t, d_theta)  # g~ before the update (Alg. 1)
    if bernoulli:  # the seeded bug: nu in {0, 1}
        nu = (nu + 1.0) / 2.0
    h_new, js = jax.jvp(lambda hh: f_state(params, hh, x), (h,), (s_t,))  # J_s s~ (forward mode)
    _, pull = jax.vjp(lambda pp: f_state(pp, h, x), params)
    (nu_j,) = pull(nu)  # nu^T J_theta (reverse mode); zero on Wy, by
    rho0 = jnp.sqrt(_norm(th_t) / (jnp.linalg.norm(js) + EPS)) + EPS
    rho1 = jnp.sqrt(_norm(nu_j) / (jnp.linalg.norm(nu) + EPS)) + EPS
    s_new = rho0 * js + rho1 * nu  # eq. (5)
    th_new = jax.tree_util.tree_map(lambda tt, nj: tt / rho0 + nj / rho1, th_t, nu_j)  # eq. (6)
    return {"h": h_new, "s_tilde": s_new, "theta_tilde": th_new}, g


# ------------------------------------------------------------ the wrap (what a user writes)
from verify.impl.jax_route import JaxStep  # noqa: E402

NAMES = {"Wx": "U", "Wh": "W", "bh": "b", "Wy": "V.T", "by": "c"}


def _wrap(name: str, **bug: bool) -> JaxStep:
    return JaxStep(
        uoro_init,
        lambda p, c, x, y, nu: uoro_step(p, c, x, y, nu, **bug),
        names=NAMES,
        state=lambda c: c["h"],
        factors=lambda c: (c["s_tilde"], c["theta_tilde"]),
        noise_hook=True,
        gtilde="pre",
        name=name,
    )


JaxUORO = _wrap("jax-uoro")
JaxUOROBernoulli = _wrap("jax-uoro-bernoulli", bernoulli=True)
