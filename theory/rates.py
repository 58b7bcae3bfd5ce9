r"""Declared rates: what a rate claim says about a fitted slope (one form for every rate claim).

A rate claim of the catalog (:class:`theory.catalog.Claim` with ``kind="rate"``) carries a
:class:`Rate`: the axes on which the straight line is fitted, the slope the paper's
result predicts and the direction of the claim. :func:`verify.stats.rates.fit_rate`
fits the line (one result type, with a confidence interval) and
:func:`verify.stats.rates.decide_rate` compares its interval with the declared slope --
once, the same way for every rate claim:

* ``relation="at-most"`` (a decay at least as fast as predicted, e.g. :math:`e_k = O(k\lambda^k)`):
  consistent when the interval reaches ``slope + tolerance`` or below; *slower* when
  it lies entirely above (the evidence against the claim);
* ``relation="equal"`` (a proportionality, e.g. :math:`E\|\hat g_r - g\|^2 \propto 1/r`):
  consistent when the interval contains ``slope`` (± ``tolerance``); *slower* or
  *faster* when it lies entirely above or below.

``slope`` is a number, or ``None`` when it depends on the instance (Miller & Hardt's
:math:`\log\lambda`, measured on the system under test): the check passes the value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from verify.errors import InvalidArgument

__all__ = ["RELATIONS", "Rate"]

#: how a fitted slope is compared with the declared one
RELATIONS = ("at-most", "equal")


@dataclass(frozen=True)
class Rate:
    """A declared rate: ``name`` (as the paper writes it), the fit's axes, the predicted slope and the relation."""

    name: str
    x: str
    y: str
    slope: float | None
    relation: str = "at-most"
    #: a stated allowance for the fitted window's higher-order terms (0: none), in slope units
    tolerance: float = 0.0

    def __post_init__(self) -> None:
        if self.relation not in RELATIONS:
            raise InvalidArgument("Rate.relation", self.relation, f"must be one of {RELATIONS}")
        if self.slope is not None and not math.isfinite(self.slope):
            raise InvalidArgument("Rate.slope", self.slope, "must be finite (or None: given by the instance)")
        if not (math.isfinite(self.tolerance) and self.tolerance >= 0):
            raise InvalidArgument("Rate.tolerance", self.tolerance, "must be a finite number >= 0")

    def expected(self, instance_slope: float | None = None) -> float:
        """The slope to compare with: the declared number, or the instance's value where the rate depends on it."""
        if self.slope is not None:
            if instance_slope is not None:
                raise InvalidArgument("instance_slope", instance_slope, f"{self.name} declares slope {self.slope}")
            return self.slope
        if instance_slope is None or not math.isfinite(instance_slope):
            raise InvalidArgument("instance_slope", instance_slope, f"{self.name} needs the instance's slope")
        return float(instance_slope)

    def describe(self) -> str:
        rel = "<=" if self.relation == "at-most" else "="
        slope = "the instance's value" if self.slope is None else f"{self.slope:g}"
        tol = f" (allowance {self.tolerance:g})" if self.tolerance else ""
        return f"{self.name}: slope of {self.y} against {self.x} {rel} {slope}{tol}"
