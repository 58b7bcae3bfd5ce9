r"""The decay-rate fit of Lemma 2's :math:`k\lambda^k` (Miller & Hardt, "Stable Recurrent Models", Lemma 2).

The slope of :math:`\log(e_k/k)` against k with a Newey–West interval (DESIGN 'Rates and
bounds'), used by the ``truncation.rate`` and ``truncation.figure-1a`` checks. Moved as is from
the check module; one rate engine in :mod:`verify.stats` is to replace it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import scipy.stats
import torch

__all__ = ["RATE_DECADES", "RateFit", "fit_log_rate"]

#: decades of predicted decay λ^k a fit window must span to test the rate
RATE_DECADES = 2.0


@dataclass(frozen=True)
class RateFit:
    r"""OLS fit of :math:`\log(e_k/k) = a + s\,k` on the points above the round-off floor, with a CI on s.

    ``lo``/``hi``: the two-sided ``level`` interval (reported); ``se`` and ``dof`` give any other
    interval, e.g. the multiplicity-adjusted one-sided bound :meth:`lower` used for decisions
    when many fits are tested at once (DESIGN: multiplicity control).
    """

    slope: float
    lo: float
    hi: float
    points: int
    level: float
    k_range: tuple[int, int]
    se: float = 0.0
    dof: int = 1

    def lower(self, alpha: float) -> float:
        """One-sided lower confidence bound on the slope at level 1 − α."""
        return self.slope - float(scipy.stats.t.ppf(1 - alpha, self.dof)) * self.se

    def consistent_with(self, log_lam: float, alpha: float | None = None) -> bool:
        """The claim e_k = O(kλ^k): the CI (with ``alpha``: the one-sided 1 − α bound) reaches log λ or below."""
        return (self.lo if alpha is None else self.lower(alpha)) <= log_lam

    def informative(self, log_lam: float, decades: float = RATE_DECADES) -> bool:
        r"""The premise of a rate test: over the fitted k range, λ^k falls by at least ``decades`` decades.

        On a shorter window the fluctuations of the error (e.g. of :math:`\|h_{T-k}\|` with
        random inputs) can dominate the λ^k trend, and the fit says nothing about the rate.
        """
        return (self.k_range[1] - self.k_range[0]) * abs(log_lam) >= decades * math.log(10.0)

    def verdict(self, log_lam: float, alpha: float | None = None) -> str:
        """``"consistent"`` (the bound reaches log λ or lies below), ``"slower"`` (above log λ on an
        informative window: evidence against the rate), ``"not informative"`` (above log λ on a
        window too short to tell). ``alpha``: decide with the one-sided 1 − α bound."""
        if self.consistent_with(log_lam, alpha):
            return "consistent"
        return "slower" if self.informative(log_lam) else "not informative"


def fit_log_rate(
    ks: Sequence[int], errors: Sequence[float], floor: float, level: float = 0.99, min_points: int = 4
) -> RateFit | None:
    r"""Fit the decay rate (DESIGN 'Rates and bounds'); ``None`` when fewer than ``min_points`` lie above ``floor``.

    OLS of :math:`\log(e_k/k)` on k with a Newey–West (HAC) standard error: the residuals
    of a deterministic error curve are serially correlated (the error at k scales with
    the state :math:`\|h_{T-k}\|` at the restart point, which drifts with k), and the OLS
    interval, which assumes independent residuals, is too narrow. Bartlett weights, lag
    :math:`\lfloor 4(n/100)^{2/9}\rfloor` (the usual rule), Student-t quantile with n − 2 dof.
    """
    pts = [(k, math.log(e / k)) for k, e in zip(ks, errors, strict=True) if e > floor and e > 0]
    n = len(pts)
    if n < min_points:
        return None
    x = torch.tensor([p[0] for p in pts], dtype=torch.float64)
    y = torch.tensor([p[1] for p in pts], dtype=torch.float64)
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
    tq = float(scipy.stats.t.ppf(0.5 + level / 2, n - 2))
    slope = float(beta[1])
    return RateFit(slope, slope - tq * se, slope + tq * se, n, level, (int(x[0]), int(x[-1])), se, n - 2)
