r"""Multiplicity control for families of hypothesis tests.

* :func:`bonferroni` -- reject :math:`H_i` when :math:`p_i \le \alpha/K`.
* :func:`holm` -- Holm (1979) step-down: sort :math:`p_{(1)}\le\dots\le p_{(K)}`, reject
  :math:`H_{(1)},\dots,H_{(j)}` for the largest j with
  :math:`p_{(i)} \le \alpha/(K-i+1)` for every i ≤ j. Both control the
  family-wise error rate at α under any dependence between the tests; the global
  null (no rejection at all) is rejected by both exactly when
  :math:`\min_i p_i \le \alpha/K`, Holm rejects more individual hypotheses.
"""

from __future__ import annotations

from collections.abc import Sequence

from verify._validate import require_probability
from verify.errors import InvalidArgument

__all__ = ["adjusted_pvalues", "bonferroni", "holm"]


def _check(pvalues: Sequence[float]) -> list[float]:
    ps = [float(p) for p in pvalues]
    if any(not (0.0 <= p <= 1.0) for p in ps):
        raise InvalidArgument("pvalues", ps, "p-values must lie in [0, 1]")
    return ps


def bonferroni(pvalues: Sequence[float], alpha: float) -> list[bool]:
    """Bonferroni rejections at family-wise level ``alpha``."""
    alpha = require_probability("alpha", alpha)
    ps = _check(pvalues)
    k = len(ps)
    return [p <= alpha / k for p in ps]


def holm(pvalues: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down rejections at family-wise level ``alpha`` (Holm 1979)."""
    alpha = require_probability("alpha", alpha)
    ps = _check(pvalues)
    k = len(ps)
    order = sorted(range(k), key=lambda i: ps[i])
    reject = [False] * k
    for rank, i in enumerate(order):
        if ps[i] <= alpha / (k - rank):  # Holm (1979): alpha/(K - i + 1), i 1-based
            reject[i] = True
        else:
            break
    return reject


def adjusted_pvalues(pvalues: Sequence[float], method: str = "holm") -> list[float]:
    """Multiplicity-adjusted p-values (reject at level α iff adjusted p ≤ α)."""
    ps = _check(pvalues)
    k = len(ps)
    if method == "bonferroni":
        return [min(1.0, k * p) for p in ps]
    if method != "holm":
        raise InvalidArgument("method", method, "must be 'holm' or 'bonferroni'")
    order = sorted(range(k), key=lambda i: ps[i])
    adj = [0.0] * k
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (k - rank) * ps[i]))
        adj[i] = running
    return adj
