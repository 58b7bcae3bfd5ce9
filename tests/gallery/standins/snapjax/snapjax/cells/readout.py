"""STAND-IN (see snapjax/__init__.py): a layer that holds a cell and outputs its state."""

from __future__ import annotations

from typing import Any

import equinox as eqx


class IdentityLayer(eqx.Module):
    cell: Any

    def __init__(self, cell: Any) -> None:
        self.cell = cell
