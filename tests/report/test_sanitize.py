"""Text from code under test in every report file (issue 36, item 6): ``junit.xml`` is valid XML 1.0,
``results.json`` valid UTF-8 JSON, ``report.md``/``report.html`` show the escapes, whatever a summary,
reason, finding, control or the command line holds (NUL, ESC, FF, CR, C1, U+FFFE, lone surrogates)."""

from __future__ import annotations

import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from verify.cli import main
from verify.report import claim_record, dumps_document, load_document, run_document, write_report
from verify.report.render import render_html, render_junit, render_markdown
from verify.verdict import CheckResult, Control, Verdict

#: what user code could put into a message: each raw character, and what the report shows instead
HOSTILE = [
    ("\x00", "\\x00"),
    ("\x1b[31m", "\\x1b[31m"),
    ("\x0c", "\\x0c"),
    ("\r", "\\r"),
    ("\x07", "\\x07"),
    ("\x9b", "\\x9b"),
    ("\ufffe", "\\ufffe"),
    ("\U0001ffff", "\\U0001ffff"),
    ("\udcff", "\\udcff"),  # os.fsdecode(b"\xff")
    ("\ud800", "\\ud800"),
]
RAW = "msg " + " ".join(raw for raw, _ in HOSTILE)
SHOWN = "msg " + " ".join(shown for _, shown in HOSTILE)
#: the XML 1.0 Char production (W3C XML 1.0 §2.2)
XML_CHARS = re.compile("[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*")


def _raw_controls(text: str) -> list[str]:
    """Characters no report may hold raw: controls but \\n and \\t, surrogates, noncharacters."""
    return [
        c
        for c in text
        if (unicodedata.category(c) in ("Cc", "Cs") and c not in "\n\t")
        or (ord(c) & 0xFFFE) == 0xFFFE
        or 0xFDD0 <= ord(c) <= 0xFDEF
    ]


def _doc() -> dict[str, Any]:
    recs = [
        claim_record(
            CheckResult(
                "x.fail",
                Verdict.FAIL,
                f"check raised Oops: {RAW}",
                reason=f'Traceback:\n  File "/home/u/\udcffx.py"\nOops: {RAW}',
                findings=(f"finding {RAW}",),
                controls=(Control(f"mutant {RAW}", "FAIL", "FAIL", f"detail {RAW}"),),
            ),
            rerun=f"rnn-verify run --claims x.fail --impl uoro=/home/u/\udcff.py:X {RAW}",
        ),
        claim_record(CheckResult("x.skip", Verdict.SKIPPED, f"not applicable: {RAW}", reason=f"why {RAW}")),
        claim_record(CheckResult("x.inc", Verdict.INCONCLUSIVE, f"premise not met: {RAW}", reason=f"inc {RAW}")),
    ]
    return run_document(recs, {"profile": "ci", "command": "rnn-verify run --out 'o\udcff'", "fail_on": "fail"})


def test_every_report_file_is_valid_and_shows_the_escapes(tmp_path: Path) -> None:
    out = write_report(tmp_path / "r", _doc())
    for name in ("results.json", "report.md", "report.html", "junit.xml"):
        text = (out / name).read_bytes().decode("utf-8")  # strict: a surrogate could not have been written
        assert not _raw_controls(text), (name, _raw_controls(text)[:5])
        assert SHOWN in text.replace("\\\\", "\\").replace("\\[", "["), name  # report.md escapes \ and [
    doc = json.loads((out / "results.json").read_bytes())
    assert doc["claims"][0]["summary"] == f"check raised Oops: {SHOWN}"
    assert doc["run"]["command"] == "rnn-verify run --out 'o\\udcff'"
    assert load_document(out)["claims"][0]["findings"] == [f"finding {SHOWN}"]  # the schema takes it back
    html = (out / "report.html").read_text()
    assert f"check raised Oops: {SHOWN}" in html  # HTML-escaped as before: no markup, and the escapes shown


def test_junit_is_valid_xml_1_0_with_every_message(tmp_path: Path) -> None:
    out = write_report(tmp_path / "r", _doc(), fail_on="inconclusive")
    for blob in ((out / "junit.xml").read_bytes(), render_junit(_doc(), "fail")):
        assert XML_CHARS.fullmatch(blob.decode("utf-8"))
        root = ET.fromstring(blob)  # a CI publisher's parser: drops the whole file on one invalid character
        cases = {c.get("name"): c for c in root.iter("testcase")}
        fail = cases["x.fail"].find("failure")
        assert fail is not None and fail.get("message") == f"FAIL: check raised Oops: {SHOWN}"
        assert SHOWN in (fail.text or "")
    root = ET.parse(out / "junit.xml").getroot()
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["command"] == "rnn-verify run --out 'o\\udcff'"


def test_the_writers_used_without_validation_clean_too() -> None:
    """``--junit``/``--json`` without a report folder render the document directly (no validation first)."""
    doc = _doc()
    text = dumps_document(doc)
    text.encode("utf-8")
    assert json.loads(text)["claims"][0]["reason"].endswith(f"Oops: {SHOWN}")
    for rendered in (render_markdown(doc), render_html(doc, {}), render_junit(doc).decode("utf-8")):
        assert not _raw_controls(rendered)
    assert doc["claims"][0]["summary"] == f"check raised Oops: {RAW}"  # the caller's document is not changed


def test_report_re_renders_a_results_json_holding_raw_controls(tmp_path: Path) -> None:
    """A results.json written by another tool (JSON may escape any control: ``\\u001b``): re-rendered clean."""
    doc = json.loads(dumps_document(_doc()))
    doc["claims"][0]["summary"] = "raw \x1b[2J\x00 \ufffe"
    src = tmp_path / "in.json"
    src.write_text(json.dumps(doc))  # ensure_ascii: \u001b, \u0000, \ufffe in the file
    assert main(["report", str(src), "--out", str(tmp_path / "o")]) == 1  # (it holds a FAIL)
    ET.parse(tmp_path / "o" / "junit.xml")
    again = json.loads((tmp_path / "o" / "results.json").read_text())
    assert again["claims"][0]["summary"] == "raw \\x1b[2J\\x00 \\ufffe"
