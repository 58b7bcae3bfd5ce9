"""``--plan`` with a user's online estimator (issue 37): its speed per sample is piloted against the toolkit's; the
claims exercising it are planned as a range (the recorded time .. recorded x the ratio: the user's share of a
claim's work is not known); a part whose pilot cannot run is said not measured (never a crash)."""

from __future__ import annotations

from theory.catalog import all_claims
from verify.config import RunConfig
from verify.examples.numpy_kfrtrl import MyNumpyKFRTRL
from verify.impl import Implementations, UOROImpl
from verify.run import plan
from verify.run.plan import RECORDED_SECONDS, _recorded, speed_ratio


def _config(kfrtrl: object) -> RunConfig:
    return RunConfig(seed=0, implementations=Implementations(uoro=UOROImpl(kfrtrl=lambda: kfrtrl)))


def test_a_batch1_numpy_estimator_is_piloted_and_its_claims_given_a_range() -> None:
    config = _config(MyNumpyKFRTRL)
    ratio = speed_ratio(config, "uoro.kfrtrl")
    assert ratio is not None and ratio > 3  # a batch-1 numpy object stepped per draw vs the vectorized toolkit
    got = _recorded(all_claims()["uoro.kfrtrl-unbiased"], config)
    recorded = RECORDED_SECONDS["ci"]["uoro.kfrtrl-unbiased"]
    # a range: the recorded time (the user's sampling a small share of the claim's work) .. recorded x ratio (all)
    assert got.seconds == recorded and got.upper is not None and got.upper >= recorded * ratio * 0.999
    assert "between the recorded time" in got.basis and not got.measured


def test_a_part_whose_pilot_cannot_run_is_said_not_measured() -> None:
    class Broken:
        def __call__(self) -> object:
            raise RuntimeError("cannot build")

    config = RunConfig(seed=0, implementations=Implementations(uoro=UOROImpl(kfrtrl=Broken())))
    plan._RATIOS.clear()
    assert speed_ratio(config, "uoro.kfrtrl") is None
    got = _recorded(all_claims()["uoro.kfrtrl-unbiased"], config)
    assert "is not measured" in got.basis and not got.measured
