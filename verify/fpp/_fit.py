"""Log-log slope fits with confidence intervals (internal to the FPP checks)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import stats

__all__ = ["SlopeFit", "bootstrap_slope", "loglog_slope", "mean_ci"]


class SlopeFit(NamedTuple):
    """Slope of log10(y) against log10(x), its (1 − α) confidence interval and the number of points."""

    slope: float
    lo: float
    hi: float
    intercept: float
    points: int

    def as_dict(self) -> dict[str, float]:
        return {"slope": self.slope, "ci_lo": self.lo, "ci_hi": self.hi, "intercept": self.intercept, "n": self.points}


def loglog_slope(x: Sequence[float], y: Sequence[float], alpha: float = 0.05) -> SlopeFit:
    """Ordinary least squares on (log10 x, log10 y) with a Student-t interval (needs ≥ 3 positive points)."""
    lx = np.log10(np.asarray(x, dtype=float))
    ly = np.log10(np.asarray(y, dtype=float))
    ok = np.isfinite(lx) & np.isfinite(ly)
    lx, ly = lx[ok], ly[ok]
    n = lx.size
    if n < 3:
        return SlopeFit(math.nan, math.nan, math.nan, math.nan, int(n))
    res = stats.linregress(lx, ly)
    t = stats.t.ppf(1 - alpha / 2, n - 2)
    return SlopeFit(float(res.slope), float(res.slope - t * res.stderr), float(res.slope + t * res.stderr),
                    float(res.intercept), int(n))  # fmt: skip


def bootstrap_slope(
    x: Sequence[float], samples: np.ndarray, rng: np.random.Generator, alpha: float = 0.05, resamples: int = 2000
) -> SlopeFit:
    """Slope of log10(mean over replicates) vs log10 x; CI by resampling the replicates (columns of ``samples``).

    ``samples`` has shape (len(x), K): the points share replicates, so the OLS
    interval would ignore their correlation; the percentile bootstrap does not.
    """
    lx = np.log10(np.asarray(x, dtype=float))
    K = samples.shape[1]
    point = loglog_slope(x, samples.mean(1))
    cols = rng.integers(0, K, (resamples, K))
    means = samples[:, cols].mean(-1)  # (len(x), resamples)
    ly = np.log10(np.maximum(means, 1e-300))
    xc = lx - lx.mean()
    slopes = (xc[:, None] * (ly - ly.mean(0))).sum(0) / (xc * xc).sum()
    lo, hi = np.quantile(slopes, [alpha / 2, 1 - alpha / 2])
    return SlopeFit(point.slope, float(lo), float(hi), point.intercept, point.points)


def mean_ci(values: np.ndarray, alpha: float = 0.05) -> tuple[float, float, float]:
    """Mean and two-sided Student-t (1 − α) interval of a 1-D sample."""
    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if v.size < 2:
        return m, math.nan, math.nan
    half = float(stats.t.ppf(1 - alpha / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return m, m - half, m + half
