"""``--plan`` with a user's online estimator (issue 37): its cost per sample-step and per step call is piloted
against the toolkit's, and a claim that exercises it is planned as its own work (the recorded time less the
toolkit's sampling) + the user's sampling (the sample-steps and step calls it draws from that part, counted on the
toolkit's run: :mod:`verify.run._sample_steps`, at the user's costs); a claim not counted gets a range (the
recorded time .. recorded x the speed ratio); a part whose pilot cannot run is said not measured. The run's wall
time: the claims in the run's order on its workers, + the run's fixed overhead."""

from __future__ import annotations

import pytest
import torch

from theory.catalog import all_claims
from verify.bench.sample_steps import counted
from verify.checks import uses
from verify.config import RunConfig
from verify.estimators import UORO
from verify.estimators.base import run_estimator
from verify.examples.numpy_kfrtrl import MyNumpyKFRTRL
from verify.impl import Implementations, UOROImpl
from verify.model.builders import random_problem
from verify.run import _sample_steps, plan
from verify.run.plan import ESTIMATOR_PARTS, RECORDED_SECONDS, _recorded, speed_ratio, step_costs


def _config(kfrtrl: object) -> RunConfig:
    return RunConfig(seed=0, implementations=Implementations(uoro=UOROImpl(kfrtrl=lambda: kfrtrl)))


def test_a_batch1_numpy_estimator_is_planned_from_its_sample_steps() -> None:
    config = _config(MyNumpyKFRTRL)
    costs = step_costs(config, "uoro.kfrtrl")
    assert costs is not None and costs.mine > 3 * costs.theirs  # a per-draw numpy loop vs the vectorized toolkit
    assert costs.mine_call >= 0.0 and costs.theirs_call >= 0.0
    ratio = speed_ratio(config, "uoro.kfrtrl")
    assert ratio is not None and ratio == pytest.approx(costs.mine / costs.theirs)
    got = _recorded(all_claims()["uoro.kfrtrl-unbiased"], config)
    steps = _sample_steps.SAMPLE_STEPS["ci"]["uoro.kfrtrl-unbiased"]["uoro.kfrtrl"]
    calls = _sample_steps.STEP_CALLS["ci"]["uoro.kfrtrl-unbiased"]["uoro.kfrtrl"]
    recorded = RECORDED_SECONDS["ci"]["uoro.kfrtrl-unbiased"]
    theirs = steps * costs.theirs + calls * costs.theirs_call
    ours = steps * costs.mine + calls * costs.mine_call
    assert got.seconds == pytest.approx(max(recorded - theirs, 0.1 * recorded) + ours)
    assert got.seconds > recorded  # 40x slower per sample: more than the toolkit's whole claim
    assert got.upper is None and f"{steps:,} sample-steps of your uoro.kfrtrl in {calls:,} step calls" in got.basis
    assert not got.measured


def test_a_claim_not_counted_is_planned_as_a_range(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(MyNumpyKFRTRL)
    monkeypatch.setattr(_sample_steps, "SAMPLE_STEPS", {})
    ratio = speed_ratio(config, "uoro.kfrtrl")
    assert ratio is not None
    got = _recorded(all_claims()["uoro.kfrtrl-unbiased"], config)
    recorded = RECORDED_SECONDS["ci"]["uoro.kfrtrl-unbiased"]
    assert got.seconds == recorded and got.upper is not None and got.upper >= recorded * ratio * 0.999
    assert "between the recorded time" in got.basis


def test_a_part_whose_pilot_cannot_run_is_said_not_measured() -> None:
    class Broken:
        def __call__(self) -> object:
            raise RuntimeError("cannot build")

    config = RunConfig(seed=0, implementations=Implementations(uoro=UOROImpl(kfrtrl=Broken())))
    plan._RATIOS.clear()
    assert speed_ratio(config, "uoro.kfrtrl") is None
    got = _recorded(all_claims()["uoro.kfrtrl-unbiased"], config)
    assert "is not measured" in got.basis and not got.measured


def test_every_ci_claim_that_steps_an_estimator_is_counted() -> None:
    """A new claim (or one that now exercises another estimator) needs ``python -m verify.bench.sample_steps
    --write``: without its count, ``--plan`` falls back to a range."""
    table = _sample_steps.SAMPLE_STEPS.get("ci", {})
    missing = [
        f"{cid} ({part})"
        for cid, claim in all_claims().items()
        if "ci" in claim.profiles and "cuda" not in claim.requires
        for part in uses(cid)
        if part in ESTIMATOR_PARTS and part not in table.get(cid, {})
    ]
    assert not missing, f"not counted: {missing}; run python -m verify.bench.sample_steps --write"


def test_the_counting_copy_counts_samples_times_steps_and_survives_copies() -> None:
    from verify.bench import sample_steps

    P, th = random_problem("elman-tanh", n=3, d=2, T=4, k=2, generator=torch.Generator().manual_seed(0))
    sample_steps._COUNTS.clear()
    sample_steps._CALLS.clear()
    est = counted(UORO(), "uoro.uoro")
    assert isinstance(est, UORO)
    run_estimator(est, P, th, torch.Generator().manual_seed(1), samples=5)
    assert sample_steps._COUNTS["uoro.uoro"] == 5 * 4 and sample_steps._CALLS["uoro.uoro"] == 4
    copy = est.with_noise(est.noise)  # dataclasses.replace: the same counting subclass
    run_estimator(copy, P, th, torch.Generator().manual_seed(1), samples=2)
    assert sample_steps._COUNTS["uoro.uoro"] == 5 * 4 + 2 * 4 and sample_steps._CALLS["uoro.uoro"] == 8


def test_the_wall_time_is_the_runs_schedule_plus_its_overhead() -> None:
    """Claims go to the first free worker in the run's order (recorded time, longest first), at planned seconds."""
    from verify.checks import ClaimPlan
    from verify.run.plan import RUN_OVERHEAD_S, plan_document, schedule_seconds

    # recorded order: unbiased-statistical (12.7), mutants-caught (6.1), bias-alignment (1.6), exact-expectation
    plans = [
        ClaimPlan("uoro.exact-expectation", 3.0, "x"),
        ClaimPlan("rtrl.bias-alignment", 4.0, "x"),
        ClaimPlan("uoro.mutants-caught", 5.0, "x"),
        ClaimPlan("uoro.unbiased-statistical", 100.0, "x", upper=200.0),
    ]
    assert schedule_seconds(plans, 1) == 112.0
    assert schedule_seconds(plans, 2) == 100.0  # the others (5 + 4 + 3) on the second worker
    assert schedule_seconds(plans, 2, upper=True) == 200.0
    # in the run's order, not the plan's: 1 (worker 1), 5 (worker 2), 4 (worker 1: 5), 3 (worker 1: 8)
    assert schedule_seconds([*plans[:3], ClaimPlan("uoro.unbiased-statistical", 1.0, "x")], 2) == 8.0
    doc = plan_document(plans, {}, {"workers": 2})
    assert doc["wall_seconds"] == 100.0 + RUN_OVERHEAD_S and doc["wall_upper_seconds"] == 200.0 + RUN_OVERHEAD_S


def test_a_planned_sequential_piece_is_expected_near_half_its_plan() -> None:
    from verify.checks.uoro_plans import _plan
    from verify.stats.unbiased import TARGET_SHARE
    from verify.uoro.planning import FIRST, Pilot, sequential_calls, sequential_look

    planned = Pilot("p", 100_000, True, sequential_calls(100_000), 0.01, 0.001, 100, 1.0, 16)
    fixed = Pilot("f", 6000, False, 1, 0.01, 0.001, 100, 1.0, 16)
    n = planned.expected_draws
    assert n == sequential_look(int(TARGET_SHARE * 100_000)) and 50_000 <= n < 60_000
    assert sequential_look(10) == FIRST and fixed.expected_draws == 6000
    assert planned.expected_seconds == pytest.approx(sequential_calls(n) * 0.01 + n * 0.001)
    got = _plan("uoro.x", "a UORO", [planned, fixed])
    assert got.seconds == pytest.approx(planned.expected_seconds + fixed.seconds)
    assert got.upper == pytest.approx(planned.seconds + fixed.seconds) and got.draws == 106_000
    assert f"expected to stop at about {n + 6000:,}" in got.basis
