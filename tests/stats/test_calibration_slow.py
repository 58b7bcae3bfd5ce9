"""Calibration at the gate's own error rates (α = β = 1e-3): long runs, ``-m slow``.

Each test counts wrong verdicts over R repetitions and requires the count to stay
below ``binomial_upper_quantile(R, 1e-3, 1e-4)``: if the true rate is ≤ 1e-3 the
test fails with probability ≤ 1e-4. The observed rate and its Clopper–Pearson 95 %
upper bound are printed (``-s``).
"""

from __future__ import annotations

import math

import pytest
import torch

from tests.stats.synthetic import Synthetic
from verify.bench.uoro_statistics import _unbiased_once
from verify.stats import (
    TestOptions,
    binomial_upper_quantile,
    clopper_pearson_upper,
    empty_moments,
    fixed_sample_test,
    update_moments,
)
from verify.stats.bounds import norm_quantile_bound
from verify.stats.calibration import KNOWN_GAPS, LEVELS, MECHANISMS, Scenario, run_scenario, suite
from verify.stats.unbiased import _geometry
from verify.verdict import Verdict

pytestmark = [pytest.mark.slow, pytest.mark.statistical]

RATE = 1e-3
SYN = Synthetic(p=8, kappa=2.0)


def _report(what: str, k: int, n: int) -> None:
    print(f"{what}: {k}/{n} = {k / n:.5f}, Clopper-Pearson 95% upper {clopper_pearson_upper(k, n):.5f}")


@pytest.mark.parametrize("law", ["gauss", "t3", "exp"])
def test_fixed_test_false_fail_rate_at_alpha_1e3(law: str) -> None:
    R = 4000
    fails = 0
    for r in range(R):
        gen = torch.Generator().manual_seed(100_000 + r)
        res = fixed_sample_test(SYN.sampler(law)(2000, gen), SYN.g, options=TestOptions(), generator=gen)
        fails += res.verdict is Verdict.FAIL
    _report(f"fixed test, {law}, FAIL", fails, R)
    assert fails <= binomial_upper_quantile(R, RATE, 1e-4)


@pytest.mark.parametrize("law", ["gauss", "t3"])
def test_confidence_ball_coverage_at_beta_1e3(law: str) -> None:
    R = 4000
    miss = 0
    zero = torch.zeros(SYN.p, dtype=torch.float64)
    for r in range(R):
        gen = torch.Generator().manual_seed(200_000 + r)
        m = update_moments(empty_moments(SYN.p), SYN.sampler(law)(2000, gen) - SYN.g, zero)
        rad = norm_quantile_bound(_geometry(m).eig, math.log(1 / RATE)) / math.sqrt(m.n)
        miss += float(m.mean.norm()) > rad
    _report(f"ball, {law}, miss", miss, R)
    assert miss <= binomial_upper_quantile(R, RATE, 1e-4)


def test_uoro_sequential_false_fail_rate_over_1000_seeds() -> None:
    """The gate's sequential test on the toolkit's UORO (Elman-tanh n=2, T=3, 5 quantities, 10^4 draws)."""
    R = 1000
    fails = sum(_unbiased_once(seed, RATE) is Verdict.FAIL for seed in range(5000, 5000 + R))
    _report("UORO sequential unbiasedness test, FAIL", fails, R)
    assert fails <= binomial_upper_quantile(R, RATE, 1e-4)


# ------------------------------------------------- issue 14: the adversarial suite, 1000 seeds per cell
ADV_SEEDS = range(1000, 2000)  # the seeds of the committed reports/calibration (same numbers, reproducible)
EXACT = ("exact", "roundoff-bernoulli", "roundoff-gauss")


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(
    "cell",
    [
        pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN_GAPS[c.name], strict=True)) if c.name in KNOWN_GAPS else c
        for c in suite()
    ],
    ids=lambda c: c.name,
)
def test_adversarial_cell(cell: Scenario, level: float) -> None:
    """Every mechanism in every cell: false FAIL (unbiased) / false certificate (biased) consistent with ≤ level.

    Per mechanism the count must stay below ``binomial_upper_quantile(1000, level, 1e-4)``; at level 0.05
    (which 1000 seeds resolve) the Clopper–Pearson 95 % upper bound must also be ≤ level; draws without
    noise beyond round-off never FAIL.
    """
    for mech in MECHANISMS:
        r = run_scenario(cell, level, mech, ADV_SEEDS)
        _report(f"{cell.name} level {level:g} {mech} {'false cert' if r.biased else 'false FAIL'}", r.errors, r.seeds)
        assert r.errors <= binomial_upper_quantile(r.seeds, level, 1e-4), r
        if level >= 0.05:
            assert r.resolved, r
        if cell.spectrum in EXACT:
            assert r.fails == 0, r
