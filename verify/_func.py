"""Typed wrappers around ``torch.func`` (internal)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch
from torch.func import vjp as _vjp

Pullback = Callable[[torch.Tensor], tuple[torch.Tensor, ...]]


def vjp(fn: Callable[..., torch.Tensor], *primals: torch.Tensor) -> tuple[torch.Tensor, Pullback]:
    """``torch.func.vjp`` without auxiliary outputs: (output, pullback)."""
    out: Any = _vjp(fn, *primals)
    return cast(torch.Tensor, out[0]), cast(Pullback, out[1])
