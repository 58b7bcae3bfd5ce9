"""SIGTERM and SIGHUP are handled like Ctrl-C (issue 12, case 5): a message, 143/129, no orphans, report intact."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from verify.cli import main
from verify.config import RunConfig
from verify.report import claim_record, run_document, write_report
from verify.verdict import CheckResult, Verdict

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
ROOT = Path(__file__).resolve().parents[2]


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, pgid, state) of a live process, None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[2]), fields[0]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _descendants(root: int) -> set[int]:
    found: set[int] = set()
    frontier = {root}
    while frontier:
        children = {pid for pid in _all_pids() if (st := _stat(pid)) is not None and st[0] in frontier}
        frontier = children - found
        found |= children
    return found


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[2] not in ("Z", "X")  # a zombie computes nothing and holds no memory


def _previous_report(out: Path) -> dict[str, bytes]:
    rec = claim_record(CheckResult("reference.adjoint", Verdict.PASS, "the previous run"))
    write_report(out, run_document([rec], {"profile": "ci"}))
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def _is_worker(pid: int, run: int) -> bool:
    """A worker or the figure process: started afresh (its program in its command line) or forked from the run
    (the run's own command line, another pid: :func:`verify.run.prestart.fork`)."""
    c = _cmdline(pid)
    return "spawn_main" in c or "verify.run.worker" in c or (pid != run and c == _cmdline(run) != "")


def test_sigterm_with_two_workers_leaves_no_process_and_the_report_intact(tmp_path: Path) -> None:
    out = tmp_path / "report"
    before = _previous_report(out)
    argv = [sys.executable, "-m", "verify", "run", "--workers", "2", "--claims", "uoro.*", "--out", str(out), "-q"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    seen: set[int] = set()
    try:
        while time.monotonic() - t0 < 60:  # the workers and the figure process (11 claims: >= 6) exist
            seen |= _descendants(proc.pid)
            pool = [p for p in seen if _alive(p) and _is_worker(p, proc.pid)]
            if len(pool) >= 3 or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert proc.poll() is None, "the run ended before the workers started"
        assert len(pool) >= 3, f"expected 2 workers and the figure process, saw {[_cmdline(p) for p in seen]}"
        proc.send_signal(signal.SIGTERM)  # the main process only, as `kill PID` or a CI runner's timeout does
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    text = err.decode()
    assert proc.returncode == 143, text
    assert "terminated by SIGTERM" in text and "no report written" in text and "Traceback" not in text
    deadline = time.monotonic() + 10  # the resource tracker exits when it sees its pipe close
    while time.monotonic() < deadline:
        left = [p for p in seen if _alive(p)]
        group = [p for p in _all_pids() if (st := _stat(p)) is not None and st[1] == proc.pid and _alive(p)]
        if not left and not group:
            break
        time.sleep(0.2)
    assert not left, f"orphans: {[(p, _cmdline(p)) for p in left]}"
    assert not group, f"processes left in the run's group: {[(p, _cmdline(p)) for p in group]}"
    after = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no temporary folder or file left
    assert time.monotonic() - t0 < 60


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_stop_signal_in_process_like_ctrl_c(
    sig: signal.Signals,
    code: int,
    tmp_path: Path,
    fake_checks: Callable[..., None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "report"
    before = _previous_report(out)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}

    def signalled(config: RunConfig) -> CheckResult:
        os.kill(os.getpid(), sig)
        time.sleep(5)  # the handler interrupts this
        raise AssertionError("the signal did not stop the check")

    fake_checks({"reference.adjoint": signalled})
    t0 = time.monotonic()
    assert main(["run", "--claims", "reference.adjoint", "--out", str(out), "-q"]) == code
    assert time.monotonic() - t0 < 4
    err = capsys.readouterr().err
    assert f"terminated by {sig.name}" in err and f"({out} is untouched)" in err
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert {s: signal.getsignal(s) for s in handlers} == handlers  # main() restores the handlers
    assert json.loads((out / "results.json").read_text())["claims"][0]["summary"] == "the previous run"


def test_signal_while_writing_leaves_previous_or_new_report(
    tmp_path: Path, fake_checks: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    import verify.report as rep

    out = tmp_path / "report"
    before = _previous_report(out)
    fake_checks({"reference.adjoint": lambda config: CheckResult("reference.adjoint", Verdict.PASS, "new")})

    def terminated_while_rendering(*a: object, **k: object) -> str:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        raise AssertionError("not interrupted")

    monkeypatch.setattr(rep, "render_html", terminated_while_rendering)
    assert main(["run", "--claims", "reference.adjoint", "--out", str(out), "-q"]) == 143
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
