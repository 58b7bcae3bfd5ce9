"""Distribution functions computed as :mod:`scipy.stats` computes them, from :mod:`scipy.special` (issue 42).

``scipy.stats`` costs about a CPU-second to import in every process that touches it (each isolated worker of
``rnn-verify run``) and some 50 us of argument checking per call; the statistical engine calls a tail function at
every look. These are the very functions ``scipy.stats`` evaluates for these distributions (``norm.sf(x)`` is
``ndtr(-x)``, ``chi2.sf(x, k)`` is ``chdtrc(k, x)``, ...), so the values are the same bit for bit
(``tests/stats/test_dist.py`` compares them), at about 1 us a call and a quarter of the import. The argument order
is scipy.stats' (``x`` first, then the degrees of freedom). The tests the gate's claims use are here too:
:func:`ols_line` (``linregress``'s slope, intercept and standard error, the same numpy operations),
:func:`chisquare_p`, :func:`binomtest_half_p` and :func:`mann_whitney_p` (the same statistics and tails; the
binomial and rank tails to round-off, ``tests/stats/test_dist.py``). What is not here (``nct``, the exact
Mann-Whitney law of small samples, ...) stays with ``scipy.stats`` (:mod:`verify._lazy`).

Nothing of :mod:`verify` is imported here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

__all__ = [
    "binomtest_half_p",
    "chi2_sf",
    "chisquare_p",
    "f_sf",
    "mann_whitney_p",
    "norm_isf",
    "norm_pdf",
    "norm_ppf",
    "norm_sf",
    "ols_line",
    "t_cdf",
    "t_ppf",
    "t_sf",
]

_SQRT_2PI = float(np.sqrt(2.0 * np.pi))


def norm_sf(x: Any) -> Any:
    """Standard normal upper tail P(Z > x) (``scipy.stats.norm.sf``)."""
    return special.ndtr(-np.asarray(x, dtype=np.float64))


def norm_ppf(q: Any) -> Any:
    """Standard normal quantile (``scipy.stats.norm.ppf``)."""
    return special.ndtri(q)


def norm_isf(q: Any) -> Any:
    """Standard normal upper quantile: P(Z > x) = q (``scipy.stats.norm.isf``)."""
    return -special.ndtri(q)


def norm_pdf(x: Any) -> Any:
    """Standard normal density (``scipy.stats.norm.pdf``)."""
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-(x**2) / 2.0) / _SQRT_2PI


def chi2_sf(x: Any, df: Any) -> Any:
    """Chi-squared upper tail (``scipy.stats.chi2.sf``)."""
    return special.chdtrc(df, x)


def f_sf(x: Any, dfn: Any, dfd: Any) -> Any:
    """F distribution upper tail (``scipy.stats.f.sf``)."""
    return special.fdtrc(dfn, dfd, x)


def t_cdf(x: Any, df: Any) -> Any:
    """Student's t distribution function (``scipy.stats.t.cdf``)."""
    return special.stdtr(df, x)


def t_sf(x: Any, df: Any) -> Any:
    """Student's t upper tail (``scipy.stats.t.sf``)."""
    return special.stdtr(df, -np.asarray(x, dtype=np.float64))


def t_ppf(q: Any, df: Any) -> Any:
    """Student's t quantile (``scipy.stats.t.ppf``)."""
    return special.stdtrit(df, q)


def ols_line(x: Any, y: Any) -> tuple[float, float, float]:
    """Least-squares line of ``y`` on ``x``: (slope, intercept, standard error of the slope), as
    ``scipy.stats.linregress`` computes them (means, the biased covariance matrix, r clipped to [-1, 1])."""
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = xa.size
    xmean, ymean = np.mean(xa, None), np.mean(ya, None)
    ssxm, ssxym, _, ssym = np.cov(xa, ya, bias=True).flat
    if ssxm == 0.0 or ssym == 0.0:
        r = np.nan if ssxym == 0 else 0.0
    else:
        r = min(1.0, max(-1.0, ssxym / np.sqrt(ssxm * ssym)))
    slope = ssxym / ssxm
    intercept = ymean - slope * xmean
    stderr = 0.0 if n == 2 else np.sqrt((1 - r**2) * ssym / ssxm / (n - 2))
    return float(slope), float(intercept), float(stderr)


def chisquare_p(counts: Any) -> float:
    """Pearson's chi-squared test of equal cell probabilities: its p-value (``scipy.stats.chisquare(counts)``)."""
    obs = np.asarray(counts, dtype=np.float64)
    expected = obs.sum() / obs.size
    stat = float(((obs - expected) ** 2 / expected).sum())
    return float(chi2_sf(stat, obs.size - 1))


def binomtest_half_p(k: int, n: int) -> float:
    """Two-sided exact binomial test of probability 1/2 (``scipy.stats.binomtest(k, n, 0.5).pvalue``): the law is
    symmetric, so the outcomes as or less likely than ``k`` are both tails beyond min(k, n - k)."""
    if n <= 0:
        raise ValueError(f"n must be positive, got {n}")
    if 2 * k == n:
        return 1.0
    return float(min(1.0, 2.0 * special.bdtr(min(k, n - k), n, 0.5)))


def _average_ranks(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks 1..n of ``v`` with ties given their average rank, and the sizes of the tie groups."""
    order = np.argsort(v, kind="mergesort")
    sv = v[order]
    new = np.r_[True, sv[1:] != sv[:-1]]
    starts = np.flatnonzero(new)
    sizes = np.diff(np.r_[starts, v.size])
    avg = starts + (sizes + 1) / 2.0  # ranks start - 1 + 1 .. start + size, averaged
    ranks = np.empty(v.size, dtype=np.float64)
    ranks[order] = np.repeat(avg, sizes)
    return ranks, sizes


def mann_whitney_p(a: Any, b: Any) -> float:
    """Two-sided Mann-Whitney U test (``scipy.stats.mannwhitneyu(a, b, alternative="two-sided").pvalue``): the
    normal approximation with tie correction and continuity correction that scipy chooses for samples of more than
    8 each or with ties; scipy's exact law otherwise."""
    x, y = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    n1, n2 = x.size, y.size
    ranks, ties = _average_ranks(np.concatenate([x, y]))
    if not (n1 > 8 and n2 > 8) and not bool((ties > 1).any()):
        from scipy import stats  # the exact law of small samples: scipy's

        return float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    n = n1 + n2
    tie_term = float((ties.astype(np.float64) ** 3 - ties).sum())
    s = np.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (u - n1 * n2 / 2 - 0.5) / s
    return float(min(1.0, 2.0 * float(norm_sf(z))))
