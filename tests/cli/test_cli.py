"""The rnn-verify command: list, run, report, exit codes, bad input, atomic reports."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import fake_claim
from theory.catalog import all_claims
from verify.cli import main
from verify.config import RunConfig
from verify.verdict import CheckResult, Verdict

#: fields every claim record of results.json must carry (issue 7)
RECORD_FIELDS = (
    "id",
    "paper",
    "equation",
    "verdict",
    "statistic",
    "threshold",
    "alpha",
    "beta",
    "delta",
    "samples_planned",
    "samples_used",
    "seed",
    "dtype",
    "device",
    "torch_version",
    "wall_time",
    "rerun",
)


def _result(cid: str, verdict: Verdict) -> Callable[[RunConfig], CheckResult]:
    def fn(config: RunConfig) -> CheckResult:
        reason = None if verdict is Verdict.PASS else "because"
        return CheckResult(cid, verdict, f"fake {verdict.value}", seed=config.seed, reason=reason)

    return fn


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for cid in all_claims():
        assert cid in out


def test_list_json_has_paper_and_equation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--json", "--claims", "reference.*"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {d["id"] for d in data} == {c for c in all_claims() if c.startswith("reference.")}
    assert all(d["paper"] and d["where"] and d["profiles"] for d in data)


def test_list_markdown_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--markdown"]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| `")]
    assert len(rows) == len(all_claims()) and all(r.count(" | ") >= 4 for r in rows)


def test_run_writes_report_json_and_junit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, js, ju = tmp_path / "rep", tmp_path / "r.json", tmp_path / "j.xml"
    code = main(["run", "--claims", "reference.influence", "--out", str(out), "--json", str(js), "--junit", str(ju)])
    assert code == 0
    assert "1 PASS" in capsys.readouterr().out
    for name in ("results.json", "report.md", "report.html", "junit.xml"):
        assert (out / name).is_file()
    doc = json.loads(js.read_text())
    assert doc == json.loads((out / "results.json").read_text())
    (rec,) = doc["claims"]
    missing = [f for f in RECORD_FIELDS if f not in rec]
    assert not missing
    assert rec["id"] == "reference.influence" and rec["verdict"] == "PASS"
    assert rec["paper"] and rec["equation"] and rec["wall_time"] > 0 and rec["torch_version"]
    assert rec["figures"], "the reference family draws error vs budget"
    assert doc["run"]["exit_code"] == 0 and doc["summary"]["PASS"] == 1
    suite = ET.parse(ju).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "1" and suite.get("failures") == "0"


def test_rerun_command_reruns_that_claim_alone(tmp_path: Path, reference_run: Path) -> None:
    doc = json.loads((reference_run / "results.json").read_text())  # rnn-verify run --claims 'reference.*'
    rec = next(r for r in doc["claims"] if r["id"] == "reference.complex-step")
    argv = shlex.split(rec["rerun"])
    assert argv[:2] == ["rnn-verify", "run"]
    assert main([*argv[1:], "--out", str(tmp_path / "b"), "-q"]) == 0
    again = json.loads((tmp_path / "b" / "results.json").read_text())
    assert [r["id"] for r in again["claims"]] == ["reference.complex-step"]
    assert again["claims"][0]["statistic"] == rec["statistic"]  # same seed, same numbers


def test_unknown_claim_exit_2_with_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--claims", "reference.adjiont", "--no-report"]) == 2
    assert "did you mean reference.adjoint" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["run", "--profile", "huge"],
        ["run", "--workers", "0", "--no-report"],
        ["run", "--seed", "-1", "--no-report"],
        ["run", "--device", "tpu", "--no-report"],
        ["run", "--out", "x", "--no-report"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2(argv: list[str]) -> None:
    assert main(argv) == 2


def test_help_everywhere() -> None:
    for sub in ([], ["list"], ["run"], ["report"], ["golden"]):
        assert main([*sub, "--help"]) == 0


def test_python_dash_m() -> None:
    proc = subprocess.run([sys.executable, "-m", "verify", "--help"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "exit codes" in proc.stdout


def test_fail_exits_1_and_names_the_claim(
    tmp_path: Path, fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_checks({"reference.adjoint": _result("reference.adjoint", Verdict.FAIL)})
    assert main(["run", "--claims", "reference.adjoint", "--out", str(tmp_path / "r")]) == 1
    out = capsys.readouterr().out
    assert "FAIL reference.adjoint" in out.replace("  ", " ")
    suite = ET.parse(tmp_path / "r" / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"


def test_crashing_check_is_a_fail(tmp_path: Path, fake_checks: Callable[..., None]) -> None:
    def boom(config: RunConfig) -> CheckResult:
        raise RuntimeError("kaputt")

    fake_checks({"reference.adjoint": boom})
    assert main(["run", "--claims", "reference.adjoint", "--out", str(tmp_path / "r"), "-q"]) == 1
    rec = json.loads((tmp_path / "r" / "results.json").read_text())["claims"][0]
    assert rec["verdict"] == "FAIL" and "kaputt" in rec["summary"]


def test_fail_on_inconclusive(tmp_path: Path, fake_checks: Callable[..., None]) -> None:
    fake_checks({"reference.adjoint": _result("reference.adjoint", Verdict.INCONCLUSIVE)})
    assert main(["run", "--claims", "reference.adjoint", "--no-report", "-q"]) == 0
    assert main(["run", "--claims", "reference.adjoint", "--no-report", "-q", "--fail-on", "inconclusive"]) == 1


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_skips_device_claims(
    tmp_path: Path,
    fake_checks: Callable[..., None],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import verify.checks.device as device_checks

    monkeypatch.setattr(device_checks, "CUDA_CLAIMS", ("device.fake-parity",))
    dev = fake_claim("device.fake-parity")
    ran: list[str] = []

    def must_not_run(config: RunConfig) -> CheckResult:
        ran.append(config.device)
        raise AssertionError("a device claim ran without CUDA")

    def on_cpu(config: RunConfig) -> CheckResult:
        ran.append(config.device)
        return CheckResult("reference.adjoint", Verdict.PASS, "ok", seed=config.seed, device=config.device)

    fake_checks({"device.fake-parity": must_not_run, "reference.adjoint": on_cpu}, extra_claims=(dev,))
    out = tmp_path / "r"
    argv = ["run", "--claims", "reference.adjoint", "device.fake-parity", "--device", "cuda", "--out", str(out)]
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert ran == ["cpu"]
    assert "SKIPPED device.fake-parity" in cap.out and "CUDA" in cap.out
    recs = {r["id"]: r for r in json.loads((out / "results.json").read_text())["claims"]}
    assert recs["device.fake-parity"]["verdict"] == "SKIPPED" and "CUDA" in recs["device.fake-parity"]["reason"]
    # strict: an error before any compute, no report folder
    out2 = tmp_path / "strict"
    assert main(["run", "--claims", "device.*", "--device", "cuda", "--strict-device", "--out", str(out2)]) == 2
    assert not out2.exists() and ran == ["cpu"]


def test_claim_outside_the_profile_is_listed_as_skipped(
    tmp_path: Path, fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    big = fake_claim("reference.fake-reproduction", profiles=("full",))

    def must_not_run(config: RunConfig) -> CheckResult:
        raise AssertionError("a full-only claim ran under --profile ci")

    fake_checks({big.id: must_not_run}, extra_claims=(big,))
    assert main(["run", "--claims", "reference.fake-*", "--profile", "ci", "--no-report"]) == 0
    assert "SKIPPED reference.fake-reproduction: runs in profile full only" in capsys.readouterr().out


def test_unwritable_out_is_an_error_before_compute(
    tmp_path: Path, fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[int] = []

    def counting(config: RunConfig) -> CheckResult:
        calls.append(1)
        return CheckResult("reference.adjoint", Verdict.PASS, "ok")

    fake_checks({"reference.adjoint": counting})
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["run", "--claims", "reference.adjoint", "--out", str(blocker / "sub")]) == 2
    assert main(["run", "--claims", "reference.adjoint", "--no-report", "--junit", str(blocker / "j.xml")]) == 2
    other = tmp_path / "mine"
    other.mkdir()
    (other / "thesis.tex").write_text("precious")
    assert main(["run", "--claims", "reference.adjoint", "--out", str(other)]) == 2
    assert (other / "thesis.tex").read_text() == "precious"
    assert "--out" in capsys.readouterr().err
    assert calls == []


def test_interrupt_leaves_previous_report_intact(
    tmp_path: Path, fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    fake_checks({"reference.adjoint": _result("reference.adjoint", Verdict.PASS)})
    assert main(["run", "--claims", "reference.adjoint", "--out", str(out), "-q"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}

    def interrupted(config: RunConfig) -> CheckResult:  # Ctrl-C delivered to rnn-verify while the check runs
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        raise AssertionError("not interrupted")

    fake_checks({"reference.adjoint": interrupted})
    assert main(["run", "--claims", "reference.adjoint", "--out", str(out), "-q"]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # no temporary folders left


def test_interrupt_while_writing_leaves_previous_report(
    tmp_path: Path, fake_checks: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    import verify.report as rep

    out = tmp_path / "r"
    fake_checks({"reference.adjoint": _result("reference.adjoint", Verdict.PASS)})
    assert main(["run", "--claims", "reference.adjoint", "--out", str(out), "-q"]) == 0
    before = (out / "results.json").read_bytes()
    real = rep.render_html

    def half_written(*a: object, **k: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(rep, "render_html", half_written)
    assert main(["run", "--claims", "reference.adjoint", "--out", str(out), "-q", "--seed", "5"]) == 130
    assert (out / "results.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
    monkeypatch.setattr(rep, "render_html", real)


def test_json_on_stdout(fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]) -> None:
    fake_checks({"reference.adjoint": _result("reference.adjoint", Verdict.PASS)})
    assert main(["run", "--claims", "reference.adjoint", "--no-report", "--json"]) == 0
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert doc["claims"][0]["id"] == "reference.adjoint"
    assert "PASS" in cap.err and "summary" in cap.err


def test_progress_is_quiet_when_not_a_terminal(
    fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_checks({"reference.adjoint": _result("reference.adjoint", Verdict.PASS)})
    assert main(["run", "--claims", "reference.adjoint", "--no-report"]) == 0
    cap = capsys.readouterr()
    assert "\r" not in cap.err and "running" not in cap.err
    assert cap.out.startswith("PASS") and "reference.adjoint" in cap.out


def test_workers_run_in_processes_in_catalog_order(tmp_path: Path) -> None:
    out = tmp_path / "r"
    argv = ["run", "--claims", "reference.influence", "reference.complex-step", "--workers", "2", "--out", str(out)]
    assert main([*argv, "-q"]) == 0
    doc = json.loads((out / "results.json").read_text())
    assert [r["id"] for r in doc["claims"]] == ["reference.influence", "reference.complex-step"]
    assert all(r["verdict"] == "PASS" for r in doc["claims"]) and doc["run"]["workers"] == 2
    assert doc["run"]["executor"].startswith("isolated (2 worker processes")  # verify.run.pool's workers


def test_report_rerenders_without_recomputing(
    tmp_path: Path, fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    assert main(["run", "--claims", "reference.influence", "--out", str(out), "-q"]) == 0
    md = (out / "report.md").read_text()
    (out / "report.md").unlink()

    def must_not_run(config: RunConfig) -> CheckResult:
        raise AssertionError("report recomputed a check")

    fake_checks({"reference.influence": must_not_run})
    assert main(["report", str(out / "results.json")]) == 0
    assert (out / "report.md").read_text() == md
    other = tmp_path / "copy"
    assert main(["report", str(out), "--out", str(other), "--junit", str(tmp_path / "j.xml")]) == 0
    assert (other / "report.html").is_file() and (tmp_path / "j.xml").is_file()


@pytest.mark.parametrize(
    "content, needle",
    [
        ("{not json", "not valid JSON"),
        ('{"schema": "something-else"}', "schema"),
        ('{"schema": "rnn-verify.results", "schema_version": 99, "run": {}, "claims": []}', "schema_version"),
        ('{"schema": "rnn-verify.results", "schema_version": 1, "run": {}, "claims": [{"id": "a.b"}]}', "missing"),
    ],
)
def test_report_refuses_corrupt_json_and_keeps_the_folder(
    tmp_path: Path, content: str, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    out.mkdir()
    (out / "results.json").write_text(content)
    (out / "report.md").write_text("old report")
    assert main(["report", str(out)]) == 2
    assert needle in capsys.readouterr().err
    assert (out / "report.md").read_text() == "old report" and (out / "results.json").read_text() == content


def test_report_refuses_edited_verdict_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r"
    assert main(["run", "--claims", "reference.influence", "--out", str(out), "-q"]) == 0
    doc = json.loads((out / "results.json").read_text())
    doc["claims"][0]["verdict"] = "FAIL"
    (out / "results.json").write_text(json.dumps(doc))
    assert main(["report", str(out)]) == 2
    assert "counts" in capsys.readouterr().err


def test_long_runs_draw_figures_in_the_background(tmp_path: Path, fake_checks: Callable[..., None]) -> None:
    from verify.cli import _BACKGROUND_PNG_MIN_CLAIMS

    n = _BACKGROUND_PNG_MIN_CLAIMS
    claims = tuple(fake_claim(f"reference.fake-{i}") for i in range(n))

    def with_figure(cid: str) -> Callable[[RunConfig], CheckResult]:
        fig = {"kind": "line", "title": cid, "x": [1, 2, 3], "series": [{"label": "y", "y": [3, 1, 2]}]}
        return lambda config: CheckResult(cid, Verdict.PASS, "ok", data={"figures": [fig]})

    fake_checks({c.id: with_figure(c.id) for c in claims}, extra_claims=claims)
    out = tmp_path / "r"
    assert main(["run", "--claims", "reference.fake-*", "--out", str(out), "-q"]) == 0
    pngs = sorted(p.name for p in (out / "figures").iterdir())
    assert pngs == sorted(f"{c.id}-1.png" for c in claims)
    assert all((out / "figures" / p).read_bytes().startswith(b"\x89PNG") for p in pngs)
    assert (out / "report.html").read_text().count("data:image/png;base64,") == n
