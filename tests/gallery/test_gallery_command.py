"""``rnn-verify gallery`` end to end on a stand-in (issue 38): a row that runs, a row whose code does not load
(REFUSED with its line), a row whose dependency is missing and a declared one (SKIPPED with the reason), the
warning for a checkout at another commit naming both commits, and the rows of another repository kept."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import verify.gallery.run as gallery_run
from verify.cli import main
from verify.gallery import Entry, repository

STANDIN = Path(__file__).parent / "standins" / "vanilla_rtrl"


def _repo() -> object:
    real = repository("vanilla_rtrl")
    entries = (
        Entry("RTRL", "rtrl", "rtrl", claims=("rtrl.exact",)),
        Entry("missing module", "rtrl", "rtrl", claims=("rtrl.exact",), requires=("no_such_module_xyz",)),
        Entry("declared", "", "", skip="a declared reason, stated in the table"),
        Entry("no such adapter", "rtrl", "RTRL_NOT_THERE", claims=("rtrl.exact",)),
    )
    return dataclasses.replace(real, entries=entries)


@pytest.mark.slow  # the stand-in's rows through their claims: .ci/run's slow step
def test_gallery_rows_say_how_each_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo()
    monkeypatch.setattr(gallery_run, "repositories", lambda names=(): [repo])
    monkeypatch.setattr(gallery_run, "glue_lines", lambda repo, entry: 1)  # the test entries are not in the module
    monkeypatch.delenv("VANILLA_STANDIN_BUG", raising=False)
    out = tmp_path / "gallery"
    code = main(["gallery", "--checkout", f"vanilla-rtrl={STANDIN}", "--out", str(out), "-q"])
    err = capsys.readouterr().err
    assert code == 0, err
    # the stand-in is no git checkout: the warning names what was found and the commit the adapters were written for
    assert "warning: vanilla-rtrl" in err and repository("vanilla_rtrl").commit in err
    doc = json.loads((out / "gallery.json").read_text())
    rows = {r["algorithm"]: r for r in doc["repositories"][0]["rows"]}
    assert rows["RTRL"]["status"] == "ran" and [c["verdict"] for c in rows["RTRL"]["claims"]] == ["PASS"]
    assert (out / rows["RTRL"]["report"]).is_file()
    assert rows["missing module"]["status"] == "skipped" and "no_such_module_xyz" in rows["missing module"]["reason"]
    assert rows["declared"]["status"] == "skipped" and rows["declared"]["reason"].startswith("a declared reason")
    assert rows["no such adapter"]["status"] == "refused" and "RTRL_NOT_THERE" in rows["no such adapter"]["reason"]
    table = (out / "README.md").read_text()
    assert "REFUSED" in table and "SKIPPED: needs no_such_module_xyz" in table and "> warning:" in table
    assert "Traceback" not in err + table
    # a second gallery of another repository into the same folder keeps these rows
    other = dataclasses.replace(repository("fpp"), entries=(Entry("x", "", "", skip="declared"),), marker=())
    monkeypatch.setattr(gallery_run, "repositories", lambda names=(): [repo, other])
    assert main(["gallery", "--checkout", f"fpp={tmp_path}", "--out", str(out), "-q"]) == 0
    names = [r["name"] for r in json.loads((out / "gallery.json").read_text())["repositories"]]
    assert names == ["vanilla-rtrl", "fpp"] and (out / rows["RTRL"]["report"]).is_file()
