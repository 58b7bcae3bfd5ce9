"""The claim catalog and the check registry match exactly, and every entry is complete."""

from __future__ import annotations

import inspect
import re
import types

import pytest

from theory.catalog import FAMILIES, Claim, all_claims
from verify.checks import registry
from verify.results import CheckResult, RunConfig

KNOWN_PAPERS = {
    "fpp-explicit-state-variables.md",
    "rtrl-convergence-analysis.md",
    "stable-recurrent-models-miller-hardt.md",
    "uoro-tallec-ollivier.md",
    "uoro-variance-cooijmans-martens.md",
    "DESIGN.md",
}


def test_every_check_has_a_claim_and_every_claim_a_check() -> None:
    claims, checks = set(all_claims()), set(registry())
    assert checks - claims == set(), "checks without catalog entries"
    assert claims - checks == set(), "catalog entries without checks"


@pytest.mark.parametrize("claim", list(all_claims().values()), ids=lambda c: c.id)
def test_claim_entry_is_complete(claim: Claim) -> None:
    assert claim.family in FAMILIES
    assert claim.paper in KNOWN_PAPERS
    assert claim.where and claim.statement and claim.math and claim.assumptions
    fn = registry()[claim.id]
    assert f"{fn.__module__}.{fn.__name__}" == claim.check
    doc = inspect.getdoc(fn) or ""
    # every check cites its source: an equation, lemma, theorem, proposition, algorithm or section
    assert re.search(r"(eq\.|Lemma|Thm|Theorem|Prop|Algorithm|§|DESIGN)", doc), f"{claim.check} cites no source"


def test_bad_claim_ids_rejected() -> None:
    with pytest.raises(ValueError, match=r"family\.claim"):
        Claim("NoDot", "t", "p", "w", "s", "m", ("a",), "verify.checks.reference.x")
    with pytest.raises(ValueError, match="unknown family"):
        Claim("nope.claim", "t", "p", "w", "s", "m", ("a",), "verify.checks.nope.x")


def test_register_rejects_a_second_check_for_one_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    import verify.checks as checks

    monkeypatch.setattr(checks, "_REGISTRY", {})

    def first(config: RunConfig) -> CheckResult:
        raise AssertionError

    def second(config: RunConfig) -> CheckResult:
        raise AssertionError

    checks.register("x.claim")(first)
    again = types.FunctionType(first.__code__, first.__globals__, "first")  # the same definition re-executed
    again.__qualname__ = first.__qualname__
    checks.register("x.claim")(again)  # a module re-import replaces its own check
    assert checks._REGISTRY["x.claim"] is again
    with pytest.raises(ValueError, match=r"x\.claim.*already has a check.*second cannot register"):
        checks.register("x.claim")(second)
