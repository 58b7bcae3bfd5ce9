"""``rnn-verify run --plan``: what each selected claim would do and how long, before anything runs (issue 21)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from verify.checks import planners
from verify.checks.uoro_plans import plan_truncated_unbiased
from verify.checks.uoro_statistics import check_truncated_unbiased
from verify.cli import main
from verify.config import RunConfig

_SLOW_UORO = (
    "import time\n"
    "from verify.estimators.uoro import UORO\n\n\n"
    "class SlowUORO(UORO):\n"
    "    def step(self, problem, theta, state, t, rng):\n"
    "        time.sleep(0.01)  # a slow implementation: 10 ms per step, whatever the number of samples\n"
    "        return super().step(problem, theta, state, t, rng)\n"
)


def _plan(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, dict[str, object]]:
    assert main(["run", "--plan", "--json", "-", *argv]) == 0
    doc = json.loads(capsys.readouterr().out)
    return {c["id"]: c for c in doc["claims"]}


def test_plan_runs_nothing_writes_nothing_and_names_every_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    claims = ["uoro.rank-unbiased", "uoro.rank-variance", "rtrl.exact", "device.gpu-unbiasedness"]
    t0 = time.perf_counter()
    assert main(["run", "--plan", "--claims", *claims]) == 0
    assert time.perf_counter() - t0 < 30  # pilots of ~1 s, not the run
    out = capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []  # no report folder, nothing else
    for cid in claims:
        assert cid in out
    assert "measured: pilot of rank-4 UORO" in out and "recorded: ci profile" in out and "total:" in out
    assert "SKIPPED: runs in profile full only" in out
    by_id = _plan(capsys, ["--claims", *claims])
    assert by_id["uoro.rank-unbiased"]["measured"] and by_id["uoro.rank-unbiased"]["draws"] > 1000
    assert not by_id["rtrl.exact"]["measured"] and by_id["rtrl.exact"]["draws"] is None
    assert list(tmp_path.iterdir()) == []


def test_plan_of_a_slow_implementation_takes_longer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The estimate comes from a pilot of the implementation under test: 10 ms of sleep per step shows."""
    f = tmp_path / "slow_uoro.py"
    f.write_text(_SLOW_UORO)
    claims = ["--claims", "uoro.rank-unbiased", "uoro.rank-variance"]
    fast = _plan(capsys, claims)
    slow = _plan(capsys, [*claims, "--impl", f"uoro={f}:SlowUORO"])
    for cid in ("uoro.rank-unbiased", "uoro.rank-variance"):
        assert slow[cid]["measured"] and fast[cid]["measured"]
        assert slow[cid]["seconds"] > fast[cid]["seconds"], (cid, slow[cid], fast[cid])


def test_plan_bad_input_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--plan", "--junit", "j.xml", "--claims", "rtrl.exact"]) == 2
    assert "--plan writes nothing" in capsys.readouterr().err
    assert main(["run", "--plan", "--claims", "no.such-claim"]) == 2


@pytest.mark.slow  # the whole ci-size check beside its plan: .ci/run's slow step (tests/cli)
def test_planned_draws_are_the_checks_own_plan() -> None:
    """With the check's first batch as pilot, the plan is the samples_planned the check reports (not a guess)."""
    config = RunConfig(profile="ci", seed=0, options=(("controls", False),))  # the control does not change the plan
    plan = plan_truncated_unbiased(config, 30.0)
    res = check_truncated_unbiased(config)
    assert plan.draws == res.samples_planned and plan.measured


def test_the_statistical_uoro_claims_have_planners() -> None:
    have = set(planners())
    for cid in ("unbiased-statistical", "truncated-unbiased", "rank-unbiased", "preactivation", "rank-variance",
                "variance-growth", "variance-matches-algorithm-1", "reinforce-link"):  # fmt: skip
        assert f"uoro.{cid}" in have


@pytest.mark.parametrize("profile", ["ci", "full"])
def test_the_planners_set_up_what_the_checks_set_up(profile: str) -> None:
    from verify.checks.uoro_plans import prop1_cells, variance_setup
    from verify.checks.uoro_variance_matches import VARIANCE_SETUP

    config = RunConfig(profile=profile)
    # one definition serves check and planner; its sizes are the claim's: n*T >= 64 signs (ci), >= 256 (full),
    # n the state size (2H for the LSTM)
    for kind, n, T in prop1_cells(config):
        assert (2 * n if kind == "lstm" else n) * T >= (256 if profile == "full" else 64), (kind, n, T)
    assert variance_setup(config) == VARIANCE_SETUP[profile]
