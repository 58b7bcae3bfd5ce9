"""STAND-IN (see snapjax/__init__.py): an Elman-tanh cell h' = tanh(W_hh h + b + W_ih x)."""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax.numpy as jnp


class RNN(eqx.Module):
    weights_hh: eqx.nn.Linear
    weights_ih: eqx.nn.Linear
    hidden_size: int = eqx.field(static=True)
    input_size: int = eqx.field(static=True)

    def __init__(self, hidden_size: int, input_size: int, *, key: Any) -> None:
        self.weights_hh = eqx.nn.Linear(hidden_size, hidden_size, use_bias=True, key=key)
        self.weights_ih = eqx.nn.Linear(input_size, hidden_size, use_bias=False, key=key)
        self.hidden_size, self.input_size = hidden_size, input_size

    def f(self, h: Any, x: Any) -> Any:
        return jnp.tanh(self.weights_hh(h) + self.weights_ih(x))
