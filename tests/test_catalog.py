"""The claim catalog and the check registry match exactly, and every entry is complete."""

from __future__ import annotations

import inspect
import re
import types

import pytest

from theory.catalog import FAMILIES, Claim, all_claims
from theory.papers import PAPERS
from verify.checks import registry
from verify.config import RunConfig
from verify.verdict import CheckResult

KNOWN_PAPERS = set(PAPERS)
#: what a user of the package does not have: the paper files the toolkit was built from and its design file
UNSHIPPED = re.compile(r"seeds/|DESIGN\.md|[\w-]+\.md\b")


def test_every_check_has_a_claim_and_every_claim_a_check() -> None:
    claims, checks = set(all_claims()), set(registry())
    assert checks - claims == set(), "checks without catalog entries"
    assert claims - checks == set(), "catalog entries without checks"


@pytest.mark.parametrize("claim", list(all_claims().values()), ids=lambda c: c.id)
def test_claim_entry_is_complete(claim: Claim) -> None:
    assert claim.family in FAMILIES
    assert claim.paper in KNOWN_PAPERS
    assert claim.citation == PAPERS[claim.paper].citation() and claim.references[0] == claim.citation
    for name in ("title", "paper", "where", "statement", "math", "citation"):
        assert not UNSHIPPED.search(getattr(claim, name)), f"{claim.id}.{name} cites an unshipped file"
    for name in ("assumptions", "errata", "references"):
        for text in getattr(claim, name):
            assert not UNSHIPPED.search(text), f"{claim.id}.{name} cites an unshipped file: {text}"
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


def test_citations_name_authors_year_title_and_ids() -> None:
    from theory.papers import COOIJMANS_MARTENS, FPP, MILLER_HARDT, UORO, cite

    assert cite(UORO.key).startswith("Corentin Tallec, Yann Ollivier (2017). Unbiased Online Recurrent Optimization")
    assert "arXiv:1702.05043" in cite(UORO.key) and "arXiv:1902.02405" in cite(COOIJMANS_MARTENS.key)
    assert "When Recurrent Models Don't Need To Be Recurrent" in cite(MILLER_HARDT.key) and not MILLER_HARDT.arxiv
    assert "Explicit State Variables" in cite(FPP.key) and not FPP.arxiv  # anonymous submission: no invented id
    assert cite("my-notes") == "my-notes"  # a user's claim keeps its own text
    # the secondary papers named in `where` are cited in full too
    rtrl_exact = all_claims()["rtrl.exact"]
    assert rtrl_exact.references == (cite(UORO.key), cite(COOIJMANS_MARTENS.key))


def test_design_notes_ship_with_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    from theory import notes

    cited = {m for c in all_claims().values() for m in re.findall(r"design notes, '([^']+)'", c.where + c.statement)}
    assert cited and all(notes.section(s) for s in cited)
    assert notes.main(["numerical", "policy"]) == 0 and "Round-off is not bias" in capsys.readouterr().out
    assert notes.main(["no-such-section"]) == 2


def test_requires_is_validated() -> None:
    assert all_claims()["device.cuda-parity"].requires == ("cuda",)
    with pytest.raises(ValueError, match="requirements"):
        Claim("reference.x", "t", "p", "w", "s", "m", ("a",), "verify.checks.reference.x", requires=("tpu",))


def test_list_json_names_no_unshipped_file(capsys: pytest.CaptureFixture[str]) -> None:
    """What `rnn-verify list --json` shows a user cites papers, never the files the toolkit was built from."""
    from verify.cli import main

    assert main(["list", "--json"]) == 0
    out = capsys.readouterr().out
    assert not UNSHIPPED.search(out), UNSHIPPED.search(out)
    assert "arXiv:1702.05043" in out and '"citation"' in out and '"references"' in out


def test_gate_budget_is_within_the_family_wise_rate() -> None:
    """Issue 27: the stated false-FAIL rates of the ci profile (claims + controls) sum to at most GATE_ALPHA, and
    every statistical claim of the profile states its rate."""
    from theory.catalog import GATE_ALPHA, all_claims, gate_budget

    total, rows = gate_budget("ci")
    assert 0 < total <= GATE_ALPHA, rows
    stated = {cid for cid, _, _ in rows}
    for c in all_claims().values():
        if c.kind == "statistical" and "ci" in c.profiles and "cuda" not in c.requires:
            assert c.id in stated and c.alpha is not None, c.id


def test_alpha_and_control_beta_are_validated() -> None:
    from theory.catalog import Claim

    common = dict(title="t", paper="Tallec & Ollivier 2017", where="w", statement="s", math="m", assumptions=())
    with pytest.raises(ValueError, match="alpha"):
        Claim(id="uoro.x", check="verify.checks.uoro.f", alpha=0.0, **common)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="control_beta"):
        Claim(id="uoro.x", check="verify.checks.uoro.f", control_beta=1.5, **common)  # type: ignore[arg-type]
