r"""Concentration bounds used by the unbiasedness tests: fixed-sample and time-uniform.

Everything here is a closed-form inequality for a **Gaussian** vector or a
**Gaussian random walk** with covariance Σ; the tests apply them to the sample
mean of M i.i.d. draws through the multivariate central limit theorem with the
plug-in covariance S (assumption stated in :mod:`verify.stats.unbiased`).

* :func:`norm_quantile_bound` -- Laurent & Massart (2000), Lemma 1: for
  :math:`Z\sim N(0,\Sigma)` with eigenvalues :math:`\lambda_j`,

  .. math::
      P\Big(\|Z\|^2 \ge \operatorname{tr}\Sigma + 2\sqrt{x\,\operatorname{tr}\Sigma^2}
      + 2x\,\lambda_{\max}\Big) \le e^{-x}.

* :func:`normal_mixture_halfwidth` -- Robbins' normal-mixture boundary (Howard,
  Ramdas, McAuliffe & Sekhon 2021, eq. (14)): for a Gaussian random walk
  :math:`S_m` with step variance σ², mixing :math:`\exp(\lambda S_m - m\sigma^2\lambda^2/2)`
  over :math:`\lambda\sim N(0, 1/(\rho\sigma^2))` and Ville's inequality give

  .. math::
      P\Big(\exists m:\ |S_m| \ge \sigma\sqrt{(m+\rho)\big(\log(1+m/\rho) + 2\log(1/\alpha)\big)}\Big)\le\alpha .

* :func:`vector_mixture_radius` -- the same with :math:`\lambda\sim N(0, I/\rho)` in
  :math:`\mathbb R^p` (ρ in variance units): the mixture martingale is
  :math:`\det(I+m\Sigma/\rho)^{-1/2}\exp(\tfrac12 S_m^\top(\rho I+m\Sigma)^{-1}S_m)`,
  hence, time-uniformly with probability ≥ 1 − β,

  .. math::
      \|S_m\|^2 \le (\rho + m\lambda_{\max})\Big(2\log(1/\beta)+\sum_j\log(1+m\lambda_j/\rho)\Big).

* :func:`mahalanobis_mixture_threshold` -- mixing over
  :math:`\lambda\sim N(0,(\rho\Sigma)^{-1})` on the r-dimensional range of Σ:

  .. math::
      P\Big(\exists m:\ S_m^\top\Sigma^{+}S_m \ge (m+\rho)\big(2\log(1/\alpha) + r\log(1+m/\rho)\big)\Big)\le\alpha .
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

__all__ = [
    "Spectrum",
    "best_mixture_rho",
    "mahalanobis_mixture_threshold",
    "norm_quantile_bound",
    "normal_mixture_halfwidth",
    "vector_mixture_radius",
]


class Spectrum(NamedTuple):
    r"""What the bounds need of a covariance when its eigenvalues are not computed (large p).

    ``trace`` = tr Σ, ``frob`` ≥ :math:`\sqrt{\operatorname{tr}\Sigma^2}`, ``lam_max`` ≥ λ_max
    (e.g. ``frob``), ``dim`` = p. Every bound below accepts eigenvalues or a Spectrum; with a
    Spectrum it uses these upper bounds (and, for the log-determinant of the mixture,
    Jensen: :math:`\sum_j\log(1+a_j) \le p\log(1+\tfrac1p\sum_j a_j)`).
    """

    trace: float
    frob: float
    lam_max: float
    dim: int

    @staticmethod
    def of(eigs: torch.Tensor) -> Spectrum:
        lam = _clean(eigs)
        if lam.numel() == 0:
            return Spectrum(0.0, 0.0, 0.0, 0)
        return Spectrum(float(lam.sum()), float(torch.sqrt((lam * lam).sum())), float(lam.max()), int(lam.numel()))


def _clean(eigs: torch.Tensor) -> torch.Tensor:
    return eigs.detach().to(dtype=torch.float64).clamp(min=0.0)


def _summary(eigs: torch.Tensor | Spectrum) -> Spectrum:
    return eigs if isinstance(eigs, Spectrum) else Spectrum.of(eigs)


def norm_quantile_bound(eigs: torch.Tensor | Spectrum, x: float) -> float:
    r"""Upper bound on the :math:`1-e^{-x}` quantile of :math:`\|Z\|`, :math:`Z\sim N(0,\operatorname{diag}\lambda)`.

    Laurent & Massart (2000), Lemma 1 (weighted χ² upper tail):

    .. math::
        \|Z\| \le \sqrt{\textstyle\sum_j\lambda_j + 2\sqrt{x\sum_j\lambda_j^2} + 2x\max_j\lambda_j}
    """
    sp = _summary(eigs)
    if sp.dim == 0:
        return 0.0
    tr, fro, mx = sp.trace, sp.frob, sp.lam_max
    return math.sqrt(max(tr + 2.0 * math.sqrt(x) * fro + 2.0 * x * mx, 0.0))  # Laurent-Massart Lemma 1


def normal_mixture_halfwidth(m: int, sd: float, err: float, rho: float) -> float:
    r"""Time-uniform half-width for a mean after m draws (Robbins' normal mixture, Howard et al. 2021 eq. (14)).

    ``rho`` is in sample units (the boundary is tightest near m ≈ ρ·(2 log(1/err))).
    Returns :math:`\sigma\sqrt{(m+\rho)(\log(1+m/\rho)+2\log(1/\mathrm{err}))}/m`.
    """
    return sd * math.sqrt((m + rho) * (math.log1p(m / rho) + 2.0 * math.log(1.0 / err))) / m  # eq. (14)


def vector_mixture_radius(m: int, eigs: torch.Tensor | Spectrum, err: float, rho: float) -> float:
    r"""Time-uniform radius for :math:`\|\bar Y_m - \mu\|` (Gaussian mixture over :math:`\lambda\sim N(0,I/\rho)`).

    ``rho`` is in variance × sample units. Returns
    :math:`\sqrt{(\rho+m\lambda_{\max})(2\log(1/\beta)+\sum_j\log(1+m\lambda_j/\rho))}/m`.
    """
    if isinstance(eigs, Spectrum):
        mx = eigs.lam_max
        if mx <= 0.0:
            return 0.0
        a = m * eigs.trace / rho
        logdet = min(a, eigs.dim * math.log1p(a / eigs.dim))  # log(1+x) <= x; Jensen
    else:
        lam = _clean(eigs)
        mx = float(lam.max()) if lam.numel() else 0.0
        if mx <= 0.0:
            return 0.0
        logdet = float(torch.log1p(m * lam / rho).sum())
    return math.sqrt((rho + m * mx) * (2.0 * math.log(1.0 / err) + logdet)) / m


def best_mixture_rho(m_target: int, eigs: torch.Tensor | Spectrum, err: float) -> float:
    """The mixture scale ρ (variance × samples) minimising :func:`vector_mixture_radius` at ``m_target``.

    A grid search over ρ = c·m_target·λ_max, c ∈ [1e-3, 1e3]; chosen once, before
    the sequential test's later looks (the boundary is valid for any fixed ρ).
    """
    lam: torch.Tensor | Spectrum = eigs if isinstance(eigs, Spectrum) else _clean(eigs)
    mx = _summary(lam).lam_max
    if mx <= 0.0:
        return 1.0
    best_c, best_r = 1.0, math.inf
    for k in range(-30, 31):
        c = 10.0 ** (k / 10.0)
        r = vector_mixture_radius(m_target, lam, err, c * m_target * mx)
        if r < best_r:
            best_c, best_r = c, r
    return best_c * m_target * mx


def mahalanobis_mixture_threshold(m: int, rank: int, err: float, rho: float) -> float:
    r"""Time-uniform threshold for :math:`S_m^\top\Sigma^+S_m` (ρ in sample units, r = rank)."""
    return (m + rho) * (2.0 * math.log(1.0 / err) + rank * math.log1p(m / rho))
