r"""Sample-size planner for the fixed-sample unbiasedness test.

Given the bias tolerance δ (relative to :math:`\|g\|`), the error rates α (false
FAIL) and β (false PASS certificate), a *miss* probability γ (a correct estimator
fails to reach PASS at the planned size; default γ = β) and a pilot estimate of
the covariance Σ of one draw, how many draws M does the fixed-sample test of
:mod:`verify.stats.unbiased` need?

For an unbiased estimator the estimated bias :math:`D = \bar X - g` is
approximately :math:`N(0, \Sigma/M)`, so by Laurent & Massart (2000, Lemma 1)
:math:`\|D\| \le a_\gamma/\sqrt M` with probability ≥ 1 − γ, where

.. math::
    a_x = \sqrt{\operatorname{tr}\Sigma + 2\sqrt{\log(1/x)\operatorname{tr}\Sigma^2}
              + 2\log(1/x)\,\lambda_{\max}(\Sigma)} .

The test certifies :math:`\|E\hat g - g\| \le \|D\| + a_\beta/\sqrt M` and PASSes
when that is below :math:`\delta\|g\|`; it FAILs a correct estimator with
probability ≤ α. Hence with

.. math::
    M = \Big\lceil \Big(\frac{a_\gamma + a_\beta}{\delta\,\|g\|}\Big)^2 \Big\rceil

a correct estimator gets PASS with probability ≥ 1 − γ − α (asymptotically, the
pilot covariance standing in for Σ). The pilot's own uncertainty is covered by
inflating Σ by :math:`1 + 3\,\mathrm{se}(\bar q)/\bar q` (q = squared error of one
draw; a three-standard-error upper bound on :math:`\operatorname{tr}\Sigma`); the plan at the
three-standard-error *lower* bound is reported with it (``samples_low``), so a plan carries the
uncertainty of its own variance estimate. A pilot cannot resolve what it did not see (issue 22): a
coordinate with no variation, or one draw dominating the scatter, makes the plan a lower bound, and
:mod:`verify.stats.unbiased` says so in ``caveat``.
For J quantities tested on the same draws, β and γ are split J ways.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from verify._validate import require_positive, require_positive_int, require_probability
from verify.errors import InvalidArgument
from verify.stats.bounds import Spectrum, norm_quantile_bound
from verify.stats.moments import Moments
from verify.stats.roundoff import symmetric_eigh

__all__ = ["SamplePlan", "plan_from_pilot", "plan_samples"]


@dataclass(frozen=True)
class SamplePlan:
    """The planner's answer: ``samples`` draws for (δ, α, β, γ) given the covariance summary."""

    samples: int
    delta: float
    alpha: float
    beta: float
    miss: float
    truth_norm: float
    trace: float
    lam_max: float
    inflation: float
    expected_bound: float
    """Relative bias bound a correct estimator reaches at the planned size with prob. ≥ 1 − γ."""
    samples_low: int | None = None
    """The plan at the low end of the pilot's own uncertainty on tr Σ (``samples`` is the high end)."""
    caveat: str = ""
    """What the pilot could not resolve (no variation seen, one draw dominating): then ``samples`` is a lower bound."""

    @property
    def resolved(self) -> bool:
        """The pilot resolved what the plan needs (no caveat)."""
        return not self.caveat

    def describe(self) -> str:
        rng = f" (range {self.samples_low}-{self.samples} from the pilot's uncertainty)" if self.samples_low else ""
        out = (
            f"M = {self.samples}{rng} for delta={self.delta:g}, alpha={self.alpha:g}, beta={self.beta:g}, "
            f"miss={self.miss:g} (tr S/||g||^2 = {self.trace / self.truth_norm**2:.3g}, inflation {self.inflation:.3f})"
        )
        return out + (f"; a lower bound: {self.caveat}" if self.caveat else "")


def plan_samples(
    *,
    delta: float,
    alpha: float,
    beta: float,
    truth_norm: float,
    eigenvalues: torch.Tensor | Spectrum,
    miss: float | None = None,
    inflation: float = 1.0,
    min_samples: int = 2,
) -> SamplePlan:
    r"""Draws needed so that a correct estimator PASSes with prob. ≥ 1 − γ − α (see module docstring).

    ``eigenvalues``: eigenvalues of the covariance of one draw (pilot estimate), or a
    :class:`~verify.stats.bounds.Spectrum` (trace, Frobenius and λ_max bounds) for large p.
    """
    delta = require_positive("delta", delta)
    alpha = require_probability("alpha", alpha)
    beta = require_probability("beta", beta)
    miss = beta if miss is None else require_probability("miss", miss)
    truth_norm = float(truth_norm)
    if not math.isfinite(truth_norm) or truth_norm <= 0:
        raise InvalidArgument(
            "truth_norm", truth_norm, "the bias bound is relative to ||g||; ||g|| = 0 makes it undefined"
        )
    inflation = require_positive("inflation", inflation)
    min_samples = require_positive_int("min_samples", min_samples)
    if isinstance(eigenvalues, Spectrum):
        sp = eigenvalues
        lam: torch.Tensor | Spectrum = Spectrum(
            sp.trace * inflation, sp.frob * inflation, sp.lam_max * inflation, sp.dim
        )
        trace, lam_max = sp.trace * inflation, sp.lam_max * inflation
    else:
        lam = eigenvalues.detach().to(dtype=torch.float64).clamp(min=0.0) * inflation
        trace, lam_max = float(lam.sum()), float(lam.max()) if lam.numel() else 0.0
    a_beta = norm_quantile_bound(lam, math.log(1.0 / beta))  # Laurent-Massart, level beta
    a_miss = norm_quantile_bound(lam, math.log(1.0 / miss))
    target = delta * truth_norm
    m = max(min_samples, math.ceil(((a_beta + a_miss) / target) ** 2))
    bound = (a_beta + a_miss) / math.sqrt(m) / truth_norm
    return SamplePlan(
        samples=int(m),
        delta=delta,
        alpha=alpha,
        beta=beta,
        miss=miss,
        truth_norm=truth_norm,
        trace=trace,
        lam_max=lam_max,
        inflation=inflation,
        expected_bound=bound,
    )


def pilot_inflation(m: Moments) -> float:
    """1 + 3 se(q̄)/q̄ for the squared error q of one draw (upper confidence on tr Σ)."""
    if m.n < 2 or m.q_mean <= 0:
        return 1.0
    rel = math.sqrt(m.q_variance() / m.n) / m.q_mean
    return 1.0 + 3.0 * rel


def pilot_spectrum(pilot: Moments) -> torch.Tensor | Spectrum:
    """Eigenvalues of the pilot's sample covariance, or (diagonal mode) a :class:`Spectrum` of bounds."""
    if pilot.diagonal:
        var = pilot.variances().clamp(min=0.0)
        frob = math.sqrt(pilot.frobenius2_upper())
        return Spectrum(float(var.sum()), frob, max(frob, float(var.max())), pilot.p)
    eigs, _ = symmetric_eigh(pilot.covariance(), vectors=False)
    return eigs


def plan_from_pilot(
    pilot: Moments,
    truth_norm: float,
    *,
    delta: float,
    alpha: float,
    beta: float,
    miss: float | None = None,
    min_samples: int = 2,
) -> SamplePlan:
    """:func:`plan_samples` with the eigenvalues of a pilot's sample covariance, inflated by its uncertainty."""
    eigs = pilot_spectrum(pilot)
    infl = pilot_inflation(pilot)
    high = plan_samples(
        delta=delta, alpha=alpha, beta=beta, truth_norm=truth_norm, eigenvalues=eigs, miss=miss, inflation=infl,
        min_samples=min_samples,
    )  # fmt: skip
    low = plan_samples(
        delta=delta, alpha=alpha, beta=beta, truth_norm=truth_norm, eigenvalues=eigs, miss=miss,
        inflation=max(2.0 - infl, 0.05), min_samples=min_samples,
    )  # fmt: skip
    return dataclasses.replace(high, samples_low=low.samples)
