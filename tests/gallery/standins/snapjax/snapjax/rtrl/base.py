"""STAND-IN (see snapjax/__init__.py): RTRL and its masked (SnAp) variant over an RNN-in-a-stack model."""

from __future__ import annotations

import os
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp


def _zeros_model(model: Any) -> Any:
    return jax.tree_util.tree_map(jnp.zeros_like, model)


class RTRLApprox(eqx.Module):
    """One RNN layer's influence J_t = mask * (I_t + D_t J_(t-1)) (RTRL when no mask is given)."""

    loss_func: Any = eqx.field(static=True)

    @staticmethod
    def init_traces(model: Any) -> Any:
        cell = model.layers[0].cell
        traces = jax.tree_util.tree_map(lambda a: jnp.zeros((cell.hidden_size, a.size)), cell)
        return eqx.tree_at(lambda m: m.layers[0].cell, eqx.filter(model, lambda _: False), (traces,))

    def step(
        self, model: Any, jacobians: Any, h_prev: Any, x: Any, y: Any, mask: float = 1.0, jacobian_mask: Any = None
    ) -> Any:
        cell, readout = model.layers[0].cell, model.layers[1]
        h = cell.f(h_prev[0], x)
        imm = jax.jacrev(lambda c: c.f(h_prev[0], x))(cell)  # I_t = dh_t/dtheta, per leaf (n, *shape)
        D = jax.jacrev(lambda s: cell.f(s, x))(h_prev[0])  # D_t = dh_t/dh_(t-1)
        drop = os.environ.get("SNAPJAX_STANDIN_BUG") == "no-immediate"
        prev = jacobians.layers[0].cell[-1]
        new = jax.tree_util.tree_map(lambda i, j: (0.0 if drop else i.reshape(i.shape[0], -1)) + D @ j, imm, prev)
        if jacobian_mask is not None:
            new = jax.tree_util.tree_map(lambda j, m: j * m, new, jacobian_mask.layers[0].cell)
        loss, (g_out, g_h) = jax.value_and_grad(lambda r, s: self.loss_func(y, r(s), mask), argnums=(0, 1))(readout, h)
        g_cell = jax.tree_util.tree_map(lambda j, leaf: (g_h @ j).reshape(leaf.shape), new, cell)
        grads = eqx.tree_at(lambda m: (m.layers[0].cell, m.layers[1]), _zeros_model(model), (g_cell, g_out))
        J = eqx.tree_at(lambda m: m.layers[0].cell, jacobians, (new,))
        return (h,), grads, J, loss, readout(h)


class RTRLExact(RTRLApprox):
    """RTRL (for one layer the same recursion, never masked)."""

    def step(
        self, model: Any, jacobians: Any, h_prev: Any, x: Any, y: Any, mask: float = 1.0, jacobian_mask: Any = None
    ) -> Any:
        return super().step(model, jacobians, h_prev, x, y, mask, None)
