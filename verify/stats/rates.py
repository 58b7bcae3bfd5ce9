r"""The rate engine: one fitter, one result type, one decision (DESIGN "Rates and bounds").

Every rate claim fits a straight line :math:`y = a + b x` on axes its :class:`theory.rates.Rate`
names (``log(e_k/k)`` against k, ``log10`` error against ``log10 λ``, ``log`` variance against
``log r`` ...), with a confidence interval on the slope b, and compares the interval with
the declared slope:

* :func:`fit_rate` -- the fit. The point estimate is least squares; the interval's
  standard error is chosen by what is known about the residuals (``errors=``):

  - ``"ols"`` -- i.i.d. residuals: :math:`\hat b \pm t_{n-2}\,\mathrm{se}(\hat b)` with the residual variance;
  - ``"wls"`` -- known standard errors :math:`\sigma_i` of the :math:`y_i` (e.g. the delta method on
    log-variances): weights :math:`1/\sigma_i^2`, a normal interval and the χ² goodness of fit
    :math:`\sum w_i r_i^2` on n − 2 degrees of freedom (a large value means the model, not the noise,
    explains the scatter);
  - ``"hac"`` -- serially correlated residuals (a deterministic error curve whose scale drifts along x):
    Newey–West with Bartlett weights and lag :math:`\lfloor 4(n/100)^{2/9}\rfloor`, Student t on n − 2;
  - ``"bootstrap"`` -- points that share replicates (the caller resamples the replicates and passes the
    resampled ``y`` as columns of ``y_boot``): the percentile interval of the resampled slopes.

* :func:`decide_rate` -- the decision: ``"consistent"``, ``"slower"`` (evidence against the claim),
  ``"faster"`` (an ``equal`` rate only) or ``"not informative"`` (the window cannot tell; the caller
  states why), at the two-sided ``level`` of the fit or, with ``alpha``, at a one-sided 1 − α bound
  (multiplicity-adjusted decisions).
* :func:`loglog` -- the usual axes of a power law (``log10`` of both, non-finite points dropped).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from theory.rates import Rate
from verify._validate import require_probability
from verify.errors import InvalidArgument
from verify.stats import dist

__all__ = ["ERRORS", "RateDecision", "RateFit", "decide_rate", "fit_rate", "loglog", "loglog_fit", "mean_interval"]

#: the standard-error models of :func:`fit_rate`
ERRORS = ("ols", "wls", "hac", "bootstrap")


@dataclass(frozen=True)
class RateFit:
    """A fitted line: the slope with its two-sided ``level`` interval ``[lo, hi]``, and what the interval rests on.

    ``se``/``dof`` give any other interval (``dof=None``: normal quantiles); ``x_range`` the fitted window;
    ``method`` one of :data:`ERRORS`; ``chi2``/``chi2_pvalue`` the goodness of fit of a ``wls`` fit.
    """

    slope: float
    intercept: float
    se: float
    dof: int | None
    level: float
    lo: float
    hi: float
    points: int
    x_range: tuple[float, float]
    method: str
    chi2: float | None = None
    chi2_pvalue: float | None = None

    @property
    def ci(self) -> tuple[float, float]:
        return (self.lo, self.hi)

    def contains(self, value: float) -> bool:
        return self.lo <= value <= self.hi

    def _quantile(self, p: float) -> float:
        return float(dist.norm_ppf(p)) if self.dof is None else float(dist.t_ppf(p, self.dof))

    def lower(self, alpha: float) -> float:
        """One-sided lower confidence bound on the slope at level 1 − α."""
        return self.slope - self._quantile(1 - alpha) * self.se

    def upper(self, alpha: float) -> float:
        """One-sided upper confidence bound on the slope at level 1 − α."""
        return self.slope + self._quantile(1 - alpha) * self.se

    def as_dict(self) -> dict[str, float]:
        """The fit as the reports show it: slope, interval, intercept and the number of points."""
        return {"slope": self.slope, "ci_lo": self.lo, "ci_hi": self.hi, "intercept": self.intercept, "n": self.points}


def loglog(x: Sequence[float], y: Sequence[float]) -> tuple[list[float], list[float]]:
    """``(log10 x, log10 y)`` over the points where both are finite and positive."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(xa) & np.isfinite(ya) & (xa > 0) & (ya > 0)
    lx, ly = np.log10(np.where(ok, xa, 1.0)), np.log10(np.where(ok, ya, 1.0))
    return [float(v) for v in lx[ok]], [float(v) for v in ly[ok]]


def _points(x: Sequence[float], y: Sequence[float], need: int) -> tuple[list[float], list[float]]:
    xs, ys = [float(v) for v in x], [float(v) for v in y]
    if len(xs) != len(ys):
        raise InvalidArgument("y", f"{len(ys)} values", f"need as many as x ({len(xs)})")
    if any(not math.isfinite(v) for v in xs + ys):
        raise InvalidArgument("x/y", (xs, ys), "must be finite")
    if len(xs) < need:
        raise InvalidArgument("x", len(xs), f"this fit needs at least {need} points")
    if len(set(xs)) < 2:
        raise InvalidArgument("x", xs, "x values must not all be equal")
    return xs, ys


def _ols(xs: list[float], ys: list[float], level: float) -> RateFit:
    b, intercept, se = dist.ols_line(xs, ys)  # scipy.stats.linregress's numbers
    n = len(xs)
    q = float(dist.t_ppf(0.5 + level / 2, n - 2))
    return RateFit(b, intercept, se, n - 2, level, b - q * se, b + q * se, n, (xs[0], xs[-1]), "ols")


def _wls(xs: list[float], ys: list[float], se: Sequence[float], level: float) -> RateFit:
    n = len(xs)
    ses = [float(v) for v in se]
    if len(ses) != n or any(not (math.isfinite(v) and v > 0) for v in ses):
        raise InvalidArgument("se", ses, f"need {n} finite standard errors > 0")
    w = [1.0 / v**2 for v in ses]
    sw = sum(w)
    xm = sum(wi * a for wi, a in zip(w, xs, strict=True)) / sw
    ym = sum(wi * c for wi, c in zip(w, ys, strict=True)) / sw
    sxx = sum(wi * (a - xm) ** 2 for wi, a in zip(w, xs, strict=True))
    b = sum(wi * (a - xm) * (c - ym) for wi, a, c in zip(w, xs, ys, strict=True)) / sxx
    a0 = ym - b * xm
    s_b = 1.0 / math.sqrt(sxx)
    q = float(dist.norm_ppf(0.5 + level / 2))
    chi2 = sum(wi * (c - a0 - b * a) ** 2 for wi, a, c in zip(w, xs, ys, strict=True))
    chi2_p = float(dist.chi2_sf(chi2, n - 2)) if n > 2 else None
    return RateFit(b, a0, s_b, None, level, b - q * s_b, b + q * s_b, n, (xs[0], xs[-1]), "wls", chi2, chi2_p)


def _hac(xs: list[float], ys: list[float], level: float) -> RateFit:
    n = len(xs)
    x = torch.tensor(xs, dtype=torch.float64)
    y = torch.tensor(ys, dtype=torch.float64)
    X = torch.stack([torch.ones_like(x), x], dim=1)
    XtX_inv = torch.linalg.inv(X.T @ X)
    beta = XtX_inv @ (X.T @ y)
    score = X * (y - X @ beta).unsqueeze(1)  # x_i u_i
    S = score.T @ score
    lag = int(4 * (n / 100) ** (2 / 9))
    for ell in range(1, lag + 1):
        G = score[ell:].T @ score[:-ell]
        S = S + (1 - ell / (lag + 1)) * (G + G.T)  # Bartlett weights
    se = math.sqrt(max(float((XtX_inv @ S @ XtX_inv)[1, 1]), 0.0))
    q = float(dist.t_ppf(0.5 + level / 2, n - 2))
    b = float(beta[1])
    return RateFit(b, float(beta[0]), se, n - 2, level, b - q * se, b + q * se, n, (xs[0], xs[-1]), "hac")


def _bootstrap(xs: list[float], ys: list[float], y_boot: np.ndarray, level: float) -> RateFit:
    yb = np.asarray(y_boot, dtype=float)
    if yb.ndim != 2 or yb.shape[0] != len(xs) or yb.shape[1] < 2:
        raise InvalidArgument("y_boot", getattr(yb, "shape", None), f"need ({len(xs)}, B >= 2) resampled y values")
    point = _ols(xs, ys, level)
    lx = np.asarray(xs, dtype=float)
    xc = lx - lx.mean()
    slopes = (xc[:, None] * (yb - yb.mean(0))).sum(0) / (xc * xc).sum()
    alpha = 1 - level
    lo, hi = np.quantile(slopes, [alpha / 2, 1 - alpha / 2])
    se = float(slopes.std(ddof=1))
    return RateFit(point.slope, point.intercept, se, None, level, float(lo), float(hi), len(xs), point.x_range,
                   "bootstrap")  # fmt: skip


def fit_rate(
    x: Sequence[float],
    y: Sequence[float],
    *,
    errors: str = "ols",
    se: Sequence[float] | None = None,
    y_boot: np.ndarray | None = None,
    level: float = 0.95,
) -> RateFit:
    """Least-squares slope of ``y`` on ``x`` with a two-sided ``level`` interval under the ``errors`` model.

    ``se`` (``"wls"``): the known standard errors of the ``y``; ``y_boot`` (``"bootstrap"``): the resampled
    ``y`` values, one column per resample. Raises :class:`InvalidArgument` for non-finite points, mismatched
    lengths, all-equal x, too few points (3, or 2 for ``"wls"``) or a missing ``se``/``y_boot``.
    """
    level = require_probability("level", level)
    if errors not in ERRORS:
        raise InvalidArgument("errors", errors, f"must be one of {ERRORS}")
    xs, ys = _points(x, y, 2 if errors == "wls" else 3)
    if errors == "wls":
        if se is None:
            raise InvalidArgument("se", None, "a weighted fit needs the standard errors of y")
        return _wls(xs, ys, se, level)
    if errors == "bootstrap":
        if y_boot is None:
            raise InvalidArgument("y_boot", None, "a bootstrap fit needs the resampled y values")
        return _bootstrap(xs, ys, y_boot, level)
    return _hac(xs, ys, level) if errors == "hac" else _ols(xs, ys, level)


@dataclass(frozen=True)
class RateDecision:
    """The comparison of a fit with a declared rate: ``outcome`` and the numbers it rests on."""

    outcome: str
    expected: float
    bound: tuple[float, float]
    rate: str

    @property
    def consistent(self) -> bool:
        return self.outcome == "consistent"

    def describe(self) -> str:
        return (
            f"{self.rate}: interval [{self.bound[0]:.3g}, {self.bound[1]:.3g}] vs {self.expected:.3g}: {self.outcome}"
        )


def decide_rate(
    fit: RateFit | Mapping[str, float],
    rate: Rate,
    *,
    instance_slope: float | None = None,
    alpha: float | None = None,
    informative: bool = True,
) -> RateDecision:
    """Compare ``fit`` with ``rate`` (see :mod:`theory.rates`): consistent, slower, faster or not informative.

    The interval is the fit's two-sided one or, with ``alpha``, the one-sided 1 − α bounds. ``fit`` may be a
    fit as a report stores it (:meth:`RateFit.as_dict`: ``ci_lo``/``ci_hi``; no ``alpha`` then).
    ``informative=False`` (the caller's premise: the window can tell the rate apart) turns a
    "slower"/"faster" into "not informative"; a consistent fit stays consistent.
    """
    expected = rate.expected(instance_slope)
    if isinstance(fit, RateFit):
        lo, hi = (fit.lo, fit.hi) if alpha is None else (fit.lower(alpha), fit.upper(alpha))
    elif alpha is None:
        lo, hi = float(fit["ci_lo"]), float(fit["ci_hi"])
    else:
        raise InvalidArgument("alpha", alpha, "a stored fit has only its two-sided interval: decide on a RateFit")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise InvalidArgument("fit", (lo, hi), "the interval must be finite (too few points to fit?)")
    tol = rate.tolerance
    if rate.relation == "at-most":
        outcome = "consistent" if lo <= expected + tol else "slower"
    elif lo > expected + tol:
        outcome = "slower"
    elif hi < expected - tol:
        outcome = "faster"
    else:
        outcome = "consistent"
    if outcome != "consistent" and not informative:
        outcome = "not informative"
    return RateDecision(outcome, expected, (lo, hi), rate.name)


def loglog_fit(x: Sequence[float], y: Sequence[float], level: float = 0.95) -> dict[str, float]:
    """:func:`fit_rate` (OLS) on :func:`loglog` axes, as a report stores it (:meth:`RateFit.as_dict`);
    ``nan`` slope and interval where fewer than 3 points have a logarithm."""
    lx, ly = loglog(x, y)
    if len(lx) < 3:
        nan = math.nan
        return {"slope": nan, "ci_lo": nan, "ci_hi": nan, "intercept": nan, "n": len(lx)}
    return fit_rate(lx, ly, level=level).as_dict()


def mean_interval(values: Sequence[float] | np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and two-sided Student-t ``level`` interval of a 1-D sample (``nan`` bounds for one value)."""
    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if v.size < 2:
        return m, math.nan, math.nan
    half = float(dist.t_ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return m, m - half, m + half
