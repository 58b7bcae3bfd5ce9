"""The Algorithm 1 oracle's exact moments and the variance planner (issue 27: a control sized to be caught)."""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from verify.errors import InvalidArgument
from verify.oracles.algorithm1 import (
    NORMALIZERS,
    algorithm1_reference,
    exact_squared_error_moments,
    rademacher,
    step_jacobians,
)
from verify.oracles.bptt import per_step_gradients
from verify.stats.variance import compare_second_moments, draws_to_separate
from verify.testing.strategies import random_problem


def _fixture(n: int, T: int, seed: int = 3) -> tuple[object, torch.Tensor, torch.Tensor]:
    P, th = random_problem("elman-tanh", n=n, d=2, T=T, k=2, generator=torch.Generator().manual_seed(seed))
    P = P.with_sequence(P.inputs * 5.0, P.targets)
    G = per_step_gradients(P, th)
    return step_jacobians(P, th), G.sum(0), G[-1]


@pytest.mark.statistical
@pytest.mark.parametrize("rule", ["paper (Algorithm 1)", "rho1 = 1"])
def test_exact_moments_match_a_large_sample(rule: str) -> None:
    """E q by enumeration vs the mean of 200 000 independent draws: |z| < 4.9 (false-fail rate 1e-6 per case)."""
    jac, g_tot, g_T = _fixture(2, 4)
    ex = exact_squared_error_moments(jac, g_tot, g_T, NORMALIZERS[rule])
    assert ex.patterns == 2 ** (2 * 4)
    run = algorithm1_reference(
        jac,
        rademacher(4, 200_000, 1, 2, torch.Generator().manual_seed(7)),
        rho0=NORMALIZERS[rule][0],
        rho1=NORMALIZERS[rule][1],
    )
    for i, q in enumerate((((run.g.sum(0) - g_tot) ** 2).sum(1), ((run.g[-1] - g_T) ** 2).sum(1))):
        z = (float(q.mean()) - ex.mean[i]) / math.sqrt(ex.var[i] / q.numel())
        assert abs(z) < 4.9, (i, z)
        assert float(q.var()) == pytest.approx(ex.var[i], rel=0.1)


def test_exact_moments_equal_the_enumerated_average() -> None:
    """Every pattern once: the chunked moments equal one pass over all 2^(nT) patterns (round-off)."""
    jac, g_tot, g_T = _fixture(2, 3)
    ex = exact_squared_error_moments(jac, g_tot, g_T, NORMALIZERS["paper (Algorithm 1)"], chunk=7)
    k = 6
    bits = ((torch.arange(2**k).unsqueeze(1) >> torch.arange(k)) & 1).to(torch.float64) * 2 - 1
    run = algorithm1_reference(jac, bits.reshape(-1, 3, 1, 2).permute(1, 0, 2, 3))
    q = ((run.g.sum(0) - g_tot) ** 2).sum(1)
    assert ex.mean[0] == pytest.approx(float(q.mean()), rel=1e-12)
    assert ex.var[0] == pytest.approx(float(q.var(unbiased=False)), rel=1e-9)


def test_exact_moments_refuse_an_enumeration_too_large() -> None:
    jac, g_tot, g_T = _fixture(3, 7)
    with pytest.raises(InvalidArgument, match="n\\*T"):
        exact_squared_error_moments(jac, g_tot, g_T, NORMALIZERS["paper (Algorithm 1)"])


def test_draws_to_separate_is_infinite_for_equal_means_and_falls_with_the_gap() -> None:
    assert draws_to_separate(1.0, 1.0, 1.0, 1.0, alpha=1e-3, beta=1e-3) == math.inf
    near = draws_to_separate(1.0, 1.0, 1.1, 1.0, alpha=1e-3, beta=1e-3)
    far = draws_to_separate(1.0, 1.0, 1.5, 1.0, alpha=1e-3, beta=1e-3)
    assert far < near and near == pytest.approx(25 * far)
    with pytest.raises(InvalidArgument, match="alpha"):
        draws_to_separate(1.0, 1.0, 1.5, 1.0, alpha=0.0, beta=1e-3)


@pytest.mark.statistical
def test_planned_draws_give_the_stated_power_on_skewed_squared_errors() -> None:
    """Exponential q (skewed like squared errors), means 1 and 1.15: with the planned M the Welch test at
    alpha = 0.01 rejects in >= 387 of 400 replications (planned power 0.99, safety 1.5; binomial false-fail
    rate of this test < 1e-4 when the power is >= 0.99)."""
    mean_a, mean_b = 1.0, 1.15
    m = math.ceil(draws_to_separate(mean_a, mean_a**2, mean_b, mean_b**2, alpha=0.01, beta=0.01))
    gen = torch.Generator().manual_seed(11)
    hits = 0
    for _ in range(400):
        a = torch.empty(m, dtype=torch.float64).exponential_(1 / mean_a, generator=gen)
        b = torch.empty(m, dtype=torch.float64).exponential_(1 / mean_b, generator=gen)
        hits += compare_second_moments(a, b).pvalue <= 0.01
    assert hits >= 387, (hits, m)
    assert stats.binom.cdf(386, 400, 0.99) < 1e-4
