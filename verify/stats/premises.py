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

3. **Heavy tails**: one draw's share of the scatter (the diagnostic of :mod:`verify.stats.unbiased`), and, so that
   one infinite-variance coordinate among many finite ones is not diluted (issue 39), **Hill's tail index per
   coordinate and per tested direction** (:func:`tail_index`): Hill (1975), *A simple general approach to
   inference about the tail of a distribution*, Ann. Statist. 3, eq. (1.2), on each tail of the deviations from
   the median with the k = ⌊√n⌋ largest order statistics. A variance is finite only if the tail index exceeds 2;
   an estimate below :data:`TAIL_INDEX_MIN` = 2 fails the premise of every Gaussian test that loads on it (no
   FAIL from them, no PASS), and the INCONCLUSIVE names the coordinate ("coordinate 0: tail index ≈ 1.5, variance
   not finite"). Measured (n = 2000, k = 44, ``python -m verify.bench.premises``): N(0, 1) coordinates give 4-6
   (the smallest of 22 below 4.04 in 1 seed in 1000), a centred Pareto(1.5) 1.4 (median; 99 % below 2.0);
   Student-t with 3 degrees of freedom sits at the boundary (about 2.0-2.5; the smallest of 22 below 2 in about
   half the seeds): its PASS may become INCONCLUSIVE, never a FAIL.

4. **Independence of the draws** (issue 39): the engine records the draws in *groups* -- each sampler call one
   group (a given sample of unknown calls: :data:`BLOCKS_PER_CALL` consecutive blocks) -- and compares the
   variation of the group means with the variation within the groups: per noisy coordinate and per tested
   direction, a one-way analysis of variance (F = [SS_between/(G−1)] / [SS_within/(n−G)] ~ F(G−1, n−G) for
   i.i.d. draws; Fisher 1925, §42; Bonferroni over them, :func:`between_within`), and jointly, the group means
   whitened on the resolved range (χ² with (G−1)·r dof); half the level each. The level is the quantity's α,
   at least :data:`INDEPENDENCE_LEVEL` (a false INCONCLUSIVE, never a false FAIL). Draws that share a random
   offset within one sampler call fail it when the calls differ enough; the test then says so (INCONCLUSIVE),
   never FAIL and never PASS. What a sampler must guarantee: the draws of one call are i.i.d. and independent of
   every other call's (a batched sampler with one random start per call violates it). An offset shared within a
   *single* call is indistinguishable from a bias on that call's draws: :func:`~verify.stats.unbiased.planned_test`
   and :func:`~verify.stats.unbiased.sequential_test` therefore draw in :data:`~verify.stats.unbiased.SPLIT_CALLS`
   calls per request and give no verdict before two calls. A weak offset the test cannot see still inflates the
   mean's variance: every look multiplies the covariance by the design effect the calls show
   (:func:`~verify.stats.unbiased.design_effect`, the call as the unit; measured in
   ``reports/calibration/issue39-calls``).

The directions are data-dependent (the Hotelling direction :math:`S^+\bar Y`), so the skewness is
measured on a systematic subsample of the draws kept in memory (:class:`Reservoir`: every s-th draw,
s doubling when it fills; at most ``capacity`` draws and ``max_entries`` numbers).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from verify.stats import dist

__all__ = [
    "BLOCKS_PER_CALL",
    "INDEPENDENCE_LEVEL",
    "TAIL_INDEX_MIN",
    "Groups",
    "Reservoir",
    "ball_skew_allowance",
    "between_within",
    "declared_flat",
    "edgeworth_term",
    "empty_groups",
    "empty_reservoir",
    "groups_add",
    "max_skewness",
    "reservoir_add",
    "shrink_deviations",
    "skew_allowance",
    "skewness_along",
    "tail_index",
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
#: a variance is finite only where the tail index exceeds 2 (Hill's estimate below this fails the premise)
TAIL_INDEX_MIN = 2.0
#: each sampler call (or a given sample) is split into at most this many consecutive blocks (groups)
BLOCKS_PER_CALL = 8
#: the most groups kept (adjacent groups are merged in pairs beyond it)
MAX_GROUPS = 256
#: the smallest family-wise level of the independence test (a false INCONCLUSIVE, never a false FAIL)
INDEPENDENCE_LEVEL = 1e-3


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
    data = torch.cat([r.data, y[(-r.seen) % r.stride :: r.stride]])  # the rows whose global index % stride == 0
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
    z = float(dist.norm_isf(level / 2.0))
    return 2.0 * gamma * gamma * z * (z**4 + 2.0 * z * z - 3.0) * float(dist.norm_pdf(z)) / (18.0 * max(m, 1))


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
    z = float(dist.norm_isf(beta / 2.0))
    unit = (2.0 * z * z + 1.0) * float(dist.norm_pdf(z)) / (6.0 * math.sqrt(max(m, 1)))
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


def tail_index(z: torch.Tensor) -> torch.Tensor:
    r"""Hill's tail index of each column of ``z`` (n, K): the smaller of its two tails' estimates.

    On each tail of the deviations d from the column median, with :math:`d_{(1)} \ge \dots \ge d_{(k+1)} > 0` the
    k + 1 largest (k = ⌊√n⌋, at least 10):
    :math:`\hat\alpha = \big(\frac1k\sum_{i\le k}\ln(d_{(i)}/d_{(k+1)})\big)^{-1}`
    (Hill 1975, eq. (1.2)). Scale-free (ratios only). +inf where a tail has fewer than k + 1 positive deviations
    or no spread among them (bounded or lattice tails: no evidence of a heavy tail), and for n < 20.
    """
    n, kk = int(z.shape[0]), int(z.shape[1])
    out = torch.full((kk,), math.inf, dtype=F64)
    if n < 20 or kk == 0:
        return out
    k = max(10, math.isqrt(n))
    if k + 1 > n:
        return out
    d = z - z.median(0).values
    for side in (d, -d):
        top = torch.topk(side, k + 1, dim=0).values  # (k + 1, K), descending
        thr = top[k]
        ok = thr > 0
        h = torch.log(top[:k] / torch.where(ok, thr, torch.ones_like(thr))).mean(0)
        est = torch.where(ok & (h > 0), 1.0 / torch.where(h > 0, h, torch.ones_like(h)), torch.full_like(h, math.inf))
        out = torch.minimum(out, est)
    return out


class Groups(NamedTuple):
    """Per-group counts, means and centred sums of squares of S series (the draws' coordinates and projections)."""

    size: torch.Tensor  # (G,) float64: draws per group
    mean: torch.Tensor  # (G, S)
    m2: torch.Tensor  # (G, S)
    calls: int


def empty_groups(series: int) -> Groups:
    z = torch.zeros(0, series, dtype=F64)
    return Groups(torch.zeros(0, dtype=F64), z, z.clone(), 0)


def groups_add(
    gr: Groups, v: torch.Tensor, *, blocks: int = BLOCKS_PER_CALL, max_groups: int = MAX_GROUPS, calls: int = 1
) -> Groups:
    """Fold the series values ``v`` (k, S) of ``calls`` sampler calls as up to ``blocks`` consecutive groups; merge
    pairs beyond ``max_groups`` (adjacent groups of i.i.d. draws merged are still i.i.d. groups)."""
    k = int(v.shape[0])
    if k == 0:
        return gr
    nb = max(1, min(blocks, k // 2))
    q, r = divmod(k, nb)  # torch.tensor_split's blocks: the first r of q + 1 rows, the rest of q
    cnt = torch.tensor([float(q + 1)] * r + [float(q)] * (nb - r), dtype=F64)
    if r == 0:  # equal blocks: one reshape, no loop over the blocks
        w = v.reshape(nb, q, -1)
        mean = w.mean(1)
        m2 = ((w - mean[:, None, :]) ** 2).sum(1)
    else:
        idx = torch.repeat_interleave(torch.arange(nb), cnt.to(torch.long))
        mean = torch.zeros(nb, v.shape[1], dtype=v.dtype).index_add_(0, idx, v) / cnt[:, None].to(v.dtype)
        m2 = torch.zeros_like(mean).index_add_(0, idx, (v - mean[idx]) ** 2)
    return _appended(gr, cnt, mean, m2, calls, max_groups)


def groups_add_one(
    gr: Groups, size: int, mean: torch.Tensor, m2: torch.Tensor, *, calls: int = 1, max_groups: int = MAX_GROUPS
) -> Groups:
    """Fold one group given by its statistics (``size`` draws, their ``mean`` (S,) and centred sums of squares
    ``m2`` (S,): a call's :class:`~verify.stats.moments.Batch`, issue 42) -- :func:`groups_add` with one block."""
    cnt = torch.tensor([float(size)], dtype=F64)
    return _appended(gr, cnt, mean.reshape(1, -1), m2.reshape(1, -1), calls, max_groups)


def _appended(
    gr: Groups, cnt: torch.Tensor, mean: torch.Tensor, m2: torch.Tensor, calls: int, max_groups: int
) -> Groups:
    count, mu, ss = torch.cat([gr.size, cnt]), torch.cat([gr.mean, mean]), torch.cat([gr.m2, m2])
    while count.numel() > max_groups:
        g2 = (count.numel() // 2) * 2
        a, b = slice(0, g2, 2), slice(1, g2, 2)
        na, nb_ = count[a], count[b]
        tot = na + nb_
        dlt = mu[b] - mu[a]
        merged_mu = mu[a] + dlt * (nb_ / tot)[:, None]
        merged_ss = ss[a] + ss[b] + dlt * dlt * (na * nb_ / tot)[:, None]
        count = torch.cat([tot, count[g2:]])
        mu = torch.cat([merged_mu, mu[g2:]])
        ss = torch.cat([merged_ss, ss[g2:]])
    return Groups(count, mu, ss, gr.calls + calls)


def between_within(
    gr: Groups, mask: torch.Tensor | None = None, budget: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""One-way analysis of variance of each series over the groups: (F statistics, p-values) (S,).

    :math:`F = \frac{\sum_g n_g(\bar y_g - \bar y)^2/(G-1)}{\sum_g SS_g/(n-G)}` ~ F(G − 1, n − G) when the draws
    are i.i.d. (exact for Gaussian draws, asymptotic otherwise). p = 1 where a series has no within-group
    variation or ``mask`` (S,) is False, and for fewer than 2 groups. ``budget`` (S,): the round-off of a group
    mean; each group's deviation from the grand mean is shrunk by it first (round-off that differs between calls --
    a batch size changes the order of a sum -- is neither bias nor dependence).
    """
    s = int(gr.mean.shape[1])
    ones = torch.ones(s, dtype=F64)
    G = int(gr.size.numel())
    n = float(gr.size.sum())
    if G < 2 or n - G < 1:
        return torch.zeros(s, dtype=F64), ones
    w = gr.size / n
    grand = (w[:, None] * gr.mean).sum(0)
    dev = shrink_deviations(gr.mean - grand, budget)
    # rescaled per series before squaring (no underflow or overflow whatever the draws' scale)
    scale = torch.maximum(dev.abs().amax(0), torch.sqrt(gr.m2.amax(0)))
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    between = (gr.size[:, None] * (dev / scale) ** 2).sum(0) / (G - 1)
    within = (gr.m2 / scale**2).sum(0) / (n - G)
    ok = within > 0
    if mask is not None:
        ok = ok & mask
    f = torch.where(ok, between / torch.where(ok, within, ones), torch.zeros_like(between))
    pv = torch.as_tensor(dist.f_sf(f.numpy(), G - 1, n - G), dtype=F64)
    return f, torch.where(ok, pv, ones)


def shrink_deviations(dev: torch.Tensor, budget: torch.Tensor | None) -> torch.Tensor:
    """sign(d)·max(|d| − b, 0) per column: what of a group mean's deviation exceeds its round-off budget b."""
    if budget is None:
        return dev
    return torch.sign(dev) * (dev.abs() - budget).clamp(min=0.0)
