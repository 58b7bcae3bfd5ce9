"""verify.stats.dist gives scipy.stats' values bit for bit (the same scipy.special functions), without its import."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from verify.stats import dist

X = np.array([-40.0, -3.0, -0.5, 0.0, 1e-3, 0.7, 2.5, 8.0, 39.0])
Q = np.array([1e-300, 1e-12, 1e-3, 0.025, 0.5, 0.9, 1 - 1e-9])


@pytest.mark.parametrize("df", [1, 2.5, 7, 400])
def test_same_values_as_scipy_stats(df: float) -> None:
    pairs = [
        (dist.norm_sf(X), stats.norm.sf(X)),
        (dist.norm_pdf(X), stats.norm.pdf(X)),
        (dist.norm_ppf(Q), stats.norm.ppf(Q)),
        (dist.norm_isf(Q), stats.norm.isf(Q)),
        (dist.chi2_sf(np.abs(X), df), stats.chi2.sf(np.abs(X), df)),
        (dist.f_sf(np.abs(X), df, 3 * df), stats.f.sf(np.abs(X), df, 3 * df)),
        (dist.t_sf(X, df), stats.t.sf(X, df)),
        (dist.t_cdf(X, df), stats.t.cdf(X, df)),
        (dist.t_ppf(Q, df), stats.t.ppf(Q, df)),
    ]
    for ours, theirs in pairs:
        np.testing.assert_array_equal(ours, theirs)
    assert float(dist.chi2_sf(3.0, 5)) == float(stats.chi2.sf(3.0, 5))  # scalars as the engine passes them


def test_the_engine_imports_no_scipy_stats() -> None:
    """A sequential unbiasedness test, to its verdict, in a fresh process: scipy.stats never imported."""
    code = (
        "import sys, torch\n"
        "from verify.stats import sequential_test\n"
        "g = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)\n"
        "res = sequential_test(lambda m, r: g + 0.05 * torch.randn(m, 3, generator=r, dtype=torch.float64), g,\n"
        "                      generator=torch.Generator().manual_seed(0), max_samples=20000)\n"
        "print(res.verdict.value, 'scipy.stats' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["PASS", "False"]


def test_the_tests_agree_with_scipy_stats() -> None:
    """ols_line = linregress bit for bit; chisquare exactly; the binomial and rank tests to round-off (scipy
    evaluates the binomial law with boost, scipy.special with cephes); the small-sample exact MWU is scipy's."""
    rng = np.random.default_rng(0)
    for n in (2, 3, 7, 50):
        x = rng.normal(size=n)
        y = 2 * x + rng.normal(size=n)
        r = stats.linregress(x, y)
        assert dist.ols_line(x, y) == (float(r.slope), float(r.intercept), float(r.stderr))
    for counts in ([3, 5, 9, 2], [10, 10, 10], [0, 4, 1, 7, 7]):
        assert dist.chisquare_p(counts) == pytest.approx(float(stats.chisquare(counts).pvalue), rel=1e-15, abs=0)
    for n in (1, 2, 5, 17, 100, 1001):
        for k in range(0, n + 1, max(1, n // 13)):
            want = float(stats.binomtest(k, n, 0.5).pvalue)
            assert dist.binomtest_half_p(k, n) == pytest.approx(want, rel=1e-11, abs=0), (k, n)
    for n1, n2 in ((20, 30), (5, 40), (9, 9), (200, 300), (3, 4), (6, 5), (1, 1)):
        for tied in (False, True):
            a, b = rng.exponential(size=n1), 1.2 * rng.exponential(size=n2)
            if tied:
                a, b = np.round(a, 1), np.round(b, 1)
            want = float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
            assert dist.mann_whitney_p(a, b) == pytest.approx(want, rel=1e-12, abs=1e-300), (n1, n2, tied)
