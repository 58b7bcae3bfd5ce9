r"""Variance comparisons: two-sample tests on second moments and variance ratios with CIs.

Unbiasedness is invariant to UORO's normalizers (any positive ν-independent ρ₀,
any positive even ρ₁), so an implementation that claims to be Algorithm 1 of
Tallec & Ollivier must also match Algorithm 1's *variance*. The comparison
statistic is the mean squared error about the truth,

.. math::
    q = \|X - g\|^2,\qquad E q = \operatorname{tr}\operatorname{Cov}X + \|EX - g\|^2 ,

estimated from two independent samples A and B. :func:`compare_second_moments`
tests :math:`H_0: E q_A = E q_B` with Welch's large-sample z statistic

.. math::
    z = \frac{\bar q_A - \bar q_B}{\sqrt{s_A^2/n_A + s_B^2/n_B}}

(two-sided, level α; asymptotic, needs finite fourth moments of X -- UORO's
draws are bounded) and reports the ratio :math:`\bar q_A/\bar q_B` with a
delta-method confidence interval on the log scale,
:math:`\log\bar q_A - \log\bar q_B \pm z_{1-c/2}\sqrt{s_A^2/(n_A\bar q_A^2) + s_B^2/(n_B\bar q_B^2)}`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from verify._validate import require_probability
from verify.errors import InvalidArgument
from verify.stats import dist
from verify.stats.moments import Moments

__all__ = ["MomentComparison", "compare_second_moments", "draws_to_separate", "log_mean_with_se", "squared_errors"]


@dataclass(frozen=True)
class MomentComparison:
    """Two-sample comparison of mean squared errors (A vs B)."""

    mean_a: float
    mean_b: float
    n_a: int
    n_b: int
    ratio: float
    ratio_ci: tuple[float, float]
    level: float
    z: float
    pvalue: float
    alpha: float

    @property
    def rejected(self) -> bool:
        """H0 (equal second moments) rejected at level α."""
        return self.pvalue <= self.alpha

    def to_data(self) -> dict[str, Any]:
        return {
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "ratio": self.ratio,
            "ratio_ci": list(self.ratio_ci),
            "z": self.z,
            "pvalue": self.pvalue,
            "rejected": self.rejected,
        }


def squared_errors(draws: torch.Tensor, truth: torch.Tensor) -> torch.Tensor:
    """Per-draw squared errors :math:`\\|X_i - g\\|^2` (float64), shape (M,)."""
    if draws.dim() != 2 or truth.dim() != 1 or draws.shape[1] != truth.shape[0]:
        raise InvalidArgument("draws", f"shapes {tuple(draws.shape)} vs truth {tuple(truth.shape)}", "need (M,p), (p,)")
    y = draws.detach().to(dtype=torch.float64, device="cpu") - truth.detach().to(dtype=torch.float64, device="cpu")
    return (y * y).sum(1)


def _summ(x: torch.Tensor | Moments) -> tuple[float, float, int]:
    if isinstance(x, Moments):
        return x.q_mean, x.q_variance(), x.n
    if x.dim() != 1 or x.numel() < 2:
        raise InvalidArgument("q", f"tensor of shape {tuple(x.shape)}", "need a vector of >= 2 squared errors")
    xd = x.detach().to(dtype=torch.float64)
    if not bool(torch.isfinite(xd).all()):
        raise InvalidArgument("q", "non-finite values", "squared errors must be finite")
    return float(xd.mean()), float(xd.var()), int(xd.numel())


def log_mean_with_se(x: torch.Tensor | Moments) -> tuple[float, float]:
    """:math:`\\log\\bar q` and its delta-method standard error :math:`s_q/(\\sqrt n\\,\\bar q)`."""
    mean, var, n = _summ(x)
    if mean <= 0:
        raise InvalidArgument("q", mean, "mean squared error must be > 0 for a log scale")
    return math.log(mean), math.sqrt(var / n) / mean


def compare_second_moments(
    a: torch.Tensor | Moments, b: torch.Tensor | Moments, *, alpha: float = 1e-3, level: float = 0.95
) -> MomentComparison:
    """Welch two-sample z test of :math:`E q_A = E q_B` and the ratio's CI (module docstring).

    ``a``/``b``: per-draw squared errors (1-D tensors) or :class:`Moments` of the
    draws about the same truth.
    """
    alpha = require_probability("alpha", alpha)
    level = require_probability("level", level)
    ma, va, na = _summ(a)
    mb, vb, nb = _summ(b)
    se = math.sqrt(va / na + vb / nb)
    z = (ma - mb) / se if se > 0 else (0.0 if ma == mb else math.copysign(math.inf, ma - mb))
    pval = float(2.0 * dist.norm_sf(abs(z)))
    if ma > 0 and mb > 0:
        lse = math.sqrt(va / (na * ma * ma) + vb / (nb * mb * mb))
        q = float(dist.norm_ppf(0.5 + level / 2))
        lr = math.log(ma / mb)
        ci = (math.exp(lr - q * lse), math.exp(lr + q * lse))
        ratio = ma / mb
    else:
        ratio, ci = (math.nan, (math.nan, math.nan))
    return MomentComparison(ma, mb, na, nb, ratio, ci, level, z, pval, alpha)


def draws_to_separate(
    mean_a: float, var_a: float, mean_b: float, var_b: float, *, alpha: float, beta: float, safety: float = 1.5
) -> float:
    r"""Draws per sample that :func:`compare_second_moments` needs to reject E q_A = E q_B (two-sided, level
    ``alpha``) with probability ≥ 1 − ``beta``, when the true moments of q are the given ones.

    With M draws on each side Welch's z is approximately
    :math:`N(\Delta\sqrt M/\sigma, 1)`, :math:`\Delta = E q_A - E q_B`, :math:`\sigma^2 = V_A + V_B`, so
    :math:`M = ((z_{\alpha/2} + z_\beta)\,\sigma/\Delta)^2`. The normal approximation is optimistic for the
    heavy right tails that squared errors have (the variance estimate in z is itself noisy), hence the
    ``safety`` factor (1.5 by default; the gate calibration measures the catch rate this gives). Returns
    ``inf`` when the two means are equal.
    """
    alpha = require_probability("alpha", alpha)
    beta = require_probability("beta", beta)
    delta = abs(float(mean_a) - float(mean_b))
    sigma2 = float(var_a) + float(var_b)
    if delta == 0.0 or not math.isfinite(delta) or not math.isfinite(sigma2):
        return math.inf
    z = float(dist.norm_isf(alpha / 2)) + float(dist.norm_isf(beta))
    return safety * (z * z) * sigma2 / (delta * delta)
