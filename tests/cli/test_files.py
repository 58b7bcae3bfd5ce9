"""No data loss (issue 12, case 1): rnn-verify writes only into its own report folders, replaces only what it wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from verify.cli import main
from verify.config import RunConfig
from verify.files import MARKER
from verify.verdict import CheckResult, Verdict


def _pass(config: RunConfig) -> CheckResult:
    return CheckResult("reference.adjoint", Verdict.PASS, "fake PASS", seed=config.seed)


def _snapshot(root: Path) -> dict[str, tuple[bytes | str, int]]:
    """Every entry under root with its content (or link target) and mtime, links not followed."""
    out: dict[str, tuple[bytes | str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            if p.is_symlink():
                out[p.relative_to(root).as_posix()] = (f"-> {os.readlink(p)}", st.st_mtime_ns)
            elif p.is_dir():
                out[p.relative_to(root).as_posix()] = ("dir", st.st_mtime_ns)
            else:
                out[p.relative_to(root).as_posix()] = (p.read_bytes(), st.st_mtime_ns)
    return out


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return proc.stdout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project: a git checkout with sources, notes and a read-only file."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "model.py").write_text("print('my model')\n")
    (root / "notes.txt").write_text("precious notes\n")
    (root / "README.md").write_text("# my project\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    (root / "locked.txt").write_text("read-only\n")
    (root / "locked.txt").chmod(0o444)
    return root


def test_readme_pair_in_a_project_folder_loses_nothing(
    project: Path,
    fake_checks: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`run --json results.json` then `report results.json` (the README's pair) in a git checkout: exit 2, intact."""
    fake_checks({"reference.adjoint": _pass})
    monkeypatch.chdir(project)
    assert main(["run", "--claims", "reference.adjoint", "--no-report", "--json", "results.json", "-q"]) == 0
    before = _snapshot(project)
    head = _git(project, "rev-parse", "HEAD")
    capsys.readouterr()
    assert main(["report", "results.json"]) == 2
    err = capsys.readouterr().err
    assert str(project) in err and "--out DIR" in err and MARKER in err and "Traceback" not in err
    assert main(["report", str(project)]) == 2  # the folder itself: refused the same way
    assert _snapshot(project) == before
    # with --out it works, into a new folder that becomes a report folder
    assert main(["report", "results.json", "--out", "theory-report"]) == 0
    assert json.loads((project / "theory-report" / MARKER).read_text())["files"]
    assert {k: v for k, v in _snapshot(project).items() if not k.startswith("theory-report")} == before
    assert _git(project, "rev-parse", "HEAD") == head
    status = _git(project, "status", "--porcelain", "--untracked-files=normal").split()
    assert status == ["??", "locked.txt", "??", "results.json", "??", "theory-report/"]


def test_run_out_into_a_folder_holding_results_json_is_refused(
    project: Path, fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_checks({"reference.adjoint": _pass})
    (project / "results.json").write_text('{"my": "own results"}')
    before = _snapshot(project)
    assert main(["run", "--claims", "reference.adjoint", "--out", str(project)]) == 2
    err = capsys.readouterr().err
    assert str(project) in err and "holds results.json but no" in err and "--out" in err
    assert _snapshot(project) == before
    sub = project / "src"
    assert main(["run", "--claims", "reference.adjoint", "--out", str(sub), "-q"]) == 2  # any non-empty folder
    assert _snapshot(project) == before


def test_rerun_into_a_report_folder_keeps_and_names_foreign_files(
    tmp_path: Path, fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_checks({"reference.adjoint": _pass})
    out = tmp_path / "rep"
    assert main(["run", "--claims", "reference.adjoint", "--out", str(out), "-q"]) == 0
    (out / "my-notes.md").write_text("notes on this run")
    (out / "link-out").symlink_to(tmp_path)
    capsys.readouterr()
    assert main(["run", "--claims", "reference.adjoint", "--out", str(out), "-q", "--seed", "3"]) == 0
    err = capsys.readouterr().err
    assert "kept 2 entries" in err and "my-notes.md" in err and "link-out" in err
    assert (out / "my-notes.md").read_text() == "notes on this run" and (out / "link-out").is_symlink()
    assert json.loads((out / "results.json").read_text())["run"]["seed"] == 3
    # report without --out re-renders beside RESULTS: it is a report folder
    assert main(["report", str(out / "results.json")]) == 0
    assert (out / "my-notes.md").read_text() == "notes on this run"


def test_report_beside_a_results_json_copied_out_of_its_folder_is_refused(
    tmp_path: Path, fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_checks({"reference.adjoint": _pass})
    out = tmp_path / "rep"
    assert main(["run", "--claims", "reference.adjoint", "--out", str(out), "-q"]) == 0
    elsewhere = tmp_path / "downloads"
    elsewhere.mkdir()
    shutil.copy(out / "results.json", elsewhere / "run-42.json")
    (elsewhere / "other.pdf").write_bytes(b"%PDF")
    before = _snapshot(elsewhere)
    assert main(["report", str(elsewhere / "run-42.json")]) == 2
    assert "--out DIR" in capsys.readouterr().err
    assert _snapshot(elsewhere) == before


def test_malformed_results_are_refused_before_anything_is_written(
    tmp_path: Path, fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12 case 3: with `summary` missing the report used to be written first, then the command crashed."""
    fake_checks({"reference.adjoint": _pass})
    out = tmp_path / "rep"
    assert main(["run", "--claims", "reference.adjoint", "--out", str(out), "-q"]) == 0
    doc = json.loads((out / "results.json").read_text())
    del doc["summary"]
    (out / "results.json").write_text(json.dumps(doc))
    before = _snapshot(out)
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert "results.json: field summary" in err and "required" in err and "Traceback" not in err
    assert main(["report", str(out), "--out", str(tmp_path / "new")]) == 2
    assert _snapshot(out) == before and not (tmp_path / "new").exists()
