r"""Per-step losses :math:`\ell_t = \ell(y_t, \hat y_t)` and readouts :math:`y_t = g(s_t)`.

Losses reduce over the output dimension and then SUM over any leading batch
dimensions, so the per-step loss of a batched problem is the total over its
sequences. They are written with analytic operations so that complex-step
differentiation goes through them (no ``abs``, no ``conj``).

* :class:`SquaredError` -- :math:`\tfrac12\|y - \hat y\|^2` (UORO eq. (9) uses this
  form on the first unit).
* :class:`SoftmaxCrossEntropy` -- :math:`-\sum_j q_j \log\operatorname{softmax}(y)_j`
  with target probabilities q (one-hot for class labels).

Readouts:

* :class:`LinearReadout` -- :math:`y = V h + c` on the cell's observed state h.
* :class:`SelectReadout` -- :math:`y = h[\text{indices}]`, no parameters
  (influence balancing reads :math:`s^1`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import torch

from verify.errors import InvalidArgument

__all__ = ["LinearReadout", "Loss", "Readout", "SelectReadout", "SoftmaxCrossEntropy", "SquaredError"]


class Loss:
    name: ClassVar[str] = "loss"

    def __call__(self, y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The loss summed over every leading (batch) dimension: a scalar."""
        return self.pointwise(y, target).sum()

    def pointwise(self, y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The loss of each output vector (reduces the last dimension only)."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class SquaredError(Loss):
    r""":math:`\ell(y, \hat y) = \tfrac12 \sum_j (y_j - \hat y_j)^2`, summed over batch dims."""

    name: ClassVar[str] = "squared-error"

    def pointwise(self, y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        r = y - target
        return 0.5 * (r * r).sum(-1)

    def describe(self) -> str:
        return "l(y, t) = 0.5 * sum_j (y_j - t_j)^2, summed over batch"


@dataclass(frozen=True)
class SoftmaxCrossEntropy(Loss):
    r""":math:`\ell(y, q) = -\sum_j q_j\,(y_j - \log\sum_k e^{y_k})`, summed over batch dims.

    The log-sum-exp is stabilised with a shift by the (detached, real) maximum,
    which leaves the function -- and its complex-step derivative -- unchanged.
    """

    name: ClassVar[str] = "softmax-cross-entropy"

    def pointwise(self, y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        shift = (y.real if y.is_complex() else y).detach().amax(dim=-1, keepdim=True)
        lse = torch.log(torch.exp(y - shift).sum(dim=-1, keepdim=True)) + shift
        return -(target * (y - lse)).sum(-1)

    def describe(self) -> str:
        return "l(y, q) = -sum_j q_j * log_softmax(y)_j, summed over batch (q: target probabilities)"


class Readout:
    name: ClassVar[str] = "readout"

    @property
    def output_size(self) -> int:
        raise NotImplementedError

    def param_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        return []

    def __call__(self, params: Mapping[str, torch.Tensor], h: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class LinearReadout(Readout):
    r""":math:`y = V h + c`: parameters ``V`` (k×m) and ``c`` (k)."""

    in_features: int
    out_features: int
    name: ClassVar[str] = "linear"

    def __post_init__(self) -> None:
        for key in ("in_features", "out_features"):
            val = getattr(self, key)
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise InvalidArgument(key, val, "must be an integer >= 1")

    @property
    def output_size(self) -> int:
        return self.out_features

    def param_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        return [("V", (self.out_features, self.in_features)), ("c", (self.out_features,))]

    def __call__(self, params: Mapping[str, torch.Tensor], h: torch.Tensor) -> torch.Tensor:
        return h @ params["V"].transpose(-1, -2) + params["c"]

    def describe(self) -> str:
        return f"y = V h + c (V: {self.out_features}x{self.in_features})"


@dataclass(frozen=True)
class SelectReadout(Readout):
    """:math:`y = h[\\text{indices}]` -- no parameters."""

    indices: tuple[int, ...]
    name: ClassVar[str] = "select"

    @property
    def output_size(self) -> int:
        return len(self.indices)

    def __call__(self, params: Mapping[str, torch.Tensor], h: torch.Tensor) -> torch.Tensor:
        return h[..., list(self.indices)]

    def describe(self) -> str:
        return f"y = h[{list(self.indices)}]"
