r"""Exact binomial intervals: Clopper–Pearson (1934) bounds on a rate from k events in n trials.

.. math::
    \underline p = B^{-1}\!\left(\tfrac{1-c}{2};\,k,\,n-k+1\right),\qquad
    \overline p = B^{-1}\!\left(\tfrac{1+c}{2};\,k+1,\,n-k\right)

(:math:`B^{-1}` the beta quantile, c the confidence level); the one-sided upper
bound at level c uses :math:`B^{-1}(c; k+1, n-k)`. Used to report observed
false-fail rates of the gate ("consistent with α" means α is not below the lower
bound) and by the statistical tests of the engine itself.
"""

from __future__ import annotations

from verify._lazy import scipy_stats as stats
from verify._validate import require_positive_int, require_probability
from verify.errors import InvalidArgument

__all__ = ["binomial_upper_quantile", "clopper_pearson", "clopper_pearson_upper"]


def _check(k: int, n: int) -> None:
    require_positive_int("n", n)
    if isinstance(k, bool) or not isinstance(k, int) or not (0 <= k <= n):
        raise InvalidArgument("k", k, f"must be an integer in [0, n={n}]")


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Two-sided Clopper–Pearson interval for a binomial rate (k events in n trials)."""
    _check(k, n)
    level = require_probability("level", level)
    a = 1.0 - level
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


def clopper_pearson_upper(k: int, n: int, level: float = 0.95) -> float:
    """One-sided Clopper–Pearson upper bound at confidence ``level``."""
    _check(k, n)
    level = require_probability("level", level)
    return 1.0 if k == n else float(stats.beta.ppf(level, k + 1, n - k))


def binomial_upper_quantile(n: int, rate: float, err: float) -> int:
    """Smallest c with P(Binomial(n, rate) > c) ≤ err: a count that a rate ≤ ``rate`` exceeds w.p. ≤ err."""
    require_positive_int("n", n)
    rate = require_probability("rate", rate)
    err = require_probability("err", err)
    return int(stats.binom.isf(err, n, rate))
