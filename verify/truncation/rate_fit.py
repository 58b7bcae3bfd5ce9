r"""The decay rate of Lemma 2's :math:`k\lambda^k` on the measured errors (Miller & Hardt, "Stable Recurrent Models").

Miller & Hardt (2019, arXiv:1805.10369), Lemma 2: for a λ-contractive system the truncation error
decays like :math:`e_k = O(k\lambda^k)`. The claim ``truncation.rate`` declares it
(:data:`TRUNCATION_RATE`: the slope of :math:`\log(e_k/k)` against k is at most log λ); this
module picks the points above the round-off floor, fits them with the one rate engine
(:func:`verify.stats.rates.fit_rate`, Newey–West errors) and decides with
:func:`verify.stats.rates.decide_rate`. The premise of a rate test is a window on which λ^k falls by
at least :data:`RATE_DECADES` decades (:func:`informative`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from theory.catalog import declared_rate
from verify.stats.rates import RateFit, decide_rate, fit_rate

__all__ = ["RATE_DECADES", "TRUNCATION_RATE", "RateFit", "fit_log_rate", "informative", "rate_verdict"]

#: decades of predicted decay λ^k a fit window must span to test the rate
RATE_DECADES = 2.0
#: the declared rate of ``truncation.rate`` (theory.claims.truncation): slope of log(e_k/k) on k <= log λ
TRUNCATION_RATE = declared_rate("truncation.rate")


def fit_log_rate(
    ks: Sequence[int], errors: Sequence[float], floor: float, level: float = 0.99, min_points: int = 4
) -> RateFit | None:
    r"""Fit :math:`\log(e_k/k)` on k over the points above ``floor``; ``None`` with fewer than ``min_points``.

    Newey–West (HAC) errors (``errors="hac"``): the residuals of a deterministic error curve are
    serially correlated (the error at k scales with the state :math:`\|h_{T-k}\|` at the restart
    point, which drifts with k), and the OLS interval, which assumes independent residuals, is too narrow.
    """
    pts = [(float(k), math.log(e / k)) for k, e in zip(ks, errors, strict=True) if e > floor and e > 0]
    if len(pts) < min_points:
        return None
    return fit_rate([p[0] for p in pts], [p[1] for p in pts], errors="hac", level=level)


def informative(fit: RateFit, log_lam: float, decades: float = RATE_DECADES) -> bool:
    r"""The premise of a rate test: over the fitted k range, λ^k falls by at least ``decades`` decades.

    On a shorter window the fluctuations of the error (e.g. of :math:`\|h_{T-k}\|` with random
    inputs) can dominate the λ^k trend, and the fit says nothing about the rate.
    """
    return (fit.x_range[1] - fit.x_range[0]) * abs(log_lam) >= decades * math.log(10.0)


def rate_verdict(fit: RateFit, log_lam: float, alpha: float | None = None) -> str:
    """``"consistent"`` (the interval reaches log λ or lies below), ``"slower"`` (above log λ on an informative
    window: evidence against the rate) or ``"not informative"``; ``alpha``: the one-sided 1 − α bound."""
    return decide_rate(
        fit, TRUNCATION_RATE, instance_slope=log_lam, alpha=alpha, informative=informative(fit, log_lam)
    ).outcome
