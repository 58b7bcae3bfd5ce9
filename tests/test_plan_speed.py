"""``--plan`` with a user's online estimator (issue 37): its cost per sample-step is piloted against the toolkit's,
and a claim that exercises it is planned as the recorded time + the sample-steps it draws from that part (counted
on the toolkit's run: :mod:`verify.run._sample_steps`) x the difference in cost; a claim not counted gets a range
(the recorded time .. recorded x the speed ratio); a part whose pilot cannot run is said not measured."""

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
    assert costs is not None and costs[0] > 3 * costs[1]  # a per-draw numpy loop vs the vectorized toolkit
    ratio = speed_ratio(config, "uoro.kfrtrl")
    assert ratio is not None and ratio == pytest.approx(costs[0] / costs[1])
    got = _recorded(all_claims()["uoro.kfrtrl-unbiased"], config)
    steps = _sample_steps.SAMPLE_STEPS["ci"]["uoro.kfrtrl-unbiased"]["uoro.kfrtrl"]
    recorded = RECORDED_SECONDS["ci"]["uoro.kfrtrl-unbiased"]
    assert got.seconds == pytest.approx(recorded + steps * (costs[0] - costs[1]))
    assert got.upper is None and f"{steps:,} sample-steps of your uoro.kfrtrl" in got.basis and not got.measured


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
    est = counted(UORO(), "uoro.uoro")
    assert isinstance(est, UORO)
    run_estimator(est, P, th, torch.Generator().manual_seed(1), samples=5)
    assert sample_steps._COUNTS["uoro.uoro"] == 5 * 4
    copy = est.with_noise(est.noise)  # dataclasses.replace: the same counting subclass
    run_estimator(copy, P, th, torch.Generator().manual_seed(1), samples=2)
    assert sample_steps._COUNTS["uoro.uoro"] == 5 * 4 + 2 * 4
