"""The reference-family checks PASS on the ci configuration and their negative controls are caught."""

from __future__ import annotations

import json

import pytest

from theory.catalog import all_claims
from verify.config import RunConfig
from verify.report.figures import claim_figures
from verify.run.check import run_check
from verify.verdict import CheckResult, Control, Verdict


@pytest.mark.parametrize("claim_id", [c for c in all_claims() if c.startswith("reference.")])
def test_reference_checks_pass_with_controls(claim_id: str) -> None:
    res = run_check(all_claims()[claim_id], RunConfig())
    assert res.verdict is Verdict.PASS, res.summary
    assert res.controls and all(c.ok and c.expected == "FAIL" for c in res.controls)
    assert res.statistic is not None and res.threshold is not None and res.statistic <= res.threshold
    json.dumps(res.to_dict())  # serialisable
    figs, problems = claim_figures(claim_id, res.data)  # measured error vs budget (the comparisons convention)
    assert figs and not problems


def test_result_cannot_pass_with_failed_control() -> None:
    with pytest.raises(ValueError, match="controls"):
        CheckResult("reference.adjoint", Verdict.PASS, "x", controls=(Control("m", "FAIL", "PASS"),))


def test_skipped_needs_reason() -> None:
    with pytest.raises(ValueError, match="must say why"):
        CheckResult("reference.adjoint", Verdict.SKIPPED, "x")
