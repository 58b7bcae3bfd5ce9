r"""Power of the one-sided paired t-test: how likely a comparison of n paired runs detects a stated effect.

A comparison that finds no significant difference says little unless its test could have
found one: the *power* at the stated effect :math:`\delta` (in the measure's units), the
scatter :math:`\sigma_d` of the paired differences and n pairs is

.. math::
    1 - \beta = P\big(T_{n-1,\,\nu} > t_{1-\alpha,\,n-1}\big), \qquad \nu = \frac{\delta\sqrt n}{\sigma_d},

with :math:`T_{n-1,\nu}` noncentral t (Cohen 1988, *Statistical Power Analysis for the
Behavioral Sciences*, ch. 2; the exact power of the one-sided t-test). :math:`\sigma_d` is
the sample's own standard deviation (a plug-in estimate: the power is estimated, not known).
:func:`min_detectable_effect` inverts it: the smallest effect detected with a given power.
"""

from __future__ import annotations

import math

from verify._lazy import scipy_optimize as optimize
from verify._lazy import scipy_stats as stats
from verify.errors import InvalidArgument
from verify.stats import dist

__all__ = ["min_detectable_effect", "paired_t_power"]


def _check(sd: float, n: int, alpha: float) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise InvalidArgument("n", n, "must be an integer >= 2 (paired runs)")
    if not (math.isfinite(sd) and sd >= 0.0):
        raise InvalidArgument("sd", sd, "must be a finite standard deviation >= 0")
    if not (0.0 < alpha < 1.0):
        raise InvalidArgument("alpha", alpha, "must lie in (0, 1)")


def paired_t_power(sd: float, n: int, effect: float, alpha: float) -> float:
    """Power of the one-sided paired t-test at level ``alpha`` with ``n`` pairs to detect a mean difference of
    ``effect`` (> 0, in the direction tested) when the differences scatter with standard deviation ``sd``.

    ``sd == 0`` (differences without scatter): 1.0 for a positive effect.
    """
    _check(sd, n, alpha)
    if not (math.isfinite(effect) and effect > 0.0):
        raise InvalidArgument("effect", effect, "must be a finite effect size > 0")
    if sd == 0.0:
        return 1.0
    crit = float(dist.t_ppf(1.0 - alpha, n - 1))
    return float(stats.nct.sf(crit, n - 1, effect * math.sqrt(n) / sd))


def min_detectable_effect(sd: float, n: int, alpha: float, power: float = 0.8) -> float:
    """The smallest mean difference the one-sided paired t-test at ``alpha`` with ``n`` pairs detects with
    probability ``power`` (scatter ``sd``); 0.0 when ``sd == 0``."""
    _check(sd, n, alpha)
    if not (alpha < power < 1.0):
        raise InvalidArgument("power", power, f"must lie in (alpha = {alpha}, 1)")
    if sd == 0.0:
        return 0.0
    hi = sd
    while paired_t_power(sd, n, hi, alpha) < power:
        hi *= 2.0
    return float(optimize.brentq(lambda e: paired_t_power(sd, n, e, alpha) - power, 0.0 + 1e-300, hi, xtol=1e-12 * hi))
