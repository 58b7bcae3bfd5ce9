"""The ``rtrl-sec71`` / ``rtrl-sec72`` sweeps (RTRL convergence paper §7.1-7.2, rebuilt): definitions, judge, control.

The control test runs the broken RTRL (no dF/dtheta, mutant ``rtrl.no-immediate-term``) through the same harness
(:func:`verify.rtrl.sec7.run_cell`) and shows the judge FAILs it by construction: its loss never goes below the
readout-only floor.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from verify.checks.rtrl_sec7 import ALPHA, judge_sec7
from verify.errors import InvalidArgument
from verify.figure_spec import normalize_figure
from verify.rtrl import sec7
from verify.run.sweep import SweepOptions, execute_cell, get_definition
from verify.run.sweep.cells import tasks
from verify.run.sweep.driver import CellOutcome
from verify.run.sweep.tasks import sec7_learner
from verify.verdict import Verdict

TINY = sec7.Scale(seeds=3, steps=200, n=2, d=2, batch=4, lrs=(1e-2,), schedules=("step",), ks=(2,), checkpoints=2)


def test_rmsprop_schedules() -> None:
    const = sec7.RMSpropSchedule(0.1, "constant", 100)
    step = sec7.RMSpropSchedule(0.1, "step", 100)
    inv = sec7.RMSpropSchedule(0.1, "inverse", 100)
    assert const.step_size(1) == const.step_size(100) == 0.1
    assert step.step_size(50) == 0.1 and step.step_size(51) == pytest.approx(0.01)
    assert inv.step_size(100) == pytest.approx(0.1 / 11)
    theta, g = torch.zeros(3, dtype=torch.float64), torch.tensor([1.0, -2.0, 0.0], dtype=torch.float64)
    new, v = const.update(theta, g, const.init(theta), 1)
    # first RMSprop step: v = 0.01 g^2, step = lr * g / (0.1 |g|) = lr * 10 sign(g)
    assert torch.allclose(new, torch.tensor([-1.0, 1.0, 0.0], dtype=torch.float64))
    assert torch.allclose(v, 0.01 * g * g)


@pytest.mark.parametrize(
    ("kwargs", "arg"),
    [({"lr": 0.0}, "lr"), ({"lr": math.inf}, "lr"), ({"schedule": "cosine"}, "schedule"), ({"steps": 0}, "steps")],
)
def test_rmsprop_bad_input_names_the_argument(kwargs: dict[str, Any], arg: str) -> None:
    args = {"lr": 0.1, "schedule": "step", "steps": 10} | kwargs
    with pytest.raises(InvalidArgument, match=arg):
        sec7.RMSpropSchedule(**args)


def test_run_round_trip_and_bad_fields() -> None:
    run = sec7.Run("linear", "tbptt", 0.01, "step", 3, steps=100, k=4)
    assert sec7.Run.from_params(run.params()) == run
    with pytest.raises(InvalidArgument, match="params"):
        sec7.Run.from_params({**run.params(), "extra": 1})
    with pytest.raises(InvalidArgument, match="k"):
        sec7.Run("linear", "tbptt", 0.01, "step", 0, steps=100)
    with pytest.raises(InvalidArgument, match="k"):
        sec7.Run("linear", "rtrl", 0.01, "step", 0, steps=100, k=2)
    with pytest.raises(InvalidArgument, match="teacher"):
        sec7.Run("sigmoid", "rtrl", 0.01, "step", 0, steps=100)


def test_design_sizes() -> None:
    assert len(sec7.design("7.1", "ci")) == 2 * 5 * 1 * 1 * 4
    assert len(sec7.design("7.2", "ci")) == 3 * 5 * 1 * 1 * 4
    assert len(sec7.design("7.1", "paper")) == 2 * 10 * 4 * 3 * 7
    assert len(sec7.design("7.2", "paper")) == 3 * 10 * 4 * 3 * 7
    assert {r.seed for r in sec7.design("7.1", "ci", seed=7)} == set(range(7, 12))
    assert len(sec7.design("7.1", "full")) == 2 * 5 * 2 * 2 * 5
    with pytest.raises(InvalidArgument, match="--scale"):
        sec7.design("7.1", "huge")


def test_sign_test() -> None:
    assert sec7.sign_test(5, 0)[0] == pytest.approx(1 / 32)
    assert sec7.sign_test(0, 5)[1] == pytest.approx(1 / 32)
    assert sec7.min_wins(5, ALPHA) == 5
    assert sec7.min_wins(10, ALPHA) == 9
    assert sec7.min_wins(4, ALPHA) is None


def _fake(final: float, floor: float = 1.0, initial: float = 2.0, diverged: bool = False) -> dict[str, Any]:
    return {"final": final, "floor": floor, "initial_loss": initial, "steps": [0, 10],
            "loss": [initial, final], "diverged": "x" if diverged else None}  # fmt: skip


def _synthetic(rtrl: list[float], tbptt: list[float], broken: float = 1.5) -> tuple[list[sec7.Run], dict[Any, Any]]:
    runs, values = [], {}
    for s, (a, b) in enumerate(zip(rtrl, tbptt, strict=True)):
        for who, k, final in (("rtrl", 0, a), ("tbptt", 2, b), ("broken-rtrl", 0, broken)):
            r = sec7.Run("linear", who, 0.01, "step", s, steps=10, k=k)
            runs.append(r)
            values[r] = _fake(final, diverged=not math.isfinite(final))
    return runs, values


@pytest.mark.parametrize(
    ("rtrl", "tbptt", "verdict", "why"),
    [
        ([0.1] * 5, [0.2] * 5, Verdict.PASS, None),
        ([0.1, 0.1, 0.1, 0.3, 0.3], [0.2] * 5, Verdict.INCONCLUSIVE, "not resolved at this power"),
        ([0.3] * 5, [0.2] * 5, Verdict.FAIL, "TBPTT reaches the lower loss"),
        ([0.1, 0.1, 0.1, 0.1, 1.2], [0.2] * 5, Verdict.FAIL, "premise not met"),
        ([0.1] * 5, [math.inf] * 5, Verdict.PASS, None),
    ],
)
def test_judge_rules(rtrl: list[float], tbptt: list[float], verdict: Verdict, why: str | None) -> None:
    runs, values = _synthetic(rtrl, tbptt)
    results = judge_sec7("7.1", runs, values, {})
    comp, unstable = results
    assert comp.claim_id == "rtrl.sec71-linear-sd1"
    assert comp.verdict is verdict, comp.reason
    assert why is None or why in (comp.reason or "")
    assert comp.controls and comp.controls[0].observed == "FAIL"  # broken (1.5) is above the floor (1.0)
    assert unstable.claim_id == "rtrl.sec71-tbptt-unstable"
    # one eta0 in the grid: "TBPTT unstable for some learning rates" cannot be tested unless it is seen
    assert unstable.verdict is (Verdict.PASS if tbptt[0] == math.inf else Verdict.INCONCLUSIVE)
    for fig in comp.data["figures"]:
        normalize_figure(fig)


def test_control_that_learns_blocks_a_pass() -> None:
    """A 'broken' learner that did get below the floor is a missed control: the comparison cannot PASS."""
    runs, values = _synthetic([0.1] * 5, [0.2] * 5, broken=0.05)
    comp = judge_sec7("7.1", runs, values, {})[0]
    assert comp.verdict is Verdict.FAIL and "control" in (comp.reason or "")


def test_errors_are_a_fail_naming_the_run() -> None:
    runs, values = _synthetic([0.1] * 5, [0.2] * 5)
    res = judge_sec7("7.2", runs, values, {runs[0]: "Traceback: boom"})
    assert len(res) == 1 and res[0].verdict is Verdict.FAIL and "seed=0" in res[0].summary


def test_broken_rtrl_through_the_harness_fails_by_construction() -> None:
    """The control reruns the harness with the broken learner: it never goes below the readout-only floor."""
    runs = sec7.design("7.1", TINY)
    values = {r: sec7.run_cell(r, sec7_learner) for r in runs}
    for r, v in values.items():
        if r.learner == "broken-rtrl":
            assert v["final"] >= v["floor"] * (1 - 1e-12), (r.label(), v["final"], v["floor"])
    results = judge_sec7("7.1", runs, values, {})
    comparisons = [r for r in results if r.claim_id.startswith("rtrl.sec71-linear")]
    assert len(comparisons) == 2
    for res in comparisons:
        (ctrl,) = res.controls
        assert ctrl.expected == "FAIL" and ctrl.observed == "FAIL", ctrl.detail
        assert "readout-only floor" in ctrl.detail
    # correct RTRL does learn the recurrence on these runs (the premise the control cannot meet)
    for res in comparisons:
        assert all(p["learned"] for p in res.data["table"]["per_seed"])


def test_sweep_definitions_build_and_merge() -> None:
    for name, cells in (("rtrl-sec71", 40), ("rtrl-sec72", 60)):
        plan = get_definition(name).build(SweepOptions(scale="ci"))
        assert len(plan.cells) == cells and len({c.key for c in plan.cells}) == cells
        assert {c.task for c in plan.cells} == {"rtrl.sec7-run"} and "rtrl.sec7-run" in tasks()
        assert plan.settings["constants"]["dt_linear"] == sec7.DT_LINEAR
        missing = plan.merge({})
        assert [r.verdict for r in missing] == [Verdict.FAIL] and "no outcome" in (missing[0].reason or "")
    with pytest.raises(InvalidArgument, match="--scale"):
        get_definition("rtrl-sec71").build(SweepOptions(scale="huge"))


def test_task_runs_one_cell() -> None:
    run = sec7.design("7.1", TINY)[0]
    out = execute_cell("rtrl.sec7-run", run.params())
    assert out["ok"], out.get("error")
    assert len(out["value"]["loss"]) == 3 and out["value"]["floor"] > 0
    bad = execute_cell("rtrl.sec7-run", {**run.params(), "schedule": "cosine"})
    assert not bad["ok"] and "schedule" in bad["error"]


def test_merge_judges_outcomes() -> None:
    plan = get_definition("rtrl-sec71").build(SweepOptions(scale="ci"))
    outcomes = {}
    for c in plan.cells:
        run = sec7.Run.from_params(dict(c.params))
        final = {"rtrl": 0.1, "tbptt": 0.2, "broken-rtrl": 1.5}[run.learner]
        outcomes[c.key] = CellOutcome(c, True, _fake(final))
    results = plan.merge(outcomes)
    ids = [r.claim_id for r in results]
    assert ids == ["rtrl.sec71-linear-sd1", "rtrl.sec71-linear-sd3", "rtrl.sec71-tbptt-unstable"]
    assert [r.verdict for r in results] == [Verdict.PASS, Verdict.PASS, Verdict.INCONCLUSIVE]


def test_instability_not_seen_on_a_grid_of_learning_rates_is_a_fail_and_rtrl_instability_a_finding() -> None:
    runs, values = [], {}
    for s in range(3):
        for lr in (0.01, 0.1):
            for who, k in (("rtrl", 0), ("tbptt", 2)):
                r = sec7.Run("linear", who, lr, "step", s, steps=10, k=k)
                runs.append(r)
                values[r] = _fake(
                    math.inf if (who == "rtrl" and lr == 0.1) else 0.1, diverged=who == "rtrl" and lr == 0.1
                )
    res = judge_sec7("7.1", runs, values, {})[-1]
    assert res.claim_id == "rtrl.sec71-tbptt-unstable" and res.verdict is Verdict.FAIL
    assert len(res.findings) == 1 and "RTRL itself is unstable" in res.findings[0] and "lr=0.1" in res.findings[0]
