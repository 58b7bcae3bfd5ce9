r"""RTRL in JAX (pure functions over a carry) and its wrap for rnn-verify.

Real-time recurrent learning (Williams & Zipser 1989; Tallec & Ollivier 2017, arXiv:1702.05043, eq. (4) and (7))
for the Elman-tanh RNN :math:`h_t = F(h_{t-1}, x_t, \theta) = \tanh(W_h h_{t-1} + W_x x_t + b_h)`, readout
:math:`o_t = W_y h_t + b_y`, loss :math:`\tfrac12\|o_t - y_t\|^2`:

.. math::
    J_t = \frac{\partial F}{\partial h} J_{t-1} + \frac{\partial F}{\partial\theta} \quad (4), \qquad
    g_t = \frac{\partial\ell_t}{\partial h_t} J_t + \frac{\partial\ell_t}{\partial\theta}\Big|_{h_t} \quad (7),

:math:`J_0 = 0`; the two Jacobians of F by ``jax.jacfwd`` / ``jax.jacrev``. The influence :math:`J_t` is kept per
parameter (``{"Wx": (n, n, d), "Wh": (n, n, n), "bh": (n, n)}``), which the wrap exposes (``influence=``) for
``rtrl.exact``::

    rnn-verify run --impl rtrl=verify.examples.jax_rtrl:JaxRTRL --claims rtrl.exact
    rnn-verify run --impl rtrl=verify.examples.jax_rtrl:JaxRTRLNoImmediate --claims rtrl.exact   # FAILs

:func:`JaxRTRLNoImmediate` seeds the claim's negative control: the immediate term :math:`\partial F/\partial\theta`
dropped from (4).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)  # the toolkit's references are float64

CELL = ("Wx", "Wh", "bh")


def f_state(p: dict[str, Any], h: Any, x: Any) -> Any:
    """F: the Elman-tanh transition."""
    return jnp.tanh(p["Wh"] @ h + p["Wx"] @ x + p["bh"])


def rtrl_init(params: dict[str, Any], h0: Any, key: Any) -> dict[str, Any]:
    """h_0 given, J_0 = 0."""
    n = h0.shape[0]
    return {"h": h0, "J": {k: jnp.zeros((n, *params[k].shape)) for k in CELL}}


def rtrl_step(
    params: dict[str, Any], carry: dict[str, Any], x: Any, y: Any, key: Any, immediate: bool = True
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One RTRL step: eq. (4) for J_t, eq. (7) for g_t."""
    h, J = carry["h"], carry["J"]
    cell = {k: params[k] for k in CELL}
    h_new = f_state(params, h, x)
    D = jax.jacfwd(lambda hh: f_state(cell, hh, x))(h)  # dF/dh, (n, n)
    I = jax.jacrev(lambda pp: f_state(pp, h, x))(cell)  # dF/dtheta, per parameter (n, *shape)
    J_new = {k: jnp.tensordot(D, J[k], axes=1) + (I[k] if immediate else 0.0) for k in CELL}  # eq. (4)
    err = params["Wy"] @ h_new + params["by"] - y
    dh = params["Wy"].T @ err  # dl_t/dh_t
    grad = {k: jnp.tensordot(dh, J_new[k], axes=1) for k in CELL}  # eq. (7)
    grad["Wy"], grad["by"] = jnp.outer(err, h_new), err
    return {"h": h_new, "J": J_new}, grad


# ------------------------------------------------------------ the wrap (what a user writes)
from verify.impl.jax_route import JaxStep  # noqa: E402

NAMES = {"Wx": "U", "Wh": "W", "bh": "b", "Wy": "V", "by": "c"}


def _wrap(name: str, **bug: bool) -> JaxStep:
    return JaxStep(
        rtrl_init,
        lambda p, c, x, y, key: rtrl_step(p, c, x, y, key, **bug),
        names=NAMES,
        state=lambda c: c["h"],
        influence=lambda c: c["J"],
        name=name,
    )


JaxRTRL = _wrap("jax-rtrl")
JaxRTRLNoImmediate = _wrap("jax-rtrl-no-immediate-term", immediate=False)
