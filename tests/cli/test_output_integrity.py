"""What rnn-verify writes, and what ``rnn-verify report`` reads back (issue 36, items 5, 7 and 8), as an enumerated
corpus in the style of :mod:`tests.cli.test_fuzz_corpus`: every case named, its exit code fixed in advance.

* ``report`` of an edited ``results.json``: verdicts recomputed from the stored statistic, threshold, comparison
  and controls; counts and ``run.exit_code`` checked against the claims (exit 2 naming the field);
* the digest of ``results.json`` in the report folder's marker: a changed byte is exit 2 saying plainly that the
  digest is no signature; ``--no-digest-check`` for an edit on purpose; no digest recorded is a note;
* a full disk (``ENOSPC``) -- or Ctrl-C -- at the k-th file written, for every k: exit 2 (130) with one line naming
  the path that failed, no staging folder or temporary file left, every earlier output byte for byte as it was;
* the output lock: a second process holding the report folder's lock makes ``report`` into it exit 2 naming the
  holder's pid; a lock left by a process killed with SIGKILL is taken over with a note; whatever else sits at the
  lock's path is refused and left alone.

Each case asserts its exit code, no ``Traceback``, the fragments its message must (and must not) hold, and a
sentinel tree outside every output location unchanged (bytes and mtimes).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import verify.cli as cli
import verify.files as files_mod
import verify.run.catalog as runner
import verify.run.check as check_mod
from tests.cli.conftest import run_cli_in, run_serial
from tests.cli.test_fuzz import _snapshot
from theory.catalog import all_claims
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.files import MARKER, lock_path
from verify.verdict import CheckResult, Control, Verdict

REPO = Path(__file__).resolve().parents[2]
# the claims of the fake runs and what each stores: one per comparison the reading side recomputes
PASS_ID, Z_ID, CI_ID, NONE_ID = (
    "reference.adjoint",
    "uoro.variance-matches-algorithm-1",
    "uoro.rank-variance",
    ("fpp.cycleworld-reproduction"),
)
INC_ID, FAIL_ID, SKIP_ID = "reference.influence", "rtrl.exact", "device.cuda-parity"
GOOD = [PASS_ID, Z_ID, CI_ID, NONE_ID, INC_ID, SKIP_ID]  # exit 0
BAD = [*GOOD, FAIL_ID]  # exit 1
OUTCOMES: Counter[str] = Counter()


def _fake(cid: str) -> Callable[[RunConfig], CheckResult]:
    caught = (Control("mutant", "FAIL", "FAIL"),)
    results: dict[str, dict[str, Any]] = {
        PASS_ID: dict(verdict=Verdict.PASS, statistic=1e-16, threshold=1e-14, comparison="<=", controls=caught),
        Z_ID: dict(verdict=Verdict.PASS, statistic=-1.25, threshold=4.37, comparison="|z| <=", controls=caught),
        CI_ID: dict(verdict=Verdict.PASS, statistic=-0.98, threshold=-1.0, comparison="CI contains",
                    data={"ci": [-1.1, -0.9]}, controls=caught),
        NONE_ID: dict(verdict=Verdict.PASS, statistic=None, threshold=None, comparison="<="),
        INC_ID: dict(verdict=Verdict.INCONCLUSIVE, statistic=0.93, threshold=0.05, reason="premise not met"),
        FAIL_ID: dict(verdict=Verdict.FAIL, statistic=0.5, threshold=0.1, comparison="<", reason="too large",
                      controls=caught),
        SKIP_ID: dict(verdict=Verdict.SKIPPED, reason="no CUDA"),
    }  # fmt: skip

    def fn(config: RunConfig) -> CheckResult:
        kw: dict[str, Any] = dict(results[cid])
        return CheckResult(cid, kw.pop("verdict"), f"fake {cid}", seed=config.seed, **kw)

    return fn


class Box:
    """cwd of every case: ``good/`` and ``bad/`` (report folders of the runs GOOD and BAD), ``inputs/`` (the case's
    own files), ``link`` -> the sentinel ``../outside``; outputs anywhere else."""

    def __init__(self, root: Path) -> None:
        self.root, self.cwd, self.outside = root, root / "sandbox", root / "outside"
        self.reports: dict[str, dict[str, bytes]] = {}
        self.sentinel: dict[str, tuple[bytes | str, int]] = {}

    def reset(self) -> None:
        for p in self.cwd.iterdir():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.name != "link":
                p.unlink()
        (self.cwd / "inputs").mkdir()
        for name, content in self.reports.items():
            for rel, blob in content.items():
                (self.cwd / name / rel).parent.mkdir(parents=True, exist_ok=True)
                (self.cwd / name / rel).write_bytes(blob)

    def results(self, name: str) -> dict[str, Any]:
        return dict(json.loads(self.reports[name]["results.json"]))

    def run(self, argv: list[str]) -> tuple[int, str]:
        return run_cli_in(self.cwd, argv)


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Box]:
    root = tmp_path_factory.mktemp("integrity")
    b = Box(root)
    with pytest.MonkeyPatch.context() as mp:
        fakes = {cid: _fake(cid) for cid in BAD}
        mp.setattr(check_mod, "registry", lambda: dict(fakes))
        mp.setattr(runner, "_run_parallel", run_serial)
        mp.setattr(cli, "_BACKGROUND_PNG_MIN_CLAIMS", 10**9)
        mp.setattr(cli, "available_cpus", lambda: 1)
        b.outside.mkdir()
        (b.outside / "notes.txt").write_text("the user's notes")
        b.cwd.mkdir()
        (b.cwd / "link").symlink_to(b.outside, target_is_directory=True)
        for name, ids, want in (("good", GOOD, 0), ("bad", BAD, 1)):
            code, text = b.run(["run", "--claims", *ids, "--out", name, "-q", "--device", "cpu"])
            assert code == want, text
            rep = b.cwd / name
            b.reports[name] = {p.relative_to(rep).as_posix(): p.read_bytes() for p in rep.rglob("*") if p.is_file()}
        b.sentinel = _snapshot(b.outside)
        yield b


# ------------------------------------------------------------------ the cases
@dataclass(frozen=True)
class Case:
    name: str
    code: int
    argv: tuple[str, ...]
    setup: Callable[[Box], None] | None = None
    says: tuple[str, ...] = ()
    never: tuple[str, ...] = ()
    after: Callable[[Box, str], None] | None = None
    tags: tuple[str, ...] = field(default=())


CASES: list[Case] = []


def case(name: str, code: int, argv: list[str], **kw: Any) -> None:
    CASES.append(Case(name, code, tuple(argv), **kw))


def _index(doc: dict[str, Any], cid: str) -> int:
    return next(i for i, r in enumerate(doc["claims"]) if r["id"] == cid)


def _edited(base: str, edit: Callable[[dict[str, Any]], object], where: str = "inputs/r.json") -> Callable[[Box], None]:
    """A setup writing ``base``'s results.json, edited, to ``where`` (in place: into the report folder)."""

    def setup(b: Box) -> None:
        doc = b.results(base)
        edit(doc)
        (b.cwd / where).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")

    return setup


def _set_claim(cid: str, **fields: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        doc["claims"][_index(doc, cid)].update(fields)

    return edit


def _flip_fail_to_pass(counts: bool, exit_code: bool) -> Callable[[dict[str, Any]], None]:
    """The issue's edit: FAIL -> PASS, with the counts and run.exit_code flipped along (or not)."""

    def edit(doc: dict[str, Any]) -> None:
        doc["claims"][_index(doc, FAIL_ID)]["verdict"] = "PASS"
        if counts:
            doc["summary"]["FAIL"] -= 1
            doc["summary"]["PASS"] += 1
        if exit_code:
            doc["run"]["exit_code"] = 0

    return edit


def _unchanged(name: str) -> Callable[[Box, str], None]:
    def check(b: Box, text: str) -> None:
        _assert_folder(b, name, b.reports[name])

    return check


def _assert_folder(b: Box, name: str, expected: dict[str, bytes]) -> None:
    rep = b.cwd / name
    now = {p.relative_to(rep).as_posix(): p.read_bytes() for p in rep.rglob("*") if p.is_file()}
    assert now == expected, f"{name}/ changed: {sorted(set(now) ^ set(expected)) or 'bytes'}"


def _no_leftovers(b: Box, text: str = "") -> None:
    """No staging folder, temporary file or lock file anywhere in the sandbox."""
    left = [p.name for p in b.cwd.rglob("*") if ".tmp-" in p.name or p.name.endswith(files_mod.LOCK_SUFFIX)]
    assert not left, f"left behind: {left}"


def _report_cases() -> None:
    r = ["report", "inputs/r.json", "--out", "o"]
    fid = [cid for cid in all_claims() if cid in BAD].index(FAIL_ID)  # a run lists its claims in catalog order
    case("report the good run unchanged", 0, ["report", "good"], says=("re-rendered 6 claims",), never=("note",))
    case("report the bad run unchanged: exit 1 as run gave", 1, ["report", "bad"], says=("1 FAIL",))
    case("report a copy outside its folder: no digest, a note", 0, r, setup=_edited("good", lambda d: None),
         says=("no recorded digest", "consistency only"))  # fmt: skip
    case("FAIL -> PASS alone", 2, r, setup=_edited("bad", _flip_fail_to_pass(False, False)), says=("summary.PASS",),
         after=lambda b, t: _absent(b, "o"))  # fmt: skip
    case("FAIL -> PASS with counts", 2, r, setup=_edited("bad", _flip_fail_to_pass(True, False)),
         says=("claims[", "].verdict", "does not hold"))  # fmt: skip
    case("FAIL -> PASS with counts and run.exit_code (the issue's exit-0 edit)", 2, r,
         setup=_edited("bad", _flip_fail_to_pass(True, True)), says=(f"claims[{fid}].verdict", "'0.5 < 0.1'"),
         after=lambda b, t: _absent(b, "o"))  # fmt: skip
    case("FAIL -> PASS in place, with counts and exit code", 2, ["report", "bad"],
         setup=_edited("bad", _flip_fail_to_pass(True, True), "bad/results.json"), says=(f"claims[{fid}].verdict",),
         after=lambda b, t: _report_unchanged_but_results(b, "bad"))  # fmt: skip
    for value in ("nan", "inf", "-inf"):
        case(f"PASS with statistic {value}", 2, r, setup=_edited("good", _set_claim(PASS_ID, statistic=value)),
             says=("claims[0].verdict", f"statistic is {value}", "finite"))  # fmt: skip
    case("PASS with threshold nan", 2, r, setup=_edited("good", _set_claim(PASS_ID, threshold="nan")),
         says=("claims[0].verdict", "threshold is nan"))  # fmt: skip
    case("PASS with threshold inf (<= inf holds)", 0, r, setup=_edited("good", _set_claim(PASS_ID, threshold="inf")))
    case(
        "PASS whose statistic exceeds its threshold",
        2,
        r,
        setup=_edited("good", _set_claim(PASS_ID, statistic=2e-14)),
        says=("claims[0].verdict", "2e-14 <= 1e-14"),
    )
    case(
        "PASS with statistic = threshold under '<'",
        2,
        r,
        setup=_edited("good", _set_claim(PASS_ID, statistic=1e-14, comparison="<")),
        says=("claims[0].verdict",),
    )
    case(
        "PASS with statistic = threshold under '<='", 0, r, setup=_edited("good", _set_claim(PASS_ID, statistic=1e-14))
    )
    case(
        "PASS whose comparison was turned around",
        2,
        r,
        setup=_edited("good", _set_claim(PASS_ID, comparison=">=")),
        says=("claims[0].verdict", ">="),
    )
    case("PASS |z| <= with |z| above", 2, r, setup=_edited("good", _set_claim(Z_ID, statistic=-5.0)),
         says=("].verdict", "|z| <="))  # fmt: skip
    case(
        "PASS CI contains with the threshold outside data.ci",
        2,
        r,
        setup=_edited("good", _set_claim(CI_ID, data={"ci": [-0.95, -0.9]})),
        says=("].verdict", "data.ci"),
    )
    case("PASS CI contains without data.ci (not recomputable)", 0, r,
         setup=_edited("good", _set_claim(CI_ID, data={})))  # fmt: skip
    case("PASS without a statistic (not recomputable)", 0, r,
         setup=_edited("good", _set_claim(PASS_ID, statistic=None)))  # fmt: skip
    case("PASS whose control was not caught", 2, r,
         setup=_edited("good", _set_claim(PASS_ID, controls=[{"name": "mutant", "expected": "FAIL",
                                                              "observed": "PASS", "detail": ""}])),
         says=("claims[0].verdict", "controls[0]", "'mutant'"))  # fmt: skip
    case("PASS with an unknown comparison (not recomputable)", 0, r,
         setup=_edited("good", _set_claim(PASS_ID, comparison="≈")))  # fmt: skip
    case("INCONCLUSIVE without its reason", 2, r, setup=_edited("good", _set_claim(INC_ID, reason=None)),
         says=("].reason", "INCONCLUSIVE"))  # fmt: skip
    case("SKIPPED with an empty reason", 2, r, setup=_edited("good", _set_claim(SKIP_ID, reason="")),
         says=("].reason", "SKIPPED"))  # fmt: skip
    case("FAIL -> INCONCLUSIVE with counts (not recomputed; exit code catches it)", 2, r,
         setup=_edited("bad", lambda d: (_set_claim(FAIL_ID, verdict="INCONCLUSIVE")(d),
                                         d["summary"].update(FAIL=0, INCONCLUSIVE=2))),
         says=("run.exit_code", "0 FAIL"))  # fmt: skip
    case("run.exit_code 1 -> 0 alone", 2, r, setup=_edited("bad", lambda d: d["run"].update(exit_code=0)),
         says=("run.exit_code", "1, the exit code its claims give"))  # fmt: skip
    case("run.exit_code 0 -> 1 alone", 2, r, setup=_edited("good", lambda d: d["run"].update(exit_code=1)),
         says=("run.exit_code",))  # fmt: skip
    case(
        "fail_on inconclusive with the INCONCLUSIVE run's exit 0",
        2,
        r,
        setup=_edited("good", lambda d: d["run"].update(fail_on="inconclusive")),
        says=("run.exit_code",),
    )
    case(
        "fail_on inconclusive with exit 1: consistent",
        1,
        r,
        setup=_edited("good", lambda d: d["run"].update(fail_on="inconclusive", exit_code=1)),
    )
    case(
        "--impl run that checked nothing of the user's code: exit 1 kept",
        1,
        r,
        setup=_edited("good", lambda d: d["run"].update(exit_code=1, implementations=[_SOURCE])),
    )
    case("--impl run that checked the user's code cannot exit 1 without a FAIL", 2, r,
         setup=_edited("good", lambda d: (d["run"].update(exit_code=1, implementations=[_SOURCE]),
                                          _set_claim(PASS_ID, implementation={"reference.adjoint": "--impl x"})(d))),
         says=("run.exit_code",))  # fmt: skip
    case("no run.exit_code (a pytest plugin's file): counts only", 0, r,
         setup=_edited("good", lambda d: d["run"].pop("exit_code")))  # fmt: skip
    case("summary.total edited", 2, r, setup=_edited("good", lambda d: d["summary"].update(total=99)),
         says=("summary.total",))  # fmt: skip
    tests_ = {"tests": [{"nodeid": "t.py::a", "outcome": "failed", "message": "boom", "duration": 0.1}]}
    case("pytest claim PASS whose test failed", 2, r,
         setup=_edited("good", _set_claim(PASS_ID, source="pytest", data=tests_)), says=("claims[0].verdict",
                                                                                        "data.tests"))  # fmt: skip
    case(
        "pytest claim FAIL whose test failed: consistent, exit 1",
        1,
        r,
        setup=_edited(
            "good",
            lambda d: (
                _set_claim(PASS_ID, source="pytest", data=tests_, verdict="FAIL")(d),
                d["summary"].update(PASS=3, FAIL=1),
                d["run"].update(exit_code=1),
            ),
        ),
    )


_SOURCE = {"name": "reference", "spec": "reference=x.py:X", "module": "x", "file": "/x.py", "sha256": "0" * 64}


def _absent(b: Box, rel: str) -> None:
    assert not (b.cwd / rel).exists(), f"{rel} was written although the command was refused"


def _report_unchanged_but_results(b: Box, name: str) -> None:
    expected = dict(b.reports[name])
    expected["results.json"] = (b.cwd / name / "results.json").read_bytes()  # (the case edited it)
    _assert_folder(b, name, expected)


def _digest_cases() -> None:
    def touch_summary(d: dict[str, Any]) -> None:
        d["claims"][0]["summary"] += " (reworded)"

    case("a consistent edit in place: the digest catches it", 2, ["report", "good"],
         setup=_edited("good", touch_summary, "good/results.json"),
         says=("good/results.json", "SHA-256", "not a signature", "--no-digest-check"),
         after=lambda b, t: _report_unchanged_but_results(b, "good"))  # fmt: skip
    case("the same edit, re-rendered elsewhere: still caught", 2, ["report", "good", "--out", "o"],
         setup=_edited("good", touch_summary, "good/results.json"), says=("not a signature",),
         after=lambda b, t: _absent(b, "o"))  # fmt: skip
    case("the same edit with --no-digest-check: accepted", 0, ["report", "good", "--no-digest-check"],
         setup=_edited("good", touch_summary, "good/results.json"), never=("digest",))  # fmt: skip
    case(
        "an inconsistent edit with --no-digest-check: still refused",
        2,
        ["report", "bad", "--no-digest-check"],
        setup=_edited("bad", _flip_fail_to_pass(True, True), "bad/results.json"),
        says=("].verdict",),
    )

    def reformat(b: Box) -> None:  # whitespace only: the same JSON, other bytes
        (b.cwd / "good" / "results.json").write_text(json.dumps(b.results("good")))

    case("results.json reformatted in place: caught", 2, ["report", "good"], setup=reformat, says=("SHA-256",))

    def marker(edit: Callable[[dict[str, Any]], None]) -> Callable[[Box], None]:
        def setup(b: Box) -> None:
            m = json.loads(b.reports["good"][MARKER])
            edit(m)
            (b.cwd / "good" / MARKER).write_text(json.dumps(m))

        return setup

    case(
        "a marker of an earlier version (no sha256): a note",
        0,
        ["report", "good"],
        setup=marker(lambda m: m.pop("sha256")),
        says=("no recorded digest", "earlier rnn-verify"),
    )
    case(
        "a marker whose digest is not hex: damaged",
        2,
        ["report", "good"],
        setup=marker(lambda m: m["sha256"].update({"results.json": "x" * 64})),
        says=("damaged", "sha256"),
    )
    case(
        "a marker with a digest of a file it does not list: damaged",
        2,
        ["report", "good"],
        setup=marker(lambda m: m["sha256"].update({"other.txt": "0" * 64})),
        says=("damaged", "other.txt"),
    )
    case(
        "a marker recording another digest: caught",
        2,
        ["report", "good"],
        setup=marker(lambda m: m["sha256"].update({"results.json": "0" * 64})),
        says=("0000000000000000...",),
    )
    case("re-rendering records the new digest: a second report passes", 0, ["report", "good"],
         setup=lambda b: _run_ok(b, ["report", "good", "--no-digest-check"],
                                 _edited("good", touch_summary, "good/results.json")))  # fmt: skip


def _run_ok(b: Box, argv: list[str], setup: Callable[[Box], None]) -> None:
    setup(b)
    code, text = b.run(argv)
    assert code == 0, text


def _lock_in_the_way_cases() -> None:
    lock = ".good" + files_mod.LOCK_SUFFIX

    def link(b: Box) -> None:
        (b.cwd / lock).symlink_to(b.outside / "notes.txt")

    case("a link where the lock goes: refused, not followed", 2, ["report", "good"], setup=link,
         says=("--out", lock, "not a lock rnn-verify wrote"), after=lambda b, t: _kept(b, lock))  # fmt: skip
    case("a folder where the lock goes: refused", 2, ["report", "good"],
         setup=lambda b: (b.cwd / lock).mkdir(), says=(lock,), after=lambda b, t: _kept(b, lock))  # fmt: skip
    case("a user's file where the lock goes: refused, kept", 2, ["report", "good"],
         setup=lambda b: (b.cwd / lock).write_text("my notes"), says=(lock, "does not hold an rnn-verify lock"),
         after=lambda b, t: _kept(b, lock, b"my notes"))  # fmt: skip

    def stale(host: str, pid: int) -> Callable[[Box], None]:
        def setup(b: Box) -> None:
            info = {"format": files_mod.LOCK_FORMAT, "pid": pid, "host": host, "started": "2026-01-01T00:00:00",
                    "command": "rnn-verify run \x1b[31m--out good"}  # fmt: skip
            (b.cwd / lock).write_text(json.dumps(info))

        return setup

    case("a stale lock of a dead pid on this host: taken over, with a note", 0, ["report", "good"],
         setup=stale(socket.gethostname(), 2**22 + 7), says=("took over the stale lock", f"pid {2**22 + 7}",
                                                             "\\x1b[31m"), never=("\x1b",),
         after=_no_leftovers)  # fmt: skip
    case("a lock of another host without flock: refused, the file named", 2, ["report", "good"],
         setup=stale("elsewhere.example", 12345), says=("pid 12345 on elsewhere.example", "delete that file"),
         after=lambda b, t: _kept(b, lock))  # fmt: skip


def _kept(b: Box, rel: str, content: bytes | None = None) -> None:
    p = b.cwd / rel
    assert os.path.lexists(p), f"{rel} was removed"
    if content is not None:
        assert p.read_bytes() == content


for _make in (_report_cases, _digest_cases, _lock_in_the_way_cases):
    _make()
assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"


# ------------------------------------------------------------------ the tests
def test_the_fake_runs(box: Box) -> None:
    """The base reports are what the cases assume: every comparison present, PASS_ID first, digests recorded."""
    doc = box.results("bad")
    assert [r["id"] for r in doc["claims"]] == [cid for cid in all_claims() if cid in BAD]
    assert doc["claims"][0]["id"] == PASS_ID
    assert {r["comparison"] for r in doc["claims"]} >= {"<=", "<", "|z| <=", "CI contains"}
    assert (doc["run"]["exit_code"], box.results("good")["run"]["exit_code"]) == (1, 0)
    marker = json.loads(box.reports["bad"][MARKER])
    assert set(marker["sha256"]) == set(marker["files"])


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_case(box: Box, c: Case) -> None:
    box.reset()
    if c.setup is not None:
        c.setup(box)
    code, text = box.run(list(c.argv))
    OUTCOMES["cases"] += 1
    OUTCOMES[f"exit {code}"] += 1
    touched = _snapshot(box.outside) != box.sentinel
    assert "Traceback" not in text, text
    assert code == c.code, f"{c.name}: exit {code}, expected {c.code}:\n{text[-3000:]}"
    assert not touched, f"{c.name} changed files outside the output"
    for frag in c.says:
        assert frag in text, f"{c.name}: {frag!r} not in:\n{text[-3000:]}"
    for frag in c.never:
        assert frag not in text, f"{c.name}: {frag!r} in:\n{text[-3000:]}"
    if code == 2:
        errors = [line for line in text.splitlines() if line.startswith("rnn-verify: error:")]
        assert len(errors) == 1 and len(text.strip().splitlines()) <= 3, f"{c.name}: one line:\n{text}"
    if c.after is not None:
        c.after(box, text)
    if not any(s in c.name for s in ("where the lock goes", "another host")):
        _no_leftovers(box)


# ------------------------------------------------------------- a full disk
def _destination(fd: int) -> str:
    """The output path the file open as ``fd`` stands for: a staged file ``.o.tmp-X/rel`` is ``o/rel``, a temporary
    sibling ``.name.tmp-X`` is ``name``, the lock file is itself."""
    real = os.readlink(f"/proc/self/fd/{fd}")
    parts = Path(real).parts
    for i, part in enumerate(parts):
        m = re.fullmatch(r"\.(.+)\.tmp-\w+", part)
        if m:
            return str(Path(*parts[:i], m.group(1), *parts[i + 1 :]))
    return real


class DiskFull:
    """Stands in for ``verify.files._write_fd``: the k-th write (1-based) fails halfway with ``exc``."""

    def __init__(self, k: int, exc: BaseException) -> None:
        self.k, self.exc, self.n = k, exc, 0
        self.failed: str | None = None
        self.real = files_mod._write_fd

    def __call__(self, fd: int, data: bytes) -> None:
        self.n += 1
        if self.n == self.k:
            self.failed = _destination(fd)
            self.real(fd, data[: len(data) // 2])
            raise self.exc
        self.real(fd, data)


def _tree(root: Path) -> dict[str, tuple[bytes | str, int]]:
    """Every file under ``root`` with its bytes and mtime, every folder and link (a folder's own mtime is left out:
    the preflight's probe folder, made and removed before any compute, changes it)."""
    snap = _snapshot(root)
    return {k: ("dir", 0) if v[0] == "dir" else v for k, v in snap.items() if k != "link"}


WRITERS = {
    "run --out --json --junit": ["run", "--claims", *GOOD, "--out", "good", "--json", "r.json", "--junit", "j.xml",
                                 "-q", "--device", "cpu"],
    "run --no-report --json --junit": ["run", "--claims", *GOOD, "--no-report", "--json", "r.json", "--junit",
                                       "j.xml", "-q", "--device", "cpu"],
    "report --junit (in place)": ["report", "good", "--junit", "j.xml"],
    "report --out a new folder": ["report", "good", "--out", "fresh"],
}  # fmt: skip


@pytest.mark.parametrize("interrupt", [False, True], ids=["ENOSPC", "Ctrl-C"])
@pytest.mark.parametrize("writer", list(WRITERS))
def test_full_disk_at_every_write(box: Box, monkeypatch: pytest.MonkeyPatch, writer: str, interrupt: bool) -> None:
    """ENOSPC (or KeyboardInterrupt) at the k-th file written, for every k until a run writes everything: exit 2
    (130) with one line naming the path that failed, no staging folder, temporary or lock file left, every output
    and the previous report byte for byte (and mtime) as they were."""
    argv = WRITERS[writer]
    k, seen = 0, []
    while True:
        k += 1
        assert k < 60, "more writes than a report has"
        box.reset()
        (box.cwd / "r.json").write_text("previous --json")
        (box.cwd / "j.xml").write_text("previous --junit")
        before = _tree(box.cwd)
        exc: BaseException = KeyboardInterrupt() if interrupt else OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        fake = DiskFull(k, exc)
        monkeypatch.setattr(files_mod, "_write_fd", fake)
        # --lf's record in the user's cache is not an output of the run (best effort, written after them:
        # test_lf_record_on_a_full_disk_is_a_note); here every write counted is an output's
        monkeypatch.setattr(cli, "update_last_failed", lambda *a, **k: None)
        code, text = box.run(argv)
        monkeypatch.undo()
        assert "Traceback" not in text, text
        if fake.failed is None:  # k is past the last write: the run wrote everything
            assert code == 0, text
            break
        seen.append(fake.failed)
        _no_leftovers(box)
        assert _tree(box.cwd) == before, f"k={k} ({fake.failed}): outputs changed"
        assert _snapshot(box.outside) == box.sentinel
        if interrupt:
            assert code == 130 and sum("interrupted" in line for line in text.splitlines()) == 1, text
            continue
        errors = [line for line in text.splitlines() if "rnn-verify: error:" in line]
        assert code == 2 and len(errors) == 1, f"k={k}: exit {code}:\n{text}"
        assert fake.failed in errors[0], f"k={k}: the line does not name {fake.failed}:\n{text}"
        assert "No space left on device" in errors[0] and ".tmp-" not in errors[0], errors[0]
    names = {Path(s).name for s in seen}
    if "--no-report" in argv:
        assert names == {"r.json", "j.xml"}, names
    else:  # every file of the folder, the marker (and the lock, the extra copies)
        assert {"results.json", "report.md", "report.html", "junit.xml", MARKER} <= names, names


def test_full_disk_at_the_last_marker_rewrite(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one write after the renames -- the marker's rewrite when the previous report had a file the new one has
    not -- fails: exit 2 naming the marker, which says the new report is complete; nothing else is left."""
    box.reset()
    m = json.loads(box.reports["good"][MARKER])
    m["files"].append("old.txt")
    (box.cwd / "good" / MARKER).write_text(json.dumps(m))
    (box.cwd / "good" / "old.txt").write_text("written by an earlier report")
    counter = DiskFull(10**9, OSError())
    monkeypatch.setattr(files_mod, "_write_fd", counter)
    code, text = box.run(["report", "good", "--no-digest-check"])
    monkeypatch.undo()
    assert code == 0, text
    last = counter.n  # the marker's rewrite is the last write
    box.reset()
    (box.cwd / "good" / MARKER).write_text(json.dumps(m))
    (box.cwd / "good" / "old.txt").write_text("written by an earlier report")
    fake = DiskFull(last, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    monkeypatch.setattr(files_mod, "_write_fd", fake)
    code, text = box.run(["report", "good", "--no-digest-check"])
    monkeypatch.undo()
    assert fake.failed == str(box.cwd / "good" / MARKER), fake.failed
    assert code == 2 and f"cannot write {fake.failed}" in text and "the new report is complete" in text, text
    assert not (box.cwd / "good" / "old.txt").exists()  # the new report is in place
    assert files_mod.read_marker(box.cwd / "good") is not None  # its marker (the union) is valid
    _no_leftovers(box)


@pytest.mark.parametrize("err", [errno.EIO, errno.EDQUOT, errno.EROFS, errno.EFBIG])
def test_any_os_error_names_the_path(box: Box, monkeypatch: pytest.MonkeyPatch, err: int) -> None:
    """Any OSError, not only ENOSPC: one line naming the path and the error by name; the outputs as they were."""
    box.reset()
    (box.cwd / "r.json").write_text("previous")
    before = _tree(box.cwd)
    fake = DiskFull(3, OSError(err, os.strerror(err)))  # 1, 2: the extra copies; 3: the folder's first file
    monkeypatch.setattr(files_mod, "_write_fd", fake)
    code, text = box.run(["run", "--claims", PASS_ID, "--out", "good", "--json", "r.json", "-q", "--device", "cpu"])
    monkeypatch.undo()
    assert code == 2 and fake.failed is not None and f"cannot write {fake.failed}: {os.strerror(err)}" in text, text
    assert errno.errorcode[err] in text and "the previous report in" in text and "is unchanged" in text, text
    assert ("free some space" in text) == (err == errno.EDQUOT), text
    assert _tree(box.cwd) == before
    _no_leftovers(box)


# ------------------------------------------------------------- the lock, across processes
HOLDER = """
import sys, time
from verify.files import output_lock
with output_lock(sys.argv[1], command="rnn-verify run --out " + sys.argv[1]):
    print("held", flush=True)
    if sys.argv[2] == "wait":
        sys.stdin.readline()
    else:
        time.sleep(120)
"""


def _holder(folder: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=folder.parent,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _end(proc: subprocess.Popen[str]) -> None:
    """Kill (if still running) and reap ``proc``, and close its pipes."""
    proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def test_second_run_into_a_locked_folder_exits_2_naming_the_holder(box: Box) -> None:
    box.reset()
    out = box.cwd / "good"
    before = _tree(box.cwd)
    proc = _holder(out, "wait")
    try:
        lock = lock_path(out)
        assert lock.is_file() and json.loads(lock.read_text())["pid"] == proc.pid
        for argv in (["report", "good"], ["report", "bad", "--out", "good"], ["report", "good", "--out", str(out)]):
            code, text = box.run(argv)
            assert code == 2, text
            assert f"pid {proc.pid} on {socket.gethostname()}" in text and "rnn-verify run --out" in text, text
            assert "is in use by another rnn-verify run" in text and "choose another --out" in text, text
            assert "Traceback" not in text
        assert _tree(box.cwd) == {**before, lock.name: _tree(box.cwd)[lock.name]}  # nothing else changed
        assert proc.stdin is not None
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0
    finally:
        _end(proc)
    assert not lock.exists(), "the holder's lock file was left behind"
    code, text = box.run(["report", "good"])  # released: the folder is free again
    assert code == 0, text
    _no_leftovers(box)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_lock_of_a_killed_holder_is_taken_over_with_a_note(box: Box, how: int) -> None:
    box.reset()
    out = box.cwd / "good"
    proc = _holder(out, "sleep")
    os.kill(proc.pid, how)
    proc.wait(timeout=30)
    _end(proc)
    assert lock_path(out).exists()  # a killed process cannot remove it ...
    code, text = box.run(["report", "good"])  # ... but its flock died with it
    assert code == 0, text
    assert "took over the stale lock" in text and f"pid {proc.pid}" in text, text
    _no_leftovers(box)


def test_lock_is_reentrant_and_unlocked_on_every_path_out(tmp_path: Path) -> None:
    out = tmp_path / "o"
    with files_mod.output_lock(out, command="a") as lock:
        with files_mod.output_lock(tmp_path / "o", command="b"):  # the same folder, in this process: re-entrant
            pass
        assert lock.exists()
    assert not lock.exists() and not out.exists()  # nothing left, and the folder was not created
    for exc in (KeyboardInterrupt(), ValueError("x"), SystemExit(3)):
        with pytest.raises(type(exc)), files_mod.output_lock(out):
            raise exc
        assert list(tmp_path.iterdir()) == []


def test_lock_holder_text_is_one_printable_line(tmp_path: Path) -> None:
    proc = None
    out = tmp_path / "o"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    script = (
        "import sys\nfrom verify.files import output_lock\n"
        "with output_lock(sys.argv[1], command='evil\\n\\x1b[2Jcmd\\udcff'):\n"
        "    print('held', flush=True); sys.stdin.readline()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        with pytest.raises(InvalidArgument) as err, files_mod.output_lock(out):
            pass
        text = str(err.value)
        assert "\n" not in text and "\x1b" not in text and "\\x1b[2Jcmd" in text, text
    finally:
        _end(proc)


def test_summary(capsys: pytest.CaptureFixture[str]) -> None:
    if not OUTCOMES:
        pytest.skip("run with the cases of this module")
    expected = Counter(f"exit {c.code}" for c in CASES)
    with capsys.disabled():
        print(
            f"\noutput-integrity corpus: {len(CASES)} named cases, {OUTCOMES['cases']} run; exits "
            + ", ".join(f"{k}: {v}" for k, v in sorted(OUTCOMES.items()) if k.startswith("exit "))
            + f" (expected {', '.join(f'{k}: {v}' for k, v in sorted(expected.items()))})"
        )


def test_published_reports_pass_the_reading_checks() -> None:
    """Every results.json committed under reports/ is consistent (written by rnn-verify, verdicts as stored)."""
    from verify.report.document import parse_document

    found = [p for p in (REPO / "reports").rglob("results.json")]
    assert found
    for p in found:
        parse_document(p)


def test_output_write_error_is_one_line_and_travels_between_processes() -> None:
    import pickle

    err = files_mod.OutputWriteError("/x/o/results.json", OSError(errno.ENOSPC, "No space left"), "nothing changed")
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back, OSError) and back.errno == errno.ENOSPC and back.filename == "/x/o/results.json"
    assert (
        str(back) == str(err) == "cannot write /x/o/results.json: No space left (ENOSPC); nothing changed; free "
        "some space and rerun"
    )


def test_lf_record_on_a_full_disk_is_a_note(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record ``--lf`` reads (the user's cache) cannot be written: a note, the run's outputs and exit code are
    what they would have been (the report is complete before the record is written)."""
    box.reset()

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/cache/rnn-verify/lastfailed.json")

    monkeypatch.setattr(cli, "update_last_failed", full)
    code, text = box.run(WRITERS["run --out --json --junit"])
    assert code == 0 and "could not record the failed claims for --lf" in text and "Traceback" not in text, text
    assert json.loads((box.cwd / "good" / "results.json").read_text())["run"]["exit_code"] == 0
