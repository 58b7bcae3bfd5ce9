"""Issue 39: premises checked, not assumed -- infinite variance per coordinate, dependent draws, extreme scales.

Each premise check FAILs its premise on the adversarial case and holds on the correct one. The statistical
checks state their false rates: Hill's index of a N(0, 1) coordinate (n = 2000) is below 2 with probability far
below 1e-6 (its smallest over 22 coordinates was 4.04 in 1000 seeds, ``python -m verify.bench.premises``); the
independence test rejects i.i.d. draws with probability ≤ its level (1e-3 here, exact for Gaussian draws).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

from verify.errors import InvalidArgument
from verify.stats import TestOptions, fixed_sample_test, planned_test, sequential_test
from verify.stats.premises import between_within, empty_groups, groups_add, tail_index
from verify.stats.roundoff import symmetric_eigh
from verify.stats.unbiased import SPLIT_CALLS
from verify.verdict import Verdict

F64 = torch.float64
P = 22


def _pareto(m: int, gen: torch.Generator, a: float = 1.5, scale: float = 0.3) -> torch.Tensor:
    u = torch.rand(m, generator=gen, dtype=F64)
    return scale * (u.pow(-1.0 / a) - a / (a - 1.0))


def _truth(scale: float = 1.0) -> torch.Tensor:
    return torch.full((P,), scale * 10.0 / math.sqrt(P), dtype=F64)


# ------------------------------------------------------------------ tail index
def test_hill_index_fails_infinite_variance_and_holds_for_gauss() -> None:
    gen = torch.Generator().manual_seed(1)
    z = torch.randn(2000, 3, generator=gen, dtype=F64)
    z[:, 0] = _pareto(2000, gen)
    a = tail_index(z)
    assert float(a[0]) < 2.0, a  # Pareto(1.5): variance not finite
    assert float(a[1:].min()) > 3.0, a  # N(0, 1): no heavy tail


def test_hill_index_is_scale_free_and_inf_on_bounded_or_short_columns() -> None:
    gen = torch.Generator().manual_seed(2)
    z = _pareto(2000, gen)[:, None]
    assert torch.allclose(tail_index(z), tail_index(z * 1e-170), rtol=1e-12)
    flat = torch.zeros(2000, 1, dtype=F64)
    flat[::500] = 1.0  # a rare lattice value: no spread among the top deviations
    assert math.isinf(float(tail_index(flat)[0]))
    assert math.isinf(float(tail_index(torch.randn(10, 2, generator=gen, dtype=F64))[0]))


@pytest.mark.parametrize("mechanism", ["fixed", "sequential"])
def test_infinite_variance_coordinate_is_named_never_pass_never_fail(mechanism: str) -> None:
    g = _truth()
    opts = TestOptions(alpha=1e-3, beta=1e-3, delta=0.1)
    verdicts = []
    for seed in range(8):
        gen = torch.Generator().manual_seed(seed)

        def sampler(m: int, rng: torch.Generator) -> torch.Tensor:
            z = torch.randn(m, P, generator=rng, dtype=F64)
            z[:, 0] = _pareto(m, rng)
            return g + z

        if mechanism == "fixed":
            res = fixed_sample_test(sampler(2000, gen), g, options=opts, generator=gen)
        else:
            res = sequential_test(sampler, g, options=opts, generator=gen, max_samples=8000, first=1000)
        verdicts.append(res.verdict)
        if res.verdict is Verdict.INCONCLUSIVE and "coordinate 0: tail index" in res.reason:
            assert "variance not finite" in res.reason
    assert Verdict.FAIL not in verdicts
    # a PASS where the draws do not show the tail is the known limit (measured 1-12 % of runs, verify.bench.premises:
    # the estimate cannot see what the sample does not show); at 12 % per run, 4 or more PASSes of 8 has chance 1e-2
    assert sum(v is Verdict.PASS for v in verdicts) <= 3, verdicts


def test_gaussian_coordinates_keep_their_certificate() -> None:
    g = _truth()
    gen = torch.Generator().manual_seed(3)
    x = g + torch.randn(2000, P, generator=gen, dtype=F64)
    res = fixed_sample_test(x, g, options=TestOptions(alpha=1e-3, beta=1e-3, delta=0.1), generator=gen)
    assert res.verdict is Verdict.PASS, res.summary()


# ------------------------------------------------------------------ independence
def test_between_within_rejects_shared_offsets_and_holds_for_iid() -> None:
    gen = torch.Generator().manual_seed(4)
    iid, dep = empty_groups(3), empty_groups(3)
    for _ in range(10):
        iid = groups_add(iid, torch.randn(300, 3, generator=gen, dtype=F64), blocks=1)
        off = 0.5 * torch.randn(3, generator=gen, dtype=F64)
        dep = groups_add(dep, off + torch.randn(300, 3, generator=gen, dtype=F64), blocks=1)
    assert float(between_within(iid)[1].min()) * 3 > 1e-3
    assert float(between_within(dep)[1].min()) * 3 < 1e-6


def test_groups_merge_keeps_totals() -> None:
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(1000, 2, generator=gen, dtype=F64)
    gr = empty_groups(2)
    for part in torch.split(x, 10):
        gr = groups_add(gr, part, blocks=4, max_groups=16)
    assert gr.size.numel() <= 16 and float(gr.size.sum()) == 1000.0
    total = (gr.size[:, None] * gr.mean).sum(0) / 1000.0
    assert torch.allclose(total, x.mean(0), atol=1e-12)
    within = gr.m2.sum(0) + (gr.size[:, None] * (gr.mean - total) ** 2).sum(0)
    assert torch.allclose(within, ((x - x.mean(0)) ** 2).sum(0), rtol=1e-10)


def _offset_sampler(g: torch.Tensor, sd: float) -> Callable[[int, torch.Generator], torch.Tensor]:
    def sampler(m: int, rng: torch.Generator) -> torch.Tensor:
        return g + sd * torch.randn(P, generator=rng, dtype=F64) + torch.randn(m, P, generator=rng, dtype=F64)

    return sampler


def test_strongly_shared_offsets_are_inconclusive_naming_the_premise() -> None:
    g = _truth()
    opts = TestOptions(alpha=1e-3, beta=1e-3, delta=0.1)
    for seed in range(3):
        gen = torch.Generator().manual_seed(seed)
        res = planned_test(_offset_sampler(g, 0.3), g, options=opts, generator=gen, max_samples=4000, pilot=1000)
        assert res.verdict is Verdict.INCONCLUSIVE, res.summary()
        assert "not independent" in res.reason
        x = torch.cat([_offset_sampler(g, 0.3)(250, gen) for _ in range(8)])
        res = fixed_sample_test(x, g, options=opts, generator=gen)
        assert res.verdict is Verdict.INCONCLUSIVE and "not independent" in res.reason, res.summary()


def test_first_look_comes_from_split_calls() -> None:
    """The sequential test's first batch and the planned test's pilot and draws come in SPLIT_CALLS calls of equal
    size, so the between-call test can see an offset shared within a call from the first verdict on; a request of
    fewer draws than that is one call per draw."""
    g = _truth()
    sizes: list[int] = []

    def recording(m: int, rng: torch.Generator) -> torch.Tensor:
        sizes.append(m)
        return _offset_sampler(g, 0.0)(m, rng)

    opts = TestOptions(alpha=1e-3, beta=1e-3, delta=0.1)
    sequential_test(recording, g, options=opts, generator=torch.Generator().manual_seed(6), max_samples=1000,
                    first=1000)  # fmt: skip
    size = math.ceil(1000 / SPLIT_CALLS)
    assert len(sizes) >= SPLIT_CALLS and sum(sizes) == 1000 and set(sizes[:-1]) == {size} and sizes[-1] <= size
    sizes.clear()
    res = planned_test(recording, g, options=opts, generator=torch.Generator().manual_seed(6), max_samples=5000,
                       pilot=1000)  # fmt: skip
    pilot = sizes[:SPLIT_CALLS]  # the pilot's 1000 draws, then the test's, each in SPLIT_CALLS calls
    assert sum(pilot) == 1000 and set(pilot[:-1]) == {size} and sum(sizes) == res.samples_used, sizes
    test = sizes[SPLIT_CALLS:]
    assert len(test) == SPLIT_CALLS and len(set(test[:-1])) == 1 and test[-1] <= test[0], sizes
    sizes.clear()
    sequential_test(recording, g, options=opts, generator=torch.Generator().manual_seed(6), max_samples=5, first=5)
    assert sizes == [1] * 5  # fewer draws than SPLIT_CALLS: one call per draw, never a single call


def test_variance_anomaly_does_not_stop_before_a_fail_is_possible() -> None:
    """A biased estimator whose variance makes a PASS out of reach (a variance anomaly) still FAILs (the withdrawn
    merge of issue 39 let ``uoro.theta-tilde-scaled``, the control of ``uoro.unbiased-statistical``, end
    INCONCLUSIVE at a first look of one call in 4 of seeds 0-20); the first look's draws come from SPLIT_CALLS calls,
    so a FAIL is possible there and the correct estimator with the same variance stops there, INCONCLUSIVE."""
    g = _truth()

    def sampler(m: int, rng: torch.Generator) -> torch.Tensor:  # bias 40*||g||, relative s.d. 100 per draw
        return 41.0 * g + 1000.0 * torch.randn(m, P, generator=rng, dtype=F64) / math.sqrt(P)

    opts = TestOptions(alpha=1e-3, beta=1e-3, delta=0.02)
    res = sequential_test(
        sampler, g, options=opts, generator=torch.Generator().manual_seed(11), max_samples=20_000, first=1000
    )
    assert res.verdict is Verdict.FAIL, res.summary()
    assert any(q.variance_anomaly or q.verdict is Verdict.FAIL for q in res.quantities)

    unbiased = sequential_test(  # the correct estimator with the same variance: stopped, INCONCLUSIVE
        lambda m, rng: sampler(m, rng) - 40.0 * g, g, options=opts, generator=torch.Generator().manual_seed(11),
        max_samples=20_000, first=1000,
    )  # fmt: skip
    assert unbiased.verdict is Verdict.INCONCLUSIVE and "variance anomaly" in unbiased.reason, unbiased.summary()
    assert unbiased.samples_used == 1000, unbiased.summary()  # the first look could FAIL: it stops there


# ------------------------------------------------------------------ extreme scales
@pytest.mark.parametrize("scale", [1e-155, 1e-170, 1e-200, 1e-300, 1e150])
def test_extreme_scales_give_the_verdict_of_scale_one(scale: float) -> None:
    opts = TestOptions(alpha=1e-3, beta=1e-3, delta=0.1)
    out = []
    for s in (1.0, scale):
        g = _truth(s)
        gen = torch.Generator().manual_seed(7)
        x = g + torch.randn(2000, P, generator=gen, dtype=F64) * (s * 10.0 / math.sqrt(P))
        res = fixed_sample_test(x, g, options=opts, generator=gen)
        out.append(res)

        def sampler(m: int, rng: torch.Generator, g: torch.Tensor = g, s: float = s) -> torch.Tensor:
            return g + torch.randn(m, P, generator=rng, dtype=F64) * (s * 10.0 / math.sqrt(P))

        out.append(
            sequential_test(sampler, g, options=opts, generator=torch.Generator().manual_seed(7), max_samples=8000)
        )
    assert [r.verdict for r in out[:2]] == [r.verdict for r in out[2:]]
    assert out[2].verdict is Verdict.PASS
    assert out[2].quantities[0].bias_norm > 0.0  # no square underflowed to an estimate of exactly 0
    assert out[2].relative_bound == pytest.approx(out[0].relative_bound, rel=1e-6)


@pytest.mark.parametrize("scale", [1e-155, 1e-300])
def test_planned_test_at_extreme_scales_neither_crashes_nor_fails(scale: float) -> None:
    g = _truth(scale)

    def sampler(m: int, rng: torch.Generator) -> torch.Tensor:
        return g + torch.randn(m, P, generator=rng, dtype=F64) * (scale * 10.0 / math.sqrt(P))

    res = planned_test(
        sampler, g, options=TestOptions(alpha=1e-3, beta=1e-3, delta=0.1), generator=torch.Generator().manual_seed(12),
        max_samples=8000, pilot=1000,
    )  # fmt: skip
    assert res.verdict is Verdict.PASS, res.summary()
    assert 0.0 < res.quantities[0].bias_norm < 0.1 * 10.0 * scale


@pytest.mark.parametrize("scale", [1.0, 1e-170])
def test_reason_states_the_bound_in_the_users_units(scale: float) -> None:
    """The engine computes on draws rescaled by a power of two; what it says is in the user's units (‖g‖ = 10·s)."""
    g = _truth(scale)
    x = g + torch.randn(1000, P, generator=torch.Generator().manual_seed(13), dtype=F64) * (scale * 10.0)
    res = fixed_sample_test(x, g, options=TestOptions(alpha=1e-3, beta=1e-3, delta=0.1))
    assert res.verdict is Verdict.INCONCLUSIVE, res.summary()
    assert f"delta*||g|| = {0.1 * 10.0 * scale:.3g} yet" in res.quantities[0].reason, res.quantities[0].reason
    assert res.quantities[0].truth_norm == pytest.approx(10.0 * scale, rel=1e-12)


def test_declared_scale_1e_170_is_not_failed_by_underflow() -> None:
    g = _truth(1e-170)
    gen = torch.Generator().manual_seed(8)
    x = g + torch.randn(2000, P, generator=gen, dtype=F64) * (1e-170 * 10.0 / math.sqrt(P))
    opts = TestOptions(alpha=1e-3, beta=1e-3, delta=0.1, event_floor=1.0)
    res = fixed_sample_test(x, g, options=opts, generator=gen, reference_norm=1e-169)
    assert res.verdict is Verdict.PASS, res.summary()


def test_tiny_truth_has_a_norm() -> None:
    g = _truth(1e-170)
    x = g + torch.randn(100, P, generator=torch.Generator().manual_seed(9), dtype=F64) * 1e-170
    fixed_sample_test(x, g)  # no "vector of zero norm": g has no zero entry
    with pytest.raises(InvalidArgument, match="zero norm"):
        fixed_sample_test(x, torch.zeros(P, dtype=F64))


def test_symmetric_eigh_at_subnormal_scale() -> None:
    a = torch.diag(torch.tensor([3e-310, 1e-310], dtype=F64))
    lam, vec = symmetric_eigh(a)
    assert vec is not None and float(lam.max()) == pytest.approx(3e-310, rel=1e-6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_draws_say_rounding_not_no_variation(dtype: torch.dtype) -> None:
    g = _truth()
    gen = torch.Generator().manual_seed(10)
    x = (g + 1e-4 * torch.randn(2000, P, generator=gen, dtype=F64)).to(dtype)
    res = fixed_sample_test(x, g, options=TestOptions(alpha=1e-3, beta=1e-3, delta=0.1), generator=gen)
    assert res.verdict is not Verdict.FAIL
    if "in 22 coordinate" in res.reason:
        assert str(dtype).split(".")[-1] in res.reason and "round-off" in res.reason, res.reason


def test_calls_are_counted_without_series_diagonal_mode_no_directions() -> None:
    """Diagonal mode (p > dense_max) with no directions keeps no series, but its calls still count."""
    p = 600
    g = torch.full((p,), 0.3, dtype=F64)

    def sampler(m: int, rng: torch.Generator) -> torch.Tensor:
        return g + torch.randn(m, p, generator=rng, dtype=F64)

    opts = TestOptions(delta=0.5, directions=0, hotelling=False)
    res = sequential_test(sampler, g, options=opts, generator=torch.Generator().manual_seed(0), max_samples=4000)
    assert res.verdict is Verdict.PASS and res.samples_used == 2000, res.summary()  # the first look (8 calls)


def test_float32_iid_draws_with_a_wide_spectrum_are_not_called_dependent() -> None:
    """float32 draws whose covariance spans six decades (as UORO's g~ does): the pooled between-call test shrinks
    float32's round-off allowance off along each whitened direction. Shrunk per coordinate instead, the large
    deviations leaked into the small-variance directions and i.i.d. draws read "draws not independent" (a correct
    float32 UORO ran past its time limit on exactly that, issue 37)."""
    gen0 = torch.Generator().manual_seed(7)
    q, _ = torch.linalg.qr(torch.randn(P, P, generator=gen0, dtype=F64))
    a = q * torch.logspace(0, -5, P, dtype=F64)  # s.d. 1 .. 1e-5 along random directions
    g = _truth(0.05)
    for seed in range(3):
        gen = torch.Generator().manual_seed(seed)

        def sampler(m: int, rng: torch.Generator) -> torch.Tensor:
            return (g + torch.randn(m, P, generator=rng, dtype=F64) @ a.T).to(torch.float32)

        res = sequential_test(sampler, g, options=TestOptions(delta=0.1), generator=gen, max_samples=60_000, first=2000)
        assert "not independent" not in res.reason, res.reason
        assert res.verdict is Verdict.PASS, res.reason


def test_design_effect_estimates_the_calls_share() -> None:
    """Kish's design effect from the between-call scatter: draws of 16 calls of n = 250 sharing an offset of variance
    rho (unit noise) have D = 1 + rho * n; independent draws D ~ 1. Measured over 20 seeds: 1.00-1.15 for rho = 0
    and 4.9-6.6 for rho = 0.02 (D = 6; the whitening covariance holds the offsets too, so the estimate runs a little
    low); the bounds leave the 16 offsets' own sampling room (about 35 % of rho * n), three seeds each."""
    from verify.stats.unbiased import _fold, _geometry, _new_acc, design_effect

    g = _truth()
    n, calls = 250, 16
    for rho, lo, hi in ((0.0, 1.0, 1.25), (0.02, 3.5, 9.0)):  # D = 1 and 1 + 0.02 * 250 = 6
        for seed in range(3):
            gen = torch.Generator().manual_seed(seed)
            acc = _new_acc(g, torch.zeros(0, P, dtype=F64), TestOptions())
            for _ in range(calls):
                x = g + math.sqrt(rho) * torch.randn(P, generator=gen, dtype=F64) + torch.randn(n, P, generator=gen,
                                                                                              dtype=F64)  # fmt: skip
                acc = _fold(acc, x, g, "draws")
            D = design_effect(acc, _geometry(acc.mom, g, TestOptions()))
            assert lo <= D <= hi, (rho, seed, D)


# ------------------------------------------------------------------ the design effect's own degrees of freedom
#: seeds (``run_seed("shared-offset", s)``) of the calibration cell whose correct samples the fixed test FAILed at
#: alpha = 1e-3 while its t and F references took the draws' M - 1 degrees of freedom: 8 blocks' design effect was
#: estimated at 1.25, 1.00 and 1.08 for a true 1.225 (``reports/calibration/issue39-seeds``)
SHARED_OFFSET_FALSE_FAILS = (1447, 1946, 2385)


def test_the_design_effect_is_referred_to_its_own_degrees_of_freedom() -> None:
    """Issue 39: D is estimated on (G - 1)·r degrees of freedom (8 blocks, r = 22: 154), and the fixed test's t and F
    references take that many. The correct shared-offset samples it FAILed with M - 1 = 1999 are not FAILed; with
    independent draws nothing changes where D is not estimated (one block: the draws' own degrees of freedom)."""
    from verify.stats.calibration import build, issue39_cells, run_once, run_seed

    cell = next(c for c in issue39_cells() if c.name == "shared-offset")
    problem = build(cell)
    for s in SHARED_OFFSET_FALSE_FAILS:
        res = run_once(problem, 1e-3, "fixed", run_seed(cell.name, s))
        assert res.verdict is not Verdict.FAIL, (s, res.reason)
    # the direction tests' p-values are Student's t on (G - 1)·r = 7 * 22 = 154 degrees of freedom, not on 1999
    from verify.stats import dist
    from verify.stats.premises import BLOCKS_PER_CALL

    gen = torch.Generator().manual_seed(5)
    x = torch.randn(2000, P, generator=gen, dtype=F64) + _truth()
    res = fixed_sample_test(x, _truth(), options=TestOptions(alpha=1e-3, beta=1e-3, delta=0.1), generator=gen)
    dirs = [t for t in res.quantities[0].subtests if t.name.startswith("direction-")]
    assert dirs and res.verdict is not Verdict.FAIL
    dof = (BLOCKS_PER_CALL - 1) * P
    for t in dirs:
        assert t.pvalue == pytest.approx(2.0 * float(dist.t_sf(abs(t.statistic), dof)), rel=1e-9), t
    big = max(dirs, key=lambda t: abs(t.statistic))
    assert big.pvalue > 2.0 * float(dist.t_sf(abs(big.statistic), 1999)), big
