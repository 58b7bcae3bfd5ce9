r"""Streaming first and second moments of vector-valued draws (internal building block).

The unbiasedness tests never hold all M draws in memory: they fold chunks of
draws :math:`Y_i = X_i - g` (estimate minus truth, float64) into a
:class:`Moments` value -- count, mean, centred scatter matrix
:math:`\sum_i (Y_i-\bar Y)(Y_i-\bar Y)^\top` -- merged across chunks with the
pairwise update of Chan, Golub & LeVeque (1979):

.. math::
    n = n_a + n_b,\quad \bar y = \bar y_a + \tfrac{n_b}{n}(\bar y_b - \bar y_a),\quad
    C = C_a + C_b + \tfrac{n_a n_b}{n}(\bar y_b-\bar y_a)(\bar y_b-\bar y_a)^\top .

It also keeps the first two moments of the squared error :math:`q_i = \|Y_i\|^2`
(for variance comparisons and the planner's pilot uncertainty) and the largest
single-draw share of the scatter (the heavy-tail diagnostic of
:mod:`verify.stats.unbiased`).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from verify._validate import require_finite
from verify.errors import InvalidArgument

__all__ = ["Moments", "empty_moments", "update_moments"]


class Moments(NamedTuple):
    """Sufficient statistics of the draws :math:`Y_i = X_i - g` seen so far (float64, CPU)."""

    n: int
    mean: torch.Tensor
    """(p,) mean of Y (= estimated bias :math:`\\bar X - g`)."""
    scatter: torch.Tensor
    """(p, p) centred scatter :math:`\\sum_i (Y_i-\\bar Y)(Y_i-\\bar Y)^\\top`."""
    q_mean: float
    """mean of :math:`q_i = \\|Y_i\\|^2` (squared error about the truth)."""
    q_m2: float
    """centred sum of squares of :math:`q_i`."""
    max_dev2: float
    """largest :math:`\\|Y_i - \\bar Y_{chunk}\\|^2` over the draws seen (heavy-tail diagnostic)."""

    @property
    def p(self) -> int:
        return int(self.mean.shape[0])

    def covariance(self) -> torch.Tensor:
        """Unbiased sample covariance :math:`S = C/(n-1)`."""
        if self.n < 2:
            raise InvalidArgument("samples", self.n, "need at least 2 draws for a covariance")
        return self.scatter / (self.n - 1)

    def q_variance(self) -> float:
        """Sample variance of :math:`q_i = \\|Y_i\\|^2`."""
        return self.q_m2 / (self.n - 1) if self.n > 1 else float("inf")

    def tail_share(self) -> float:
        """Largest single draw's share of the total scatter :math:`\\operatorname{tr} C`."""
        tr = float(torch.trace(self.scatter))
        return self.max_dev2 / tr if tr > 0 else 0.0


def empty_moments(p: int) -> Moments:
    """Moments of no draws in dimension ``p``."""
    z = torch.zeros(p, dtype=torch.float64)
    return Moments(0, z, torch.zeros(p, p, dtype=torch.float64), 0.0, 0.0, 0.0)


def update_moments(m: Moments, chunk: torch.Tensor, truth: torch.Tensor, name: str = "samples") -> Moments:
    """Fold a chunk of draws ``chunk`` (k, p) of an estimate of ``truth`` (p,) into ``m``.

    Raises :class:`InvalidArgument` for a wrong shape or non-finite draws (never a
    silent PASS on NaN).
    """
    if not isinstance(chunk, torch.Tensor):
        raise InvalidArgument(name, type(chunk).__name__, "draws must be a torch.Tensor of shape (m, p)")
    if chunk.dim() != 2 or chunk.shape[1] != m.p:
        raise InvalidArgument(name, f"tensor of shape {tuple(chunk.shape)}", f"expected shape (m, {m.p})")
    if chunk.is_complex() or not chunk.is_floating_point():
        raise InvalidArgument(name, f"dtype {chunk.dtype}", "draws must be real floating point")
    require_finite(name, chunk)
    k = int(chunk.shape[0])
    if k == 0:
        return m
    y = chunk.detach().to(device="cpu", dtype=torch.float64) - truth
    mean_b = y.mean(0)
    dev = y - mean_b
    scatter_b = dev.T @ dev
    q = (y * y).sum(1)
    q_mean_b = float(q.mean())
    q_m2_b = float(((q - q_mean_b) ** 2).sum())
    max_dev2 = max(m.max_dev2, float((dev * dev).sum(1).max()))
    if m.n == 0:
        return Moments(k, mean_b, scatter_b, q_mean_b, q_m2_b, max_dev2)
    n = m.n + k
    d = mean_b - m.mean
    mean = m.mean + d * (k / n)
    scatter = m.scatter + scatter_b + torch.outer(d, d) * (m.n * k / n)
    dq = q_mean_b - m.q_mean
    q_mean = m.q_mean + dq * k / n
    q_m2 = m.q_m2 + q_m2_b + dq * dq * m.n * k / n
    return Moments(n, mean, scatter, q_mean, q_m2, max_dev2)
