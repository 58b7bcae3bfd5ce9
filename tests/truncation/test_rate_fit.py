"""fit_log_rate / rate_verdict: log(e_k/k) on k through the rate engine, Newey–West errors (DESIGN 'Rates')."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from verify.truncation.rate_fit import RATE_DECADES, fit_log_rate, informative, rate_verdict


def test_exact_geometric_decay_gives_log_lambda() -> None:
    lam = 0.7
    ks = list(range(1, 40))
    fit = fit_log_rate(ks, [5.0 * k * lam**k for k in ks], floor=0.0)
    assert fit is not None
    assert fit.slope == pytest.approx(math.log(lam), abs=1e-12)
    assert rate_verdict(fit, math.log(lam)) == "consistent"
    assert rate_verdict(fit, math.log(0.9)) == "consistent"  # faster than 0.9^k
    assert rate_verdict(fit, math.log(0.5)) == "slower"  # slower than 0.5^k on an informative window


def test_interval_close_to_ols_for_independent_noise_and_covers_the_truth() -> None:
    rng = np.random.default_rng(3)
    covered, ratios = 0, []
    for _ in range(200):
        ks = list(range(1, 41))
        errs = [k * math.exp(-0.25 * k + 0.3 * rng.standard_normal()) for k in ks]
        fit = fit_log_rate(ks, errs, floor=0.0)
        assert fit is not None
        covered += fit.lo <= -0.25 <= fit.hi
        ols = scipy.stats.linregress(ks, [math.log(e / k) for k, e in zip(ks, errs, strict=True)])
        ratios.append((fit.hi - fit.lo) / (2 * scipy.stats.t.ppf(0.995, 38) * ols.stderr))
    assert covered >= 190  # nominal 99%: >= 95% of 200 (binomial lower tail ~1e-4)
    assert 0.7 < float(np.median(ratios)) < 1.3


def test_floor_and_premise() -> None:
    ks = list(range(1, 10))
    assert fit_log_rate(ks, [1e-20] * 9, floor=1e-15) is None  # below the round-off floor
    fit = fit_log_rate([1, 2, 3, 4, 5], [1.0, 1.1, 0.9, 1.2, 1.0], floor=0.0)
    assert fit is not None and not informative(fit, math.log(0.9))  # 4 * 0.105 < 2 decades
    assert rate_verdict(fit, math.log(0.9)) in ("consistent", "not informative")
    assert RATE_DECADES == 2.0


def test_one_sided_adjusted_bound() -> None:
    rng = np.random.default_rng(5)
    ks = list(range(1, 30))
    errs = [k * math.exp(-0.3 * k + 0.2 * rng.standard_normal()) for k in ks]
    fit = fit_log_rate(ks, errs, floor=0.0)
    assert fit is not None and fit.dof == len(ks) - 2
    # one-sided 99.5% bound = lower end of the two-sided 99% interval
    assert fit.lower(0.005) == pytest.approx(fit.lo, rel=1e-12)
    assert fit.lower(1e-6) < fit.lower(1e-3) < fit.lower(0.005)
    assert rate_verdict(fit, fit.lower(1e-6) + 1e-9, 1e-6) == "consistent"
    assert rate_verdict(fit, fit.lower(1e-6) - 1e-9, 1e-6) != "consistent"
