"""Isolation of code under test (issue 36): the process that decides the exit status never imports or calls it.

An enumerated corpus: a correct UORO (``tests/cli/data/evil_impl.py``) that misbehaves on request -- ``os._exit``
with any status, ``sys.exit``, a signal to itself (SIGKILL, SIGSEGV, SIGTERM, SIGABRT), ``os.chdir``, a forked
child, a non-daemon thread, SIGTERM ignored, its file descriptors closed, stdout/stderr closed, a hang, control
characters and lone surrogates in its messages, an exception whose ``__str__`` raises -- at import, in the load
check or inside a claim. Each case runs ``rnn-verify run --impl ...`` with the supervisor *in this very process*
(``verify.cli.main``): were any user code run here, ``os._exit(0)`` would end pytest itself. Each case asserts:

* its exact exit code (2 when the implementation cannot be loaded, 1 when a claim it ran FAILs, 0 when what it
  did is harmless to the verdict), and that the claim's FAIL says what the implementation did;
* no ``Traceback`` and no raw control character on stdout/stderr;
* nothing outside the output folder touched (a sentinel tree: bytes and mtimes), the report where ``--out``
  said (a relative ``--out`` and an implementation that changes the folder at import);
* no process left: every process started for the case carries a tag in its environment; none is alive after.

Most cases are ``slow`` (each starts a worker process: a few seconds); one per class runs by default.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import run_cli_in
from tests.cli.test_fuzz import _snapshot
from verify.exit_codes import EXIT_FAIL, EXIT_OK, EXIT_USAGE

EVIL = Path(__file__).parent / "data" / "evil_impl.py"
CLAIM = "uoro.algorithm-1-conformance"  # the quickest claim that steps a user's UORO (about 1 s)
TAG = "RNN_VERIFY_ISOLATION_TAG"

#: mode -> (exit code at import, in the load check, inside a claim; a fragment the output must hold, or "")
MODES: dict[str, tuple[int, int, int, str]] = {
    "exit0": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "os._exit(0) in _misbehave()"),
    "exit3": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "os._exit(3) in _misbehave()"),
    "sysexit0": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "SystemExit"),
    "sysexit-broken": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "SystemExit"),
    "broken-str": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "BrokenStr"),
    "keyboard": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "KeyboardInterrupt"),
    "sigkill": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "SIGKILL"),
    "sigsegv": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "SIGSEGV"),
    "sigterm": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "SIGTERM"),
    "abort": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "SIGABRT"),
    "close-fds": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "control pipe"),
    "hang": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "did not finish within 8 s"),
    "escapes": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "\\x1b[2J"),
    "surrogate-name": (EXIT_USAGE, EXIT_USAGE, EXIT_FAIL, "\\udce9"),
    "chdir-root": (EXIT_OK, EXIT_OK, EXIT_OK, ""),
    "chdir-here": (EXIT_OK, EXIT_OK, EXIT_OK, ""),
    "fork": (EXIT_OK, EXIT_OK, EXIT_OK, ""),
    "thread": (EXIT_OK, EXIT_OK, EXIT_OK, ""),
    "ignore-sigterm": (EXIT_OK, EXIT_OK, EXIT_OK, ""),
    "close-stdout": (EXIT_OK, EXIT_OK, EXIT_OK, ""),
}
WHERE = ("import", "load", "claim")
#: one case of each class in the default run; the rest are marked slow
QUICK = {("exit0", "claim"), ("exit0", "import"), ("hang", "claim"), ("fork", "claim"), ("chdir-root", "import"),
         ("sigsegv", "load")}  # fmt: skip


def _cases() -> Iterator[object]:
    for mode, codes in MODES.items():
        for i, where in enumerate(WHERE):
            marks = () if (mode, where) in QUICK else (pytest.mark.slow,)
            yield pytest.param(mode, where, codes[i], codes[3], id=f"{where}-{mode}", marks=marks)


def tagged_processes(tag: str) -> list[int]:
    """PIDs of live processes (not zombies) whose environment carries ``TAG=tag``."""
    found = []
    needle = f"{TAG}={tag}".encode()
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            if needle in (p / "environ").read_bytes() and " Z " not in (p / "stat").read_text().split(")")[-1][:4]:
                found.append(int(p.name))
        except OSError:
            continue
    return found


def _raw_controls(text: str) -> list[str]:
    return [
        ch for ch in text if (ord(ch) < 32 and ch not in "\n\t") or 0x7F <= ord(ch) < 0xA0 or 0xD800 <= ord(ch) < 0xE000
    ]


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, str]]:
    """(cwd, sentinel tree beside it, tag): the case's working folder, files it must not touch, its process tag."""
    cwd, outside = tmp_path / "cwd", tmp_path / "outside"
    cwd.mkdir()
    outside.mkdir()
    (outside / "results.json").write_text('{"mine": true}')  # a user's file a moved --out would overwrite
    (outside / "notes.txt").write_text("keep")
    tag = uuid.uuid4().hex
    monkeypatch.setenv(TAG, tag)
    yield cwd, outside, tag
    for pid in tagged_processes(tag):  # never leave anything behind, even when the case failed
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(("mode", "where", "code", "says"), list(_cases()))
def test_code_under_test_cannot_decide_the_gate(
    sandbox: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch, mode: str, where: str, code: int, says: str
) -> None:
    cwd, outside, tag = sandbox
    monkeypatch.setenv("EVIL_MODE", mode)
    monkeypatch.setenv("EVIL_WHERE", where)
    before = _snapshot(outside)
    # relative paths: an implementation that changes the folder must not move them
    argv = ["run", "--impl", f"uoro={EVIL}:Evil", "--claims", CLAIM, "--out", "../outside-report", "--json",
            "../run.json", "--timeout", "8", "-q"]  # fmt: skip
    t0 = time.monotonic()
    got, text = run_cli_in(cwd, argv)
    assert time.monotonic() - t0 < 120
    assert got == code, f"{where}/{mode}: exit {got}, expected {code}:\n{text[-3000:]}"
    assert "Traceback" not in text, text
    assert not _raw_controls(text), f"raw {_raw_controls(text)[:5]} on stdout/stderr:\n{text[-2000:]}"
    assert says in text, f"{says!r} not in:\n{text[-3000:]}"
    assert _snapshot(outside) == before, "files outside the output changed"
    assert sorted(p.name for p in cwd.parent.iterdir()) == sorted(
        ["cwd", "outside", *(["outside-report", "run.json"] if code != EXIT_USAGE else [])]
    )
    if code == EXIT_USAGE:  # refused before any claim ran: one line naming the --impl
        lines = [ln for ln in text.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("rnn-verify: error:") and "evil_impl.py" in lines[0], text
    else:
        doc = json.loads((cwd.parent / "outside-report" / "results.json").read_text())
        assert doc["run"]["exit_code"] == code
        verdict = doc["claims"][0]["verdict"]
        assert verdict == ("FAIL" if code == EXIT_FAIL else "PASS"), doc["claims"][0]["summary"]
    deadline = time.monotonic() + 5
    while tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert tagged_processes(tag) == [], "processes left after the run"


def test_a_killed_supervisor_leaves_nothing_holding_the_ci_pipe(sandbox: tuple[Path, Path, str]) -> None:
    """``kill -9`` of rnn-verify with two workers busy (one hanging in user code that forked a child): the pipe
    a CI runner reads reaches EOF at once and no process of the run is left (workers, reaper, figure process)."""
    cwd, _, tag = sandbox
    env = {**os.environ, "EVIL_MODE": "hang", "EVIL_WHERE": "claim"}
    argv = [sys.executable, "-m", "verify", "run", "--impl", f"uoro={EVIL}:Evil", "--claims", CLAIM,
            "uoro.exact-expectation", "--workers", "2", "--out", "../r", "-q"]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while len(tagged_processes(tag)) < 3 and time.monotonic() < deadline:  # supervisor, reaper, a worker
            time.sleep(0.2)
        time.sleep(3.0)  # the workers are in their claims
        assert len(tagged_processes(tag)) >= 3
        os.kill(proc.pid, signal.SIGKILL)
        t0 = time.monotonic()
        assert proc.stdout is not None
        proc.stdout.read()  # EOF only once nothing holds the pipe
        waited = time.monotonic() - t0
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert waited < 10, f"the CI's pipe was held {waited:.1f} s after the supervisor died"
    deadline = time.monotonic() + 5
    while tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert tagged_processes(tag) == []


def test_timeout_names_the_claim_and_where_it_was(
    sandbox: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd, _, _ = sandbox
    monkeypatch.setenv("EVIL_MODE", "hang")
    monkeypatch.setenv("EVIL_WHERE", "claim")
    got, text = run_cli_in(cwd, ["run", "--impl", f"uoro={EVIL}:Evil", "--claims", CLAIM, "--no-report",
                                 "--timeout", "5", "-v"])  # fmt: skip
    assert got == EXIT_FAIL
    line = next(ln for ln in text.splitlines() if ln.startswith("FAIL ") and CLAIM in ln)  # -v: the whole summary
    assert "did not finish within 5 s" in line and "_misbehave() at" in line and "evil_impl.py" in line, text


@pytest.mark.parametrize("value", ["-1", "nan", "abc", "inf"])
def test_timeout_is_validated(tmp_path: Path, value: str) -> None:
    got, text = run_cli_in(tmp_path, ["run", "--claims", CLAIM, "--no-report", "--timeout", value])
    assert got == EXIT_USAGE and "--timeout" in text and "Traceback" not in text
