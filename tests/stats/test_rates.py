"""The rate engine (verify.stats.rates, theory.rates): one fitter, one result type, one decision."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from theory.rates import Rate
from verify.errors import InvalidArgument
from verify.stats.rates import decide_rate, fit_rate, loglog

RATE_1_OVER_R = Rate("1/r", "log r", "log E||g_r - g||^2", -1.0, "equal")
RATE_K_LAM_K = Rate("k lambda^k", "k", "log(e_k / k)", None, "at-most")


@pytest.mark.parametrize("errors", ["ols", "hac", "wls"])
def test_a_noiseless_line_is_recovered(errors: str) -> None:
    x = [float(v) for v in range(1, 12)]
    y = [2.0 - 0.75 * v for v in x]
    fit = fit_rate(x, y, errors=errors, se=[0.1] * len(x) if errors == "wls" else None)
    assert fit.slope == pytest.approx(-0.75, abs=1e-12) and fit.intercept == pytest.approx(2.0, abs=1e-12)
    assert fit.method == errors and fit.points == 11 and fit.x_range == (1.0, 11.0)
    assert fit.lo <= -0.75 <= fit.hi


def test_ols_matches_the_textbook_interval_and_covers_at_its_level() -> None:
    rng = np.random.default_rng(11)
    x = np.arange(1.0, 16.0)
    covered = 0
    for _ in range(400):
        y = 1.0 + 0.5 * x + rng.standard_normal(x.size)
        fit = fit_rate(x, y, level=0.9)
        ref = scipy.stats.linregress(x, y)
        q = scipy.stats.t.ppf(0.95, x.size - 2)
        assert fit.lo == pytest.approx(ref.slope - q * ref.stderr, rel=1e-12)
        covered += fit.contains(0.5)
    # nominal 90 %: 360 of 400 expected; a binomial 1e-4 two-sided band is about [327, 385]
    assert 327 <= covered <= 385


def test_wls_weights_and_goodness_of_fit() -> None:
    x = [0.0, 1.0, 2.0, 3.0]
    y = [0.0, 1.0, 2.0, 10.0]  # the last point off the line
    loose = fit_rate(x, y, errors="wls", se=[0.1, 0.1, 0.1, 100.0])
    assert loose.slope == pytest.approx(1.0, abs=1e-3)  # the uncertain point barely counts
    tight = fit_rate(x, y, errors="wls", se=[0.1] * 4)
    assert tight.chi2 is not None and tight.chi2_pvalue is not None and tight.chi2_pvalue < 1e-6
    assert tight.dof is None  # a normal interval: the standard errors are known


def test_hac_is_wider_than_ols_for_serially_correlated_residuals() -> None:
    rng = np.random.default_rng(2)
    ratios = []
    for _ in range(50):
        e = np.zeros(120)
        for i in range(1, 120):
            e[i] = 0.9 * e[i - 1] + 0.1 * rng.standard_normal()
        x = np.arange(120.0)
        y = -0.1 * x + e
        ratios.append(fit_rate(x, y, errors="hac").se / fit_rate(x, y).se)
    assert float(np.median(ratios)) > 1.5


def test_bootstrap_interval_from_resampled_replicates() -> None:
    rng = np.random.default_rng(4)
    x = np.log10([10.0, 100.0, 1000.0, 10000.0])
    reps = 10 ** (-x[:, None] + 0.05 * rng.standard_normal((4, 30)))  # shared replicates
    cols = rng.integers(0, 30, (500, 30))
    y_boot = np.log10(reps[:, cols].mean(-1))
    fit = fit_rate(x, np.log10(reps.mean(1)), errors="bootstrap", y_boot=y_boot)
    assert fit.method == "bootstrap" and fit.lo < fit.slope < fit.hi
    assert fit.contains(-1.0) or abs(fit.slope + 1.0) < 0.05


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"x": [1.0, 2.0, float("nan")], "y": [1.0, 2.0, 3.0]}, "x/y"),
        ({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0]}, "y"),
        ({"x": [1.0, 2.0], "y": [1.0, 2.0]}, "x"),
        ({"x": [1.0, 1.0, 1.0], "y": [1.0, 2.0, 3.0]}, "x"),
        ({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0], "errors": "wls"}, "se"),
        ({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0], "errors": "bootstrap"}, "y_boot"),
        ({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0], "errors": "robust"}, "errors"),
        ({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0], "level": 1.5}, "level"),
    ],
)
def test_bad_input_names_the_argument(kwargs: dict, argument: str) -> None:
    with pytest.raises(InvalidArgument) as exc:
        fit_rate(**kwargs)
    assert exc.value.argument == argument


def test_loglog_drops_points_that_have_no_logarithm() -> None:
    lx, ly = loglog([1.0, 10.0, 100.0, 0.0], [1.0, 0.0, 0.01, 5.0])
    assert lx == [0.0, 2.0] and ly == [0.0, -2.0]


def test_decision_at_most() -> None:
    lam = 0.7
    ks = list(range(1, 40))
    fit = fit_rate(ks, [math.log(5.0 * lam**k) for k in ks], errors="hac", level=0.99)
    assert decide_rate(fit, RATE_K_LAM_K, instance_slope=math.log(lam)).consistent
    assert decide_rate(fit, RATE_K_LAM_K, instance_slope=math.log(0.9)).consistent  # faster than 0.9^k is fine
    slower = decide_rate(fit, RATE_K_LAM_K, instance_slope=math.log(0.5))
    assert slower.outcome == "slower"
    assert decide_rate(fit, RATE_K_LAM_K, instance_slope=math.log(0.5), informative=False).outcome == "not informative"


def test_decision_equal_with_tolerance_and_one_sided_alpha() -> None:
    x = [0.0, 1.0, 2.0, 3.0]
    fit = fit_rate(x, [0.0, -0.5, -1.0, -1.5], errors="wls", se=[0.01] * 4)
    assert decide_rate(fit, RATE_1_OVER_R).outcome == "slower"  # -0.5 decays slower than 1/r
    assert decide_rate(fit, Rate("1/r", "log r", "v", -1.0, "equal", tolerance=0.6)).consistent
    steep = fit_rate(x, [0.0, -2.0, -4.0, -6.0], errors="wls", se=[0.01] * 4)
    assert decide_rate(steep, RATE_1_OVER_R).outcome == "faster"
    noisy = fit_rate(x, [0.0, -0.9, -2.1, -3.0], errors="wls", se=[0.2] * 4)
    d = decide_rate(noisy, RATE_1_OVER_R, alpha=1e-3)
    assert d.consistent and d.bound[0] < noisy.lo  # the one-sided 1 - 1e-3 bounds are wider than the 95 % interval


def test_declared_rates_are_validated() -> None:
    with pytest.raises(InvalidArgument):
        Rate("x", "a", "b", -1.0, "about")
    with pytest.raises(InvalidArgument):
        Rate("x", "a", "b", float("nan"))
    with pytest.raises(InvalidArgument):
        RATE_K_LAM_K.expected()  # the instance's slope is needed
    with pytest.raises(InvalidArgument):
        RATE_1_OVER_R.expected(-2.0)  # a declared slope is not overridden
    assert "<=" in RATE_K_LAM_K.describe() and "= -1" in RATE_1_OVER_R.describe()
