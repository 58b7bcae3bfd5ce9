"""Deterministic tests of the statistics engine: building blocks, verdict logic, bad input."""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from tests.stats.synthetic import Synthetic
from verify._validate import MAX_SEED
from verify.errors import InvalidArgument
from verify.stats import (
    TestOptions,
    adjusted_pvalues,
    bonferroni,
    clopper_pearson,
    clopper_pearson_upper,
    compare_second_moments,
    empty_moments,
    fit_rate,
    fixed_sample_test,
    holm,
    plan_samples,
    planned_test,
    sequential_test,
    update_moments,
)
from verify.stats.bounds import (
    best_mixture_rho,
    mahalanobis_mixture_threshold,
    norm_quantile_bound,
    normal_mixture_halfwidth,
    vector_mixture_radius,
)
from verify.stats.unbiased import validate_seed
from verify.verdict import Verdict

F64 = torch.float64


# ------------------------------------------------------------- building blocks
def test_holm_and_bonferroni() -> None:
    ps = [0.001, 0.015, 0.03, 0.5]
    assert bonferroni(ps, 0.05) == [True, False, False, False]
    # Holm: 0.001 <= 0.05/4, 0.015 <= 0.05/3, 0.03 > 0.05/2 -> stop
    assert holm(ps, 0.05) == [True, True, False, False]
    assert adjusted_pvalues(ps, "holm") == pytest.approx([0.004, 0.045, 0.06, 0.5])
    assert adjusted_pvalues(ps, "bonferroni") == pytest.approx([0.004, 0.06, 0.12, 1.0])
    with pytest.raises(InvalidArgument):
        holm([0.1, 1.5], 0.05)
    with pytest.raises(InvalidArgument):
        holm([0.1], 0.0)


def test_clopper_pearson_known_values() -> None:
    # k = 0: upper bound 1 - (1 - c)^(1/n) (one-sided) -- the "rule of three" for c = 0.95
    assert clopper_pearson_upper(0, 1000, 0.95) == pytest.approx(1 - 0.05 ** (1 / 1000), rel=1e-10)
    lo, hi = clopper_pearson(5, 100, 0.95)
    assert lo == pytest.approx(0.016431, abs=1e-5) and hi == pytest.approx(0.112834, abs=1e-5)
    assert clopper_pearson(0, 10)[0] == 0.0 and clopper_pearson(10, 10)[1] == 1.0
    with pytest.raises(InvalidArgument):
        clopper_pearson(11, 10)


def test_fit_rate_exact_line_and_wls() -> None:
    x = [0.0, 1.0, 2.0, 3.0]
    fit = fit_rate(x, [1 + 2 * v for v in x])
    assert fit.slope == pytest.approx(2.0) and fit.intercept == pytest.approx(1.0)
    assert fit.ci[1] - fit.ci[0] == pytest.approx(0.0, abs=1e-9)
    w = fit_rate(x, [1 + 2 * v for v in x], errors="wls", se=[0.1, 0.1, 0.2, 0.2])
    assert w.slope == pytest.approx(2.0) and w.chi2 == pytest.approx(0.0, abs=1e-18)
    assert w.ci[0] < 2.0 < w.ci[1]
    with pytest.raises(InvalidArgument):
        fit_rate([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(InvalidArgument):
        fit_rate(x, [1.0, 2.0, math.nan, 3.0])


def test_laurent_massart_bound_dominates_exact_quantiles() -> None:
    # isotropic: ||Z||^2 ~ chi2_p exactly; the bound must exceed the exact quantile
    for p in (1, 5, 50):
        for beta in (0.05, 1e-3, 1e-6):
            bound = norm_quantile_bound(torch.ones(p, dtype=F64), math.log(1 / beta)) ** 2
            exact = float(stats.chi2.isf(beta, p))
            assert exact <= bound <= 1.6 * exact + 10


def test_mixture_boundaries_are_wider_than_fixed_sample() -> None:
    # a time-uniform boundary cannot beat the fixed-sample z quantile at any single m
    for m in (100, 10_000):
        hw = normal_mixture_halfwidth(m, 1.0, 1e-3, rho=float(m))
        assert hw * math.sqrt(m) > stats.norm.isf(1e-3 / 2)
    lam = torch.tensor([4.0, 1.0, 0.5], dtype=F64)
    rho = best_mixture_rho(5000, lam, 1e-3)
    r_seq = vector_mixture_radius(5000, lam, 1e-3, rho) * math.sqrt(5000)
    # the exact 1 - 1e-3 quantile of ||N(0, diag lam)|| is below sqrt(lam_max * chi2_3 quantile)
    assert r_seq > math.sqrt(float(stats.chi2.isf(1e-3, 1)) * 4.0)
    assert mahalanobis_mixture_threshold(1000, 3, 1e-3, 1000.0) / 1000 > stats.chi2.isf(1e-3, 3)


def test_moments_merge_equals_batch() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1000, 4, generator=gen, dtype=F64) * 3 + 1
    g = torch.zeros(4, dtype=F64)
    one = update_moments(empty_moments(4), x, g)
    m = empty_moments(4)
    for lo in range(0, 1000, 137):
        m = update_moments(m, x[lo : lo + 137], g)
    assert m.n == one.n == 1000
    torch.testing.assert_close(m.mean, x.mean(0))
    torch.testing.assert_close(m.covariance(), torch.cov(x.T))
    q = (x * x).sum(1)
    assert m.q_mean == pytest.approx(float(q.mean())) and m.q_variance() == pytest.approx(float(q.var()))


def test_planner_closed_form() -> None:
    lam = torch.tensor([1.0, 1.0], dtype=F64)
    plan = plan_samples(delta=0.1, alpha=1e-3, beta=1e-3, truth_norm=1.0, eigenvalues=lam)
    a = norm_quantile_bound(lam, math.log(1e3))
    assert plan.samples == math.ceil((2 * a / 0.1) ** 2)
    assert plan.expected_bound <= 0.1
    # halving delta quadruples the plan
    plan2 = plan_samples(delta=0.05, alpha=1e-3, beta=1e-3, truth_norm=1.0, eigenvalues=lam)
    assert plan2.samples == pytest.approx(4 * plan.samples, rel=1e-3)


# --------------------------------------------------------------- verdict logic
#: an estimator that declares its flat draws deterministic (event floor 1: it does not vary at all where flat)
DECLARED = TestOptions(event_floor=1.0)


def test_deterministic_estimator_exact_pass_and_tiny_bias_fail() -> None:
    g = torch.tensor([1.0, -2.0, 0.5], dtype=F64)
    exact = g.expand(3000, 3).clone()
    res = fixed_sample_test(exact, g, options=DECLARED)
    assert res.verdict is Verdict.PASS and res.relative_bound < 1e-12
    off = exact + torch.tensor([1e-6, 0.0, 0.0], dtype=F64)
    res = fixed_sample_test(off, g, options=DECLARED)
    assert res.verdict is Verdict.FAIL
    assert any(s.rejected for s in res.quantities[0].subtests)
    # issue 22: undeclared, identical draws are no evidence of determinism -- neither a certificate nor a FAIL
    for x in (exact, off):
        res = fixed_sample_test(x, g)
        assert res.verdict is Verdict.INCONCLUSIVE and "no variation in 3 coordinate(s)" in res.reason, res.summary()


def test_noiseless_coordinates_are_checked_exactly() -> None:
    # a noisy block and a deterministic block (like UORO's readout gradient): bias in the
    # deterministic block is caught however small the noisy block's precision
    gen = torch.Generator().manual_seed(1)
    g = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64)
    x = g + torch.cat([torch.randn(4000, 2, generator=gen, dtype=F64), torch.zeros(4000, 2, dtype=F64)], 1)
    assert fixed_sample_test(x, g, options=DECLARED).verdict is not Verdict.FAIL
    x[:, 3] += 1e-7
    assert fixed_sample_test(x, g).verdict is Verdict.INCONCLUSIVE  # undeclared: the flat block is no evidence
    res = fixed_sample_test(x, g, options=DECLARED)
    assert res.verdict is Verdict.FAIL
    assert [s.name for s in res.quantities[0].subtests if s.rejected] == ["deterministic-coordinates(k=2)"]
    assert "deterministic offset" in res.summary() and "certified" not in res.summary()


def test_clear_bias_fails_fast_and_unbiased_passes() -> None:
    syn = Synthetic(p=8, kappa=2.0)
    gen = torch.Generator().manual_seed(0)
    opts = TestOptions(delta=0.1)
    ok = sequential_test(syn.sampler("gauss"), syn.g, options=opts, generator=gen, max_samples=100_000)
    assert ok.verdict is Verdict.PASS and ok.relative_bound < 0.1
    assert ok.samples_planned is not None and ok.samples_used < ok.samples_planned
    bad = sequential_test(
        syn.sampler("gauss", 0.3 * syn.g), syn.g, options=opts, generator=gen, max_samples=100_000, first=1000
    )
    # issue 39: the first look's 1000 draws come from SPLIT_CALLS = 8 sampler calls, so an offset shared within a call
    # can be told from bias there: the FAIL comes at the first look
    assert bad.verdict is Verdict.FAIL and bad.samples_used == 1000
    fixed = planned_test(syn.sampler("gauss"), syn.g, options=opts, generator=gen, max_samples=100_000)
    assert fixed.verdict is Verdict.PASS and fixed.samples_planned == fixed.samples_used - 2000


def test_budget_exhausted_is_inconclusive_with_reason() -> None:
    syn = Synthetic(p=8, kappa=2.0)
    res = sequential_test(
        syn.sampler("gauss"), syn.g, options=TestOptions(delta=0.01), generator=torch.Generator(), max_samples=3000
    )
    assert res.verdict is Verdict.INCONCLUSIVE and "budget" in res.reason
    res = planned_test(
        syn.sampler("gauss"), syn.g, options=TestOptions(delta=0.01), generator=torch.Generator(), max_samples=3000
    )
    assert res.verdict is Verdict.INCONCLUSIVE and "plan" in res.reason


def test_family_splits_error_rates_and_names_quantities() -> None:
    syn = Synthetic(p=6, kappa=1.0)
    s = syn.sampler("gauss")
    two = lambda m, gen: [s(m, gen), 2 * s(m, gen)]  # noqa: E731
    res = sequential_test(
        two, [syn.g, 2 * syn.g], options=TestOptions(delta=0.1), generator=torch.Generator(), max_samples=100_000,
        names=["a", "b"],
    )  # fmt: skip
    assert res.verdict is Verdict.PASS and [q.name for q in res.quantities] == ["a", "b"]
    data = res.to_data()
    assert data["quantities"][1]["name"] == "b" and data["samples_used"] == res.samples_used


def test_min_samples_premise_blocks_pass() -> None:
    g = torch.ones(2, dtype=F64)
    x = g + 1e-3 * torch.randn(200, 2, generator=torch.Generator().manual_seed(0), dtype=F64)
    res = fixed_sample_test(x, g)
    assert res.verdict is Verdict.INCONCLUSIVE and "min_samples" in res.reason


def test_heavy_tail_diagnostic_blocks_pass() -> None:
    g = torch.ones(2, dtype=F64)
    x = g + 1e-3 * torch.randn(5000, 2, generator=torch.Generator().manual_seed(0), dtype=F64)
    x[17] += 1.0  # one draw dominates the scatter
    res = fixed_sample_test(x, g, options=TestOptions(delta=10.0))
    assert res.verdict is Verdict.INCONCLUSIVE and "heavy tail" in res.reason


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("kwargs", "arg"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.0}, "alpha"),
        ({"beta": -0.1}, "beta"),
        ({"beta": 1.5}, "beta"),
        ({"delta": 0.0}, "delta"),
        ({"delta": -1.0}, "delta"),
        ({"delta": math.inf}, "delta"),
        ({"correction": "sidak"}, "correction"),
    ],
)
def test_bad_options_rejected(kwargs: dict[str, object], arg: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        TestOptions(**kwargs)  # type: ignore[arg-type]
    assert info.value.argument == arg


def test_nan_and_wrong_shape_draws_rejected_never_pass() -> None:
    g = torch.ones(3, dtype=F64)
    x = g.expand(2000, 3).clone()
    x[5, 1] = math.nan
    with pytest.raises(InvalidArgument, match="non-finite"):
        fixed_sample_test(x, g)
    with pytest.raises(InvalidArgument, match="shape"):
        fixed_sample_test(torch.ones(2000, 4, dtype=F64), g)
    with pytest.raises(InvalidArgument, match="shape"):
        sequential_test(lambda m, gen: torch.ones(m, 4, dtype=F64), g, generator=torch.Generator(), max_samples=10)
    with pytest.raises(InvalidArgument, match="requested draws"):
        sequential_test(lambda m, gen: torch.ones(3, 3, dtype=F64), g, generator=torch.Generator(), max_samples=10)

    def nan_later(m: int, gen: torch.Generator) -> torch.Tensor:
        out = g.expand(m, 3).clone() + torch.randn(m, 3, generator=gen, dtype=F64)
        out[-1, 0] = math.nan
        return out

    with pytest.raises(InvalidArgument, match="non-finite"):
        sequential_test(nan_later, g, generator=torch.Generator(), max_samples=10_000)


def test_a_sampler_whose_draws_overflow_is_a_variance_anomaly_never_pass_nor_bias() -> None:
    """±inf draws (no NaN) from an estimator: its variance is beyond float64 (the unbiased rho0-inverted UORO
    mutant at T = 64), INCONCLUSIVE with the reason -- the kill table's must-not-FAIL side depends on it."""
    g = torch.ones(3, dtype=F64)

    def inf_later(m: int, gen: torch.Generator) -> torch.Tensor:
        out = g.expand(m, 3).clone() + torch.randn(m, 3, generator=gen, dtype=F64)
        out[-1, 0] = math.inf
        return out

    for res in (
        sequential_test(inf_later, g, generator=torch.Generator(), max_samples=10_000),
        planned_test(inf_later, g, generator=torch.Generator(), max_samples=10_000),
    ):
        assert res.verdict is Verdict.INCONCLUSIVE and res.variance_anomaly
        assert "overflow float64" in res.reason


def test_finite_draws_whose_sum_overflows_are_folded_as_before() -> None:
    """Issue 42: the fold tells finite draws by one sum; finite draws whose sum overflows take the full check and
    are folded as the deviations themselves would be (no overflow recorded for them, no NaN error)."""
    from verify.stats.moments import fold_deviations
    from verify.stats.unbiased import _directions, _fold, _new_acc

    truth = torch.zeros(2, dtype=F64)
    x = torch.tensor([[1e308, 1.0], [1e308, 2.0], [-1e308, 3.0]], dtype=F64)  # the sum of column 0 overflows
    acc = _new_acc(truth, _directions(2, 4, torch.Generator().manual_seed(0)), TestOptions())
    out = _fold(acc, x, truth, "x")
    want = fold_deviations(acc.mom, x)
    same = [torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True) for a, b in ((out.mom.mean, want.mean),
            (out.mom.scatter, want.scatter))]  # fmt: skip
    assert out.mom.n == 3 and all(same)  # the same arithmetic as before the fast check (its inf and NaN included)
    assert out.res.data.shape == (3, 2) and out.groups.calls == 1


def test_zero_norm_truth_rejected_with_explanation() -> None:
    z = torch.zeros(3, dtype=F64)
    with pytest.raises(InvalidArgument, match="undefined"):
        fixed_sample_test(torch.zeros(2000, 3, dtype=F64), z)
    # with an explicit scale the absolute bound is certified
    res = fixed_sample_test(torch.zeros(2000, 3, dtype=F64), z, reference_norm=1.0, options=DECLARED)
    assert res.verdict is Verdict.PASS
    with pytest.raises(InvalidArgument):
        fixed_sample_test(torch.zeros(2000, 3, dtype=F64), z, reference_norm=0.0)


def test_bad_truth_and_budget_arguments() -> None:
    g = torch.ones(3, dtype=F64)
    with pytest.raises(InvalidArgument):
        fixed_sample_test(torch.ones(10, 3, dtype=F64), torch.ones(3, 1, dtype=F64))
    with pytest.raises(InvalidArgument):
        fixed_sample_test(torch.ones(10, 3, dtype=F64), torch.tensor([1.0, math.nan, 0.0], dtype=F64))
    with pytest.raises(InvalidArgument):
        sequential_test(lambda m, gen: g.expand(m, 3), g, generator=torch.Generator(), max_samples=0)
    with pytest.raises(InvalidArgument):
        sequential_test(lambda m, gen: g.expand(m, 3), g, generator=torch.Generator(), max_samples=10, growth=1.0)
    with pytest.raises(InvalidArgument):
        plan_samples(delta=0.1, alpha=1e-3, beta=1e-3, truth_norm=0.0, eigenvalues=torch.ones(2, dtype=F64))
    with pytest.raises(InvalidArgument, match="generator"):
        sequential_test(lambda m, gen: g.expand(m, 3), g, generator=0, max_samples=10)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="generator"):
        planned_test(lambda m, gen: g.expand(m, 3), g, generator=None, max_samples=10)  # type: ignore[arg-type]
    assert validate_seed("seed", MAX_SEED) == MAX_SEED  # one seed limit for the API and the CLI's --seed
    with pytest.raises(InvalidArgument, match=rf"invalid argument seed=1180591620717411303424: .*\[0, {MAX_SEED}\]"):
        validate_seed("seed", 2**70)
    with pytest.raises(InvalidArgument, match=rf"\[0, {MAX_SEED}\]"):
        validate_seed("seed", 2**64 - 1)


def test_second_moment_comparison_basic() -> None:
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(20_000, generator=gen, dtype=F64) ** 2
    b = 2 * torch.randn(20_000, generator=gen, dtype=F64) ** 2
    cmp = compare_second_moments(a, b, alpha=1e-3)
    assert cmp.rejected and cmp.ratio_ci[0] < 0.5 < cmp.ratio_ci[1]
    with pytest.raises(InvalidArgument):
        compare_second_moments(torch.ones(1, dtype=F64), b)


def test_weighted_split_of_error_rates() -> None:
    syn = Synthetic(p=6, kappa=1.0)
    s = syn.sampler("gauss")
    two = lambda m, gen: [s(m, gen), s(m, gen)]  # noqa: E731
    res = sequential_test(
        two, [syn.g, syn.g], options=TestOptions(delta=0.1), generator=torch.Generator(), max_samples=100_000,
        weights=[1.0, 3.0],
    )  # fmt: skip
    assert res.verdict is Verdict.PASS
    with pytest.raises(InvalidArgument):
        sequential_test(two, [syn.g, syn.g], generator=torch.Generator(), max_samples=10, weights=[1.0])
    with pytest.raises(InvalidArgument):
        sequential_test(two, [syn.g, syn.g], generator=torch.Generator(), max_samples=10, weights=[1.0, 0.0])
