"""Selecting and explaining claims (issue 41): ``explain CLAIM``, ``-k EXPR``, ``--claims '!id'`` refused."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from theory.catalog import all_claims
from theory.papers import PAPERS
from verify.cli import _parser, main
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.selection import parse_keyword
from verify.verdict import CheckResult, Verdict

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = all_claims()


def _ids(expr: str) -> list[str]:
    k = parse_keyword(expr)
    return [cid for cid, c in CLAIMS.items() if k.matches(c)]


def _has(cid: str, word: str) -> bool:
    """The oracle of one word: a case-insensitive substring of the id or of the paper key."""
    c = CLAIMS[cid]
    return word.lower() in cid.lower() or word.lower() in c.paper.lower()


# ------------------------------------------------------------------- explain
def test_explain_prints_the_claim_in_full(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    claim = CLAIMS["uoro.rank-unbiased"]
    assert main(["explain", claim.id]) == 0
    out = capsysbinary.readouterr().out.decode("utf-8")
    paper = PAPERS[claim.paper]
    for text in (claim.title, claim.statement[:60], claim.where[:40], paper.authors, paper.title, paper.arxiv):
        assert " ".join(text.split()) in " ".join(out.split()), text
    assert f"{claim.alpha:g}" in out  # the stated false-FAIL rate
    assert "negative control" in out.split("\ncontrols\n", 1)[1]  # the controls have their own section
    assert "ci, full" in out
    assert "θ" in out and "\\u03b8" not in out  # plain UTF-8, not escaped
    rerun = out.split("\nrerun\n", 1)[1].split()
    assert rerun[:2] == ["rnn-verify", "run"]
    args = _parser().parse_args(rerun[1:])  # the rerun command parses, and selects this claim alone
    assert args.claims == [claim.id] and args.profile == "ci"


def test_explain_every_claim(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """Every claim explains (exit 0) with its id, its check and a rerun line; a cuda claim's rerun asks for cuda."""
    for cid, claim in CLAIMS.items():
        assert main(["explain", cid]) == 0
        out = capsysbinary.readouterr().out.decode("utf-8")
        assert out.startswith(f"{cid}: ") and claim.check in out and "\nrerun\n    rnn-verify run" in out
        if "cuda" in claim.requires:
            assert "--device cuda" in out


def test_explain_unknown_id_is_exit_2_with_near_matches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "uoro.rank-unbiasd"]) == 2
    err = capsys.readouterr().err
    assert "CLAIM='uoro.rank-unbiasd'" in err and "did you mean" in err and "uoro.rank-unbiased" in err
    assert main(["explain", "zzz"]) == 2
    assert "see `rnn-verify list`" in capsys.readouterr().err


def test_explain_is_utf8_whatever_the_locale(tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(ROOT), "LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "ascii", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-m", "verify", "explain", "uoro.exact-expectation"],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "θ".encode() in proc.stdout


# ------------------------------------------------------------------------ -k
@pytest.mark.parametrize(
    ("expr", "oracle"),
    [
        ("uoro", lambda i: _has(i, "uoro")),
        ("UORO and not variance", lambda i: _has(i, "uoro") and not _has(i, "variance")),
        ("rtrl or fpp and not exact", lambda i: _has(i, "rtrl") or (_has(i, "fpp") and not _has(i, "exact"))),
        ("(rtrl or fpp) and not exact", lambda i: (_has(i, "rtrl") or _has(i, "fpp")) and not _has(i, "exact")),
        ("not not truncation", lambda i: _has(i, "truncation")),
        ("tallec", lambda i: _has(i, "tallec")),
        ("cooijmans and not uoro", lambda i: _has(i, "cooijmans") and not _has(i, "uoro")),
    ],
)
def test_keyword_expression_follows_pytest(expr: str, oracle: Callable[[str], bool]) -> None:
    want = [cid for cid in CLAIMS if oracle(cid)]
    assert _ids(expr) == want


def test_keyword_matches_the_paper() -> None:
    """-k tallec selects claims of Tallec & Ollivier whose id does not say so."""
    by_paper = [cid for cid, c in CLAIMS.items() if c.paper == "Tallec & Ollivier 2017"]
    assert by_paper and set(by_paper) <= set(_ids("tallec"))
    assert any("tallec" not in cid for cid in by_paper)


@pytest.mark.parametrize("expr", ["", "   ", "uoro and", "(uoro", "uoro)", "and", "not", "uoro rtrl", "()", "or x"])
def test_malformed_keyword_is_named(expr: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InvalidArgument, match="-k"):
        parse_keyword(expr)
    assert main(["list", "-k", expr]) == 2
    err = capsys.readouterr().err
    assert f"-k={expr!r}" in err and "selection expression" in err and "Traceback" not in err


def test_keyword_selecting_nothing_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "-k", "no-such-word"]) == 2
    assert "-k='no-such-word': selects no claim" in capsys.readouterr().err
    assert main(["list", "--claims", "rtrl.*", "-k", "uoro and not tallec"]) == 2
    assert "selects no claim of the" in capsys.readouterr().err


def test_list_with_keyword_and_claims(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--json", "-k", "uoro and not variance"]) == 0
    got = [c["id"] for c in json.loads(capsys.readouterr().out)]
    assert got == _ids("uoro and not variance")
    assert main(["list", "--claims", "uoro.*", "-k", "not unbiased"]) == 0
    out = capsys.readouterr().out
    assert "uoro.rank-variance" in out and "uoro.rank-unbiased" not in out and "rtrl.exact" not in out


def test_bang_id_is_refused_with_the_k_hint(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["list", "--claims", "!rtrl.exact"], ["run", "--no-report", "--claims", "!rtrl.exact"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "--claims='!rtrl.exact'" in err and "-k 'not rtrl.exact'" in err


def test_run_with_keyword_runs_only_those(fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]) -> None:
    ran: list[str] = []

    def check(cid: str) -> Callable[[RunConfig], CheckResult]:
        def fn(config: RunConfig) -> CheckResult:
            ran.append(cid)
            return CheckResult(cid, Verdict.PASS, "fake", seed=config.seed)

        return fn

    fake_checks({cid: check(cid) for cid in CLAIMS})
    assert main(["run", "--no-report", "-q", "-k", "rtrl and not (snap or rflo or eprop or bias)"]) == 0
    assert ran == [cid for cid in _ids("rtrl") if not any(w in cid for w in ("snap", "rflo", "eprop", "bias"))]
    assert main(["run", "--no-report", "-k", "rtrl and"]) == 2


# ----------------------------------------------------------------- --lf, -x
def _verdicts(fake_checks: Callable[..., None], verdicts: dict[str, Verdict], ran: list[str]) -> None:
    def check(cid: str) -> Callable[[RunConfig], CheckResult]:
        def fn(config: RunConfig) -> CheckResult:
            ran.append(cid)
            return CheckResult(cid, verdicts.get(cid, Verdict.PASS), "fake", seed=config.seed)

        return fn

    fake_checks({cid: check(cid) for cid in CLAIMS})


RTRL = [cid for cid in CLAIMS if cid.startswith("rtrl.")]


def test_last_failed_reruns_what_failed_as_pytest(
    fake_checks: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    state = tmp_path / "cache" / "rnn-verify" / "lastfailed.json"
    ran: list[str] = []
    verdicts = {RTRL[1]: Verdict.FAIL, RTRL[3]: Verdict.FAIL}
    _verdicts(fake_checks, verdicts, ran)
    argv = ["run", "--no-report", "-q", "--claims", "rtrl.*"]
    # no previous run: all, with a note
    assert main([*argv, "--lf"]) == 1
    assert ran == RTRL and "--lf: no previous run recorded" in capsys.readouterr().err
    assert json.loads(state.read_text())["failed"] == [RTRL[1], RTRL[3]]
    # what failed, only
    ran.clear()
    assert main([*argv, "--lf"]) == 1
    assert ran == [RTRL[1], RTRL[3]] and "rerunning 2 of" in capsys.readouterr().err
    # a run of a subset keeps the other failures (RTRL[3] was not run)
    verdicts.pop(RTRL[1])
    ran.clear()
    assert main(["run", "--no-report", "-q", "--claims", RTRL[1]]) == 0
    assert json.loads(state.read_text())["failed"] == [RTRL[3]]
    # fixed: nothing failed, --lf runs all with a note
    verdicts.clear()
    assert main([*argv, "--lf"]) == 0
    ran.clear()
    assert main([*argv, "--lf"]) == 0
    assert ran == RTRL and "no selected claim failed" in capsys.readouterr().err


def test_last_failed_with_a_damaged_state_file_runs_all_with_a_note(
    fake_checks: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    state = tmp_path / "rnn-verify" / "lastfailed.json"
    state.parent.mkdir()
    ran: list[str] = []
    _verdicts(fake_checks, {}, ran)
    for bad in (b"{not json", b'{"version": 1, "failed": "rtrl.exact", "finished": "x"}', b"[1]"):
        state.write_bytes(bad)
        ran.clear()
        assert main(["run", "--no-report", "-q", "--claims", "rtrl.*", "--lf"]) == 0
        err = capsys.readouterr().err
        assert ran == RTRL and "--lf=" in err and str(state) in err and "running every selected claim" in err
    assert json.loads(state.read_text())["failed"] == []  # replaced by this run's record


def test_last_failed_records_the_report(
    fake_checks: Callable[..., None], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _verdicts(fake_checks, {"rtrl.exact": Verdict.FAIL}, [])
    out = tmp_path / "report"
    assert main(["run", "-q", "--claims", "rtrl.exact", "--out", str(out)]) == 1
    doc = json.loads((tmp_path / "cache" / "rnn-verify" / "lastfailed.json").read_text())
    assert doc["failed"] == ["rtrl.exact"] and doc["results"] == str(out / "results.json")


@pytest.mark.parametrize("flag", [["-x"], ["--maxfail", "1"], ["--maxfail", "2"]])
def test_maxfail_stops_and_skips_the_rest(
    flag: list[str], fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []
    _verdicts(fake_checks, {RTRL[1]: Verdict.FAIL, RTRL[3]: Verdict.FAIL, RTRL[5]: Verdict.FAIL}, ran)
    assert main(["run", "--no-report", "--claims", "rtrl.*", *flag]) == 1  # the exit code stays 1
    n = 1 if flag == ["-x"] else int(flag[1])
    last = [1, 3][n - 1]
    assert ran == RTRL[: last + 1]
    out = capsys.readouterr().out
    for cid in RTRL[last + 1 :]:
        line = next(ln for ln in out.splitlines() if ln.startswith("SKIPPED") and cid in ln)
        assert "not run: --maxfail reached" in line


def test_maxfail_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--no-report", "--maxfail", "0"]) == 2
    assert "--maxfail=0" in capsys.readouterr().err


def test_maxfail_on_an_executor_stops_asking_for_results() -> None:
    """In parallel (an executor yields results as they finish): after N FAILs no further result is taken and the
    claims without one are SKIPPED, so the executor, closed by the caller, starts nothing more."""
    from verify.run.catalog import MAXFAIL_REASON, run_on_executor
    from verify.run.sweep.cache import code_version

    claims = [CLAIMS[cid] for cid in RTRL]
    taken: list[str] = []

    class Executor:
        def map_unordered(self, cells):  # type: ignore[no-untyped-def]
            for cell in cells:
                cid = str(cell.params["claim"])
                taken.append(cid)
                verdict = Verdict.FAIL if cid in (RTRL[0], RTRL[2]) else Verdict.PASS
                yield cell, {"ok": True, "code": code_version(), "value": CheckResult(cid, verdict, "x").to_dict()}

    results: dict[str, CheckResult] = {}
    run_on_executor(claims, lambda c: RunConfig(), None, Executor(), results, maxfail=2)
    assert taken == RTRL[:3]
    assert [results[cid].verdict for cid in RTRL[:3]] == [Verdict.FAIL, Verdict.PASS, Verdict.FAIL]
    assert all(results[cid].reason == MAXFAIL_REASON for cid in RTRL[3:])
