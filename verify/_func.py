"""Typed wrappers around ``torch.func`` (internal)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any, cast

import torch
from torch.func import vjp as _vjp

_JVP_DECOMPOSITIONS = "torch._decomp.decompositions_for_jvp"

Pullback = Callable[[torch.Tensor], tuple[torch.Tensor, ...]]


def vjp(fn: Callable[..., torch.Tensor], *primals: torch.Tensor) -> tuple[torch.Tensor, Pullback]:
    """``torch.func.vjp`` without auxiliary outputs: (output, pullback)."""
    out: Any = _vjp(fn, *primals)
    return cast(torch.Tensor, out[0]), cast(Pullback, out[1])


def forward_mode_ready() -> None:
    """Import torch's forward-mode machinery once, silently; call before ``jacfwd``, ``hessian`` or ``jvp``.

    Its first use imports a module that calls the deprecated ``torch.jit.script``; importing it here with the
    DeprecationWarning ignored keeps users' test suites that run with ``-W error`` from being broken by torch's
    own internals. Done on first use, not at import: it is a fifth of a second of CPU that every process would
    pay otherwise, also the many that never differentiate forward (issue 42).
    """
    if _JVP_DECOMPOSITIONS in sys.modules:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import torch._decomp.decompositions_for_jvp  # noqa: F401
