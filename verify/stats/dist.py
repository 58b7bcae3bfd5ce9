"""Distribution functions computed as :mod:`scipy.stats` computes them, from :mod:`scipy.special` (issue 42).

``scipy.stats`` costs about a CPU-second to import in every process that touches it (each isolated worker of
``rnn-verify run``) and some 50 us of argument checking per call; the statistical engine calls a tail function at
every look. These are the very functions ``scipy.stats`` evaluates for these distributions (``norm.sf(x)`` is
``ndtr(-x)``, ``chi2.sf(x, k)`` is ``chdtrc(k, x)``, ...), so the values are the same bit for bit
(``tests/stats/test_dist.py`` compares them), at about 1 us a call and a quarter of the import. The argument order
is scipy.stats' (``x`` first, then the degrees of freedom). Distributions and tests not listed here
(``binomtest``, ``nct``, ``linregress``, ...) stay with ``scipy.stats`` (:mod:`verify._lazy`).

Nothing of :mod:`verify` is imported here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

__all__ = ["chi2_sf", "f_sf", "norm_isf", "norm_pdf", "norm_ppf", "norm_sf", "t_cdf", "t_ppf", "t_sf"]

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
