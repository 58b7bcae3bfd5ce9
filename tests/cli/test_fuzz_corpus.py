"""An explicit, enumerated fuzz corpus over the command line and the API (issue 23): every case named, its exit
code fixed in advance.

:mod:`tests.cli.test_fuzz` draws inputs at random; this module lists the cases a reviewer
named -- and their neighbours -- one by one, so that each keeps its own expected outcome:

* huge integers in every file rnn-verify reads (``results.json``, a golden pair, a report
  marker, a cell cache's marker), NaN/Infinity literals (no internal class name in the message);
* every count argument at, below and above its documented bound (``--seed``, ``--seeds``,
  ``--workers``, ``--threads``, ``--k``), with 5 000-digit values;
* one path given for two outputs, or an output file inside the report folder;
* names longer than ``NAME_MAX``, paths longer than ``PATH_MAX``, a NUL byte, on every path argument;
* a folder where a file is expected; ``--device`` values torch does not run on; ``--impl`` echoed as typed;
* a report marker that lists files the new report does not write (removed *and named*, links kept);
* FINDING lines after a PASS (they say they are not failures) and after a FAIL;
* text from code under test (issue 36, item 6): an exception whose ``__str__``/``__repr__`` raises, ``sys.exit``
  of such an object, ESC/NUL/FF/U+FFFE/lone surrogates in a message or a path, at import, at the load check
  and inside a claim -- every output valid, and no case prints a raw control character;
* the same refusals through the API (``code`` 2 there means: raises :class:`~verify.errors.InvalidArgument`).

Each case asserts: the exit code expected for it (not merely one of 0/1/2), no ``Traceback`` on
stdout/stderr, the fragments its message must (and must not) hold, and a sentinel tree outside
every output location unchanged (bytes and mtimes), as in :mod:`tests.cli.test_fuzz`. The checks
are instant fakes and the golden problems one small case, so the whole module runs in seconds;
``test_corpus_summary`` prints the number of cases and their outcomes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import verify.cli as cli
import verify.oracles.golden as golden_mod
import verify.run.catalog as runner
import verify.run.check as check_mod
from tests.cli.conftest import run_cli_in, run_serial
from tests.cli.test_fuzz import _snapshot
from tests.cli.test_sanitize import Broken, BrokenPremise, NoRepr, raw_controls
from theory.catalog import all_claims
from verify._validate import MAX_SEED
from verify.config import RunConfig
from verify.errors import InvalidArgument, NotApplicable
from verify.oracles.golden import HEADER_KEY
from verify.run.sweep.definitions import MAX_SEEDS
from verify.run.sweep.executors import MAX_THREADS, MAX_WORKERS
from verify.verdict import CheckResult, Control, Verdict

PASS_ID, FAIL_ID, STOP_ID = "reference.adjoint", "rtrl.exact", "reference.influence"
USER_KI_ID = "reference.complex-step"  # a check whose code raises KeyboardInterrupt itself (not a signal)
#: checks whose code under test hands over text that cannot be read or printed as it is (issue 36, item 6)
BROKEN_ID, EXIT_ID, HOSTILE_ID = "reference.finite-difference", "rtrl.truncated-bptt", "rtrl.influence-balancing"
PREMISE_ID, NA_ID, KI_STR_ID = "rtrl.online-convergence", "rtrl.snap-exactness", "rtrl.rflo-limits"
HOSTILE = "file /home/u/\udcff.py \x1b[31mred\x1b[0m\x00 \x0c\r\ufffe \x9b2J"
HOSTILE_SHOWN = "file /home/u/\\udcff.py \\x1b[31mred\\x1b[0m\\x00 \\x0c\\r\\ufffe \\x9b2J"
FINDING = "the printed bound fails by 3x"
HUGE = "9" * 5000  # more digits than Python converts (4300): the ValueError the issue saw
CUDA = torch.cuda.is_available()
OUTCOMES: Counter[str] = Counter()


# ------------------------------------------------------------------ the sandbox
def _fake(cid: str) -> Callable[[RunConfig], CheckResult]:
    def fn(config: RunConfig) -> CheckResult:
        if cid == STOP_ID:  # Ctrl-C delivered to rnn-verify while a check runs
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
            raise AssertionError("not interrupted")
        if cid == USER_KI_ID:  # code under test raising KeyboardInterrupt: its error, not an interrupt
            raise KeyboardInterrupt
        if cid in _TEXT_FAKES:
            return _TEXT_FAKES[cid](cid)
        verdict = Verdict.FAIL if cid == FAIL_ID else Verdict.PASS
        findings = (FINDING,) if cid in (PASS_ID, FAIL_ID) else ()
        controls = (Control("mutant", "FAIL", "FAIL"),) if verdict is Verdict.PASS else ()
        return CheckResult(cid, verdict, f"fake {verdict.value}", seed=config.seed, controls=controls,
                           findings=findings, reason=None if verdict is Verdict.PASS else "fake")  # fmt: skip

    return fn


class _InterruptsStr(Exception):
    def __str__(self) -> str:
        raise KeyboardInterrupt  # raised by the code itself: no signal was delivered


def _raise(exc: BaseException) -> Callable[[str], CheckResult]:
    def fn(cid: str) -> CheckResult:
        raise exc

    return fn


_TEXT_FAKES: dict[str, Callable[[str], CheckResult]] = {
    BROKEN_ID: _raise(Broken()),
    EXIT_ID: _raise(SystemExit(NoRepr())),
    PREMISE_ID: _raise(BrokenPremise()),
    NA_ID: _raise(NotApplicable("uoro.uoro", f"no rank= ({HOSTILE})")),
    KI_STR_ID: _raise(_InterruptsStr()),
    HOSTILE_ID: lambda cid: CheckResult(cid, Verdict.FAIL, HOSTILE, reason=HOSTILE, findings=(HOSTILE,)),
}


class Box:
    """cwd of every case: ``report/`` (a valid report folder), ``gold.npz``/``gold.json`` (a valid golden pair),
    ``inputs/`` (the case's own files), ``link`` -> the sentinel ``../outside``; outputs anywhere else."""

    def __init__(self, root: Path) -> None:
        self.root, self.cwd, self.outside = root, root / "sandbox", root / "outside"
        self.results = self.npz = self.side = b""
        self.report: dict[str, bytes] = {}
        self.sentinel: dict[str, tuple[bytes | str, int]] = {}

    def reset(self) -> None:
        for p in self.cwd.iterdir():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.name != "link":
                p.unlink()
        (self.cwd / "inputs").mkdir()
        (self.cwd / "report").mkdir()
        for rel, blob in self.report.items():
            (self.cwd / "report" / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.cwd / "report" / rel).write_bytes(blob)
        (self.cwd / "gold.npz").write_bytes(self.npz)
        (self.cwd / "gold.json").write_bytes(self.side)

    def run(self, argv: list[str]) -> tuple[int, str]:
        return run_cli_in(self.cwd, argv)


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Box]:
    root = tmp_path_factory.mktemp("corpus")
    b = Box(root)
    with pytest.MonkeyPatch.context() as mp:
        fakes = {cid: _fake(cid) for cid in all_claims()}
        mp.setattr(check_mod, "registry", lambda: dict(fakes))
        mp.setattr(runner, "_run_parallel", run_serial)
        mp.setattr(cli, "_BACKGROUND_PNG_MIN_CLAIMS", 10**9)
        real_cases = golden_mod.golden_cases
        mp.setattr(golden_mod, "golden_cases", lambda seed=0: real_cases(seed)[2:3])  # one small case
        mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
        b.outside.mkdir()
        (b.outside / "notes.txt").write_text("the user's notes")
        (b.outside / "sub").mkdir()
        (b.outside / "sub" / "data.csv").write_text("1,2,3")
        b.cwd.mkdir()
        (b.cwd / "link").symlink_to(b.outside, target_is_directory=True)
        code, text = b.run(["run", "--claims", PASS_ID, "--out", "report", "-q"])
        assert code == 0, text
        code, text = b.run(["golden", "--out", "gold.npz", "--k", "1"])
        assert code == 0, text
        rep = b.cwd / "report"
        b.report = {p.relative_to(rep).as_posix(): p.read_bytes() for p in rep.rglob("*") if p.is_file()}
        b.results, b.npz, b.side = (
            (rep / "results.json").read_bytes(),
            *((b.cwd / n).read_bytes() for n in ("gold.npz", "gold.json")),
        )
        shutil.copy(rep / "results.json", b.outside / "results.json")  # a user's folder holding a results.json
        b.sentinel = _snapshot(b.outside)
        yield b


# ------------------------------------------------------------------ the cases
@dataclass(frozen=True)
class Case:
    """One named case: ``argv`` for the CLI (or ``api``, a call: 0 = returns, 2 = raises InvalidArgument)."""

    name: str
    code: int
    argv: tuple[str, ...] = ()
    api: Callable[[Box], object] | None = None
    setup: Callable[[Box], None] | None = None
    says: tuple[str, ...] = ()
    never: tuple[str, ...] = ()
    after: Callable[[Box, str], None] | None = None
    tags: tuple[str, ...] = field(default=())
    #: ``slow``: deselected by default (each ``--impl`` case starts a worker process that imports torch: ~3 s)
    slow: bool = False


CASES: list[Case] = []


def case(name: str, code: int, argv: list[str] | None = None, **kw: Any) -> None:
    CASES.append(Case(name, code, tuple(argv or ()), **kw))


RUN = ["run", "--claims", PASS_ID, "--no-report", "-q"]
GOLD = ["golden", "--out", "g.npz", "--k", "1"]
SWEEP = ["sweep", "selftest", "--executor", "serial", "--no-cache", "--no-report", "-q"]


def _seed_cases() -> None:
    bad = {"negative": "-1", "max+1": str(MAX_SEED + 1), "2^64-1": str(2**64 - 1), "2^64": str(2**64),
           "1e20": str(10**20), "5000 digits": HUGE, "float": "1e3", "word": "abc", "empty": "",
           "hex": "0x10"}  # fmt: skip
    good = {"zero": "0", "one": "1", "max": str(MAX_SEED)}
    for cmd, base in (("run", RUN), ("golden", GOLD), ("sweep", [*SWEEP, "--seeds", "1"])):
        for label, v in bad.items():
            says = ("--seed", str(MAX_SEED)) if v.lstrip("-").isdigit() and v != HUGE else ("--seed",)
            case(f"{cmd} --seed {label}", 2, [*base, "--seed", v], says=says)
        for label, v in good.items():
            case(f"{cmd} --seed {label}", 0, [*base, "--seed", v])
    case("sweep --seed max with 2 seeds runs past the largest seed", 2, [*SWEEP, "--seed", str(MAX_SEED), "--seeds",
         "2"], says=("--seeds", "largest seed"))  # fmt: skip


def _count_cases() -> None:
    workers = {"0": 2, "-1": 2, "1": 0, "2": 0, str(MAX_WORKERS): 0, str(MAX_WORKERS + 1): 2, str(10**30): 2,
               HUGE: 2, "x": 2}  # fmt: skip
    for v, code in workers.items():
        label = v if len(v) < 40 else "5000 digits"
        why = (
            ("--workers", "torch import")
            if code == 2 and v.isdigit() and len(v) < 40 and int(v) > MAX_WORKERS
            else ("--workers",)
        )
        case(f"run --workers {label}", code, [*RUN, "--workers", v], says=why if code else ())
        case(f"sweep --workers {label}", code, [*SWEEP, "--seeds", "1", "--workers", v], says=why if code else ())
    for v, code in {"0": 2, "1": 0, str(MAX_THREADS): 0, str(MAX_THREADS + 1): 2, str(10**30): 2}.items():
        case(
            f"sweep --threads {v[:12]}",
            code,
            [*SWEEP, "--seeds", "1", "--threads", v],
            says=("--threads",) if code else (),
        )
    seeds = {"0": 2, "-1": 2, "1": 0, "3": 0, str(MAX_SEEDS + 1): 2, "1000000000000": 2, HUGE: 2, "two": 2}
    for v, code in seeds.items():
        label = v if len(v) < 40 else "5000 digits"
        says = (
            ("--seeds", "at most") if code == 2 and v.isdigit() and len(v) < 40 and int(v) > MAX_SEEDS else ("--seeds",)
        )
        case(f"sweep selftest --seeds {label}", code, [*SWEEP, "--seeds", v], says=says if code else ())
    for v in ("1000000000000", str(MAX_SEEDS + 1)):  # the MemoryError: refused before a cell is built
        case(f"sweep calibration --seeds {v}", 2, ["sweep", "calibration", "--seeds", v, "--no-cache",
             "--no-report"], says=("--seeds", f"at most {MAX_SEEDS}"))  # fmt: skip
    ks = {"0": 2, "1": 0, "3": 0, "10001": 2, "-3": 2, HUGE: 2, "x": 2}
    for v, code in ks.items():
        case(f"golden --k {v if len(v) < 40 else '5000 digits'}", code, ["golden", "--out", "g.npz", "--k", v])
    case("golden --k 32 values", 0, ["golden", "--out", "g.npz", "--k", *(["1"] * 32)])
    case("golden --k 33 values", 2, ["golden", "--out", "g.npz", "--k", *(["1"] * 33)], says=("--k",))


def _two_outputs_cases() -> None:
    both = ("--json", "--junit")
    case("--json and --junit one file", 2, [*RUN, "--json", "x.xml", "--junit", "x.xml"], says=both,
         after=lambda b, t: _absent(b, "x.xml"))  # fmt: skip
    case("--json ./x and --junit x", 2, [*RUN, "--json", "./x.xml", "--junit", "x.xml"], says=both)
    case("--json sub/../x and --junit x", 2, [*RUN, "--json", "sub/../x.xml", "--junit", "x.xml"], says=both)
    case("--json abs and --junit rel", 2, [*RUN, "--json", "ABS/x.xml", "--junit", "x.xml"], says=both)
    case("--json via a link to --junit", 2, [*RUN, "--json", "lnk.xml", "--junit", "x.xml"], says=both,
         setup=lambda b: (b.cwd / "lnk.xml").symlink_to("x.xml"))  # fmt: skip
    case("--json and --junit distinct", 0, [*RUN, "--json", "x.json", "--junit", "x.xml"])
    case("--json - and --junit", 0, [*RUN, "--json", "-", "--junit", "x.xml"])
    run_out = ["run", "--claims", PASS_ID, "-q", "--out", "o"]
    for opt, path in (("--json", "o/r.json"), ("--junit", "o/j.xml"), ("--junit", "o"), ("--json", "o/sub/r.json"),
                      ("--json", "o/results.json"), ("--junit", "o/report.html")):  # fmt: skip
        case(f"run --out o {opt} {path}", 2, [*run_out, opt, path], says=(opt, "--out"),
             after=lambda b, t: _absent(b, "o"))  # fmt: skip
    case("run --out o --json r.json --junit j.xml", 0, [*run_out, "--json", "r.json", "--junit", "j.xml"])
    case("run --out report --junit report/junit.xml", 2, ["run", "--claims", PASS_ID, "-q", "--out", "report",
         "--junit", "report/junit.xml"], says=("--junit", "--out"))  # fmt: skip
    sweep = ["sweep", "selftest", "--executor", "serial", "--no-cache", "--seeds", "1", "-q"]
    case("sweep --out o --json o/r.json", 2, [*sweep, "--out", "o", "--json", "o/r.json"], says=("--json", "--out"))
    case("sweep --out o --json r.json", 0, [*sweep, "--out", "o", "--json", "r.json"])
    case("report --junit inside its folder", 2, ["report", "report", "--junit", "report/j.xml"], says=("--junit",))
    case("report --junit = RESULTS", 2, ["report", "report/results.json", "--out", "o", "--junit",
         "report/results.json"], says=("--junit", "RESULTS"))  # fmt: skip
    case("report --out o --junit o/j.xml", 2, ["report", "report", "--out", "o", "--junit", "o/j.xml"],
         says=("--junit", "--out"))  # fmt: skip
    case("report --out o --junit j.xml", 0, ["report", "report", "--out", "o", "--junit", "j.xml"])


def _absent(b: Box, rel: str) -> None:
    assert not (b.cwd / rel).exists(), f"{rel} was written although the command was refused"


def _name_cases() -> None:
    long_name, deep = "n" * 300, "/".join(["d"] * 2100)
    places = {
        "run --out": lambda p: ["run", "--claims", PASS_ID, "-q", "--out", p],
        "run --json": lambda p: [*RUN, "--json", p],
        "run --junit": lambda p: [*RUN, "--junit", p],
        "sweep --out": lambda p: [*SWEEP[:5], "--seeds", "1", "--out", p],
        "sweep --json": lambda p: [*SWEEP, "--seeds", "1", "--json", p],
        "sweep --cache": lambda p: [*SWEEP[:4], "--no-report", "--seeds", "1", "--cache", p],
        "report RESULTS": lambda p: ["report", p],
        "report --out": lambda p: ["report", "report", "--out", p],
        "report --junit": lambda p: ["report", "report", "--junit", p],
        "golden --check": lambda p: ["golden", "--check", p],
        "golden --out": lambda p: ["golden", "--k", "1", "--out", p],
    }
    for where, make in places.items():
        opt = where.split()[1]
        case(f"{where} 300-char name", 2, make(long_name), says=(opt, "NAME_MAX", "255"), never=("Errno",))
        case(f"{where} 300-char name in a folder", 2, make(f"a/{long_name}/x"), says=(opt, "NAME_MAX"))
        case(f"{where} 4200-byte path", 2, make(deep), says=(opt, "PATH_MAX", "4096"))
        case(f"{where} NUL byte", 2, make("a\x00b"), says=(opt, "NUL"))
    case("run --json 255-char name", 0, [*RUN, "--json", "n" * 250 + ".json"])


def _folder_cases() -> None:
    def folder(rel: str) -> Callable[[Box], None]:
        return lambda b: (b.cwd / rel).mkdir(parents=True, exist_ok=True)

    case("report an empty folder", 2, ["report", "inputs"], says=("folder without a results.json",),
         never=("no such file",))  # fmt: skip
    case("report a folder named x.json", 2, ["report", "inputs/x.json"], setup=folder("inputs/x.json"),
         says=("is a folder",), never=("no such file",))  # fmt: skip
    case("report a missing file", 2, ["report", "inputs/absent.json"], says=("no such file",))
    case("golden --check a folder", 2, ["golden", "--check", "inputs"], says=("--check", "is a folder"),
         never=("no such file",))  # fmt: skip
    case("golden --check a folder named g.npz", 2, ["golden", "--check", "inputs/g.npz"], setup=folder("inputs/g.npz"),
         says=("is a folder",), never=("no such file",))  # fmt: skip
    case("golden --check a folder named g.json", 2, ["golden", "--check", "inputs/g.json"],
         setup=folder("inputs/g.json"), says=("is a folder",), never=("no such file",))  # fmt: skip
    case("run --json a folder", 2, [*RUN, "--json", "inputs"], says=("--json", "is a folder"))
    case("run --junit a folder", 2, [*RUN, "--junit", "inputs"], says=("--junit", "is a folder"))
    case("report --junit a folder", 2, ["report", "report", "--junit", "inputs"], says=("--junit", "is a folder"))
    case("sweep --json a folder", 2, [*SWEEP, "--seeds", "1", "--json", "inputs"], says=("--json", "is a folder"))
    case("golden --out a folder", 2, ["golden", "--k", "1", "--out", "inputs"], says=("--out",))
    case(
        "run --out a file", 2, ["run", "--claims", PASS_ID, "-q", "--out", "gold.json"], says=("--out", "not a folder")
    )


def _device_cases() -> None:
    allowed = "'cpu', 'cuda', 'cuda:N'"
    for d in ("tpu", "gpu", "cuda:x", "", "mps", "meta", "xla", "CPU", "cuda:-1", "vulkan"):
        case(f"--device {d!r}", 2, [*RUN, "--device", d], says=("--device", allowed), never=("torch", "Expected one"))
    for d in ("cpu", "auto", "cpu:0"):
        case(f"--device {d}", 0, [*RUN, "--device", d])
    case("--device cuda (SKIPPED or run)", 0, [*RUN, "--device", "cuda"])
    case("--device cuda --strict-device", 0 if CUDA else 2, [*RUN, "--device", "cuda", "--strict-device"])


def _impl_cases() -> None:
    for fam in ("uoro", "rtrl", "truncation", "tbptt", "fpp", "reference", "device", "uoro.uoro", "rtrl.rtrl"):
        text = f"{fam}=no_such_module_xyz:Thing"
        never = ("uoro.uoro=",) if fam == "uoro" else ("rtrl.rtrl=",) if fam == "rtrl" else ()
        # by default the families whose short name has an alias to hide (uoro, rtrl) and the dotted form; the other
        # families' echo is the same code path (slow: CI runs them, .ci/run)
        case(f"--impl {fam}= missing module", 2, [*RUN, "--impl", text], says=(f"--impl {text}", "no module"),
             never=never, slow=not never and "." not in fam)  # fmt: skip
    for text, says in (("uoro=inputs/none.py:X", "no such file"), ("uoro=verify.cli:NoSuchName", "NoSuchName"),
                       ("uoro=x", "--impl"), ("bogus=x:y", "--impl"), ("=x:y", "--impl"), ("uoro=", "--impl"),
                       ("uoro", "--impl"), ("uoro=verify.cli:main", "--impl uoro=verify.cli:main")):  # fmt: skip
        case(f"--impl {text!r}", 2, [*RUN, "--impl", text], says=(says,), never=("uoro.uoro=",))
    case("--impl-only without --impl", 2, [*RUN, "--impl-only"], says=("--impl-only",))


def _path_in(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    cur = doc
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return doc


def _with_literal(valid: bytes, path: tuple[Any, ...], literal: str) -> bytes:
    doc = _path_in(json.loads(valid), path, "@@LITERAL@@")
    return json.dumps(doc).replace('"@@LITERAL@@"', literal).encode()


def _json_cases() -> None:
    fields = {"top-level extra": ("extra",), "schema_version": ("schema_version",), "run.seed": ("run", "seed"),
              "run.wall_time": ("run", "wall_time"), "summary.PASS": ("summary", "PASS"),
              "claims[0].seed": ("claims", 0, "seed"), "claims[0].wall_time": ("claims", 0, "wall_time"),
              "claims[0].data.x": ("claims", 0, "data", "x"),
              "claims[0].statistic": ("claims", 0, "statistic")}  # fmt: skip
    literals = {"5000 digits": HUGE, "-5000 digits": "-" + HUGE, "400 digits": "9" * 400, "NaN": "NaN",
                "Infinity": "Infinity", "-Infinity": "-Infinity"}  # fmt: skip
    for fname, path in fields.items():
        for lname, lit in literals.items():

            def setup(b: Box, path: tuple[Any, ...] = path, lit: str = lit) -> None:
                (b.cwd / "inputs" / "r.json").write_bytes(_with_literal(b.results, path, lit))

            field_name = ".".join(str(p) for p in path).replace(".0.", "[0].")
            says = ("inputs/r.json",) + ((field_name,) if "digits" in lname and fname != "top-level extra" else ())
            case(f"report results.json {fname} = {lname}", 2, ["report", "inputs/r.json", "--out", "o"], setup=setup,
                 says=says, never=("_NonFinite", "_HugeInt", "sys.set_int_max_str_digits"),
                 after=lambda b, t: _absent(b, "o"))  # fmt: skip
    case("report results.json data.x = 309 digits (allowed)", 0, ["report", "inputs/r.json", "--out", "o"],
         setup=lambda b: (b.cwd / "inputs" / "r.json").write_bytes(_with_literal(b.results, ("claims", 0, "data", "x"),
                                                                                  "9" * 309)))  # fmt: skip
    case("report results.json in place with a huge integer", 2, ["report", "report"],
         setup=lambda b: (b.cwd / "report" / "results.json").write_bytes(_with_literal(b.results, ("run", "seed"),
                                                                                        HUGE)),
         says=("run.seed",), after=lambda b, t: _report_unchanged(b, except_results=True))  # fmt: skip
    for fname, path in {"seed": ("seed",), "ks[0]": ("ks", 0), "format_version": ("format_version",),
                        "extra": ("extra",)}.items():  # fmt: skip
        for lname, lit in (("5000 digits", HUGE), ("NaN", "NaN")):
            for which in ("json", "npz"):

                def gsetup(b: Box, path: tuple[Any, ...] = path, lit: str = lit, which: str = which) -> None:
                    text = _with_literal(b.side, path, lit)
                    (b.cwd / "inputs" / "g.json").write_bytes(text if which == "json" else b.side)
                    with np.load(io.BytesIO(b.npz)) as z:
                        arrays = {k: z[k] for k in z.files}
                    if which == "npz":
                        arrays[HEADER_KEY] = np.frombuffer(text, dtype=np.uint8)
                    np.savez(b.cwd / "inputs" / "g.npz", **arrays)

                case(f"golden --check {which} header {fname} = {lname}", 2, ["golden", "--check", "inputs/g.npz"],
                     setup=gsetup, never=("_NonFinite", "_HugeInt", "set_int_max_str_digits"))  # fmt: skip
    case("golden --check the valid pair", 0, ["golden", "--check", "gold.npz"])

    def marker(b: Box) -> None:
        m = json.loads(b.report[".rnn-verify-report"])
        text = json.dumps(m).replace('"format_version": 1', f'"format_version": {HUGE}')
        (b.cwd / "report" / ".rnn-verify-report").write_text(text)

    case("report into a folder whose marker holds a huge integer", 2, ["report", "report"], setup=marker,
         says=("damaged",), never=("set_int_max_str_digits",))  # fmt: skip

    def cache(b: Box) -> None:
        (b.cwd / "c").mkdir()
        (b.cwd / "c" / ".rnn-verify-cache").write_text('{"format": ' + HUGE + "}")

    def big_cache(b: Box) -> None:
        (b.cwd / "c").mkdir()
        (b.cwd / "c" / ".rnn-verify-cache").write_text('{"format": "' + "x" * 100_000 + '"}')

    case("sweep --cache with an oversized marker", 2, [*SWEEP[:4], "--no-report", "--seeds", "1", "--cache", "c"],
         setup=big_cache, says=("--cache", "more than a marker holds"))  # fmt: skip
    case("sweep --cache with a huge integer in its marker", 2, [*SWEEP[:4], "--no-report", "--seeds", "1", "--cache",
         "c"], setup=cache, says=("--cache", "5000 digits"), never=("set_int_max_str_digits",))  # fmt: skip


def _report_unchanged(b: Box, except_results: bool = False) -> None:
    for rel, blob in b.report.items():
        if (except_results and rel == "results.json") or rel == ".rnn-verify-report":  # (the case rewrote it)
            continue
        assert (b.cwd / "report" / rel).read_bytes() == blob, rel


def _marker_cases() -> None:
    def listing(*extra: str, make: Callable[[Box], None] | None = None) -> Callable[[Box], None]:
        def setup(b: Box) -> None:
            m = json.loads(b.report[".rnn-verify-report"])
            m["files"] = sorted({*m["files"], *extra})
            (b.cwd / "report" / ".rnn-verify-report").write_text(json.dumps(m))
            if make is not None:
                make(b)

        return setup

    def write(rel: str) -> Callable[[Box], None]:
        def make(b: Box) -> None:
            (b.cwd / "report" / rel).parent.mkdir(parents=True, exist_ok=True)
            (b.cwd / "report" / rel).write_text("old")

        return make

    def gone(rel: str) -> Callable[[Box, str], None]:
        return lambda b, t: _absent(b, f"report/{rel}")

    def kept(rel: str) -> Callable[[Box, str], None]:
        def check(b: Box, t: str) -> None:
            assert os.path.lexists(b.cwd / "report" / rel), f"{rel} was removed"

        return check

    for rel in ("old.txt", "figures/old.png", "report-v0.md", "deep/er/x.json"):
        case(f"marker lists {rel} (ours, stale): removed and named", 0, ["report", "report"],
             setup=listing(rel, make=write(rel)), says=("removed 1 file", rel), after=gone(rel))  # fmt: skip
    case("marker lists two stale files: both named", 0, ["report", "report"],
         setup=listing("a.txt", "b.txt", make=lambda b: (write("a.txt")(b), write("b.txt")(b))),
         says=("removed 2 files", "a.txt", "b.txt"))  # fmt: skip
    case("marker lists a link: kept, not followed", 0, ["report", "report"],
         setup=listing("notes.txt", make=lambda b: (b.cwd / "report" / "notes.txt").symlink_to(
             b.outside / "notes.txt")),
         says=("kept", "notes.txt"), never=("removed",), after=kept("notes.txt"))  # fmt: skip
    case("marker lists a folder: kept", 0, ["report", "report"],
         setup=listing("sub", make=lambda b: write("sub/x.txt")(b)), never=("removed",),
         after=kept("sub/x.txt"))  # fmt: skip
    case("marker lists a missing file: nothing to say", 0, ["report", "report"], setup=listing("absent.txt"),
         never=("removed",))  # fmt: skip
    case("marker lists a path outside: refused", 2, ["report", "report"], setup=listing("../outside/notes.txt"),
         says=("damaged",), after=lambda b, t: _report_unchanged(b))  # fmt: skip
    case("marker lists an absolute path: refused", 2, ["report", "report"], setup=listing("/etc/hostname"),
         says=("damaged",))  # fmt: skip
    case("report re-rendered in place: nothing removed", 0, ["report", "report"], never=("removed",))


def _finding_cases() -> None:
    case("FINDING after a PASS says it is not a failure", 0, ["run", "--claims", PASS_ID, "--no-report"],
         says=(f"FINDING (not a failure) {PASS_ID}", "the checked version PASSes", FINDING))  # fmt: skip
    case("FINDING after a FAIL names the verdict", 1, ["run", "--claims", FAIL_ID, "--no-report"],
         says=(f"FINDING {FAIL_ID}", "this claim is FAIL"), never=(f"FINDING (not a failure) {FAIL_ID}",))  # fmt: skip
    case("FINDING lines of a mixed run", 1, ["run", "--claims", PASS_ID, FAIL_ID, "--no-report"],
         says=(f"FINDING (not a failure) {PASS_ID}", f"FINDING {FAIL_ID}"))  # fmt: skip


IMPL_SOURCES = {
    "import raises an exception whose __str__ raises": (
        "class Broken(Exception):\n    def __str__(self):\n        raise ValueError('no')\nraise Broken()\n",
        "raised Broken: <Broken object (str() raised ValueError)>",
    ),
    "import raises an exception whose __str__ returns an int": (
        "class Odd(Exception):\n    def __str__(self):\n        return 3\nraise Odd()\n",
        "raised Odd: <Odd object (str() raised TypeError)>",
    ),
    "sys.exit(obj whose repr raises) at import": (
        "import sys\nclass NoRepr:\n    def __repr__(self):\n        raise ValueError('no')\nsys.exit(NoRepr())\n",
        "SystemExit(<NoRepr object (repr() raised ValueError)>): the code called sys.exit()",
    ),
    "KeyboardInterrupt from __str__ at import": (
        "class K(Exception):\n    def __str__(self):\n        raise KeyboardInterrupt\nraise K()\n",
        "raised K: <K object (str() raised KeyboardInterrupt)>",
    ),
    "load check raises an exception whose __str__ raises": (
        "class Broken(Exception):\n    def __str__(self):\n        raise ValueError('no')\n"
        "class X:\n    def __init__(self, *a, **k):\n        raise Broken()\n",
        "building the estimator raised Broken: <Broken object (str() raised ValueError)>",
    ),
    "ESC, NUL and a surrogate in an import error": (
        "raise RuntimeError('bad \\x1b[2J\\x00 file \\udcff')\n",
        "raised RuntimeError: bad \\x1b[2J\\x00 file \\udcff",
    ),
    "a class named with ESC": (
        "raise type('\\x1b[2J', (Exception,), {})('m')\n",
        "raised \\x1b[2J: m",
    ),
}


def _valid_outputs(*rels: str) -> Callable[[Box, str], None]:
    """Every JUnit file parses (XML 1.0), every JSON file loads as UTF-8 and names no raw control."""

    def check(b: Box, text: str) -> None:
        for rel in rels:
            blob = (b.cwd / rel).read_bytes()
            if rel.endswith(".xml"):
                ET.fromstring(blob)
            else:
                assert not raw_controls(json.dumps(json.loads(blob.decode("utf-8")), ensure_ascii=False)), rel

    return check


def _text_cases() -> None:
    out = ["--out", "o"]
    report = _valid_outputs("o/junit.xml", "o/results.json")
    # -v: the verdict line carries the check's whole summary (by default it is cut to 100 characters)
    case("check raises an exception whose __str__ and __repr__ raise: FAIL naming the type", 1,
         ["run", "--claims", BROKEN_ID, *out, "-v"], says=(f"FAIL {BROKEN_ID}: check raised Broken: <Broken",
         "check raised Broken: <Broken object (str() raised ValueError)>"), after=report)  # fmt: skip
    case("check calls sys.exit(obj whose __repr__ raises): FAIL", 1, ["run", "--claims", EXIT_ID, *out, "-v"],
         says=("SystemExit(<NoRepr object (repr() raised ValueError)>): code under test called sys.exit()",),
         after=report)  # fmt: skip
    case("check raises an exception whose __str__ raises KeyboardInterrupt: FAIL", 1,
         ["run", "--claims", KI_STR_ID, *out, "-v"],
         says=("<_InterruptsStr object (str() raised KeyboardInterrupt)>",), never=("interrupted",),
         after=report)  # fmt: skip
    case("check's premise cannot be read: INCONCLUSIVE naming the type", 0, ["run", "--claims", PREMISE_ID, *out],
         says=(f"INCONCLUSIVE {PREMISE_ID}: <BrokenPremise object (str() raised RuntimeError)>",),
         after=report)  # fmt: skip
    case("check not applicable, with controls in its reason: SKIPPED, escaped", 0,
         ["run", "--claims", NA_ID, *out, "-v"], says=(HOSTILE_SHOWN,), after=report)  # fmt: skip
    case("summary, reason and finding with ESC/NUL/FF/CR/C1/U+FFFE/surrogate: escaped", 1,
         ["run", "--claims", HOSTILE_ID, *out, "--junit", "j.xml", "--json", "r.json"],
         says=(f"FAIL {HOSTILE_ID}: {HOSTILE_SHOWN}", f"-- {HOSTILE_SHOWN}"),
         after=_valid_outputs("o/junit.xml", "o/results.json", "j.xml", "r.json"))  # fmt: skip
    case("hostile text, --junit and --json without a report folder", 1, ["run", "--claims", HOSTILE_ID,
         "--no-report", "--junit", "j.xml", "--json", "r.json"], after=_valid_outputs("j.xml", "r.json"))  # fmt: skip
    case("hostile text, --json - on stdout", 1, ["run", "--claims", HOSTILE_ID, "--no-report", "--json", "-"],
         says=('"summary": "' + HOSTILE_SHOWN.replace("\\", "\\\\"),))  # fmt: skip
    case("hostile text in a mixed run", 1, ["run", "--claims", PASS_ID, HOSTILE_ID, BROKEN_ID, EXIT_ID, *out],
         after=report)  # fmt: skip
    fsd = os.fsdecode
    case("--out not UTF-8 (LANG=C): written, named escaped in run.command", 0,
         ["run", "--claims", PASS_ID, "-q", "--out", fsd(b"o\xff")],
         after=lambda b, t: _valid_outputs(fsd(b"o\xff/junit.xml"), fsd(b"o\xff/results.json"))(b, t))  # fmt: skip
    case("--junit and --json not UTF-8", 0, [*RUN, "--junit", fsd(b"j\xfe.xml"), "--json", fsd(b"r\xfe.json")],
         after=_valid_outputs(fsd(b"j\xfe.xml"), fsd(b"r\xfe.json")))  # fmt: skip
    case("--out with ESC in its name", 0, ["run", "--claims", PASS_ID, "-q", "--out", "o\x1b[2J"],
         after=_valid_outputs("o\x1b[2J/junit.xml"))  # fmt: skip

    def raw_report(b: Box) -> None:
        doc = json.loads(b.results)
        doc["claims"][0]["summary"] = "raw \x1b[2J\x00\x0c\ufffe"
        (b.cwd / "inputs" / "r.json").write_text(json.dumps(doc))  # JSON escapes: \u001b ...

    case("report of a results.json holding raw controls: re-rendered escaped", 0,
         ["report", "inputs/r.json", "--out", "o"], setup=raw_report, after=report)  # fmt: skip
    for name, (source, says) in IMPL_SOURCES.items():

        def write(b: Box, source: str = source) -> None:
            (b.cwd / "inputs" / "mine.py").write_text(source)

        case(f"--impl: {name}", 2, [*RUN, "--impl", "uoro=inputs/mine.py:X"], setup=write,
             says=("rnn-verify: error: --impl uoro=inputs/mine.py:X: ", says))  # fmt: skip
    case("unrecognized argument with ESC: echoed escaped", 2, [*RUN, "--bo\x1bgus"], says=("--bo\\x1bgus",))
    case("--claims with ESC", 2, ["run", "--claims", "a\x1b[2J", "--no-report"], says=("--claims",))
    case("--impl spec with ESC", 2, [*RUN, "--impl", "uoro=no_mod\x1b[2J:X"], says=("--impl",))


def _misc_cases() -> None:
    case("Ctrl-C in a check: one line, exit 130", 130, ["run", "--claims", STOP_ID, "--out", "o"],
         says=("interrupted",), after=lambda b, t: _absent(b, "o"))  # fmt: skip
    case("KeyboardInterrupt raised by a check: its FAIL, exit 1", 1, ["run", "--claims", USER_KI_ID, "--no-report"],
         says=("KeyboardInterrupt",))  # fmt: skip
    case("list", 0, ["list"])
    case("list --claims nope", 2, ["list", "--claims", "nope"], says=("--claims",))
    case("list --profile huge", 2, ["list", "--profile", "huge"], says=("--profile",))
    case("no command", 2, [], says=("usage:",))
    case("unknown command", 2, ["frob"], says=("usage:",))
    case("run --bogus", 2, [*RUN, "--bogus"], says=("--bogus",))
    case("--help", 0, ["--help"])
    case("--version", 0, ["--version"])
    case("sweep without a name", 2, ["sweep"], says=("NAME",))
    case("sweep nope", 2, ["sweep", "nope"], says=("NAME",))
    case("sweep --list", 0, ["sweep", "--list"])
    case("sweep selftest serial", 0, [*SWEEP, "--seeds", "2"])
    case("sweep --executor spark", 2, [*SWEEP, "--executor", "spark"], says=("--executor",))
    case("run --executor dask=", 2, [*RUN, "--executor", "dask="], says=("--executor",))
    case("run --plan --json file", 2, ["run", "--claims", PASS_ID, "--plan", "--json", "p.json"], says=("--json",))
    case("run --out link (a user's folder)", 2, ["run", "--claims", PASS_ID, "-q", "--out", "link"], says=("--out",))
    case("report the user's results.json in place", 2, ["report", "link/results.json"], says=("RESULTS",))


def _api_cases() -> None:
    from verify.hardware import resolve_device
    from verify.impl.loader import load_implementations
    from verify.run.sweep import SweepOptions, definitions, make_executor
    from verify.schema import load_json_file, parse_json_bytes
    from verify.stats.unbiased import validate_seed as stats_seed

    case("API RunConfig(seed=MAX_SEED)", 0, api=lambda b: RunConfig(seed=MAX_SEED))
    case("API RunConfig(seed=MAX_SEED+1)", 2, api=lambda b: RunConfig(seed=MAX_SEED + 1), says=(str(MAX_SEED),))
    case("API stats seed MAX_SEED", 0, api=lambda b: stats_seed("seed", MAX_SEED))
    case("API stats seed 2**64-1 (one limit with the CLI)", 2, api=lambda b: stats_seed("seed", 2**64 - 1),
         says=(str(MAX_SEED),))  # fmt: skip
    case("API resolve_device('tpu')", 2, api=lambda b: resolve_device("tpu"), says=("device=", "'cpu', 'cuda'"))
    case("API resolve_device(0)", 2, api=lambda b: resolve_device(0), says=("device=",))  # type: ignore[arg-type]
    case("API resolve_device('cpu')", 0, api=lambda b: resolve_device("cpu"))
    case("API make_executor workers=10**9", 2, api=lambda b: make_executor("serial", 10**9), says=("--workers",))
    case("API make_executor threads=10**9", 2, api=lambda b: make_executor("serial", 1, 10**9), says=("--threads",))
    case("API selftest seeds=10**12", 2, api=lambda b: definitions()["selftest"].build(SweepOptions(seeds=10**12)),
         says=("--seeds",))  # fmt: skip
    case("API gate seeds=MAX_SEEDS: too many cells", 2,
         api=lambda b: definitions()["gate"].build(SweepOptions(seeds=MAX_SEEDS)), says=("cells",))  # fmt: skip
    case("API parse_json_bytes huge integer", 2, api=lambda b: parse_json_bytes(b'{"a": [1, ' + HUGE.encode() + b"]}",
         "f.json"), says=("f.json", "a[1]", "309 digits"))  # fmt: skip
    case("API parse_json_bytes 309 digits", 0, api=lambda b: parse_json_bytes(b"[" + b"9" * 309 + b"]", "f.json"))
    case("API load_json_file a folder", 2, api=lambda b: load_json_file(b.cwd / "inputs"), says=("is a folder",))
    case("API load_implementations uoro= echo", 2, api=lambda b: load_implementations(["uoro=no_such_xyz:X"]),
         says=("--impl uoro=no_such_xyz:X",), never=("uoro.uoro",))  # fmt: skip
    case("API write_dir_atomic names what it removed", 0, api=_removed_api, says=("['old.txt']",))


def _removed_api(b: Box) -> object:
    from verify.files import write_dir_atomic

    out = b.cwd / "o"
    write_dir_atomic(out, {"a.txt": b"1", "old.txt": b"2"})
    removed: list[str] = []
    write_dir_atomic(out, {"a.txt": b"3"}, removed=removed)
    print(removed)
    assert not (out / "old.txt").exists()
    return removed


for _make in (_seed_cases, _count_cases, _two_outputs_cases, _name_cases, _folder_cases, _device_cases,
              _impl_cases, _json_cases, _marker_cases, _finding_cases, _text_cases, _misc_cases,
              _api_cases):  # fmt: skip
    _make()
assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"


# ------------------------------------------------------------------ the test
def _run_case(b: Box, c: Case) -> tuple[int, str]:
    if c.api is None:
        argv = [a.replace("ABS/", str(b.cwd) + "/") for a in c.argv]
        return b.run(argv)
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(b.cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                c.api(b)
                code = 0
            except InvalidArgument as exc:
                print(f"InvalidArgument: {exc}")
                code = 2
    finally:
        os.chdir(old)
    return code, out.getvalue() + err.getvalue()


@pytest.mark.parametrize("c", [pytest.param(c, id=c.name, marks=(pytest.mark.slow,) if c.slow else ()) for c in CASES])
def test_corpus_case(box: Box, c: Case) -> None:
    box.reset()
    if c.setup is not None:
        c.setup(box)
    code, text = _run_case(box, c)
    OUTCOMES["cases"] += 1
    OUTCOMES[f"exit {code}"] += 1
    touched = _snapshot(box.outside) != box.sentinel
    OUTCOMES["tracebacks"] += int("Traceback" in text)
    OUTCOMES["outside touched"] += int(touched)
    assert "Traceback" not in text, text
    assert not raw_controls(text), f"{c.name}: raw {raw_controls(text)[:5]} on stdout/stderr"
    assert code == c.code, f"{c.name}: exit {code}, expected {c.code}:\n{text[-3000:]}"
    assert not touched, f"{c.name} changed files outside the output"
    for frag in c.says:
        assert frag in text, f"{c.name}: {frag!r} not in:\n{text[-3000:]}"
    for frag in c.never:
        assert frag not in text, f"{c.name}: {frag!r} in:\n{text[-3000:]}"
    if code == 2 and c.api is None:
        assert "rnn-verify" in text or "usage:" in text
        assert len(text.strip().splitlines()) <= 12, f"{c.name}: a refusal is a short message:\n{text}"
    if code == 130:
        assert sum("interrupted" in line for line in text.splitlines()) == 1, text
    if c.after is not None:
        c.after(box, text)


def test_corpus_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """How many cases there are and how they came out (with the cases above, in this module)."""
    assert len(CASES) >= 250
    if not OUTCOMES:
        pytest.skip("run with the corpus cases of this module")
    expected = Counter(f"exit {c.code}" for c in CASES)
    with capsys.disabled():
        print(
            f"\nfuzz corpus: {len(CASES)} named cases ({sum(c.api is not None for c in CASES)} through the API), "
            f"{OUTCOMES['cases']} run; exits "
            + ", ".join(f"{k}: {v}" for k, v in sorted(OUTCOMES.items()) if k.startswith("exit "))
            + f" (expected {', '.join(f'{k}: {v}' for k, v in sorted(expected.items()))}); "
            f"{OUTCOMES['tracebacks']} tracebacks, {OUTCOMES['outside touched']} touched files outside the output"
        )
    assert OUTCOMES["tracebacks"] == 0 and OUTCOMES["outside touched"] == 0
