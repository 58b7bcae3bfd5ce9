"""Soundness of the unbiasedness tests on synthetic estimators with known means.

Each test repeats a test of :mod:`verify.stats.unbiased` R times (fixed seeds) at
error rates large enough to be measured (α = β = 0.05) and compares the count of
wrong verdicts with a binomial quantile: if the engine's true rate is at most the
stated one, the count exceeds ``binomial_upper_quantile(R, rate, 1e-4)`` with
probability ≤ 1e-4. So each of these tests has a false-fail rate ≤ 1e-4 (the
whole module ≤ 2e-3) -- under the engine's own premise (Gaussian approximation of
the mean; for t3/exponential/bounded draws it is asymptotic, which is what these
tests probe). Derandomized seeds make every run reproducible.

The calibrations at the gate's real level α = β = 1e-3 need ~10⁴ repetitions and
live in ``test_calibration_slow.py`` (``-m slow``).
"""

from __future__ import annotations

import math

import pytest
import torch

from tests.stats.synthetic import LAWS, Synthetic
from verify.stats import (
    TestOptions,
    binomial_upper_quantile,
    compare_second_moments,
    empty_moments,
    fit_rate,
    planned_test,
    sequential_test,
    squared_errors,
    update_moments,
)
from verify.stats.bounds import best_mixture_rho, norm_quantile_bound, vector_mixture_radius
from verify.stats.unbiased import _geometry
from verify.verdict import Verdict

pytestmark = pytest.mark.statistical

R = 120
ERR = 1e-4  # per-test false-fail rate (binomial tail)
OPTS = TestOptions(alpha=0.05, beta=0.05, delta=0.1, min_samples=500)
SYN = Synthetic(p=8, kappa=2.0)


def _limit(rate: float) -> int:
    return binomial_upper_quantile(R, rate, ERR)


@pytest.mark.parametrize("law", LAWS)
def test_false_fail_rate_at_most_alpha(law: str) -> None:
    """An unbiased estimator gets FAIL at rate ≤ α, for both mechanisms and every law."""
    fails = {"sequential": 0, "fixed": 0}
    for r in range(R):
        gen = torch.Generator().manual_seed(10_000 + r)
        s = SYN.sampler(law)
        seq = sequential_test(s, SYN.g, options=OPTS, generator=gen, max_samples=200_000, first=500)
        fix = planned_test(s, SYN.g, options=OPTS, generator=gen, max_samples=200_000, pilot=500)
        fails["sequential"] += seq.verdict is Verdict.FAIL
        fails["fixed"] += fix.verdict is Verdict.FAIL
    assert fails["sequential"] <= _limit(OPTS.alpha), fails
    assert fails["fixed"] <= _limit(OPTS.alpha), fails


@pytest.mark.parametrize("law", ["gauss", "t3"])
def test_planned_size_reaches_pass_and_sequential_is_cheaper(law: str) -> None:
    """At the planner's M an unbiased estimator PASSes w.p. ≥ 1 − γ − α (γ = β); sequential uses fewer draws."""
    misses, ratios = 0, []
    for r in range(R):
        gen = torch.Generator().manual_seed(20_000 + r)
        s = SYN.sampler(law)
        fix = planned_test(s, SYN.g, options=OPTS, generator=gen, max_samples=10**6, pilot=500)
        misses += fix.verdict is not Verdict.PASS
        seq = sequential_test(s, SYN.g, options=OPTS, generator=gen, max_samples=10**6, first=500)
        if seq.verdict is Verdict.PASS:
            assert seq.samples_planned is not None
            ratios.append(seq.samples_used / (seq.samples_planned + 500))
    assert misses <= _limit(OPTS.miss_rate + OPTS.alpha + 0.05 * (law == "t3")), misses
    ratios.sort()
    assert len(ratios) >= R - _limit(0.1)
    assert ratios[len(ratios) // 2] < 1.0, ratios


@pytest.mark.parametrize("direction", ["top", "spread"])
def test_pass_certificate_wrong_at_most_beta_at_the_boundary(direction: str) -> None:
    """A bias of norm exactly δ·‖g‖ gets PASS at rate ≤ β, even with the FAIL side disabled (α → 1e-12)."""
    if direction == "top":
        bias = SYN.top * OPTS.delta * float(SYN.g.norm())
    else:
        v = torch.ones(SYN.p, dtype=torch.float64)
        bias = v / v.norm() * OPTS.delta * float(SYN.g.norm())
    weak_fail = TestOptions(alpha=1e-12, beta=OPTS.beta, delta=OPTS.delta, min_samples=500)
    passes = {"sequential": 0, "fixed": 0}
    for r in range(R):
        gen = torch.Generator().manual_seed(30_000 + r)
        s = SYN.sampler("gauss", bias)
        seq = sequential_test(s, SYN.g, options=weak_fail, generator=gen, max_samples=100_000, first=500)
        fix = planned_test(s, SYN.g, options=weak_fail, generator=gen, max_samples=100_000, pilot=500)
        passes["sequential"] += seq.verdict is Verdict.PASS
        passes["fixed"] += fix.verdict is Verdict.PASS
    assert passes["sequential"] <= _limit(OPTS.beta), passes
    assert passes["fixed"] <= _limit(OPTS.beta), passes


@pytest.mark.parametrize("law", ["gauss", "t3", "exp"])
def test_confidence_ball_coverage(law: str) -> None:
    """‖X̄ − μ‖ ≤ r at rate ≥ 1 − β: the fixed ball at one M, the sequential ball at every look at once."""
    beta = 0.05
    miss_fixed = miss_seq = 0
    zero = torch.zeros(SYN.p, dtype=torch.float64)
    for r in range(R):
        gen = torch.Generator().manual_seed(40_000 + r)
        x = SYN.sampler(law)(8000, gen) - SYN.g
        m = update_moments(empty_moments(SYN.p), x[:1000], zero)
        rad = norm_quantile_bound(_geometry(m).eig, math.log(1 / beta)) / math.sqrt(m.n)
        miss_fixed += float(m.mean.norm()) > rad
        mm = update_moments(empty_moments(SYN.p), x[:300], zero)
        rho = best_mixture_rho(3000, _geometry(mm).eig, beta)
        n = 300
        while True:
            if float(mm.mean.norm()) > vector_mixture_radius(n, _geometry(mm).eig, beta, rho):
                miss_seq += 1
                break
            if n >= 8000:
                break
            nxt = min(8000, math.ceil(n * 1.3))
            mm = update_moments(mm, x[n:nxt], zero)
            n = nxt
    assert miss_fixed <= _limit(beta), miss_fixed
    assert miss_seq <= _limit(beta), miss_seq


def test_cauchy_is_never_certified() -> None:
    """Draws without a mean can never be certified unbiased (the radius does not shrink; tail diagnostic)."""
    for r in range(20):
        gen = torch.Generator().manual_seed(50_000 + r)
        res = sequential_test(SYN.sampler("cauchy"), SYN.g, options=OPTS, generator=gen, max_samples=50_000)
        assert res.verdict is not Verdict.PASS


def test_second_moment_comparison_calibrated_and_powerful() -> None:
    """Welch z on squared errors: same law → rejection rate ≤ α; variance ×1.3 → detected; CI covers the ratio."""
    alpha, rej, power, cover = 0.05, 0, 0, 0
    for r in range(R):
        gen = torch.Generator().manual_seed(60_000 + r)
        s = SYN.sampler("exp")
        a = squared_errors(s(3000, gen), SYN.g)
        b = squared_errors(s(3000, gen), SYN.g)
        rej += compare_second_moments(a, b, alpha=alpha).rejected
        c = compare_second_moments(1.3 * a, b, alpha=alpha)
        power += c.rejected
        cover += c.ratio_ci[0] <= 1.3 <= c.ratio_ci[1]
    assert rej <= _limit(alpha)
    assert R - cover <= _limit(0.05)
    assert power >= R // 2


def test_slope_ci_coverage() -> None:
    """OLS and WLS slope CIs at 95 % cover the true slope at rate ≥ 0.95."""
    miss_ols = miss_wls = 0
    x = [0.0, 1.0, 2.0, 3.0, 4.0]
    for r in range(R):
        gen = torch.Generator().manual_seed(70_000 + r)
        e = torch.randn(5, generator=gen, dtype=torch.float64) * 0.3
        y = [1.0 - 1.0 * xi + float(ei) for xi, ei in zip(x, e, strict=True)]
        miss_ols += not fit_rate(x, y).contains(-1.0)
        miss_wls += not fit_rate(x, y, errors="wls", se=[0.3] * 5).contains(-1.0)
    assert miss_ols <= _limit(0.05) and miss_wls <= _limit(0.05)
