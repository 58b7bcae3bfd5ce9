"""Reports: results.json records, the HTML (parsed for every claim and figure), markdown, JUnit, atomic writes."""

from __future__ import annotations

import base64
import json
import struct
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from theory.catalog import all_claims
from verify.errors import InvalidArgument
from verify.files import MARKER, preflight_dir, write_dir_atomic
from verify.report import claim_record, load_document, run_document, validate_document, write_report
from verify.report.render import render_junit
from verify.verdict import CheckResult, Control, Verdict

PNG = b"\x89PNG\r\n\x1a\n"


class _Parser(HTMLParser):
    """Collects claim sections, figures (with their images) and anything that would load an external asset."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, str] = {}
        self.figures: list[dict[str, Any]] = []
        self.external: list[str] = []
        self._fig: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "section" and "claim" in a.get("class", ""):
            self.sections[a["data-claim-id"]] = a["data-verdict"]
        if tag == "figure":
            self._fig = {
                "claim": a["data-claim-id"],
                "index": int(a["data-figure-index"]),
                "kind": a["data-kind"],
                "img": None,
                "table": False,
            }
            self.figures.append(self._fig)
        if tag == "img" and self._fig is not None:
            self._fig["img"] = a.get("src", "")
        if tag == "table" and self._fig is not None:
            self._fig["table"] = True
        for key in ("src", "href"):
            v = a.get(key, "")
            if v and not (v.startswith("data:") or v.startswith("#")):
                self.external.append(f"{tag} {key}={v}")
        if tag in ("script", "link"):
            self.external.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self._fig = None


def _png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(PNG)
    w, h = struct.unpack(">II", data[16:24])
    return int(w), int(h)


def test_html_has_every_claim_and_every_figure_embedded(reference_run: Path) -> None:
    doc = json.loads((reference_run / "results.json").read_text())
    p = _Parser()
    p.feed((reference_run / "report.html").read_text())
    assert p.sections == {r["id"]: r["verdict"] for r in doc["claims"]}
    assert not p.external, "report.html must be self-contained"
    expected = [(r["id"], j, f["kind"]) for r in doc["claims"] for j, f in enumerate(r["figures"])]
    expected += [("run", j, f["kind"]) for j, f in enumerate(doc["figures"])]
    assert sorted((f["claim"], f["index"], f["kind"]) for f in p.figures) == sorted(expected)
    assert all(r["figures"] for r in doc["claims"]), "each reference claim draws error vs budget"
    for f in p.figures:
        if f["kind"] == "table":
            assert f["table"]
        else:
            src = f["img"]
            assert src.startswith("data:image/png;base64,")
            w, h = _png_size(base64.b64decode(src.split(",", 1)[1]))
            assert w >= 400 and h >= 250
    for r in doc["claims"]:
        for j, _ in enumerate(r["figures"]):
            assert (reference_run / "figures" / f"{r['id']}-{j + 1}.png").is_file()


def test_markdown_links_every_figure_and_names_every_claim(reference_run: Path) -> None:
    doc = json.loads((reference_run / "results.json").read_text())
    md = (reference_run / "report.md").read_text()
    for r in doc["claims"]:
        assert f"`{r['id']}`" in md and r["rerun"] in md
        for j, _f in enumerate(r["figures"]):
            assert f"](figures/{r['id']}-{j + 1}.png)" in md
            assert f"claims[{doc['claims'].index(r)}].figures[{j}]" in md


def test_every_figure_has_its_data_in_the_json(reference_run: Path) -> None:
    doc = load_document(reference_run / "results.json")
    for r in doc["claims"]:
        (fig,) = r["figures"]
        drawn = sum(len(s["y"]) for s in fig["series"])
        assert drawn == len(r["data"]["comparisons"])


def test_controls_table_lists_each_negative_control(reference_run: Path) -> None:
    doc = json.loads((reference_run / "results.json").read_text())
    (table,) = doc["figures"]
    assert table["kind"] == "table"
    assert len(table["rows"]) == sum(len(r["controls"]) for r in doc["claims"])


def _record(cid: str, verdict: Verdict, **kw: Any) -> dict[str, Any]:
    reason = None if verdict is Verdict.PASS else "why"
    return claim_record(CheckResult(cid, verdict, f"{verdict.value} summary", reason=reason, **kw))


def test_junit_maps_verdicts() -> None:
    recs = [_record(f"x.c{i}", v) for i, v in enumerate(Verdict)]
    doc = run_document(recs, {"profile": "ci"})
    for fail_on, failures, skipped in (("fail", 1, 2), ("inconclusive", 2, 1)):
        root = ET.fromstring(render_junit(doc, fail_on))
        suite = root.find("testsuite")
        assert suite is not None
        assert (suite.get("failures"), suite.get("skipped")) == (str(failures), str(skipped))
        assert len(suite.findall("testcase/failure")) == failures
        assert len(suite.findall("testcase/skipped")) == skipped


def test_validate_document_refuses_mismatches() -> None:
    doc = run_document([_record("x.a", Verdict.PASS)], {"profile": "ci"})
    validate_document(json.loads(json.dumps(doc)))
    bad = json.loads(json.dumps(doc))
    bad["claims"][0]["verdict"] = "MAYBE"
    with pytest.raises(InvalidArgument, match="verdict"):
        validate_document(bad)
    dup = json.loads(json.dumps(doc))
    dup["claims"].append(dup["claims"][0])
    dup["summary"]["PASS"], dup["summary"]["total"] = 2, 2
    with pytest.raises(InvalidArgument, match="duplicate"):
        validate_document(dup)
    badfig = json.loads(json.dumps(doc))
    badfig["claims"][0]["figures"] = [{"kind": "line"}]
    with pytest.raises(InvalidArgument, match="figures"):
        validate_document(badfig)


def test_record_carries_check_fields_and_control_verdicts() -> None:
    res = CheckResult(
        "x.a",
        Verdict.PASS,
        "ok",
        statistic=1e-16,
        threshold=1e-14,
        alpha=1e-3,
        beta=0.05,
        delta=0.02,
        samples_planned=100,
        samples_used=40,
        seed=3,
        controls=(Control("mutant m", "FAIL", "FAIL"),),
        data={"comparisons": [{"error": 1e-16, "budget": 1e-14, "comparison": "c"}]},
        wall_time=1.5,
    )
    rec = claim_record(res, rerun="rnn-verify run --claims x.a")
    assert (rec["alpha"], rec["beta"], rec["delta"], rec["samples_used"], rec["seed"]) == (1e-3, 0.05, 0.02, 40, 3)
    assert rec["controls"][0]["observed"] == "FAIL" and rec["figures"][0]["kind"] == "scatter"


def test_write_report_is_atomic_and_refuses_foreign_folders(tmp_path: Path) -> None:
    doc = run_document([_record("x.a", Verdict.PASS)], {"profile": "ci"})
    out = write_report(tmp_path / "r", doc)
    names = ["junit.xml", "report.html", "report.md", "results.json"]
    assert sorted(p.name for p in out.iterdir()) == [MARKER, *names]
    assert json.loads((out / MARKER).read_text())["files"] == names  # the manifest of what it wrote
    before = (out / "results.json").read_bytes()
    with pytest.raises(InvalidArgument, match="inside"):
        write_dir_atomic(out, {"results.json": b"{}", "../escape.txt": b"x"})
    assert (out / "results.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    with pytest.raises(InvalidArgument, match="not an rnn-verify report"):
        preflight_dir(foreign)


def test_published_report_names_every_catalog_claim() -> None:
    """reports/latest is the committed full-profile report; regenerate it when the catalog grows."""
    root = Path(__file__).resolve().parents[2] / "reports" / "latest"
    doc = load_document(root / "results.json")
    md = (root / "report.md").read_text(encoding="utf-8")
    missing = [cid for cid in all_claims() if f"`{cid}`" not in md or cid not in {r["id"] for r in doc["claims"]}]
    assert not missing, (
        f"reports/latest lacks {missing}; regenerate it with: rnn-verify run --profile full --out reports/latest"
    )
    assert doc["run"]["profile"] == "full"
    for r in doc["claims"]:
        for j, f in enumerate(r["figures"]):
            if f["kind"] != "table":
                assert (root / "figures" / f"{r['id']}-{j + 1}.png").is_file()


def test_findings_are_listed_next_to_the_summary_whatever_the_verdict() -> None:
    from verify.report.render import _stat_line, render_html, render_markdown

    found = CheckResult("x.a", Verdict.PASS, "corrected claim holds", findings=("the printed bound fails by 3x",))
    plain = CheckResult("x.b", Verdict.PASS, "ok")
    doc = run_document([claim_record(found), claim_record(plain)], {"profile": "full"})
    assert doc["claims"][0]["findings"] == ["the printed bound fails by 3x"] and doc["claims"][1]["findings"] == []
    md, page = render_markdown(doc), render_html(doc, {})
    head = md.split('<a id="')[0]  # the part above the per-claim sections
    assert "Where the papers do not hold as printed" in head and "the printed bound fails by 3x" in head
    assert "x.b" not in head.split("Where the papers do not hold as printed")[1]
    assert 'id="findings"' in page and "the printed bound fails by 3x" in page
    none = run_document([claim_record(plain)], {"profile": "full"})
    assert "Where the papers do not hold" not in render_markdown(none)
    # a statistic just below its threshold is never printed as equal to it
    assert _stat_line({"statistic": 0.01998, "threshold": 0.02, "comparison": "<"}) == "0.01998 < 0.02"
    assert _stat_line({"statistic": 1e-16, "threshold": 1e-14}) == "1.00e-16 <= 1.00e-14"
    # a comparison that does not hold reads true: what holds, and what was allowed or required
    assert _stat_line({"statistic": 0.36, "threshold": 3.2e-14}) == "0.36 > 3.20e-14 allowed"
    assert _stat_line({"statistic": 0.1, "threshold": 0.5, "comparison": ">="}) == "0.1 < 0.5 required"
    assert _stat_line({"statistic": -3.0, "threshold": 2.0, "comparison": "|z| <="}) == "-3 |z| > 2 allowed"
