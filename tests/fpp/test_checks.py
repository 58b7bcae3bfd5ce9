"""The fpp checks PASS on the ci configuration, their controls FAIL, and every FPP mutant is caught."""

from __future__ import annotations

import json

import pytest

from theory.catalog import all_claims
from verify.checks import registry
from verify.checks.fpp import (
    check_stochasticworld_reproduction,
    eq7_core,
    kkt_core,
    lemma3_core,
    prop2_core,
    stationarity_core,
)
from verify.config import RunConfig
from verify.fpp.broken_learners import LEARNER_MUTANTS
from verify.impl.mutants.fpp import MUTANTS
from verify.report.figures import claim_figures
from verify.report.plots import WITHOUT_FIGURE
from verify.run.check import run_check
from verify.verdict import Verdict

FPP_CLAIMS = [c for c in all_claims() if c.startswith("fpp.")]


@pytest.mark.parametrize("claim_id", FPP_CLAIMS)
def test_fpp_checks_pass_with_controls(claim_id: str) -> None:
    res = run_check(all_claims()[claim_id], RunConfig())
    assert res.verdict is Verdict.PASS, res.summary + (res.reason or "")
    assert res.controls and all(c.ok and c.expected == "FAIL" for c in res.controls)
    json.dumps(res.to_dict())
    figs, problems = claim_figures(claim_id, res.data)
    assert bool(figs) != (claim_id in WITHOUT_FIGURE) and not problems, (figs, problems)  # report figure policy


def test_every_fpp_mutant_is_caught_by_the_checks_it_is_visible_to() -> None:
    cfg = RunConfig()
    by_name = {m.name: m for m in MUTANTS}
    assert set(by_name) == {
        "fpp.eq7-penalty-sign",
        "fpp.sampler-exclusive-endpoint",
        "fpp.multiplier-full-loss-adjoint",
        "fpp.multiplier-unscaled",
    }
    assert set(LEARNER_MUTANTS) == {"fpp.learner-frozen", "fpp.learner-sign-flip"}  # the reproductions' controls
    sign = by_name["fpp.eq7-penalty-sign"].impl
    assert not eq7_core(cfg, sign)["passed"]
    assert not lemma3_core(cfg, sign)["passed"]
    assert not stationarity_core(cfg, sign)["passed"]
    assert not lemma3_core(cfg, by_name["fpp.sampler-exclusive-endpoint"].impl)["passed"]
    for name in ("fpp.multiplier-full-loss-adjoint", "fpp.multiplier-unscaled"):
        assert not kkt_core(cfg, by_name[name].impl)["passed"], name
    assert not prop2_core(cfg, by_name["fpp.multiplier-full-loss-adjoint"].impl)["passed"]
    for m in MUTANTS:
        assert all(cid in all_claims() for cid in m.visible_to)


def test_the_correct_implementations_pass_the_cores() -> None:
    cfg = RunConfig(seed=3)
    assert eq7_core(cfg)["passed"]
    assert lemma3_core(cfg)["passed"]
    assert kkt_core(cfg)["passed"]
    assert prop2_core(cfg)["passed"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 6))
def test_checks_pass_over_seeds(seed: int) -> None:
    """Correct implementations over several seeds (the deterministic and rate checks must not flake)."""
    for cid in ("fpp.stationarity", "fpp.kkt-recovery", "fpp.prop2-kkt-equivalence"):
        res = run_check(all_claims()[cid], RunConfig(seed=seed))
        assert res.verdict is Verdict.PASS, (cid, seed, res.summary)


def test_stochasticworld_reports_levels_that_do_not_round_to_the_printed_ones() -> None:
    res = check_stochasticworld_reproduction(RunConfig())
    assert res.verdict is Verdict.PASS  # within the paper's "about" (0.01) ...
    # ... but 0.5192 and 0.4545 do not round to the printed 0.51 and 0.46: said, not hidden
    assert len(res.findings) == 2
    assert "0.5192" in res.findings[0] and "0.4545" in res.findings[1]


#: seed 71 (the same control, the same size, twice the time) in .ci/run's slow step
@pytest.mark.parametrize("seed", [64, pytest.param(71, marks=pytest.mark.slow)])
def test_stationarity_control_is_caught_where_400_steps_were_too_few(seed: int) -> None:
    """Issue 27 (gate sweep over 200 seeds): at these seeds the sign mutant did not break the 1/N bound within 400
    steps and the check FAILed correct code; the harness now reruns the mutant longer until it breaks."""
    res = registry()["fpp.stationarity"](RunConfig(seed=seed))
    assert res.verdict is Verdict.PASS, res.summary
    (ctrl,) = res.controls
    assert ctrl.ok and "up to N = 1600" in ctrl.detail, ctrl.detail
