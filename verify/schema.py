"""Everything rnn-verify reads from disk, parsed field by field into typed values.

One layer for every file the toolkit reads back: the results document
(``results.json``, :func:`parse_results`), the golden header (``golden.json`` and
the copy inside ``golden.npz``, :func:`parse_golden_header`) and the golden arrays
(:func:`load_npz`). Parsing is plain typed code over dataclasses (no third-party
schema library). Any malformed field raises :class:`~verify.errors.InvalidFile`
naming the file, the field as a path (``claims[3].wall_time``), the value found and
the expected type; the CLI turns it into exit 2. Nothing is written before a file
has been parsed completely.

JSON is read strictly: ``NaN``/``Infinity`` literals (which Python's ``json`` accepts
but JSON does not) are refused where they occur -- rnn-verify writes a non-finite
number as the string ``"nan"``, ``"inf"`` or ``"-inf"``. Strings must be valid
Unicode (no lone surrogates); nesting deeper than the parser handles is refused.
``.npz`` files are opened without pickle, and a file that is not a zip archive is
reported as "not a golden .npz".
"""

from __future__ import annotations

import io
import json
import math
import re
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from verify._validate import MAX_SEED
from verify.errors import InvalidArgument, InvalidFile
from verify.figure_spec import normalize_figure

__all__ = [
    "ArrayEntry",
    "ClaimRecord",
    "GoldenCase",
    "GoldenHeader",
    "ResultsDocument",
    "Summary",
    "load_json_file",
    "load_npz",
    "parse_golden_header",
    "parse_json_bytes",
    "parse_results",
    "read_file_bytes",
    "verify_results",
]

T = TypeVar("T")

#: largest JSON file read back (bytes): a full-profile results.json is a few MB
MAX_JSON_BYTES = 512 * 2**20
#: largest total of uncompressed arrays a golden .npz may hold (bytes)
MAX_NPZ_BYTES = 2 * 2**30
NONFINITE_STRINGS = ("nan", "inf", "-inf")
#: most digits an integer in a JSON file read back may have: a longer one is beyond float64's range (~1.8e308),
#: so no field can use it, and Python refuses to convert one of more than 4300 digits (``sys.int_info``)
MAX_JSON_INT_DIGITS = 309
_CLAIM_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}$")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]{0,199}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


# ------------------------------------------------------------------ JSON reading
class _NonFinite:
    """Stands in for a ``NaN``/``Infinity`` literal so that its place can be named."""

    def __init__(self, literal: str) -> None:
        self.literal = literal

    def __repr__(self) -> str:
        return self.literal

    def describe(self) -> str:
        return f"the literal {self.literal}"


class _HugeInt:
    """Stands in for an integer literal of more than :data:`MAX_JSON_INT_DIGITS` digits (never converted)."""

    def __init__(self, literal: str) -> None:
        self.digits = len(literal.lstrip("-"))
        self.literal = literal[:12] + "..."

    def __repr__(self) -> str:
        return f"<an integer of {self.digits} digits>"

    def describe(self) -> str:
        return f"an integer of {self.digits} digits"


def _parse_int(literal: str) -> int | _HugeInt:
    """JSON integers, bounded: one of more than :data:`MAX_JSON_INT_DIGITS` digits is kept as a placeholder
    that every field check refuses (naming the field), instead of Python's int-from-string ValueError."""
    if len(literal.lstrip("-")) > MAX_JSON_INT_DIGITS:
        return _HugeInt(literal)
    return int(literal)


def _refuse_placeholders(v: Any, file: str, path: str = "", depth: int = 0) -> None:
    """Raise InvalidFile naming the field of the first over-long integer in ``v`` (NaN literals are named by the
    schema, which knows where they may not stand)."""
    if depth > 200:
        return
    if isinstance(v, _HugeInt):
        raise InvalidFile(file, path or "(document)", v, f"an integer of at most {MAX_JSON_INT_DIGITS} digits")
    if isinstance(v, list):
        for i, x in enumerate(v):
            _refuse_placeholders(x, file, f"{path}[{i}]", depth + 1)
    elif isinstance(v, dict):
        for k, x in v.items():
            _refuse_placeholders(x, file, f"{path}.{k}" if path else str(k), depth + 1)


def parse_json_bytes(data: bytes, file: str) -> Any:
    """Decode UTF-8 JSON; a syntax error, bad UTF-8, too deep nesting or an integer of more than
    :data:`MAX_JSON_INT_DIGITS` digits raises InvalidFile (naming the file, and the field for the integer)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidFile(file, "", None, f"not UTF-8 JSON text (byte {exc.start} is not UTF-8)") from None
    try:
        doc = json.loads(text, parse_constant=_NonFinite, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise InvalidFile(file, "", None, f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise InvalidFile(file, "", None, "not usable JSON (nested too deeply)") from None
    except ValueError as exc:  # any other literal Python will not convert: never a traceback
        raise InvalidFile(file, "", None, f"not usable JSON ({exc})") from None
    _refuse_placeholders(doc, file)
    return doc


def load_json_file(path: Path | str, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """Read and decode a JSON file (no schema); missing, unreadable or oversized files raise InvalidFile."""
    return parse_json_bytes(read_file_bytes(path, max_bytes), str(Path(path)))


def read_file_bytes(path: Path | str, max_bytes: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of a file rnn-verify reads back; missing, unreadable or oversized files raise InvalidFile."""
    p = Path(path)
    try:
        if p.is_dir():
            raise InvalidFile(str(p), "", None, "is a folder, where a file is expected")
        if not p.is_file():
            raise InvalidFile(str(p), "", None, "no such file" if not p.exists() else "is not a regular file")
        size = p.stat().st_size
        if size > max_bytes:
            raise InvalidFile(
                str(p),
                "",
                None,
                f"too large: {size} bytes, more than the {max_bytes} a file rnn-verify writes can have",
            )
        data = p.read_bytes()
    except OSError as exc:
        raise InvalidFile(str(p), "", None, f"cannot be read ({exc.strerror or exc})") from None
    return data


# ------------------------------------------------------------------ field access
@dataclass(frozen=True)
class At:
    """Where a value sits: the file and the field path inside it."""

    file: str
    path: str = ""

    def key(self, k: str) -> At:
        return At(self.file, f"{self.path}.{k}" if self.path else k)

    def idx(self, i: int) -> At:
        return At(self.file, f"{self.path}[{i}]")

    def fail(self, value: Any, expected: str) -> InvalidFile:
        if isinstance(value, _NonFinite):
            expected += f" (found the literal {value.literal}, which is not JSON; rnn-verify writes 'nan'/'inf')"
        return InvalidFile(self.file, self.path or "(document)", _show(value), expected)


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


def _show(value: Any) -> Any:
    if isinstance(value, dict):
        return f"object with keys {sorted(map(str, value))[:6]}"
    if isinstance(value, list):
        return f"list of {len(value)} items"
    return value


def _typename(value: Any) -> str:
    """The JSON type of ``value`` in words (never an internal class name)."""
    if isinstance(value, (_NonFinite, _HugeInt)):
        return value.describe()
    names = {type(None): "null", bool: "true/false", int: "integer", float: "number", str: "string", list: "list",
             dict: "object"}  # fmt: skip
    return names.get(type(value), "a value that is not JSON")


def obj(at: At, v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise at.fail(v, f"a JSON object (found {_typename(v)})")
    return v


def lst(at: At, v: Any, max_len: int = 10_000_000) -> list[Any]:
    if not isinstance(v, list):
        raise at.fail(v, f"a JSON list (found {_typename(v)})")
    if len(v) > max_len:
        raise at.fail(v, f"a list of at most {max_len} items")
    return v


def field(at: At, d: Mapping[str, Any], k: str, required: bool = False) -> tuple[At, Any]:
    where = at.key(k)
    if k not in d:
        if required:
            raise InvalidFile(at.file, where.path, "<missing>", "a required field")
        return where, MISSING
    return where, d[k]


def string(at: At, v: Any, *, nonempty: bool = False, pattern: re.Pattern[str] | None = None) -> str:
    if not isinstance(v, str):
        raise at.fail(v, f"a string (found {_typename(v)})")
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        raise at.fail(v, "a string of valid Unicode (it holds a lone surrogate)") from None
    if nonempty and not v:
        raise at.fail(v, "a non-empty string")
    if pattern is not None and not pattern.match(v):
        raise at.fail(v, f"a string matching {pattern.pattern}")
    return v


def choice(at: At, v: Any, options: tuple[str, ...]) -> str:
    if not isinstance(v, str) or v not in options:
        raise at.fail(v, f"one of {list(options)}")
    return v


def integer(at: At, v: Any, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise at.fail(v, f"an integer (found {_typename(v)})")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f"in [{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]"
        raise at.fail(v, f"an integer {rng}")
    return v


def number(at: At, v: Any, lo: float | None = None, hi: float | None = None, *, open_lo: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise at.fail(v, f"a number (found {_typename(v)})")
    try:
        f = float(v)
    except OverflowError:
        raise at.fail(v, "a finite number") from None
    if not math.isfinite(f):
        raise at.fail(v, "a finite number")
    if lo is not None and (f < lo or (open_lo and f == lo)):
        raise at.fail(v, f"a number {'>' if open_lo else '>='} {lo}")
    if hi is not None and f > hi:
        raise at.fail(v, f"a number <= {hi}")
    return f


def measured(at: At, v: Any) -> float | str | None:
    """A measured value as :func:`verify.verdict.to_jsonable` writes it: a finite number, null or 'nan'/'inf'/'-inf'."""
    if v is None:
        return None
    if isinstance(v, str) and v in NONFINITE_STRINGS:
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)) or isinstance(v, _NonFinite):
        raise at.fail(v, "a finite number, null, or one of the strings 'nan', 'inf', '-inf'")
    return number(at, v)


def optional(at: At, v: Any, parse: Callable[[At, Any], T]) -> T | None:
    return None if v is None else parse(at, v)


def str_list(at: At, v: Any) -> tuple[str, ...]:
    return tuple(string(at.idx(i), x) for i, x in enumerate(lst(at, v)))


def json_value(at: At, v: Any, depth: int = 0) -> None:
    """Free-form JSON (a check's ``data``, unknown fields): no NaN literal, valid strings, bounded depth."""
    if depth > 200:
        raise at.fail("...", "JSON nested at most 200 levels deep")
    if v is None or isinstance(v, (bool, int)):
        return
    if isinstance(v, float):
        if not math.isfinite(v):
            raise at.fail(v, "a finite number")
        return
    if isinstance(v, str):
        string(at, v)
        return
    if isinstance(v, list):
        for i, x in enumerate(v):
            json_value(at.idx(i), x, depth + 1)
        return
    if isinstance(v, dict):
        for k, x in v.items():
            json_value(at.key(str(k)), x, depth + 1)
        return
    raise at.fail(v, "a JSON value (a finite number, string, list, object, true/false or null)")


def _get(at: At, d: Mapping[str, Any], k: str, parse: Callable[[At, Any], T], default: T) -> T:
    where, v = field(at, d, k)
    return default if v is MISSING else parse(where, v)


# ------------------------------------------------------------ results document
RESULTS_SCHEMA = "rnn-verify.results"
RESULTS_SCHEMA_VERSION = 1
VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE", "SKIPPED")
_PROFILES = ("ci", "full")


@dataclass(frozen=True)
class Summary:
    """The verdict counts of a results document."""

    PASS: int
    FAIL: int
    INCONCLUSIVE: int
    SKIPPED: int
    total: int

    def count(self, verdict: str) -> int:
        return int(getattr(self, verdict))


@dataclass(frozen=True)
class ClaimRecord:
    """The typed fields of one claim record (see :mod:`verify.report.document` for the layout)."""

    id: str
    verdict: str
    summary: str
    reason: str | None
    statistic: float | str | None
    threshold: float | str | None
    wall_time: float | None
    seed: int | None
    figures: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class ResultsDocument:
    """A parsed ``results.json``: typed summary and claims, and ``document``, the validated dict to render.

    ``document`` is the file's object with every figure replaced by its normalised
    form (:func:`verify.figure_spec.normalize_figure`), so renderers only see
    validated values.
    """

    file: str
    run: dict[str, Any]
    summary: Summary
    claims: tuple[ClaimRecord, ...]
    document: dict[str, Any]


_RUN_FIELDS: dict[str, Callable[[At, Any], Any]] = {
    "command": string,
    "profile": lambda at, v: choice(at, v, _PROFILES),
    "seed": lambda at, v: optional(at, v, lambda a, x: integer(a, x, 0)),
    "device_requested": string,
    "device": string,
    "dtype": string,
    "workers": lambda at, v: integer(at, v, 1),
    "fail_on": lambda at, v: choice(at, v, ("fail", "inconclusive")),
    "started": string,
    "wall_time": lambda at, v: number(at, v, 0.0),
    "exit_code": lambda at, v: integer(at, v, 0, 255),
    "source": string,
    "torch_version": string,
    "python_version": string,
    "platform": string,
    "cuda_available": lambda at, v: _boolean(at, v),
    "mutant": lambda at, v: optional(at, v, string),
    "impl_only_left_out": lambda at, v: str_list(at, v),
    "implementations": lambda at, v: _sources(at, v),
    "stated_false_fail_rate": lambda at, v: number(at, v, 0.0),
}


def _str_map(at: At, v: Any) -> dict[str, str]:
    """An object of strings (a claim's ``implementation``: ``family.field`` -> what ran there)."""
    d = obj(at, v)
    for k, x in d.items():
        string(at.key(str(k)), x)
    return d


def _sources(at: At, v: Any) -> list[dict[str, str]]:
    """``run.implementations``: the parts given with ``--impl`` (name, spec, module, file, sha256: strings)."""
    out = []
    for i, s in enumerate(lst(at, v)):
        where = at.idx(i)
        d = obj(where, s)
        for k in ("name", "spec", "module", "file", "sha256"):
            string(*field(where, d, k, required=True))
        out.append(d)
    return out


_RECORD_STRINGS = (
    "title",
    "family",
    "paper",
    "citation",
    "equation",
    "statement",
    "math",
    "kind",
    "check",
    "comparison",
    "dtype",
    "device",
    "torch_version",
    "python_version",
    "rerun",
    "source",
)
_RECORD_STR_LISTS = ("profiles", "assumptions", "errata", "findings", "figure_problems", "references")
_RECORD_MEASURED = ("statistic", "threshold", "alpha", "beta", "delta")
_RECORD_KNOWN = frozenset(
    {"id", "verdict", "summary", "reason", "samples_planned", "samples_used", "seed", "wall_time"}
    | {"controls", "data", "figures", "implementation"}
    | set(_RECORD_STRINGS)
    | set(_RECORD_STR_LISTS)
    | set(_RECORD_MEASURED)
)


def _boolean(at: At, v: Any) -> bool:
    if not isinstance(v, bool):
        raise at.fail(v, f"true or false (found {_typename(v)})")
    return v


def _figure(at: At, v: Any) -> dict[str, Any]:
    spec = obj(at, v)
    for k in ("title", "xlabel", "ylabel", "caption"):
        where, x = field(at, spec, k)
        if x is not MISSING and not (k != "title" and x is None):
            string(where, x)
    json_value(at, spec)
    try:
        return normalize_figure(spec)
    except InvalidArgument as exc:
        raise at.fail(v, f"a figure spec ({exc.argument}: {exc.reason})") from None


def _control(at: At, v: Any) -> None:
    d = obj(at, v)
    for k in ("name", "expected", "observed"):
        string(*field(at, d, k, required=True))
    where, detail = field(at, d, "detail")
    if detail is not MISSING and detail is not None:
        string(where, detail)
    json_value(at, d)


def _record(at: At, v: Any, seen: set[str]) -> tuple[ClaimRecord, dict[str, Any]]:
    d = obj(at, v)
    cid = string(*field(at, d, "id", required=True), pattern=_CLAIM_ID)
    if cid in seen:
        raise at.key("id").fail(cid, "a claim id not used by an earlier record (duplicate claim id)")
    seen.add(cid)
    verdict = choice(*field(at, d, "verdict", required=True), VERDICTS)
    summary = string(*field(at, d, "summary", required=True))
    for k in _RECORD_STRINGS:
        _get(at, d, k, string, "")
    for k in _RECORD_STR_LISTS:
        _get(at, d, k, lambda a, x: optional(a, x, str_list), None)
    values = {k: _get(at, d, k, measured, None) for k in _RECORD_MEASURED}
    reason = _get(at, d, "reason", lambda a, x: optional(a, x, string), None)
    for k in ("samples_planned", "samples_used"):
        _get(at, d, k, lambda a, x: optional(a, x, lambda b, y: integer(b, y, 0)), None)
    seed = _get(at, d, "seed", lambda a, x: optional(a, x, lambda b, y: integer(b, y, 0)), None)
    wall = _get(at, d, "wall_time", lambda a, x: number(a, x, 0.0), None)
    where, controls = field(at, d, "controls")
    if controls is not MISSING and controls is not None:
        for i, c in enumerate(lst(where, controls)):
            _control(where.idx(i), c)
    where, impl = field(at, d, "implementation")
    if impl is not MISSING and impl is not None:
        _str_map(where, impl)
    where, data = field(at, d, "data")
    if data is not MISSING and data is not None:
        json_value(where, obj(where, data))
    where, figs_in = field(at, d, "figures")
    figs: tuple[dict[str, Any], ...] = ()
    if figs_in is not MISSING and figs_in is not None:
        figs = tuple(_figure(where.idx(j), f) for j, f in enumerate(lst(where, figs_in)))
    for k, x in d.items():
        if k not in _RECORD_KNOWN:
            json_value(at.key(str(k)), x)
    rec = ClaimRecord(cid, verdict, summary, reason, values["statistic"], values["threshold"], wall, seed, figs)
    clean = dict(d)
    if figs_in is not MISSING:
        clean["figures"] = list(figs)
    return rec, clean


def parse_results(doc: Any, file: str = "results.json") -> ResultsDocument:
    """Parse a results document field by field; the first malformed field raises InvalidFile.

    Checked: ``schema``/``schema_version`` first (so that another JSON file is named as
    such), then ``tool``, ``run`` (known fields typed, others any JSON), ``summary``
    (required: the four verdict counts and ``total``, equal to the records' counts),
    ``claims`` (each record: ``id``, ``verdict`` and ``summary`` required, every other
    known field typed, ``figures`` valid figure specs, ``data`` free JSON) and the
    run-level ``figures``.
    """
    at = At(file)
    d = obj(at, doc)
    _results_schema(at, d)
    run = _results_tool_and_run(at, d)
    where, claims_in = field(at, d, "claims", required=True)
    seen: set[str] = set()
    parsed = [_record(where.idx(i), r, seen) for i, r in enumerate(lst(where, claims_in))]
    where, figs_in = field(at, d, "figures")
    figs: list[dict[str, Any]] = []
    if figs_in is not MISSING and figs_in is not None:
        figs = [_figure(where.idx(j), f) for j, f in enumerate(lst(where, figs_in))]
    counts = _results_summary(at, d, [r for r, _ in parsed])
    for k, x in d.items():
        if k not in ("schema", "schema_version", "tool", "run", "claims", "figures", "summary"):
            json_value(at.key(str(k)), x)
    clean = dict(d)
    clean["claims"] = [c for _, c in parsed]
    if figs_in is not MISSING:
        clean["figures"] = figs
    return ResultsDocument(file, run, Summary(**counts), tuple(r for r, _ in parsed), clean)


def _results_schema(at: At, d: dict[str, Any]) -> None:
    """``schema`` and ``schema_version``: the ones this rnn-verify reads (another JSON file is named as such)."""
    where, schema = field(at, d, "schema", required=True)
    if schema != RESULTS_SCHEMA:
        raise where.fail(schema, f"{RESULTS_SCHEMA!r} (this is not an rnn-verify results.json)")
    where, version = field(at, d, "schema_version", required=True)
    if isinstance(version, bool) or version != RESULTS_SCHEMA_VERSION:
        raise where.fail(
            version,
            f"schema_version {RESULTS_SCHEMA_VERSION}, the one this rnn-verify reads; re-run the claims to get a "
            "matching file",
        )


def _results_tool_and_run(at: At, d: dict[str, Any]) -> dict[str, Any]:
    """``tool`` (name, version) and ``run`` (known fields typed, others any JSON); returns the run block."""
    where, tool = field(at, d, "tool")
    if tool is not MISSING:
        t = obj(where, tool)
        for k in ("name", "version"):
            _get(where, t, k, string, "")
        json_value(where, t)
    where, run_in = field(at, d, "run", required=True)
    run = obj(where, run_in)
    for k, x in run.items():
        parse = _RUN_FIELDS.get(k)
        if parse is not None:
            parse(where.key(k), x)
        else:
            json_value(where.key(str(k)), x)
    return run


def _results_summary(at: At, d: dict[str, Any], records: list[ClaimRecord]) -> dict[str, int]:
    """``summary``: the four verdict counts and ``total``, each equal to the count in the claim records."""
    where, summ_in = field(at, d, "summary", required=True)
    sd = obj(where, summ_in)
    counts = {k: integer(*field(where, sd, k, required=True), 0) for k in (*VERDICTS, "total")}
    actual = {v: sum(r.verdict == v for r in records) for v in VERDICTS}
    actual["total"] = len(records)
    if counts != actual:
        bad = next(k for k in counts if counts[k] != actual[k])
        raise where.key(bad).fail(
            counts[bad],
            f"{actual[bad]}, the count in the claim records (the verdict counts do not match; edited file?)",
        )
    return counts


# ------------------------------------------------ results document: consistency
#: comparisons whose verdict is recomputed from the statistic and the threshold (``statistic OP threshold``)
_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<=": lambda s, t: s <= t,
    "<": lambda s, t: s < t,
    ">=": lambda s, t: s >= t,
    ">": lambda s, t: s > t,
    "|z| <=": lambda s, t: abs(s) <= t,
}


def _as_float(v: Any) -> float | None:
    """A measured value as written by :func:`verify.verdict.to_jsonable` (a number or 'nan'/'inf'/'-inf')."""
    if v is None:
        return None
    return float(v)  # parse_results admitted only numbers and the three strings


def _pytest_verdict(rec: Mapping[str, Any]) -> tuple[str, str] | None:
    """The verdict the pytest plugin derives from a user claim's test outcomes (``data.tests``), and the counts in
    words; None for a record that is not such a claim."""
    data = rec.get("data")
    tests = data.get("tests") if isinstance(data, dict) else None
    if rec.get("source") != "pytest" or not isinstance(tests, list) or not tests:
        return None
    outcomes = [t.get("outcome") if isinstance(t, dict) else None for t in tests]
    n = {o: outcomes.count(o) for o in ("passed", "failed", "skipped")}
    verdict = "FAIL" if n["failed"] else "PASS" if n["passed"] else "SKIPPED"
    return verdict, f"{n['passed']} passed, {n['failed']} failed, {n['skipped']} skipped"


def _check_record(at: At, rec: Mapping[str, Any]) -> None:
    """One claim record: its verdict against what it stores (see :func:`verify_results`)."""
    verdict = rec["verdict"]
    where = at.key("verdict")
    if verdict in ("SKIPPED", "INCONCLUSIVE") and not rec.get("reason"):
        raise at.key("reason").fail(rec.get("reason"), f"the reason of a {verdict} claim (every {verdict} says why)")
    by_tests = _pytest_verdict(rec)
    if by_tests is not None:  # a user's pytest claim: decided by its tests, its statistic is informative only
        if verdict != by_tests[0]:
            raise where.fail(verdict, f"{by_tests[0]}, the verdict of its tests in data.tests ({by_tests[1]})")
        return
    if verdict != "PASS":  # a FAIL or INCONCLUSIVE may have other causes than its statistic: not recomputed
        return
    for j, c in enumerate(rec.get("controls") or ()):
        if c["observed"] != c["expected"]:
            raise where.fail(
                verdict,
                f"not PASS: its control {c['name']!r} ({at.key('controls').idx(j).path}) was expected to come out "
                f"{c['expected']} but came out {c['observed']}, and a check cannot PASS then (edited file?)",
            )
    stat, thr, comp = rec.get("statistic"), rec.get("threshold"), rec.get("comparison") or "<="
    s, t = _as_float(stat), _as_float(thr)
    if s is not None and not math.isfinite(s):
        raise where.fail(verdict, f"not PASS: its statistic is {stat} ({at.key('statistic').path}); a PASS needs a "
                         "finite statistic (edited file?)")  # fmt: skip
    if s is None or t is None:
        return  # nothing to recompute: a check that states no statistic or no threshold (its controls were checked)
    if math.isnan(t):
        raise where.fail(verdict, f"not PASS: its threshold is nan ({at.key('threshold').path}); nothing passes it")
    holds: bool | None = None
    if comp in _COMPARISONS:
        holds = _COMPARISONS[comp](s, t)
    elif comp == "CI contains":
        data = rec.get("data")
        ci = data.get("ci") if isinstance(data, dict) else None
        if isinstance(ci, list) and len(ci) == 2 and all(isinstance(x, (int, float)) for x in ci):
            holds = float(ci[0]) <= t <= float(ci[1])
            comp = f"CI [{ci[0]}, {ci[1]}] (data.ci) contains"
    if holds is False:
        raise where.fail(
            verdict,
            f"not PASS: recomputed from its statistic, threshold and comparison, '{stat} {comp} {thr}' does not hold "
            "(edited file?)",
        )


def _check_exit_code(at: At, doc: Mapping[str, Any], summary: Summary) -> None:
    """``run.exit_code`` against the claims and ``run.fail_on`` (see :func:`verify_results`)."""
    run = doc["run"]
    if "exit_code" not in run:
        return
    code, fail_on = run["exit_code"], run.get("fail_on", "fail")
    bad = summary.FAIL + (summary.INCONCLUSIVE if fail_on == "inconclusive" else 0)
    expected = 1 if bad else 0
    if code == expected:
        return
    if code == 1 and expected == 0 and run.get("implementations") and not _user_code_checked(doc["claims"]):
        return  # the gate's rule: with --impl, a run that checked nothing of the user's code exits 1
    raise (
        at.key("run")
        .key("exit_code")
        .fail(
            code,
            f"{expected}, the exit code its claims give ({summary.FAIL} FAIL, {summary.INCONCLUSIVE} INCONCLUSIVE, "
            f"fail_on {fail_on}) (edited file?)",
        )
    )


def _user_code_checked(claims: list[Mapping[str, Any]]) -> bool:
    """True if a claim that did not SKIP ran on a part given with ``--impl`` (its ``implementation`` says so)."""
    for rec in claims:
        impl = rec.get("implementation")
        if rec["verdict"] != "SKIPPED" and isinstance(impl, dict):
            if any(str(v).startswith("--impl ") for v in impl.values()):
                return True
    return False


def verify_results(parsed: ResultsDocument) -> None:
    """Check that a parsed results document agrees with itself; the first disagreement raises InvalidFile naming
    the field (``claims[3].verdict``, ``run.exit_code``). For a file read back from disk (``rnn-verify report``).

    Recomputed or checked, per claim record:

    * **PASS**: every control came out as expected (``observed == expected``; a check cannot PASS otherwise,
      :class:`verify.verdict.CheckResult`); the statistic is not ``nan``/``inf``; the threshold is not ``nan``; and
      where both are numbers the comparison is recomputed: ``statistic OP threshold`` for ``<=``, ``<``, ``>=``,
      ``>``, ``|statistic| <= threshold`` for ``|z| <=``, and for ``CI contains`` ``lo <= threshold <= hi`` with
      the interval the check stored as ``data.ci`` (where it stored one).
      Not recomputable, so only the fields above are checked: a PASS without a statistic or a threshold (checks
      that decide on several numbers), the comparison ``grows`` and any other wording.
    * **FAIL** and **INCONCLUSIVE**: not recomputed (a check FAILs for other reasons than its statistic too --
      a control, a crash, a second criterion); an INCONCLUSIVE or SKIPPED claim must state its ``reason``.
    * a user's **pytest** claim (``source`` "pytest" with ``data.tests``): the verdict must be the one of its test
      outcomes (a failed test: FAIL; else a passed one: PASS; else SKIPPED); its statistic is informative only.

    Per document: ``summary`` equals the counts of the verdicts (:func:`parse_results` checks it), and
    ``run.exit_code`` (where present) is the code those verdicts give under ``run.fail_on`` -- 1 with a FAIL
    (or an INCONCLUSIVE under ``fail_on inconclusive``), else 0; a 1 without either is accepted only where
    ``run.implementations`` is given and no claim that ran used a part given with ``--impl`` (the gate's rule that
    a run must not pass on nothing).

    These checks catch a verdict flipped alone, or with its counts and exit code; they cannot catch a file whose
    numbers were edited to match. The report folder's digest (:func:`verify.files.recorded_digest`) catches
    accidental edits of any byte; neither is a signature.
    """
    at = At(parsed.file)
    for i, rec in enumerate(parsed.document["claims"]):
        _check_record(at.key("claims").idx(i), rec)
    _check_exit_code(at, parsed.document, parsed.summary)


# --------------------------------------------------------------- golden header
GOLDEN_FORMAT = "rnn-verify.golden"
GOLDEN_FORMAT_VERSION = 1
#: truncation lengths a golden file may ask for
MAX_K = 10_000
MAX_KS = 32
_MAX_SIZE = 4096
_LOSSES = ("squared-error", "cross-entropy")
_READOUTS = ("linear", "select")


@dataclass(frozen=True)
class ArrayEntry:
    """One array of a golden case as the header describes it."""

    shape: tuple[int, ...]
    sha256: str
    meaning: str
    provider: str | None


@dataclass(frozen=True)
class GoldenCase:
    """One problem of a golden file: its spec (for :func:`verify.oracles.golden.build_problem`) and its arrays."""

    name: str
    problem: dict[str, Any]
    arrays: dict[str, ArrayEntry]


@dataclass(frozen=True)
class GoldenHeader:
    """A parsed golden header; ``raw`` is the JSON object it came from."""

    file: str
    seed: int
    ks: tuple[int, ...]
    check_rtol: float
    cases: tuple[GoldenCase, ...]
    raw: dict[str, Any]


def _size(at: At, v: Any) -> int:
    return integer(at, v, 1, _MAX_SIZE)


def _problem_spec(at: At, v: Any) -> dict[str, Any]:
    d = obj(at, v)
    where, cell_in = field(at, d, "cell", required=True)
    cell = obj(where, cell_in)
    kind = string(*field(where, cell, "kind", required=True), nonempty=True)
    _size(*field(where, cell, "n", required=True))
    _size(*field(where, cell, "p" if kind == "influence-balancing" else "d", required=True))
    where, ro_in = field(at, d, "readout", required=True)
    ro = obj(where, ro_in)
    rkind = choice(*field(where, ro, "kind", required=True), _READOUTS)
    if rkind == "linear":
        _size(*field(where, ro, "in_features", required=True))
        _size(*field(where, ro, "out_features", required=True))
    else:
        w, idx = field(where, ro, "indices", required=True)
        items = lst(w, idx, _MAX_SIZE)
        if not items:
            raise w.fail(idx, "a non-empty list of state indices")
        for i, x in enumerate(items):
            integer(w.idx(i), x, 0, _MAX_SIZE - 1)
    choice(*field(at, d, "loss", required=True), _LOSSES)
    w, batch = field(at, d, "batch")
    if batch is not MISSING:
        for i, x in enumerate(lst(w, batch, 4)):
            _size(w.idx(i), x)
    w, t = field(at, d, "T")
    if t is not MISSING:
        integer(w, t, 1, 100_000)
    json_value(at, d)
    return d


def _array_entry(at: At, v: Any, is_input: bool) -> ArrayEntry:
    d = obj(at, v)
    w, shape_in = field(at, d, "shape", required=True)
    shape = tuple(integer(w.idx(i), x, 0, 2**31) for i, x in enumerate(lst(w, shape_in, 8)))
    sha = string(*field(at, d, "sha256", required=True), pattern=_SHA256)
    meaning = _get(at, d, "meaning", string, "")
    provider = _get(at, d, "provider", lambda a, x: optional(a, x, string), None)
    if not is_input and provider is None:
        raise InvalidFile(at.file, at.key("provider").path, "<missing>", "the provider that computes this quantity")
    return ArrayEntry(shape, sha, meaning, provider)


def _golden_case(at: At, v: Any, inputs: tuple[str, ...], seen: set[str]) -> GoldenCase:
    d = obj(at, v)
    name = string(*field(at, d, "name", required=True), pattern=_NAME)
    if name in seen:
        raise at.key("name").fail(name, "a case name not used by an earlier case")
    seen.add(name)
    problem = _problem_spec(*field(at, d, "problem", required=True))
    w, arrays_in = field(at, d, "arrays", required=True)
    arr = obj(w, arrays_in)
    for q in inputs:
        if q not in arr:
            raise InvalidFile(at.file, w.key(q).path, "<missing>", f"the entry of input array {q!r}")
    arrays: dict[str, ArrayEntry] = {}
    for q, e in arr.items():
        string(w, q, pattern=_NAME)
        arrays[q] = _array_entry(w.key(q), e, q in inputs)
    for k, x in d.items():
        if k not in ("name", "problem", "arrays"):
            json_value(at.key(str(k)), x)
    return GoldenCase(name, problem, arrays)


def parse_golden_header(
    doc: Any, file: str, inputs: tuple[str, ...] = ("theta", "inputs", "targets", "s0")
) -> GoldenHeader:
    """Parse a golden header field by field (format first); the first malformed field raises InvalidFile."""
    at = At(file)
    d = obj(at, doc)
    where, fmt = field(at, d, "format", required=True)
    if fmt != GOLDEN_FORMAT:
        raise where.fail(fmt, f"{GOLDEN_FORMAT!r} (this is not an rnn-verify golden file)")
    where, version = field(at, d, "format_version", required=True)
    if isinstance(version, bool) or version != GOLDEN_FORMAT_VERSION:
        raise where.fail(version, f"format_version {GOLDEN_FORMAT_VERSION}, the one this rnn-verify reads")
    seed = integer(*field(at, d, "seed", required=True), 0, MAX_SEED)
    where, ks_in = field(at, d, "ks", required=True)
    ks = tuple(integer(where.idx(i), k, 1, MAX_K) for i, k in enumerate(lst(where, ks_in, MAX_KS)))
    if not ks:
        raise where.fail(ks_in, "a non-empty list of truncation lengths")
    rtol = number(*field(at, d, "check_rtol", required=True), 0.0, 1.0, open_lo=True)
    where, cases_in = field(at, d, "cases", required=True)
    cases_l = lst(where, cases_in, 1000)
    if not cases_l:
        raise where.fail(cases_in, "a non-empty list of cases")
    seen: set[str] = set()
    cases = tuple(_golden_case(where.idx(i), c, inputs, seen) for i, c in enumerate(cases_l))
    for k, x in d.items():
        if k not in ("format", "format_version", "seed", "ks", "check_rtol", "cases"):
            json_value(at.key(str(k)), x)
    return GoldenHeader(file, seed, ks, rtol, cases, d)


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """The path of the first place where two JSON values differ (``None`` when equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            sub = f"{path}.{k}" if path else k
            if k not in a or k not in b:
                return sub
            found = first_difference(a[k], b[k], sub)
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        return None if len(a) == len(b) else f"{path}[{min(len(a), len(b))}]"
    same = type(a) is type(b) and a == b
    return None if same else (path or "(document)")


# ------------------------------------------------------------------ golden .npz
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def load_npz(path: Path | str, max_bytes: int = MAX_NPZ_BYTES) -> dict[str, np.ndarray]:
    """Every array of a ``.npz`` file, read without pickle; anything else raises InvalidFile.

    "Not a golden .npz" for a file that is not a zip archive (whatever its bytes),
    a damaged archive, a member that is not a ``.npy`` array or holds Python objects,
    or more than ``max_bytes`` of uncompressed data.
    """
    p = Path(path)
    file = str(p)
    try:
        if p.is_dir():
            raise InvalidFile(file, "", None, "is a folder, where a file is expected")
        if not p.is_file():
            raise InvalidFile(file, "", None, "no such file")
        size = p.stat().st_size
        if size > max_bytes + 2**20:  # bounded before reading: its arrays could not fit max_bytes anyway
            raise InvalidFile(file, "", None, f"too large: {size} bytes, more than a golden .npz holds ({max_bytes})")
        data = p.read_bytes()
    except OSError as exc:
        raise InvalidFile(file, "", None, f"cannot be read ({exc.strerror or exc})") from None
    if not data.startswith(_ZIP_MAGIC):
        raise InvalidFile(
            file, "", None, "not a golden .npz: not a zip archive (a golden .npz is written by `rnn-verify golden`)"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise InvalidFile(file, "", None, f"not a golden .npz: the zip archive is damaged ({exc})") from None
    total = sum(i.file_size for i in infos)
    if total > max_bytes:
        raise InvalidFile(file, "", None, f"not a golden .npz: it unpacks to {total} bytes, more than {max_bytes}")
    for info in infos:
        if not info.filename.endswith(".npy"):
            raise InvalidFile(file, info.filename, "(zip member)", "only .npy arrays in a golden .npz")
    arrays: dict[str, np.ndarray] = {}
    try:
        z = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as exc:  # numpy raises several types for a damaged archive
        raise InvalidFile(file, "", None, f"not a golden .npz: numpy cannot open it ({type(exc).__name__})") from None
    with z:
        for key in z.files:
            try:
                a = z[key]
            except ValueError as exc:
                why = "it holds Python objects" if "pickle" in str(exc) else str(exc)
                raise InvalidFile(file, key, "(array)", f"a plain numeric array ({why}; not loaded)") from None
            except Exception as exc:  # a damaged member: CRC error, truncated data, bad .npy header
                raise InvalidFile(file, key, "(array)", f"a readable array ({type(exc).__name__}: {exc})") from None
            if a.dtype.hasobject:  # pragma: no cover - allow_pickle=False already refuses these
                raise InvalidFile(file, key, str(a.dtype), "a plain numeric array")
            arrays[key] = a
    return arrays
