"""The floating dtypes narrower than float64 that code under test returned in this process (issue 37).

A leaf module (torch only), so that the toolkit's algorithms that call a user's function directly -- FPP's eq. (7)
in :mod:`verify.fpp.objective` and :mod:`verify.fpp.online` -- can take its float32 results into float64 and
record them without importing :mod:`verify.impl`. :func:`verify.run.check.run_check` resets the record before a
claim and, on a FAIL, says which narrow dtypes were seen (their round-off, not a bug, may be what an exact claim
measured).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["LOW_PRECISION", "NARROW_TORCH", "as_reference_dtype", "low_precision_seen", "reset_precision"]

#: torch's floating dtypes narrower than float64, by name
NARROW_TORCH = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}

#: the names seen since the last :func:`reset_precision`
LOW_PRECISION: set[str] = set()


def as_reference_dtype(value: Any, like: torch.Tensor) -> Any:
    """``value`` (a tensor returned by code under test) in ``like``'s floating dtype; a narrower floating dtype is
    recorded first. Anything else (integers, non-tensors) is returned unchanged."""
    if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != like.dtype:
        name = NARROW_TORCH.get(value.dtype)
        if name is not None and like.dtype == torch.float64:
            LOW_PRECISION.add(name)
        return value.to(like.dtype)
    return value


def low_precision_seen() -> tuple[str, ...]:
    """The narrower-than-float64 dtypes user code returned since :func:`reset_precision`."""
    return tuple(sorted(LOW_PRECISION))


def reset_precision() -> None:
    """Forget what :func:`low_precision_seen` recorded (before each claim)."""
    LOW_PRECISION.clear()
