"""What ``rnn-verify run`` prints (issue 41): one short line per verdict in catalog order, ``-v`` for the whole
summary, ``--color``, a summary that does not repeat each FAIL whole."""

from __future__ import annotations

import io
import re
from collections.abc import Callable

import pytest

from theory.catalog import all_claims
from verify.cli import _Progress, main
from verify.cli_lines import LINE_WIDTH, use_color, verdict_line
from verify.config import RunConfig
from verify.verdict import CheckResult, Verdict

ANSI = re.compile(r"\033\[[0-9;]*m")
LONG = "the estimate differs from the reference by 3.2e-3 (budget 1e-12) " * 12 + "\nsecond line of the summary"
CLAIMS = all_claims()
RTRL = [cid for cid in CLAIMS if cid.startswith("rtrl.")]


def _seen(text: str) -> str:
    return ANSI.sub("", text)


@pytest.mark.parametrize("verdict", [v.value for v in Verdict])
@pytest.mark.parametrize("claim_id", ["rtrl.exact", "uoro.variance-matches-algorithm-1", "x." + "y" * 150])
def test_a_verdict_line_is_short(verdict: str, claim_id: str) -> None:
    for color in (False, True):
        line = verdict_line(verdict, claim_id, LONG, 1234.5, 10**6, color=color)
        seen = _seen(line)
        assert len(seen) <= LINE_WIDTH and "\n" not in line and seen.startswith(verdict)
        assert (line != seen) == color
    short = verdict_line(verdict, "rtrl.exact", "fine", 0.4)
    assert short.split() == [verdict, "rtrl.exact", "0.4s", "fine"]


def test_verbose_keeps_the_whole_summary() -> None:
    line = verdict_line("FAIL", "rtrl.exact", LONG, 1.0, 4000, verbose=True)
    assert LONG.splitlines()[0].strip() in line and "n=4000" in line


def test_color_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color("yes", io.StringIO()) and not use_color("no", Tty())
    assert use_color("auto", Tty()) and not use_color("auto", io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color("auto", Tty()) and use_color("yes", Tty())
    monkeypatch.setenv("NO_COLOR", "")  # no-color.org: set and not empty
    assert use_color("auto", Tty())


def test_lines_come_in_catalog_order_whatever_the_order_of_completion() -> None:
    out = io.StringIO()
    ids = RTRL[:4]
    p = _Progress(len(ids), out, quiet=False, tty=False, interval=60, order=ids)
    for cid in (ids[2], ids[0], ids[3], ids[1]):
        p("start", CLAIMS[cid], None)
    for cid in (ids[2], ids[0], ids[3]):
        p("done", CLAIMS[cid], CheckResult(cid, Verdict.PASS, "ok"))
    assert [ln.split()[1] for ln in out.getvalue().splitlines()] == [ids[0]]  # ids[2], ids[3] wait for ids[1]
    p("done", CLAIMS[ids[1]], CheckResult(ids[1], Verdict.FAIL, "bad"))
    p.close()
    assert [ln.split()[1] for ln in out.getvalue().splitlines()] == ids


def _fake(fake_checks: Callable[..., None]) -> None:
    def check(cid: str) -> Callable[[RunConfig], CheckResult]:
        verdict = Verdict.FAIL if cid == RTRL[1] else Verdict.PASS
        return lambda config: CheckResult(cid, verdict, LONG, seed=config.seed, reason="because")

    fake_checks({cid: check(cid) for cid in CLAIMS})


def test_run_prints_short_lines_and_a_short_summary(
    fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    _fake(fake_checks)
    assert main(["run", "--no-report", "--claims", "rtrl.*"]) == 1
    out = capsys.readouterr().out
    assert "\033[" not in out  # --color auto: not a terminal
    lines = out.splitlines()
    assert all(len(ln) <= LINE_WIDTH for ln in lines), max(lines, key=len)
    verdicts = [ln.split()[1] for ln in lines if ln.startswith(("PASS", "FAIL"))]
    assert verdicts == RTRL  # catalog order
    fails = [ln for ln in lines if ln.startswith("  FAIL ")]
    assert len(fails) == 1 and RTRL[1] in fails[0]  # the summary: one short line per FAIL
    assert LONG.splitlines()[0].strip() not in out


def test_run_verbose_and_color(fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str]) -> None:
    _fake(fake_checks)
    assert main(["run", "--no-report", "--claims", RTRL[1], "-v", "--color", "yes"]) == 1
    out = capsys.readouterr().out
    assert LONG.splitlines()[0].strip() in out  # -v: the whole summary
    assert "\033[31;1mFAIL\033[0m" in out
    assert main(["run", "--no-report", "--claims", RTRL[1], "--color", "no"]) == 1
    assert "\033[" not in capsys.readouterr().out
