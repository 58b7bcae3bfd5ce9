"""Exit codes a CI can trust (issue 23): the table of ``--help`` is what every command does, and code under test
never sets the exit status -- whatever it raises is exit 2 at load or a FAIL inside a claim; only a signal
delivered to rnn-verify is 128 + n."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import verify.cli as cli_mod
import verify.cli_front as front
import verify.gallery.run as gallery_run
from verify.cli import _parser, main
from verify.config import RunConfig
from verify.exit_codes import COMMANDS, EXIT_FAIL, EXIT_OK, EXIT_USAGE
from verify.oracles import golden
from verify.report import claim_record, run_document, write_report
from verify.verdict import CheckResult, Verdict

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
QUICK = ["--claims", "rtrl.exact", "rtrl.influence-balancing"]  # ~1 s, both exercise rtrl.rtrl

#: an --impl whose RTRL raises what EC_WHAT says where EC_WHERE says: at import, in the load probe (the probe's
#: problem: n=3, T=5) or inside a claim (every other problem); "hang" writes EC_MARK and sleeps
IMPL = """\
import os, sys, time
from verify.estimators import RTRL

WHAT, WHERE = os.environ.get("EC_WHAT", ""), os.environ.get("EC_WHERE", "")


def _boom():
    if WHAT == "exit0":
        sys.exit(0)
    if WHAT == "exit3":
        raise SystemExit(3)
    if WHAT == "kbi":
        raise KeyboardInterrupt
    if WHAT == "hang":
        open(os.environ["EC_MARK"], "w").close()
        try:
            time.sleep(120)
        except BaseException:  # a user's catch-all: it must not swallow rnn-verify's stop
            time.sleep(120)


if WHERE == "import":
    _boom()


class Bad(RTRL):
    def step(self, problem, theta, state, t, rng):
        probe = problem.n == 3 and problem.T == 5
        if (WHERE == "load" and probe) or (WHERE == "claim" and not probe):
            _boom()
        return super().step(problem, theta, state, t, rng)
"""


def _previous_report(out: Path) -> dict[str, bytes]:
    rec = claim_record(CheckResult("rtrl.exact", Verdict.PASS, "the previous run"))
    write_report(out, run_document([rec], {"profile": "ci"}))
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def _files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def _no_green(out: Path, before: dict[str, bytes] | None) -> None:
    """The report folder holds the previous report unchanged, or a run that is not green."""
    if before is not None and _files(out) == before:
        return
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["exit_code"] != 0
    assert any(c["verdict"] == "FAIL" for c in doc["claims"])


def _impl(tmp_path: Path) -> str:
    f = tmp_path / "bad_impl.py"
    f.write_text(IMPL)
    return f"rtrl={f}:Bad"


# ------------------------------------------------------------------ code under test raising
#: each case starts rnn-verify and its worker processes (5-10 CPU-seconds). The default run keeps one case per
#: place (import, load check, claim), every kind of raise and both worker counts; the other combinations are
#: ``slow`` (the same raises in process: tests/cli/test_isolation.py, tests/cli/test_fuzz_corpus.py)
RAISES = [
    ("import", "exit0", 1, EXIT_USAGE),
    ("import", "kbi", 2, EXIT_USAGE),
    ("load", "exit0", 1, EXIT_USAGE),
    ("load", "exit3", 2, EXIT_USAGE),
    ("load", "kbi", 1, EXIT_USAGE),
    ("claim", "exit0", 1, EXIT_FAIL),
    ("claim", "exit0", 2, EXIT_FAIL),
    ("claim", "exit3", 1, EXIT_FAIL),
    ("claim", "exit3", 2, EXIT_FAIL),
    ("claim", "kbi", 1, EXIT_FAIL),
    ("claim", "kbi", 2, EXIT_FAIL),
]
RAISES_QUICK = {("import", "kbi", 2), ("load", "exit0", 1), ("claim", "exit3", 2), ("claim", "kbi", 1)}


@pytest.mark.parametrize(
    ("where", "what", "workers", "code"),
    [pytest.param(*c, marks=() if c[:3] in RAISES_QUICK else (pytest.mark.slow,)) for c in RAISES],
)
def test_what_code_under_test_raises_is_its_error_never_the_exit_status(
    tmp_path: Path, where: str, what: str, workers: int, code: int
) -> None:
    out = tmp_path / "report"
    before = _previous_report(out)
    argv = [sys.executable, "-m", "verify", "run", *QUICK, "--impl", _impl(tmp_path), "--workers", str(workers)]
    env = {**ENV, "EC_WHERE": where, "EC_WHAT": what}
    proc = subprocess.run([*argv, "--out", str(out), "-q"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    _no_green(out, before)
    if code == EXIT_USAGE:  # one line naming the module and what it raised; the previous report untouched
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "bad_impl.py" in lines[0], proc.stderr
        raised = {"exit0": "SystemExit(0)", "exit3": "SystemExit(3)", "kbi": "KeyboardInterrupt"}[what]
        assert raised in lines[0]
        assert _files(out) == before
    else:
        doc = json.loads((out / "results.json").read_text())
        assert {c["verdict"] for c in doc["claims"]} == {"FAIL"} and doc["run"]["exit_code"] == 1
        assert doc["run"]["workers"] == workers


# ------------------------------------------------------------------ signals delivered to rnn-verify
def _wait_for(cond: Callable[[], bool], timeout: float = 60.0) -> None:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("sig", "code", "said"), [(signal.SIGTERM, 143, "terminated by SIGTERM"), (signal.SIGINT, 130, "interrupted")]
)
def test_a_signal_while_the_impl_hangs_at_import_is_a_stop(tmp_path: Path, sig: int, code: int, said: str) -> None:
    """The module catches BaseException around its hang: the stop is rnn-verify's all the same (128 + n)."""
    out, mark = tmp_path / "report", tmp_path / "hanging"
    before = _previous_report(out)
    env = {**ENV, "EC_WHERE": "import", "EC_WHAT": "hang", "EC_MARK": str(mark)}
    argv = [sys.executable, "-m", "verify", "run", *QUICK, "--impl", _impl(tmp_path), "--out", str(out), "-q"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(mark.exists)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    assert proc.returncode == code, stderr
    assert "Traceback" not in stdout + stderr and "raised" not in stderr
    assert [ln for ln in stderr.splitlines() if ln.strip()] == [f"rnn-verify: {said}"]
    assert _files(out) == before


@pytest.mark.parametrize("fork", ["1", "0"])
def test_ctrl_c_while_workers_start_is_one_line_without_a_worker_traceback(tmp_path: Path, fork: str) -> None:
    """Ctrl-C at a terminal signals the whole process group, workers still starting included (forked, the default,
    or started afresh: ``RNN_VERIFY_FORK_WORKERS=0``)."""
    out = tmp_path / "report"
    before = _previous_report(out)
    argv = [sys.executable, "-m", "verify", "run", *QUICK, "--workers", "2", "--out", str(out), "-q"]
    env = {**ENV, "RNN_VERIFY_FORK_WORKERS": fork}
    proc = subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _wait_for(lambda: len(_children(proc.pid)) >= 2)  # the workers exist and are starting up
        # a Ctrl-C cannot reach them: each is a session of its own (verify.run.pool), or holds SIGINT
        assert all(_other_group(pid, proc.pid) or _sigint_held(pid) for pid in _children(proc.pid))
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stdout + stderr and "KeyboardInterrupt" not in stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("rnn-verify: interrupted"), stderr
    assert _files(out) == before


def _children(pid: int) -> list[int]:
    """The worker processes of ``pid`` (:mod:`verify.run.worker`)."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                stat = (p / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) != pid:
                continue
            # started afresh: the worker program; forked (verify.run.spawn): the supervisor's command line, in a
            # session of its own (the reaper keeps the supervisor's session)
            if "verify.run.worker" in _cmdline(p) or int(fields[3]) == int(p.name):
                out.append(int(p.name))
    return out


def _other_group(pid: int, supervisor: int) -> bool:
    """``pid`` is in a process group other than the supervisor's (a terminal's Ctrl-C does not reach it)."""
    try:
        return os.getpgid(pid) != os.getpgid(supervisor)
    except OSError:
        return True  # gone: it cannot print anything


def _sigint_held(pid: int) -> bool:
    """SIGINT blocked or ignored in process ``pid`` (``/proc/PID/status``: SigBlk, SigIgn)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # gone: it cannot print anything
    masks = {
        ln.split(":")[0]: int(ln.split()[1], 16) for ln in status.splitlines() if ln.startswith(("SigBlk", "SigIgn"))
    }
    bit = 1 << (signal.SIGINT - 1)
    return bool((masks.get("SigBlk", 0) | masks.get("SigIgn", 0)) & bit)


def _cmdline(p: Path) -> str:
    try:
        return (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# ------------------------------------------------------------------ report on a FAIL
def _saved_run(folder: Path, *verdicts: Verdict) -> Path:
    recs = [claim_record(CheckResult(f"rtrl.{i}", v, "saved", reason="saved")) for i, v in enumerate(verdicts)]
    write_report(folder, run_document(recs, {"profile": "ci", "fail_on": "fail"}))
    return folder / "results.json"


def test_report_of_a_failed_run_exits_1_like_run(tmp_path: Path) -> None:
    failed = _saved_run(tmp_path / "failed", Verdict.PASS, Verdict.FAIL)
    assert main(["report", str(failed)]) == EXIT_FAIL
    assert main(["report", str(failed), "--out", str(tmp_path / "again")]) == EXIT_FAIL
    assert "FAIL" in (tmp_path / "again" / "report.md").read_text()  # it was re-rendered all the same
    inconclusive = _saved_run(tmp_path / "inc", Verdict.PASS, Verdict.INCONCLUSIVE)
    assert main(["report", str(inconclusive)]) == EXIT_OK
    assert main(["report", str(inconclusive), "--fail-on", "inconclusive"]) == EXIT_FAIL


# ------------------------------------------------------------------ the --help table is what the commands do
def _signal_in(monkeypatch: pytest.MonkeyPatch, obj: object, name: str, sig: int) -> None:
    """``obj.name`` replaced by a function during which ``sig`` is delivered to this process."""

    def delivered(*a: object, **k: object) -> object:
        os.kill(os.getpid(), sig)
        time.sleep(5)
        raise AssertionError(f"signal {sig} not delivered")

    monkeypatch.setattr(obj, name, delivered)


def _result(cid: str, verdict: Verdict) -> Callable[[RunConfig], CheckResult]:
    return lambda config: CheckResult(cid, verdict, "fake", seed=config.seed)


_SIGNALLED = {130: signal.SIGINT, 143: signal.SIGTERM, 129: signal.SIGHUP}
#: per command: where a signal is delivered in-process (an early step of the command)
_SIGNAL_AT: dict[str, tuple[object, str]] = {
    "list": (front, "select_claims"),
    "explain": (front, "explain_text"),
    "run": (cli_mod, "_check_run_args"),
    "sweep": (cli_mod, "_check_sweep_args"),
    "report": (cli_mod, "read_document"),
    "golden": (golden, "check_golden"),
    "gallery": (gallery_run, "_checkouts"),
}
_SIGNAL_ARGV = {
    "list": ["list"],
    "explain": ["explain", "rtrl.exact"],
    "run": ["run", "--no-report"],
    "sweep": ["sweep", "selftest", "--no-report"],
    "report": ["report", "x.json"],
    "golden": ["golden", "--check", "g.npz"],
    "gallery": ["gallery", "--checkout", "x=y"],
}


def _golden(tmp_path: Path, tamper: bool) -> int:
    path = tmp_path / "g.npz"
    if not path.exists():
        assert main(["golden", "--out", str(path), "--k", "1"]) == EXIT_OK
    if not tamper:
        return main(["golden", "--check", str(path)])
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    key = next(k for k in arrays if k.endswith("__gradient"))
    arrays[key] = arrays[key] * (1 + 1e-6)
    bad = tmp_path / "bad.npz"
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    bad.write_bytes(buf.getvalue())
    bad.with_suffix(".json").write_bytes(path.with_suffix(".json").read_bytes())
    return main(["golden", "--check", str(bad)])


def _drivers(tmp_path: Path, fake_checks: Callable[..., None]) -> dict[tuple[str, int], Callable[[], int]]:
    def run(verdict: Verdict) -> int:
        fake_checks({"rtrl.exact": _result("rtrl.exact", verdict)})
        return main(["run", "--claims", "rtrl.exact", "--no-report", "-q"])

    def sweep(verdict: Verdict) -> int:
        fake_checks({"rtrl.exact": _result("rtrl.exact", verdict)})
        argv = ["sweep", "claims", "--claims", "rtrl.exact", "--executor", "serial", "--no-cache", "--no-report"]
        return main([*argv, "-q"])

    return {
        ("list", 0): lambda: main(["list", "--claims", "rtrl.*"]),
        ("list", 2): lambda: main(["list", "--claims", "no.such-claim"]),
        ("explain", 0): lambda: main(["explain", "rtrl.exact"]),
        ("explain", 2): lambda: main(["explain", "rtrl.exactt"]),
        ("run", 0): lambda: run(Verdict.PASS),
        ("run", 1): lambda: run(Verdict.FAIL),
        ("run", 2): lambda: main(["run", "--seed", "-1", "--no-report"]),
        ("sweep", 0): lambda: sweep(Verdict.PASS),
        ("sweep", 1): lambda: sweep(Verdict.FAIL),
        ("sweep", 2): lambda: main(["sweep", "no-such-sweep", "--no-report"]),
        ("report", 0): lambda: main(["report", str(_saved_run(tmp_path / "ok", Verdict.PASS))]),
        ("report", 1): lambda: main(["report", str(_saved_run(tmp_path / "bad", Verdict.FAIL))]),
        ("report", 2): lambda: main(["report", str(tmp_path / "absent.json")]),
        ("golden", 0): lambda: _golden(tmp_path, tamper=False),
        ("golden", 1): lambda: _golden(tmp_path, tamper=True),
        ("golden", 2): lambda: main(["golden", "--check", str(tmp_path / "absent.npz")]),
        ("gallery", 0): lambda: _gallery(tmp_path),
        ("gallery", 2): lambda: main(["gallery", "--checkout", f"vanilla-rtrl={tmp_path / 'absent'}"]),
    }


def _gallery(tmp_path: Path) -> int:
    """A gallery of one stand-in repository whose only entry is declared SKIPPED (nothing is imported or run)."""
    from verify.gallery import Entry, Repository

    stand_in = Repository(
        "stand-in", "example/stand-in", "0" * 40, "none", "numpy", (), (Entry("A", "uoro", "a", skip="a stand-in"),),
        module="vanilla_rtrl",
    )  # fmt: skip
    mp = pytest.MonkeyPatch()
    mp.setattr(gallery_run, "repositories", lambda names=(): [stand_in])
    try:
        return main(["gallery", "--checkout", f"stand-in={tmp_path}", "--out", str(tmp_path / "gal"), "-q"])
    finally:
        mp.undo()


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_documented_code_is_what_the_command_does(
    command: str,
    tmp_path: Path,
    fake_checks: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    drivers = _drivers(tmp_path, fake_checks)
    documented = [code for code, _ in COMMANDS[command]]
    driven = sorted({c for cmd, c in drivers if cmd == command} | set(_SIGNALLED))
    assert sorted(documented) == driven, f"{command}: the table and the tested codes differ"
    for code in documented:
        if code in _SIGNALLED:
            with monkeypatch.context() as m:
                _signal_in(m, *_SIGNAL_AT[command], _SIGNALLED[code])
                got = main(_SIGNAL_ARGV[command])
        else:
            got = drivers[(command, code)]()
        cap = capsys.readouterr()
        assert got == code, f"rnn-verify {command}: documented {code}, got {got}\n{cap.err}"
        assert "Traceback" not in cap.out + cap.err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_prints_the_table(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each command's --help, and the top-level --help, show its codes with their meanings (one source)."""
    with pytest.raises(SystemExit):
        _parser().parse_args([command, "--help"])
    sub = capsys.readouterr().out
    with pytest.raises(SystemExit):
        _parser().parse_args(["--help"])
    top = capsys.readouterr().out
    assert f"exit codes of rnn-verify {command}:" in sub and f"rnn-verify {command}:" in top
    for code, meaning in COMMANDS[command]:
        first = meaning.split()[:3]
        for text in (sub, top):
            assert any(ln.strip().startswith(f"{code} ") and " ".join(first) in ln for ln in text.splitlines())
