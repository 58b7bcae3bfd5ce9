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
(for variance comparisons and the planner's pilot uncertainty), the largest
single-draw share of the scatter (the heavy-tail diagnostic of
:mod:`verify.stats.unbiased`) and the unit round-off of the draws' dtype (the
round-off model of :mod:`verify.stats.roundoff`).

**Diagonal mode** (``empty_moments(p, diagonal=True)``, used for large p): only the
diagonal of C is kept (O(p) memory instead of O(p²)), plus an unbiased estimate of
:math:`\operatorname{tr}\Sigma^2 = \|\Sigma\|_F^2` from disjoint quadruples of draws
(a, b, c, d): :math:`w = (a-b)/\sqrt2` and :math:`w' = (c-d)/\sqrt2` are independent
with mean 0 and covariance Σ, so :math:`E (w^\top w')^2 = \operatorname{tr}\Sigma^2`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from verify._validate import require_finite
from verify.errors import InvalidArgument

__all__ = ["Batch", "Moments", "empty_moments", "fold_batch", "fold_deviations", "update_moments"]

U64 = 2.0**-53  # unit round-off of float64


class Moments(NamedTuple):
    """Sufficient statistics of the draws :math:`Y_i = X_i - g` seen so far (float64, CPU)."""

    n: int
    mean: torch.Tensor
    """(p,) mean of Y (= estimated bias :math:`\\bar X - g`)."""
    scatter: torch.Tensor
    """(p, p) centred scatter :math:`\\sum_i (Y_i-\\bar Y)(Y_i-\\bar Y)^\\top`; its diagonal (p,) in diagonal mode."""
    q_mean: float
    """mean of :math:`q_i = \\|Y_i\\|^2` (squared error about the truth)."""
    q_m2: float
    """centred sum of squares of :math:`q_i`."""
    max_dev2: float
    """largest :math:`\\|Y_i - \\bar Y_{chunk}\\|^2` over the draws seen (heavy-tail diagnostic)."""
    unit_roundoff: float = U64
    """unit round-off of the draws' dtype (the coarsest seen; float64: 2⁻⁵³, float32: 2⁻²⁴)."""
    diagonal: bool = False
    """diagonal mode: ``scatter`` is the (p,) diagonal, tr Σ² comes from quadruples."""
    fro_n: int = 0
    """diagonal mode: number of quadruples in the tr Σ² estimate."""
    fro_mean: float = 0.0
    """diagonal mode: mean of :math:`(w^\\top w')^2` over the quadruples (unbiased for tr Σ²)."""
    fro_m2: float = 0.0
    """diagonal mode: centred sum of squares of :math:`(w^\\top w')^2`."""

    @property
    def p(self) -> int:
        return int(self.mean.shape[0])

    def covariance(self) -> torch.Tensor:
        """Unbiased sample covariance :math:`S = C/(n-1)` (not available in diagonal mode)."""
        if self.n < 2:
            raise InvalidArgument("samples", self.n, "need at least 2 draws for a covariance")
        if self.diagonal:
            raise InvalidArgument("moments", "diagonal mode", "only variances() are kept for large p")
        return self.scatter / (self.n - 1)

    def variances(self) -> torch.Tensor:
        """Per-coordinate sample variances (the diagonal of S)."""
        if self.n < 2:
            raise InvalidArgument("samples", self.n, "need at least 2 draws for a covariance")
        d = self.scatter if self.diagonal else torch.diagonal(self.scatter)
        return d / (self.n - 1)

    def q_variance(self) -> float:
        """Sample variance of :math:`q_i = \\|Y_i\\|^2`."""
        return self.q_m2 / (self.n - 1) if self.n > 1 else float("inf")

    def tail_share(self) -> float:
        """Largest single draw's share of the total scatter :math:`\\operatorname{tr} C`."""
        tr = float(self.scatter.sum()) if self.diagonal else float(torch.trace(self.scatter))
        return self.max_dev2 / tr if tr > 0 else 0.0

    def frobenius2_upper(self) -> float:
        """Diagonal mode: an upper estimate of tr Σ² (quadruple mean + 2 s.e., at least Σ_k S_kk²)."""
        diag2 = float((self.variances() ** 2).sum())
        if self.fro_n < 2:
            return max(diag2, float(self.variances().sum()) ** 2)  # tr Σ² ≤ (tr Σ)²: no estimate yet
        se = math.sqrt(self.fro_m2 / (self.fro_n - 1) / self.fro_n)
        return max(diag2, self.fro_mean + 2.0 * se)


def empty_moments(p: int, *, diagonal: bool = False) -> Moments:
    """Moments of no draws in dimension ``p`` (``diagonal=True``: O(p) memory, see the module docstring)."""
    z = torch.zeros(p, dtype=torch.float64)
    sc = torch.zeros(p, dtype=torch.float64) if diagonal else torch.zeros(p, p, dtype=torch.float64)
    return Moments(0, z, sc, 0.0, 0.0, 0.0, U64, diagonal)


def _unit_roundoff(dtype: torch.dtype) -> float:
    return float(torch.finfo(dtype).eps) / 2.0


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
    u = max(m.unit_roundoff, _unit_roundoff(chunk.dtype))
    return fold_deviations(m, chunk.detach().to(device="cpu", dtype=torch.float64) - truth, u)


def fold_deviations(m: Moments, y: torch.Tensor, unit_roundoff: float = U64) -> Moments:
    """Fold already checked float64 deviations ``y = X - g`` (k, p) into ``m`` (internal fast path)."""
    return fold_batch(m, y, unit_roundoff)[0]


class Batch(NamedTuple):
    """A chunk's own statistics per coordinate: its mean and centred sum of squares (what one group of the
    independence premise keeps, :func:`verify.stats.premises.groups_add_one`)."""

    mean: torch.Tensor  # (p,)
    m2: torch.Tensor  # (p,)


#: from this many entries of a chunk on, its row norms come from a batched product (one pass, no temporary);
#: below it the elementwise form is faster
_BMM_ROWS = 100_000


def _row_squares(y: torch.Tensor) -> torch.Tensor:
    """(k,) squared norms of the rows of ``y``."""
    if y.numel() >= _BMM_ROWS:
        return (y.unsqueeze(1) @ y.unsqueeze(2)).view(-1)
    return (y * y).sum(1)


def fold_batch(
    m: Moments, y: torch.Tensor, unit_roundoff: float = U64, col_sum: torch.Tensor | None = None
) -> tuple[Moments, Batch]:
    """:func:`fold_deviations`, and the chunk's own :class:`Batch`; ``col_sum``: ``y.sum(0)`` if already computed.

    Issue 42: the chunk is read a few times and one temporary of its size is written (the deviations from its mean),
    where the fold made five: it runs on every draw of every statistical claim.
    """
    k = int(y.shape[0])
    if k == 0:
        z = torch.zeros(m.p, dtype=torch.float64)
        return m, Batch(z, z.clone())
    u = max(m.unit_roundoff, unit_roundoff)
    mean_b = (y.sum(0) if col_sum is None else col_sum) / k
    dev = y - mean_b
    if m.diagonal:
        dev2 = dev * dev
        scatter_b = dev2.sum(0)
        m2_b = scatter_b
        dev_sq = dev2.sum(1)
        del dev2
    else:
        scatter_b = dev.T @ dev
        m2_b = scatter_b.diagonal().clone()
        dev_sq = _row_squares(dev)
    del dev
    q = _row_squares(y)
    q_mean_b = float(q.mean())
    q_m2_b = float(((q - q_mean_b) ** 2).sum())
    max_dev2 = max(m.max_dev2, float(dev_sq.max()))
    batch = Batch(mean_b, m2_b)
    fro_n, fro_mean, fro_m2 = m.fro_n, m.fro_mean, m.fro_m2
    if m.diagonal and k >= 4:
        quad = y[: 4 * (k // 4)].reshape(k // 4, 4, -1)
        w1 = quad[:, 0] - quad[:, 1]
        w2 = quad[:, 2] - quad[:, 3]
        f = ((w1 * w2).sum(1) / 2.0) ** 2  # (w·w')² with w = (a-b)/√2, w' = (c-d)/√2
        fn = int(f.shape[0])
        fm = float(f.mean())
        f2 = float(((f - fm) ** 2).sum())
        tot = fro_n + fn
        dfm = fm - fro_mean
        fro_m2 = fro_m2 + f2 + dfm * dfm * fro_n * fn / tot
        fro_mean = fro_mean + dfm * fn / tot
        fro_n = tot
    if m.n == 0:
        return Moments(k, mean_b, scatter_b, q_mean_b, q_m2_b, max_dev2, u, m.diagonal, fro_n, fro_mean, fro_m2), batch
    n = m.n + k
    d = mean_b - m.mean
    mean = m.mean + d * (k / n)
    cross = d * d if m.diagonal else torch.outer(d, d)
    scatter = m.scatter + scatter_b + cross * (m.n * k / n)
    dq = q_mean_b - m.q_mean
    q_mean = m.q_mean + dq * k / n
    q_m2 = m.q_m2 + q_m2_b + dq * dq * m.n * k / n
    return Moments(n, mean, scatter, q_mean, q_m2, max_dev2, u, m.diagonal, fro_n, fro_mean, fro_m2), batch
