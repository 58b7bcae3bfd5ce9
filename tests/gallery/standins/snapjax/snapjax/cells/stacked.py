"""STAND-IN (see snapjax/__init__.py): a stack of layers and the SnAp-n masks of its cell."""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp


class StackedCell(eqx.Module):
    layers: list[Any]

    def __init__(self, layers: list[Any]) -> None:
        self.layers = layers

    def get_snap_n_mask(self, n: int) -> Any:
        """M_n per cell leaf as (units, leaf size): n = 1 keeps unit i's own parameters (row i of a matrix, entry
        i of a vector); n >= 2 keeps all (a dense recurrent graph reaches every unit in one step)."""
        cell = self.layers[0].cell
        units = cell.hidden_size

        def mask(leaf: Any) -> Any:
            owner = jnp.repeat(jnp.arange(units), leaf.size // units)  # the unit each (row-major) entry feeds
            return (owner[None, :] == jnp.arange(units)[:, None]) * 1.0 if n == 1 else jnp.ones((units, leaf.size))

        masks = jax.tree_util.tree_map(mask, cell)
        return eqx.tree_at(lambda m: m.layers[0].cell, eqx.filter(self, lambda _: False), masks)
