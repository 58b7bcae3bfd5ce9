"""Issue 22: the premises of the unbiasedness tests -- flat draws, skew, heavy tails -- and the honest planner.

Rare events: an estimator whose bias lives in an event of probability q (every other draw equals g) must never
PASS; one whose event pays an offset every other draw shows must not FAIL more often than α. Skewed draws
(lognormal σ = 2, every moment finite) must not FAIL beyond α. The calibration cells of
:mod:`verify.stats.calibration` are the estimators (30 seeds per cell here; 1000 in reports/calibration).
"""

from __future__ import annotations

import math

import pytest
import torch

from verify.stats import TestOptions, binomial_upper_quantile, fixed_sample_test, sequential_test
from verify.stats.calibration import MECHANISMS, build, run_scenario, suite
from verify.stats.premises import (
    declared_flat,
    empty_reservoir,
    max_skewness,
    reservoir_add,
    skew_allowance,
    unseen_flat_mass,
    unseen_mass,
)
from verify.stats.unbiased import pilot_plan
from verify.verdict import Verdict

F64 = torch.float64
SEEDS = range(30)
CELLS = {c.name: c for c in suite()}


@pytest.mark.parametrize("name", ["rare1e-02-biased", "rare1e-03-biased", "rare1e-03-half-biased-rot"])
def test_bias_carried_by_a_rare_event_is_never_certified(name: str) -> None:
    for mech in MECHANISMS:
        r = run_scenario(CELLS[name], 0.05, mech, SEEDS)
        assert r.passes == 0, r


@pytest.mark.parametrize("name", ["rare1e-03-unbiased", "rare1e-03-half-unbiased-rot", "lognormal2-rot"])
def test_unbiased_rare_events_and_skew_fail_at_most_at_alpha(name: str) -> None:
    for mech in MECHANISMS:
        r = run_scenario(CELLS[name], 0.05, mech, SEEDS)
        assert r.fails <= binomial_upper_quantile(len(SEEDS), 0.05, 1e-4), r


def test_the_issue_example_all_draws_equal() -> None:
    """No hit among 2000 draws: every draw is the same vector, the scatter is 0. Before issue 22: PASS with a
    bound of 3e-13 (biased) or a FAIL "deterministic offset" (unbiased). Now: INCONCLUSIVE, and why."""
    g = torch.tensor([1.0, -2.0, 0.5], dtype=F64)
    for x in (g.expand(2000, 3).clone(), (g + torch.tensor([0.4, 0.0, 0.0], dtype=F64)).expand(2000, 3).clone()):
        res = fixed_sample_test(x, g)
        assert res.verdict is Verdict.INCONCLUSIVE
        assert "no variation in 3 coordinate(s)" in res.reason and "unseen event" in res.reason


def test_declared_radius_bounds_what_an_unseen_event_can_carry() -> None:
    """With ‖X − g‖ ≤ R declared, a flat offset beyond what an event of mass ≤ t can pay is a FAIL, and a PASS
    certificate includes t·(R + B)."""
    g = torch.tensor([1.0, -2.0, 0.5], dtype=F64)
    flat = g.expand(20_000, 3).clone()
    ok = fixed_sample_test(flat, g, options=TestOptions(delta=0.1, draw_radius=1.0))
    t = unseen_flat_mass(20_000, 3, 3, 1e-3 / 2)
    assert ok.verdict is Verdict.PASS and ok.relative_bound >= t * 1.0 / float(g.norm())
    far = fixed_sample_test(flat + torch.tensor([0.5, 0, 0], dtype=F64), g, options=TestOptions(draw_radius=1.0))
    assert far.verdict is Verdict.FAIL and "deterministic offset" in far.summary()
    big = fixed_sample_test(flat, g, options=TestOptions(delta=0.1, draw_radius=1e6))
    assert big.verdict is Verdict.INCONCLUSIVE  # an event of mass 1e-3 within 1e6 could carry anything


def test_skewed_draws_end_inconclusive_naming_the_premise() -> None:
    gen = torch.Generator().manual_seed(5)
    g = torch.zeros(1, dtype=F64) + 1.0
    v = math.exp(4.0)
    hits = fails = 0
    for _ in range(40):
        z = torch.randn(2000, 1, generator=gen, dtype=F64)
        x = g + (torch.exp(2.0 * z) - math.sqrt(v)) / math.sqrt(v * (v - 1))
        res = fixed_sample_test(x, g, options=TestOptions(alpha=0.05, beta=0.05, delta=0.1))
        fails += res.verdict is Verdict.FAIL
        hits += ("skew" in res.reason) or ("heavy tail" in res.reason)
        assert all(not s.rejected for s in res.quantities[0].subtests if s.premise)  # a gated test never rejects
    assert hits > 0 and fails <= binomial_upper_quantile(40, 0.05, 1e-4)


def test_premise_helpers() -> None:
    # the systematic subsample keeps every stride-th draw and never exceeds its capacity
    r = empty_reservoir(2, capacity=16)
    for k in range(10):
        r = reservoir_add(r, torch.arange(7 * k, 7 * k + 7, dtype=F64)[:, None].expand(7, 2).clone())
    assert r.data.shape[0] <= 16 and r.seen == 70
    assert torch.equal(r.data[:, 0], torch.arange(0, 70, r.stride, dtype=F64)[: r.data.shape[0]])
    # the compression bound: decreasing in M, increasing in the varied rank; the flat-coordinate bound in |D|
    assert unseen_mass(10_000, 3, 1e-3) < unseen_mass(1000, 3, 1e-3) < unseen_mass(1000, 30, 1e-3) <= 1.0
    assert unseen_mass(10, 10, 1e-3) == 1.0
    assert 0 < unseen_flat_mass(2000, 22, 1, 1e-3) < unseen_flat_mass(2000, 22, 11, 1e-3)
    assert declared_flat(2, 1.0, 1e-3) and not declared_flat(100, 0.01, 1e-3) and declared_flat(5000, 0.01, 1e-3)
    assert not declared_flat(10**6, None, 1e-3)
    # the skew allowance grows like sqrt(M); the power iteration finds a skewed axis hidden by a rotation
    assert skew_allowance(40_000, 1e-3) == pytest.approx(2 * skew_allowance(10_000, 1e-3))
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(3000, 6, generator=gen, dtype=F64)
    z[:, 2] = -torch.log1p(-torch.rand(3000, generator=gen, dtype=F64)) - 1.0  # exponential: skewness 2
    q = torch.linalg.qr(torch.randn(6, 6, generator=gen, dtype=F64))[0]
    w = z @ q.T
    starts = torch.randn(4, 6, generator=gen, dtype=F64)
    assert max_skewness(w, starts) == pytest.approx(2.0, abs=0.4)
    assert max_skewness(torch.randn(3000, 6, generator=gen, dtype=F64), starts) < 0.4


def test_a_pilot_that_cannot_resolve_the_tail_says_so() -> None:
    """Issue 22 item 3: a pilot with no hit plans 1000 draws where a hit needs far more -- the plan says it is a
    lower bound; a resolved pilot carries the range from its own variance estimate."""
    problem = build(CELLS["rare1e-03-biased"])
    plan = pilot_plan(
        problem.sampler, problem.truth, generator=torch.Generator().manual_seed(3), pilot=1000,
        options=TestOptions(delta=0.1),
    )  # fmt: skip
    assert plan is not None and not plan.resolved and "no variation" in plan.caveat and "lower bound" in plan.describe()
    gauss = build(CELLS["gauss-cond1e+04-rot"])
    plan = pilot_plan(gauss.sampler, gauss.truth, generator=torch.Generator().manual_seed(3), pilot=1000)
    assert plan is not None and plan.resolved
    assert plan.samples_low is not None and plan.samples_low <= plan.samples


def test_sequential_premises_gate_the_mixture_boundaries() -> None:
    """The sequential test checks the same premises at every look: a flat undeclared block never certifies."""
    g = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64)

    def sampler(m: int, gen: torch.Generator) -> torch.Tensor:
        return g + torch.cat([torch.randn(m, 2, generator=gen, dtype=F64), torch.zeros(m, 2, dtype=F64)], 1)

    res = sequential_test(sampler, g, options=TestOptions(delta=0.5), generator=torch.Generator(), max_samples=20_000)
    assert res.verdict is Verdict.INCONCLUSIVE and "2 coordinate(s)" in res.reason
    res = sequential_test(
        sampler, g, options=TestOptions(delta=0.5, event_floor=1.0), generator=torch.Generator(), max_samples=20_000
    )
    assert res.verdict is Verdict.PASS


def test_rare_events_bench_runs_and_reports_no_false_certificate(capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's estimators through the public engine (``python -m verify.bench.rare_events``): the biased
    rare-event estimator is never certified, the unbiased one and the lognormal draws are not accused."""
    from verify.bench.rare_events import main

    main(["--seeds", "3", "--max-samples", "4000"])
    out = capsys.readouterr().out
    assert out.count("false certificates: 0/3") == 2 and out.count("false FAILs: 0/3") == 8, out
