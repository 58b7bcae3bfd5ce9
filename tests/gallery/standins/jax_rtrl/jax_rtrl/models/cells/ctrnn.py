r"""A STAND-IN for ``jax_rtrl.models.cells.ctrnn`` (FranzKnut/jax_rtrl), for rnn-verify's tests only.

It mimics the shape of the API :mod:`verify.gallery.jax_rtrl` calls -- ``OnlineCTRNNCell(num_units, dt, T,
ode_type, plasticity)``, ``cell.apply(variables, carry, x) -> (carry, h)`` differentiable by ``jax.grad`` with the
online rule's gradient (a ``jax.custom_vjp``), ``cell.apply(variables, rng, input_shape,
method=cell.initialize_carry)``, variables ``{"params": {"W": (n, d + n + 1), "tau": (n,)}}`` with ``W = [U | W |
b]`` (and ``"h0"`` for ``"tau_softplus"``) -- without flax and with maths written here from the papers, not
from jax_rtrl:

- the cell: Euler steps of ``dt`` of :math:`\dot h = (\tanh(W [x; h; 1]) + h_0 - h)/\tau`, ``T / dt`` steps a call
  (the adapter calls with ``T = dt``); ``ode_type="murray"``: :math:`h_0 = 0` and ``tau`` the time constant;
  ``"tau_softplus"`` (the default): a parameter ``h0`` and :math:`\tau = \mathrm{softplus}(\texttt{tau}) +
  \texttt{tau\_min}`; with :math:`\alpha = dt/\tau`, :math:`h' = (1-\alpha) h + \alpha (\tanh(a) + h_0)`;
- ``"rtrl"``: the influence :math:`J' = D J + I` with :math:`D = \mathrm{diag}(1-\alpha) + \mathrm{diag}(\alpha
  \phi'(a)) W_h` and the immediate :math:`I_{i,(j,k)} = \delta_{ij} \alpha_i \phi'(a_i) v_k` (Tallec & Ollivier 2017
  eq. (4)); gradient :math:`\partial\ell/\partial h' \cdot J'`;
- ``"rflo"``: :math:`P' = (1-\alpha) P + \alpha \phi'(a) v^T` (Murray 2019, the RFLO rule), gradient
  :math:`(\partial\ell/\partial h')_j P'_{jk}`;
- ``"eprop"``: :math:`P' = ((1-\alpha) + \alpha \phi'(a_j) W_{jj}) P + \alpha \phi'(a) v^T` (Bellec et al. 2020 eq.
  (14) for rate units), the same gradient;
- ``"snap0"``: :math:`P' = \alpha \phi'(a) v^T`, the immediate Jacobian only.

The gradients of ``tau`` and ``h0`` are not modelled (zeros: the adapter holds them fixed and drops them). A seeded
bug for the tests: the environment variable ``RNN_VERIFY_STANDIN_JAX_RTRL_BUG`` = ``rtrl-transposed`` (RTRL's
:math:`D^T` for :math:`D`), ``rflo-no-leak`` (:math:`P' = P + \ldots`), ``eprop-no-self`` (e-prop's trace
without :math:`W_{jj}`: RFLO's).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

BUG = "RNN_VERIFY_STANDIN_JAX_RTRL_BUG"


@dataclass(frozen=True)
class OnlineCTRNNCell:
    """Stand-in of jax_rtrl's online CTRNN cell (see the module docstring): ``ode_type="murray"`` only."""

    num_units: int
    dt: float = 1.0
    T: float = 1.0
    ode_type: str = "tau_softplus"
    plasticity: str = "rtrl"
    tau_min: float = 1.0

    def __post_init__(self) -> None:
        if self.ode_type not in ("murray", "tau_softplus"):
            raise ValueError(f"ode_type={self.ode_type!r}: the stand-in has 'murray' and 'tau_softplus'")
        if self.plasticity not in ("rtrl", "rflo", "eprop", "snap0"):
            raise ValueError(f"plasticity={self.plasticity!r}: one of rtrl, rflo, eprop, snap0")

    def initialize_carry(self, rng: Any, input_shape: tuple[int, ...]) -> tuple[Any, Any, Any]:
        """``(h, traces, input traces)``: zeros; the traces of W are (n, n, m) for RTRL, (n, m) for the others."""
        n, d = self.num_units, int(input_shape[-1])
        m = d + n + 1
        shape = (n, n, m) if self.plasticity == "rtrl" else (n, m)
        traces = {"W": jnp.zeros(shape), "tau": jnp.zeros(n)}
        if self.ode_type == "tau_softplus":
            traces["h0"] = jnp.zeros(n)
        return jnp.zeros(n), traces, jnp.zeros((n, d))

    def apply(self, variables: Any, *args: Any, method: Any = None) -> Any:
        """Flax's ``Module.apply`` shape: ``method`` called with ``args``, else one call of the cell."""
        if method is not None:
            return method(*args)
        carry, x = args
        out = carry
        for _ in range(max(1, round(self.T / self.dt))):
            p = variables["params"]
            tau, h0 = p["tau"], jnp.zeros_like(p["tau"])
            if self.ode_type == "tau_softplus":
                tau, h0 = jax.nn.softplus(tau) + self.tau_min, p["h0"]
            out = self._step(p["W"], tau, h0, out, x)
        return out, out[0]

    def _traces(self, W: Any, tau: Any, h0: Any, carry: Any, x: Any) -> tuple[Any, Any]:
        h, tr, jx = carry
        n, d, bug = self.num_units, x.shape[-1], os.environ.get(BUG, "")
        v = jnp.concatenate([x, h, jnp.ones(1)])
        a = W @ v
        dphi = 1.0 - jnp.tanh(a) ** 2
        alpha = self.dt / tau
        h_new = (1.0 - alpha) * h + alpha * (jnp.tanh(a) + h0)
        M = (alpha * dphi)[:, None] * v[None, :]  # the immediate dh'_j/dW_jk
        P = tr["W"]
        if self.plasticity == "rtrl":
            D = jnp.diag(1.0 - alpha) + (alpha * dphi)[:, None] * W[:, d : d + n]
            D = D.T if bug == "rtrl-transposed" else D
            P = jnp.einsum("il,ljk->ijk", D, P) + jnp.einsum("ij,jk->ijk", jnp.eye(n), M)
        elif self.plasticity == "rflo":
            leak = jnp.ones_like(alpha) if bug == "rflo-no-leak" else 1.0 - alpha
            P = leak[:, None] * P + M
        elif self.plasticity == "eprop":
            self_term = 0.0 if bug == "eprop-no-self" else alpha * dphi * jnp.diag(W[:, d : d + n])
            P = ((1.0 - alpha) + self_term)[:, None] * P + M
        else:
            P = M
        return h_new, (h_new, {**tr, "W": P}, jx)

    def _step(self, W: Any, tau: Any, h0: Any, carry: Any, x: Any) -> Any:
        cell = self

        @jax.custom_vjp
        def f(W: Any, tau: Any, h0: Any, carry: Any, x: Any) -> Any:
            return cell._traces(W, tau, h0, carry, x)[1]

        def fwd(W: Any, tau: Any, h0: Any, carry: Any, x: Any) -> Any:
            new = cell._traces(W, tau, h0, carry, x)[1]
            return new, (new, tau, h0, x)

        def bwd(res: Any, ct: Any) -> Any:
            new, tau, h0, x = res
            dh = ct[0]  # dl/dh' (the carry's h; the adapter reads h from the carry or the output)
            P = new[1]["W"]
            gW = jnp.einsum("i,ijk->jk", dh, P) if P.ndim == 3 else dh[:, None] * P
            zeros = jax.tree.map(jnp.zeros_like, new)
            return gW, jnp.zeros_like(tau), jnp.zeros_like(h0), zeros, jnp.zeros_like(x)

        f.defvjp(fwd, bwd)
        return f(W, tau, h0, carry, x)
