r"""Slope fits with confidence intervals (for rates such as "variance ∝ 1/r").

:func:`fit_slope` fits :math:`y = a + b x` by

* ordinary least squares when no standard errors are given: the CI is
  :math:`\hat b \pm t_{n-2,1-c/2}\,\mathrm{se}(\hat b)` with the residual variance
  (exact under i.i.d. Gaussian residuals);
* weighted least squares with known standard errors :math:`\sigma_i` of the
  :math:`y_i` (e.g. from the delta method on log-variances): weights
  :math:`1/\sigma_i^2`, :math:`\mathrm{se}(\hat b)=\big(\sum w_i (x_i-\bar x_w)^2\big)^{-1/2}`
  and a normal CI; the χ² goodness of fit :math:`\sum w_i r_i^2` on n − 2
  degrees of freedom is reported (a large value means the model, not the noise,
  explains the scatter).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats

from verify._validate import require_probability
from verify.errors import InvalidArgument

__all__ = ["SlopeFit", "fit_slope"]


@dataclass(frozen=True)
class SlopeFit:
    """A fitted line with the slope's confidence interval at ``level``."""

    slope: float
    intercept: float
    slope_se: float
    ci: tuple[float, float]
    level: float
    n: int
    chi2: float | None = None
    chi2_pvalue: float | None = None

    def contains(self, value: float) -> bool:
        return self.ci[0] <= value <= self.ci[1]


def fit_slope(
    x: Sequence[float], y: Sequence[float], se: Sequence[float] | None = None, level: float = 0.95
) -> SlopeFit:
    """Least-squares slope of ``y`` on ``x`` with a CI (OLS, or WLS with known ``se``)."""
    level = require_probability("level", level)
    xs, ys = [float(v) for v in x], [float(v) for v in y]
    n = len(xs)
    if n != len(ys):
        raise InvalidArgument("y", f"{len(ys)} values", f"need as many as x ({n})")
    if any(not math.isfinite(v) for v in xs + ys):
        raise InvalidArgument("x/y", (xs, ys), "must be finite")
    if se is None:
        if n < 3:
            raise InvalidArgument("x", n, "an OLS slope CI needs at least 3 points")
        xm, ym = sum(xs) / n, sum(ys) / n
        sxx = sum((a - xm) ** 2 for a in xs)
        if sxx <= 0:
            raise InvalidArgument("x", xs, "x values must not all be equal")
        b = sum((a - xm) * (c - ym) for a, c in zip(xs, ys, strict=True)) / sxx
        a0 = ym - b * xm
        rss = sum((c - a0 - b * a) ** 2 for a, c in zip(xs, ys, strict=True))
        s_b = math.sqrt(rss / (n - 2) / sxx)
        q = float(stats.t.ppf(0.5 + level / 2, n - 2))
        return SlopeFit(b, a0, s_b, (b - q * s_b, b + q * s_b), level, n)
    ses = [float(v) for v in se]
    if len(ses) != n or any(not (math.isfinite(v) and v > 0) for v in ses):
        raise InvalidArgument("se", ses, f"need {n} finite standard errors > 0")
    if n < 2:
        raise InvalidArgument("x", n, "a slope needs at least 2 points")
    w = [1.0 / v**2 for v in ses]
    sw = sum(w)
    xm = sum(wi * a for wi, a in zip(w, xs, strict=True)) / sw
    ym = sum(wi * c for wi, c in zip(w, ys, strict=True)) / sw
    sxx = sum(wi * (a - xm) ** 2 for wi, a in zip(w, xs, strict=True))
    if sxx <= 0:
        raise InvalidArgument("x", xs, "x values must not all be equal")
    b = sum(wi * (a - xm) * (c - ym) for wi, a, c in zip(w, xs, ys, strict=True)) / sxx
    a0 = ym - b * xm
    s_b = 1.0 / math.sqrt(sxx)
    q = float(stats.norm.ppf(0.5 + level / 2))
    chi2 = sum(wi * (c - a0 - b * a) ** 2 for wi, a, c in zip(w, xs, ys, strict=True))
    chi2_p = float(stats.chi2.sf(chi2, n - 2)) if n > 2 else None
    return SlopeFit(b, a0, s_b, (b - q * s_b, b + q * s_b), level, n, chi2, chi2_p)
