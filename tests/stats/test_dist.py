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
