"""The one result builder of the checks (:func:`verify.checks.result`) and the rules it owns for every family."""

from __future__ import annotations

import time

import pytest

from verify.checks import CONTROL_NOT_AS_EXPECTED, result
from verify.checks.uoro_common import finish
from verify.config import RunConfig
from verify.impl import DEFAULT
from verify.verdict import Control, Verdict

CAUGHT = Control("mutant caught", "FAIL", "FAIL")
MISSED = Control("mutant missed", "FAIL", "PASS", "ratio 0.3")
POSITIVE_BROKEN = Control("unbiased mutant", "PASS", "FAIL")


def test_seed_from_the_config_or_the_judges_seed_and_wall_time_from_t0() -> None:
    t0 = time.perf_counter() - 2.0
    res = result("c", RunConfig(seed=7), t0, Verdict.PASS, "ok")
    assert res.seed == 7 and res.wall_time >= 2.0
    assert (res.device, res.dtype, res.comparison) == ("cpu", "float64", "<=")
    assert result("c", 11, time.perf_counter(), Verdict.PASS, "ok").seed == 11  # a sweep's judge has only the seed


def test_a_bool_decision_is_pass_or_fail_and_fields_pass_through() -> None:
    t0 = time.perf_counter()
    res = result("c", RunConfig(), t0, True, "s", statistic=0.5, threshold=1.0, data={"x": 1}, findings=("f",))
    assert res.verdict is Verdict.PASS and (res.statistic, res.threshold, res.data, res.findings) == (
        0.5,
        1.0,
        {"x": 1},
        ("f",),
    )
    assert result("c", RunConfig(), t0, False, "s").verdict is Verdict.FAIL
    dev = result("c", RunConfig(), t0, True, "s", device="cuda:0", dtype="float32")
    assert (dev.device, dev.dtype) == ("cuda:0", "float32")


def test_controls_as_expected_leave_the_result_alone() -> None:
    res = result("c", RunConfig(), time.perf_counter(), Verdict.PASS, "all good", controls=[CAUGHT])
    assert res.verdict is Verdict.PASS and res.summary == "all good" and res.controls == (CAUGHT,)


@pytest.mark.parametrize("control", [MISSED, POSITIVE_BROKEN])
def test_a_control_not_as_expected_turns_pass_into_fail_and_is_named(control: Control) -> None:
    res = result("c", RunConfig(), time.perf_counter(), Verdict.PASS, "measured", controls=(CAUGHT, control))
    assert res.verdict is Verdict.FAIL
    expected = f"{control.name} (expected {control.expected}, observed {control.observed})"
    assert res.summary == "measured" + CONTROL_NOT_AS_EXPECTED + expected
    assert CAUGHT.name not in res.summary


@pytest.mark.parametrize("verdict", [Verdict.FAIL, Verdict.INCONCLUSIVE])
def test_a_control_not_as_expected_never_changes_another_verdict(verdict: Verdict) -> None:
    res = result("c", RunConfig(), time.perf_counter(), verdict, "s", controls=[MISSED], reason="why")
    assert res.verdict is verdict and res.summary.startswith("s" + CONTROL_NOT_AS_EXPECTED) and res.reason == "why"


@pytest.mark.parametrize("verdict", [Verdict.INCONCLUSIVE, Verdict.SKIPPED])
def test_inconclusive_or_skipped_without_reason_takes_the_summary(verdict: Verdict) -> None:
    t0 = time.perf_counter()
    assert result("c", RunConfig(), t0, verdict, "no premise").reason == "no premise"
    with_ctrl = result("c", RunConfig(), t0, verdict, "no premise", controls=[MISSED])
    assert with_ctrl.reason == with_ctrl.summary  # the named control included
    assert result("c", RunConfig(), t0, verdict, "no premise", reason="given").reason == "given"


def test_pass_and_fail_keep_the_reason_they_are_given() -> None:
    t0 = time.perf_counter()
    assert result("c", RunConfig(), t0, Verdict.FAIL, "s").reason is None
    assert result("c", RunConfig(), t0, Verdict.FAIL, "s", reason="blocks missing").reason == "blocks missing"


def test_uoro_wrapper_adds_the_comparison_and_the_injected_mutant_only() -> None:
    t0 = time.perf_counter()
    plain = finish("uoro.x", RunConfig(), t0, Verdict.INCONCLUSIVE, "s", statistic=1.0)
    assert plain.comparison == "<" and plain.summary == "s" and plain.reason == "s"
    assert finish("uoro.x", RunConfig(), t0, Verdict.PASS, "s", comparison=">=").comparison == ">="
    cfg = RunConfig(implementations=DEFAULT.with_family(DEFAULT.uoro, label="uoro.some-mutant"))
    res = finish("uoro.x", cfg, t0, Verdict.INCONCLUSIVE, "s", controls=[MISSED])
    assert res.reason is not None and MISSED.name in res.reason and res.verdict is Verdict.INCONCLUSIVE
    assert res.summary == res.reason + " [uoro.some-mutant injected]"  # named after the summary, not in the reason
