r"""Premises of the unbiasedness tests: what the draws must show before a Gaussian verdict, and what they cannot show.

Issue 22. The tests of :mod:`verify.stats.unbiased` approximate the law of the mean
:math:`\bar Y = \bar X - g` by a Gaussian with the plug-in covariance. Three situations break that
approximation while every stated moment premise (i.i.d., finite covariance) holds; this module
detects them, so that the engine checks them **before it may FAIL as well as before it may PASS**.

1. **No observed variation is not determinism.** A coordinate (or, on the covariance's resolved
   block, a direction) in which M draws of a stochastic estimator show no variation beyond
   round-off may still vary on an event not yet seen. Whatever that event's probability q, it
   was missed M times; the draws only bound q. The bound used (:func:`unseen_mass`) is the sample
   compression bound of Littlestone & Warmuth (1986; Floyd & Warmuth 1995): the draws' affine hull is
   spanned by k = r + 1 of them (r: the dimension in which they vary) and contains all M, so with
   probability ≥ 1 − β the chance that a fresh draw leaves it is

   .. math::
       q \le t = \frac{k \ln(eM/k) + \ln(1/\beta)}{M - k} .

   An event of probability ≤ t moves the mean by at most :math:`t\,(R + \|E[X\mid\neg E] - g\|)` when
   the estimator **declares** an almost-sure radius :math:`\|X - g\|_2 \le R` (``draw_radius``);
   without a declaration it can move it by any amount, so the unvaried part can neither be certified
   nor be evidence of bias. Determinism comes from a declaration: ``event_floor`` = p (any coordinate
   or direction in which the estimator is not almost surely constant differs from its typical value
   with probability ≥ p per draw: 2⁻ⁿ for a function of one step's n Rademacher signs, 1 for a
   non-constant function of continuous noise) makes M ≥ ln(10³/ε)/p flat draws enough
   (:func:`declared_flat`: the chance of a miss is ≤ ε/10³), never a zero sample variance alone.

2. **Skew.** The FAIL side's tests are two-sided (|t| and Hotelling's quadratic form), so the first
   Edgeworth term of the Studentized mean cancels; the leading skewness term of the two-sided tail at
   critical value z is :math:`\frac{2}{M}\frac{\gamma^2}{18} z (z^4+2z^2-3)\varphi(z)` (Hall 1992,
   *The Bootstrap and Edgeworth Expansion*, §2.6). A test at two-sided level a is trusted only when
   that term is at most a itself (the actual level at most ~2a: the engine spends about half of its
   α), judged with the sample skewness along the directions that drive the verdict: each random
   direction for its t-test, the most skewed whitened direction (:func:`max_skewness`) for Hotelling's
   T² at level a/r. Lognormal draws with σ = 2 (γ ≈ 414) fail this at any affordable M -- the test
   then says so instead of FAILing. The PASS certificate is a ball around the mean, but a wrong
   certificate is a one-sided event (the estimate falls short along the bias), so the first-order term
   counts there: the certificate is trusted when the skewness its radius feels -- along the noisiest
   eigen-directions, each weighted by its share of the variance (:func:`weighted_skewness`) -- moves one
   side's tail by at most β/2 (:func:`ball_skew_allowance`).

3. **Heavy tails**: one draw's share of the scatter (the diagnostic of :mod:`verify.stats.unbiased`).

The directions are data-dependent (the Hotelling direction :math:`S^+\bar Y`), so the skewness is
measured on a systematic subsample of the draws kept in memory (:class:`Reservoir`: every s-th draw,
s doubling when it fills; at most ``capacity`` draws and ``max_entries`` numbers).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from verify._lazy import scipy_stats as stats

__all__ = [
    "Reservoir",
    "ball_skew_allowance",
    "declared_flat",
    "edgeworth_term",
    "empty_reservoir",
    "max_skewness",
    "reservoir_add",
    "skew_allowance",
    "skewness_along",
    "unseen_flat_mass",
    "unseen_mass",
    "weighted_skewness",
]

F64 = torch.float64
#: draws kept for the shape diagnostics (systematic subsample) and the most numbers they may hold
CAPACITY = 4096
MAX_ENTRIES = 2_000_000
#: a declared event floor makes flat draws deterministic when a miss is 10^3 times rarer than the error rate
DECLARED_MARGIN = 1e3


class Reservoir(NamedTuple):
    """A systematic subsample of the deviations Y = X − g: draw i is kept when i % stride == 0."""

    seen: int
    stride: int
    data: torch.Tensor  # (k, p) float64
    capacity: int


def empty_reservoir(p: int, capacity: int = CAPACITY, max_entries: int = MAX_ENTRIES) -> Reservoir:
    cap = max(16, min(capacity, max_entries // max(p, 1)))
    return Reservoir(0, 1, torch.zeros(0, p, dtype=F64), cap)


def reservoir_add(r: Reservoir, y: torch.Tensor) -> Reservoir:
    """Fold a chunk of deviations (k, p) into the subsample (every stride-th draw; stride doubles when full)."""
    k = int(y.shape[0])
    if k == 0:
        return r
    idx = torch.arange(r.seen, r.seen + k)
    data = torch.cat([r.data, y[idx % r.stride == 0]])
    stride = r.stride
    while data.shape[0] > r.capacity:
        kept = torch.arange(0, r.seen + k, stride)[: data.shape[0]]  # the global indices of the rows kept so far
        data = data[kept % (2 * stride) == 0]
        stride *= 2
    return Reservoir(r.seen + k, stride, data, r.capacity)


def skewness_along(r: Reservoir, directions: torch.Tensor) -> torch.Tensor:
    """Sample skewness g₁ of the subsample projected on each row of ``directions`` (K, p); 0 where flat."""
    if r.data.shape[0] < 3 or directions.shape[0] == 0:
        return torch.zeros(directions.shape[0], dtype=F64)
    z = r.data @ directions.T
    z = z - z.mean(0)
    m2 = (z * z).mean(0)
    m3 = (z * z * z).mean(0)
    out = torch.zeros_like(m2)
    pos = m2 > 0
    out[pos] = m3[pos] / m2[pos] ** 1.5
    return out


def max_skewness(w: torch.Tensor, starts: torch.Tensor, iters: int = 8) -> float:
    r"""The largest sample skewness over unit directions of whitened draws ``w`` (n, d) (tensor power iteration).

    The directional skewness :math:`\gamma(u) = \frac1n\sum_i (u^\top w_i)^3 / (\frac1n\sum_i (u^\top w_i)^2)^{3/2}`
    is maximised by the fixed-point iteration :math:`u \leftarrow \frac1n\sum_i w_i (u^\top w_i)^2` (the
    third-moment tensor is never formed), from each row of ``starts`` (k, d). It finds skew in a rotated basis,
    which coordinates and random directions miss.
    """
    if w.shape[0] < 3 or w.shape[1] == 0:
        return 0.0
    w = w - w.mean(0)
    best = 0.0
    for u0 in starts:
        u = u0 / torch.linalg.vector_norm(u0).clamp(min=1e-300)
        for _ in range(iters):
            pr = w @ u
            nxt = (w * (pr * pr)[:, None]).mean(0)
            nrm = torch.linalg.vector_norm(nxt)
            if not nrm > 0:
                break
            u = nxt / nrm
        pr = w @ u
        m2 = float((pr * pr).mean())
        if m2 > 0:
            best = max(best, abs(float((pr**3).mean())) / m2**1.5)
    return best


def edgeworth_term(gamma: float, m: int, level: float) -> float:
    r"""Second-order Edgeworth excess of a two-sided Studentized test at ``level`` from skewness γ on m draws.

    For the Studentized mean the first-order (n^{-1/2}) term is even in z and cancels in a two-sided tail
    (and in any ball around the mean); the leading skewness term of :math:`P(|T| > z)` is
    :math:`\frac{2}{m}\,\frac{\gamma^2}{18}\,z\,(z^4 + 2z^2 - 3)\,\varphi(z)` (Hall 1992, *The Bootstrap
    and Edgeworth Expansion*, §2.6, the polynomial :math:`q_2`), z the two-sided critical value.
    """
    z = float(stats.norm.isf(level / 2.0))
    return 2.0 * gamma * gamma * z * (z**4 + 2.0 * z * z - 3.0) * float(stats.norm.pdf(z)) / (18.0 * max(m, 1))


def skew_allowance(m: int, level: float) -> float:
    """The largest |skewness| for which a two-sided Gaussian test at ``level`` on m draws is trusted: the
    second-order Edgeworth excess (:func:`edgeworth_term`) at most the level itself (actual level ≤ 2×)."""
    unit = edgeworth_term(1.0, m, level)
    return math.sqrt(level / unit) if unit > 0 else math.inf


def ball_skew_allowance(m: int, beta: float) -> float:
    r"""The largest |skewness| for which a certificate (a ball at level β) on m draws is trusted.

    The ball is two-sided, but a wrong certificate is one-sided: the mean estimate falls short of the truth along
    the bias. The first Edgeworth term moves one side's tail by :math:`\gamma(2z^2+1)\varphi(z)/(6\sqrt m)` (z the
    two-sided critical value); the certificate is trusted when that is at most β/2 (its error at most β).
    """
    z = float(stats.norm.isf(beta / 2.0))
    unit = (2.0 * z * z + 1.0) * float(stats.norm.pdf(z)) / (6.0 * math.sqrt(max(m, 1)))
    return (beta / 2.0) / unit if unit > 0 else math.inf


def weighted_skewness(w: torch.Tensor, sd: torch.Tensor, k: int = 8) -> float:
    r""":math:`\sqrt{\sum_j (\sigma_j^2/\sum\sigma^2)\,\gamma_j^2}` over the k noisiest columns of whitened draws ``w``:
    the skewness a ball around the mean feels (a direction weighs by its share of the variance)."""
    if w.shape[0] < 3 or w.shape[1] == 0:
        return 0.0
    top = torch.argsort(sd, descending=True)[: min(k, int(sd.numel()))]
    z = w[:, top] - w[:, top].mean(0)
    m2 = (z * z).mean(0)
    g = torch.where(m2 > 0, (z**3).mean(0) / m2.clamp(min=1e-300) ** 1.5, torch.zeros_like(m2))
    share = sd[top] ** 2 / float((sd**2).sum())
    return math.sqrt(float((share * g * g).sum()))


def unseen_mass(m: int, varied_rank: int, beta: float) -> float:
    r"""Sample-compression bound on the probability that a fresh draw leaves the affine hull of m draws.

    ``varied_rank``: the dimension r in which the draws vary (the hull is spanned by k = r + 1 of them).
    With probability ≥ 1 − β: :math:`q \le (k\ln(em/k) + \ln(1/\beta))/(m - k)` (1.0 when m ≤ k).
    """
    k = varied_rank + 1
    if m <= k:
        return 1.0
    return min(1.0, (k * math.log(math.e * m / k) + math.log(1.0 / beta)) / (m - k))


def unseen_flat_mass(m: int, p: int, flat: int, beta: float) -> float:
    r"""Probability bound for an event that moves any of ``flat`` coordinates (of p) that showed no variation.

    Against the first draw: with probability ≥ 1 − β, for every set D of coordinates that none of the other
    m − 1 draws moved, :math:`P(X_D \ne X_{1,D}) \le (\ln(p+1) + \ln\binom{p}{|D|} + \ln(1/\beta))/(m-1)`
    (a union bound over the sets, weighted by their size). Independent of how many other coordinates vary.
    """
    if m < 2 or flat == 0:
        return 1.0 if flat else 0.0
    log_sets = math.lgamma(p + 1) - math.lgamma(flat + 1) - math.lgamma(p - flat + 1)
    return min(1.0, (math.log(p + 1) + log_sets + math.log(1.0 / beta)) / (m - 1))


def declared_flat(m: int, event_floor: float | None, err: float) -> bool:
    """A declared event floor p makes m flat draws evidence of determinism: (1 − p)^(m−1) ≤ err/10³."""
    if event_floor is None:
        return False
    if event_floor >= 1.0:
        return m >= 2
    return (m - 1) * -math.log1p(-event_floor) >= math.log(DECLARED_MARGIN / err)
