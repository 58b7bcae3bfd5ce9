"""Fuzz the command line and the files it reads (issue 12): no traceback, exit 2 on anything malformed, nothing
outside the output touched.

Three hypothesis tests, derandomized under the ``ci`` profile:

* **argv**: argument lists for every subcommand -- known flags with values drawn from
  valid, invalid, huge and random ones, unknown flags, stray tokens;
* **results.json**: a valid small document (written once per module) mutated --
  a key deleted, a value replaced by another JSON type, NaN/huge numbers (a 5 000-digit
  integer among them, more than Python converts), the text
  truncated, bytes overwritten, random bytes -- then re-rendered with ``report``;
* **golden pair**: a valid small pair mutated in its header (sidecar, inner or
  both), its arrays, or its bytes, then ``golden --check`` on either file.

Checks are replaced by instant fakes (no claim is computed) and the golden problems
by one small case, so an example costs milliseconds. Every example asserts: exit
code in {0, 1, 2} (2 whenever :mod:`verify.schema` refuses the input), no
``Traceback`` on stdout/stderr, the input file unchanged, and a sentinel tree (a
folder outside every output location, reachable through ``--out`` and a symbolic
link) unchanged, bytes and mtimes. ``test_fuzz_summary`` prints the corpus sizes and
the outcome. The named cases (each with its own expected exit code) are in
:mod:`tests.cli.test_fuzz_corpus`.
"""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import verify.cli as cli
import verify.oracles.golden as golden_mod
import verify.run.catalog as runner
import verify.run.check as check_mod
from tests.cli.conftest import run_cli_in, run_serial
from tests.conftest import examples
from theory.catalog import all_claims
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.oracles.golden import HEADER_KEY, load_golden
from verify.schema import parse_json_bytes, parse_results, verify_results
from verify.verdict import CheckResult, Control, Verdict

STATS: Counter[str] = Counter()
#: stands for an integer literal of 5 000 digits (more than Python converts): written into the JSON text as such
_HUGE_INT = "@@HUGE_INT@@"


# ------------------------------------------------------------------ the sandbox
def _fake(cid: str, i: int) -> Any:
    verdict = list(Verdict)[i % 4]

    def fn(config: RunConfig) -> CheckResult:
        reason = None if verdict is Verdict.PASS else "fake reason"
        controls = (Control("mutant", "FAIL", "FAIL"),) if verdict is Verdict.PASS else ()
        data = {"comparisons": [{"error": 1e-16, "budget": 1e-14}]} if i == 0 else {}  # one figure to draw
        return CheckResult(cid, verdict, f"fake {verdict.value}", reason=reason, seed=config.seed, controls=controls,
                           data=data, statistic=1e-16, threshold=1e-14)  # fmt: skip

    return fn


def _snapshot(root: Path) -> dict[str, tuple[bytes | str, int]]:
    out: dict[str, tuple[bytes | str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st_ = p.lstat()
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = (f"-> {os.readlink(p)}", st_.st_mtime_ns)
            elif p.is_dir():
                out[rel] = ("dir", st_.st_mtime_ns)
            else:
                out[rel] = (p.read_bytes(), st_.st_mtime_ns)
    return out


class Sandbox:
    """cwd of every example: ``inputs/`` (this example's files), ``report/`` (a report folder), ``link`` -> the
    sentinel ``../outside`` (a user's folder with a results.json, no marker), outputs anywhere else inside."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cwd = root / "sandbox"
        self.outside = root / "outside"
        self.keep = {"inputs", "report", "link"}
        self.valid_results = self.valid_npz = self.valid_json = b""
        self.sentinel: dict[str, tuple[bytes | str, int]] = {}

    def reset(self) -> None:
        for p in self.cwd.iterdir():
            if p.name not in self.keep:
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p)
                else:
                    p.unlink()
        shutil.rmtree(self.cwd / "inputs")
        (self.cwd / "inputs").mkdir()

    def run(self, argv: list[str]) -> tuple[int, str]:
        return run_cli_in(self.cwd, argv)


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    root = tmp_path_factory.mktemp("fuzz")
    sb = Sandbox(root)
    with pytest.MonkeyPatch.context() as mp:
        fakes = {cid: _fake(cid, i) for i, cid in enumerate(all_claims())}
        mp.setattr(check_mod, "registry", lambda: dict(fakes))
        mp.setattr(runner, "_run_parallel", run_serial)
        mp.setattr(cli, "_BACKGROUND_PNG_MIN_CLAIMS", 10**9)
        real_cases = golden_mod.golden_cases
        mp.setattr(golden_mod, "golden_cases", lambda seed=0: real_cases(seed)[2:3])  # one small case: "linear"
        sb.outside.mkdir()
        (sb.outside / "notes.txt").write_text("the user's notes")
        (sb.outside / "sub").mkdir()
        (sb.outside / "sub" / "data.csv").write_text("1,2,3")
        sb.cwd.mkdir()
        (sb.cwd / "inputs").mkdir()
        (sb.cwd / "link").symlink_to(sb.outside, target_is_directory=True)
        # the valid inputs, generated once: a small run's results.json and a one-case golden pair
        code, text = sb.run(["run", "--claims", "reference.*", "rtrl.exact", "--out", "report", "-q"])
        assert code == 1, text  # the fakes include a FAIL
        shutil.copy(sb.cwd / "report" / "results.json", sb.outside / "results.json")
        code, text = sb.run(["golden", "--out", "gold.npz", "--k", "1"])
        assert code == 0, text
        sb.valid_results = (sb.cwd / "report" / "results.json").read_bytes()
        sb.valid_npz = (sb.cwd / "gold.npz").read_bytes()
        sb.valid_json = (sb.cwd / "gold.json").read_bytes()
        sb.sentinel = _snapshot(sb.outside)
        yield sb


def _check(sb: Sandbox, kind: str, argv: list[str], code: int, text: str, expect: set[int]) -> None:
    STATS[f"{kind} examples"] += 1
    STATS[f"{kind} exit {code}"] += 1
    if "Traceback" in text:
        STATS["tracebacks"] += 1
    touched = _snapshot(sb.outside) != sb.sentinel
    STATS["outside touched"] += int(touched)
    assert "Traceback" not in text, f"{argv}: {text}"
    assert code in expect, f"{argv} -> {code}, expected {expect}: {text}"
    assert not touched, f"{argv} changed files outside the output folder"
    if code == 2:
        assert "rnn-verify" in text or "usage:" in text, f"{argv}: exit 2 without a message"


# ------------------------------------------------------------------ CLI arguments
_SAFE = st.from_regex(r"[a-z0-9_][a-z0-9_\-]{0,7}(\.(json|npz|xml|txt))?", fullmatch=True)
_INTS = st.one_of(
    st.integers(-5, 50),
    st.sampled_from([2**63, 2**64, 10**20, 18446688733642, 18446688733643]),
).map(str)
_JUNK = st.one_of(_SAFE, _INTS, st.sampled_from(["--", "-", "", " ", "--bogus", "-x", "nan", "1e9", "ü", "--seed"]))
_CLAIMS = st.sampled_from(["reference.adjoint", "reference.*", "rtrl.exact", "uoro.*", "truncation.rate", "*",
                           "nope", "reference.adjiont", "", ",", "a,b", "device.*", "[", "**"])  # fmt: skip
_DIRS = st.sampled_from(["out", "out2/deep", "report", "link", "../outside", ".", "", "inputs", "report/figures"])
_FILES = st.one_of(_SAFE, st.sampled_from(["j/unit.xml", "report/junit.xml", "report", "-", "out", "n" * 300,
                                           "a/" + "n" * 300, "n" * 250]))  # fmt: skip
_INPUTS = st.sampled_from(["report/results.json", "report", "../outside/results.json", "link", "link/results.json",
                           "inputs", "absent.json", "gold.npz", "gold.json", "report/report.md", ""])  # fmt: skip


@st.composite
def argvs(draw: st.DrawFn) -> list[str]:
    cmd = draw(st.sampled_from(["list", "run", "report", "golden", "frob", ""]))
    opts: list[list[str]] = []
    flag = draw(st.sampled_from(["--help", "--version", None, None, None, None, None, None]))
    if cmd == "list":
        pool = [["--profile", draw(st.sampled_from(["ci", "full", "huge"]))], ["--claims", draw(_CLAIMS)],
                ["--json"], ["--markdown"]]  # fmt: skip
    elif cmd == "run":
        pool = [
            ["--profile", draw(st.sampled_from(["ci", "full", "x"]))],
            ["--claims", draw(_CLAIMS), draw(st.one_of(_CLAIMS, st.just("reference.influence")))],
            ["--seed", draw(_INTS)],
            ["--device", draw(st.sampled_from(["cpu", "cuda", "auto", "cuda:7", "tpu", "cuda:x"]))],
            ["--strict-device"],
            ["--dtype", draw(st.sampled_from(["float64", "float32", "int8"]))],
            ["--out", draw(_DIRS)],
            ["--no-report"],
            ["--json", draw(_FILES)] if draw(st.booleans()) else ["--json"],
            ["--junit", draw(_FILES)],
            ["--fail-on", draw(st.sampled_from(["fail", "inconclusive", "never"]))],
            ["--workers", draw(_INTS)],
            ["-q"],
        ]
    elif cmd == "report":
        pool = [["--out", draw(_DIRS)], ["--junit", draw(_FILES)],
                ["--fail-on", draw(st.sampled_from(["fail", "inconclusive", "x"]))]]  # fmt: skip
    else:
        pool = [
            ["--check", draw(_INPUTS)],
            ["--out", draw(st.one_of(_SAFE, st.sampled_from(["g.npz", "report/g.npz", "inputs", "x.txt"])))],
            ["--seed", draw(_INTS)],
            ["--k", draw(_INTS), draw(st.one_of(_INTS, st.just("2")))],
        ]
    chosen = draw(st.lists(st.sampled_from(range(len(pool))), max_size=4, unique=True))
    for i in chosen:
        opts.append(pool[i])
    if cmd == "run" and not any(o[0] == "--claims" for o in opts) and draw(st.booleans()):
        opts.append(["--claims", "reference.adjoint"])
    argv = [cmd] if cmd else []
    if cmd == "report" and draw(st.integers(0, 5)):
        argv.append(draw(_INPUTS))
    for o in draw(st.permutations(opts)):
        argv += o
    argv += draw(st.lists(_JUNK, max_size=2))
    if flag:
        argv.insert(draw(st.integers(0, len(argv))), flag)
    return argv


@settings(max_examples=examples(150))
@given(argv=argvs())
def test_fuzz_command_line(box: Sandbox, argv: list[str]) -> None:
    box.reset()
    (box.cwd / "gold.npz").write_bytes(box.valid_npz)
    (box.cwd / "gold.json").write_bytes(box.valid_json)
    code, text = box.run(argv)
    _check(box, "argv", argv, code, text, {0, 1, 2})


# ------------------------------------------------------------------ results.json
def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


_JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([1e308, -1e308, 1e-320, 0.0, -0.0, 10**400, _HUGE_INT]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["nan", "inf", "PASS", "FAIL", "", "reference.adjoint", "../x"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


@st.composite
def mutated_json(draw: st.DrawFn, valid: bytes) -> bytes:
    how = draw(st.sampled_from(["delete", "replace", "replace", "nan", "truncate", "bytes", "random", "none"]))
    if how in ("truncate", "bytes", "random"):
        if how == "truncate":
            return valid[: draw(st.integers(0, len(valid) - 1))]
        if how == "random":
            return draw(st.binary(max_size=200))
        data = bytearray(valid)
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(data)
    doc = json.loads(valid)
    if how == "none":
        return valid
    path = draw(st.sampled_from(_paths(doc)))
    *head, last = path
    cur = doc
    for k in head:
        cur = cur[k]
    if how == "delete":
        del cur[last]
        return json.dumps(doc).encode()
    value: Any = draw(_JSON_VALUES) if how == "replace" else float("nan")
    cur[last] = value
    text = json.dumps(doc)  # allow_nan: writes NaN / Infinity literals, and 10**400 as a plain integer
    return text.replace(f'"{_HUGE_INT}"', "9" * 5000).encode()


def _saved_exit(doc: Any) -> int:
    verdicts = {c["verdict"] for c in doc.document["claims"]}
    failing = {"FAIL", "INCONCLUSIVE"} if doc.run.get("fail_on") == "inconclusive" else {"FAIL"}
    # (a saved exit 1 without a FAIL is the --impl gate's: verify_results accepted it, report keeps it)
    return 1 if verdicts & failing or doc.run.get("exit_code") == 1 else 0


@settings(max_examples=examples(100))
@given(data=st.data())
def test_fuzz_results_json(box: Sandbox, data: st.DataObject) -> None:
    box.reset()
    valid: bytes = box.valid_results
    blob = data.draw(mutated_json(valid))
    where = data.draw(st.sampled_from(["in-report", "inputs"]))
    if where == "in-report":
        target = box.cwd / "report" / "results.json"
        argv = ["report", "report/results.json"]
    else:
        target = box.cwd / "inputs" / "results.json"
        argv = ["report", "inputs/results.json", "--out", "out"]
    target.write_bytes(blob)
    report_before = _snapshot(box.cwd / "report")
    try:
        doc = parse_results(parse_json_bytes(blob, "x"), "x")
        verify_results(doc)  # the verdicts, counts and exit code agree with the stored numbers
        malformed = False
    except InvalidArgument:
        doc, malformed = None, True
    # a changed byte of a results.json in its report folder differs from the digest the marker recorded
    malformed = malformed or (where == "in-report" and blob != valid)
    STATS["results malformed" if malformed else "results valid"] += 1
    code, text = box.run(argv)
    # a valid document re-renders; the exit code is the one `run` gave its verdicts (1 on a FAIL, or on an
    # INCONCLUSIVE under --fail-on inconclusive, which defaults to the saved run's setting)
    _check(box, "results.json", argv, code, text, {2} if malformed else {_saved_exit(doc)})
    if malformed:
        assert str(target.relative_to(box.cwd)) in text or str(target) in text, text
        assert _snapshot(box.cwd / "report") == report_before  # validated before anything is written
        assert not (box.cwd / "out").exists()
    elif where == "in-report":
        assert target.exists()
    target.write_bytes(valid)


# ------------------------------------------------------------------ golden pair
@st.composite
def mutated_pair(draw: st.DrawFn, npz: bytes, side: bytes) -> tuple[bytes | None, bytes | None]:
    how = draw(st.sampled_from(["header", "header", "array", "npz-bytes", "json-bytes", "missing", "none"]))
    if how == "none":
        return npz, side
    if how == "missing":
        return (None, side) if draw(st.booleans()) else (npz, None)
    if how == "json-bytes":
        return npz, draw(mutated_json(side))
    if how == "npz-bytes":
        if draw(st.booleans()):
            return draw(st.binary(max_size=300)), side
        data = bytearray(npz)
        if draw(st.booleans()):
            return bytes(data[: draw(st.integers(0, len(data) - 1))]), side
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(data), side
    with np.load(io.BytesIO(npz)) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(side)
    if how == "header":
        doc = copy.deepcopy(header)
        path = draw(st.sampled_from(_paths(doc)))
        *head, last = path
        cur = doc
        for k in head:
            cur = cur[k]
        if draw(st.booleans()):
            del cur[last]
        else:
            cur[last] = draw(_JSON_VALUES)
        text = json.dumps(doc).replace(f'"{_HUGE_INT}"', "9" * 5000)
        place = draw(st.sampled_from(["json", "npz", "both"]))
        if place in ("npz", "both"):
            arrays[HEADER_KEY] = np.frombuffer(text.encode(), dtype=np.uint8)
        side_out = text.encode() if place in ("json", "both") else side
    else:
        keys = [k for k in arrays if k != HEADER_KEY]
        key = draw(st.sampled_from(keys))
        change = draw(st.sampled_from(["value", "dtype", "shape", "drop", "nan"]))
        a = arrays[key]
        if change == "value" and a.size:
            a = a.copy()
            a.flat[0] += 1.0
        elif change == "dtype":
            a = a.astype(np.float32)
        elif change == "shape":
            a = np.zeros((*a.shape, 2))
        elif change == "nan" and a.size:
            a = a.copy()
            a.flat[0] = np.nan
        elif change == "drop":
            del arrays[key]
            a = None
        if a is not None:
            arrays[key] = a
        side_out = side
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue(), side_out


@settings(max_examples=examples(60))
@given(data=st.data())
def test_fuzz_golden_pair(box: Sandbox, data: st.DataObject) -> None:
    box.reset()
    npz, side = data.draw(mutated_pair(box.valid_npz, box.valid_json))
    paths = box.cwd / "inputs" / "g.npz", box.cwd / "inputs" / "g.json"
    for p, blob in zip(paths, (npz, side), strict=True):
        if blob is not None:
            p.write_bytes(blob)
    named = data.draw(st.sampled_from(["inputs/g.npz", "inputs/g.json"]))
    before = {p: p.read_bytes() for p in paths if p.exists()}
    try:
        load_golden(box.cwd / named)
        malformed = False
    except InvalidArgument:
        malformed = True
    STATS["golden malformed" if malformed else "golden loadable"] += 1
    code, text = box.run(["golden", "--check", named])
    _check(box, "golden", ["golden", "--check", named], code, text, {2} if malformed else {0, 1, 2})
    assert {p: p.read_bytes() for p in paths if p.exists()} == before  # checking never writes
    if npz == box.valid_npz and side == box.valid_json:
        assert code == 0


def test_fuzz_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """The corpus sizes and the outcome of the three fuzz tests above (run in this module)."""
    if not STATS:
        pytest.skip("run with the fuzz tests of this module")
    with capsys.disabled():
        print(
            f"\nfuzz corpus: {STATS['argv examples']} argument lists, {STATS['results.json examples']} results.json "
            f"({STATS['results malformed']} malformed), {STATS['golden examples']} golden pairs "
            f"({STATS['golden malformed']} malformed); {STATS['tracebacks']} tracebacks, "
            f"{STATS['outside touched']} examples touched files outside the output; exits "
            + ", ".join(f"{k}={v}" for k, v in sorted(STATS.items()) if " exit " in k)
        )
    assert STATS["tracebacks"] == 0 and STATS["outside touched"] == 0
