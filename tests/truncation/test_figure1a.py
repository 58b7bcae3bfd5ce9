"""Fig. 1(a) (Miller & Hardt 2019, "Stable Recurrent Models", arXiv:1805.10369, §7.1, App. A.5): the saturated tanh.

App. A.5's instance saturates tanh (input drive s.d. sqrt(2d)): its truncation error collapses to round-off within a
few k and the rate criterion holds vacuously. The check judges the same draws with U rescaled and reports the
printed instance as a finding; a judged curve that is degenerate is a FAIL (the premise).
"""

from __future__ import annotations

import pytest
import torch

from verify.checks.truncation import check_figure_1a
from verify.config import RunConfig
from verify.impl import Implementations
from verify.truncation import figure1a, fixtures
from verify.verdict import Verdict

SETUP = figure1a.Figure1aSetup(n=8, T=40, runs=1, K=39)


def _kind(input_sd: float | None) -> figure1a.Figure1aKind:
    gen = torch.Generator().manual_seed(900)
    return figure1a.figure1a_kind("elman-tanh", Implementations().truncation, gen, SETUP, input_sd=input_sd)


def test_the_printed_tanh_curve_is_degenerate_and_the_rescaled_one_is_not() -> None:
    printed, unsat = _kind(None), _kind(fixtures.UNSATURATED_INPUT_SD)
    assert printed.record["instance"]["saturated"] and printed.record["instance"]["mean_derivative"] < 0.3
    assert any("tanh saturated" in r for r in figure1a.degenerate_reasons("elman-tanh", printed.record))
    # the printed curve decays far faster than lambda^k: the rate criterion would hold vacuously
    assert printed.record["slope"] < 3 * printed.record["log_lam"]
    assert not unsat.record["instance"]["saturated"]
    assert unsat.record["instance"]["points_above_floor"] >= 30
    assert figure1a.degenerate_reasons("elman-tanh-unsaturated", unsat.record) == []
    # same draws: W (and so the contraction) unchanged, U rescaled
    (P1, th1), (_, th2) = printed.first, unsat.first
    W = P1.layout["cell.W"].slice
    assert torch.equal(th1[W], th2[W])


def test_degenerate_reasons_names_too_few_points() -> None:
    rec = dict(_kind(fixtures.UNSATURATED_INPUT_SD).record)
    rec["instance"] = {**rec["instance"], "points_above_floor": 2}
    assert figure1a.degenerate_reasons("x", rec) == ["x: 2 k above the round-off floor (< 4)"]
    assert figure1a.degenerate_reasons("x", None) == ["x: not run"]


@pytest.mark.parametrize("seed", [0, 1])
def test_figure_1a_judges_the_unsaturated_curve_and_reports_the_printed_one(seed: int) -> None:
    res = check_figure_1a(RunConfig(seed=seed))
    assert res.verdict is Verdict.PASS, res.summary
    assert all(c.ok for c in res.controls)
    assert set(res.data) >= {"linear", "elman-tanh", "elman-tanh-unsaturated"}
    assert res.data["elman-tanh"]["instance"]["saturated"]
    assert not res.data["elman-tanh-unsaturated"]["instance"]["saturated"]
    assert len(res.data["figures"]) == 3
    assert any("degenerate tanh curve" in f for f in res.findings)


def test_figure_1a_fails_when_its_judged_tanh_curve_is_saturated(monkeypatch: pytest.MonkeyPatch) -> None:
    """U 'rescaled' to the printed s.d. sqrt(2d) = 4 (d = 8): the judged curve is degenerate, the premise FAILs."""
    monkeypatch.setattr(fixtures, "UNSATURATED_INPUT_SD", 4.0)
    res = check_figure_1a(RunConfig(seed=0))
    assert res.verdict is Verdict.FAIL
    assert "premise (Fig. 1(a)'s curves are curves) NOT MET: elman-tanh-unsaturated: tanh saturated" in res.summary
