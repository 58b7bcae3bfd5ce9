"""verify.schema: every field read from disk is checked; the error names the file, the field and the expected type."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from verify.errors import InvalidArgument, InvalidFile
from verify.report import claim_record, run_document
from verify.schema import load_npz, parse_golden_header, parse_json_bytes, parse_results, verify_results
from verify.verdict import CheckResult, Control, Verdict


def _doc() -> dict[str, Any]:
    res = CheckResult(
        "reference.adjoint",
        Verdict.PASS,
        "ok",
        statistic=1e-16,
        threshold=1e-14,
        seed=0,
        controls=(Control("mutant", "FAIL", "FAIL"),),
        data={"comparisons": [{"error": 1e-16, "budget": 1e-14}]},
        findings=("a finding",),
        wall_time=0.5,
    )
    skipped = CheckResult("device.cuda-parity", Verdict.SKIPPED, "not run", reason="no CUDA")
    doc = run_document([claim_record(res), claim_record(skipped)], {"profile": "ci", "seed": 0, "workers": 1})
    return json.loads(json.dumps(doc))


def test_a_written_document_parses() -> None:
    parsed = parse_results(_doc(), "r.json")
    assert parsed.summary.PASS == 1 and parsed.summary.SKIPPED == 1 and parsed.summary.total == 2
    assert [c.id for c in parsed.claims] == ["reference.adjoint", "device.cuda-parity"]
    assert parsed.claims[0].wall_time == 0.5 and parsed.claims[1].reason == "no CUDA"


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    *head, last = path
    cur: Any = doc
    for k in head:
        cur = cur[k]
    if value is _DELETE:
        del cur[last]
    else:
        cur[last] = value


_DELETE = object()

#: (where, new value, the field path the error must name, a word of the expected type) -- issue 12 case 3 and more
RESULTS_CASES = [
    (("claims", 0, "references"), True, "claims[0].references", "list"),
    (("claims", 0, "citation"), 3, "claims[0].citation", "string"),
    (("claims", 0, "wall_time"), "12s", "claims[0].wall_time", "number"),
    (("claims", 0, "controls"), "FAIL", "claims[0].controls", "list"),
    (("claims", 0, "controls", 0, "name"), 3, "claims[0].controls[0].name", "string"),
    (("claims", 0, "findings"), 3, "claims[0].findings", "list"),
    (("claims", 0, "findings", 0), None, "claims[0].findings[0]", "string"),
    (("claims", 0, "id"), 7, "claims[0].id", "string"),
    (("claims", 0, "id"), "../../x", "claims[0].id", "matching"),
    (("claims", 1, "verdict"), "MAYBE", "claims[1].verdict", "one of"),
    (("claims", 0, "summary"), _DELETE, "claims[0].summary", "required"),
    (("claims", 0, "statistic"), "small", "claims[0].statistic", "finite number"),
    (("claims", 0, "samples_used"), -1, "claims[0].samples_used", "integer"),
    (("claims", 0, "seed"), 1.5, "claims[0].seed", "integer"),
    (("claims", 0, "title"), ["x"], "claims[0].title", "string"),
    (("claims", 0, "data"), "x", "claims[0].data", "object"),
    (("claims", 0, "figures"), {}, "claims[0].figures", "list"),
    (("claims", 0, "figures", 0, "caption"), 5, "claims[0].figures[0].caption", "string"),
    (("claims", 0, "figures", 0, "series"), [], "claims[0].figures[0]", "figure spec"),
    (("claims",), {}, "claims", "list"),
    (("summary",), None, "summary", "object"),
    (("summary",), _DELETE, "summary", "required"),
    (("summary", "PASS"), "1", "summary.PASS", "integer"),
    (("summary", "PASS"), 2, "summary.PASS", "count"),
    (("run",), [], "run", "object"),
    (("run", "workers"), "two", "run.workers", "integer"),
    (("run", "fail_on"), "never", "run.fail_on", "one of"),
    (("run", "wall_time"), -1, "run.wall_time", ">= 0"),
    (("tool",), "rnn-verify", "tool", "object"),
    (("figures",), "table", "figures", "list"),
    (("schema_version",), True, "schema_version", "schema_version 1"),
]


@pytest.mark.parametrize("where, value, field, expected", RESULTS_CASES)
def test_malformed_results_field_is_named(where: tuple[Any, ...], value: Any, field: str, expected: str) -> None:
    doc = _doc()
    _set(doc, where, value)
    with pytest.raises(InvalidFile) as exc:
        parse_results(doc, "some/results.json")
    assert exc.value.file == "some/results.json" and exc.value.field == field
    assert expected in exc.value.expected
    assert str(exc.value).startswith(f"some/results.json: field {field} = ")
    assert isinstance(exc.value, InvalidArgument)  # the CLI's exit 2


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_literals_are_named_where_they_are(literal: str) -> None:
    text = json.dumps(_doc()).replace('"statistic": 1e-16', f'"statistic": {literal}')
    with pytest.raises(InvalidFile, match="not JSON") as exc:
        parse_results(parse_json_bytes(text.encode(), "r.json"), "r.json")
    assert exc.value.field == "claims[0].statistic"
    deep = json.dumps(_doc()).replace('"budget": 1e-14', f'"budget": {literal}')
    with pytest.raises(InvalidFile) as exc2:
        parse_results(parse_json_bytes(deep.encode(), "r.json"), "r.json")
    assert exc2.value.field == "claims[0].data.comparisons[0].budget"


def test_non_finite_values_as_written_by_the_tool_are_accepted() -> None:
    doc = _doc()
    doc["claims"][0]["statistic"] = "nan"
    doc["claims"][0]["threshold"] = "inf"
    assert parse_results(doc, "r.json").claims[0].statistic == "nan"


@pytest.mark.parametrize(
    "data, words",
    [
        (b"\xff\xfe garbage", "not UTF-8"),
        (b"{not json", "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_undecodable_json_is_refused(data: bytes, words: str) -> None:
    with pytest.raises(InvalidFile, match=words):
        parse_results(parse_json_bytes(data, "r.json"), "r.json")


def test_strings_must_be_valid_unicode() -> None:
    text = json.dumps(_doc()).replace('"summary": "ok"', '"summary": "\\ud800"')
    with pytest.raises(InvalidFile, match="lone surrogate") as exc:
        parse_results(parse_json_bytes(text.encode(), "r.json"), "r.json")
    assert exc.value.field == "claims[0].summary"


# ------------------------------------------------------------------ golden header
def _header() -> dict[str, Any]:
    sha = "0" * 64
    arrays = {q: {"shape": [2], "sha256": sha, "meaning": q} for q in ("theta", "inputs", "targets", "s0")}
    arrays["gradient"] = {"shape": [2], "sha256": sha, "meaning": "g", "provider": "reference"}
    return {
        "format": "rnn-verify.golden",
        "format_version": 1,
        "seed": 0,
        "ks": [1, 2],
        "check_rtol": 1e-9,
        "cases": [
            {
                "name": "linear",
                "problem": {
                    "cell": {"kind": "linear", "n": 3, "d": 2},
                    "readout": {"kind": "linear", "in_features": 3, "out_features": 2},
                    "loss": "squared-error",
                    "batch": [],
                    "T": 6,
                },
                "arrays": arrays,
            }
        ],
    }


GOLDEN_CASES = [
    (("check_rtol",), "1e-9", "check_rtol", "number"),
    (("check_rtol",), 0, "check_rtol", "> 0"),
    (("ks",), ["1", "2"], "ks[0]", "integer"),
    (("ks",), [10**12], "ks[0]", "integer in"),
    (("ks",), [], "ks", "non-empty"),
    (("seed",), 2**70, "seed", "integer in"),
    (("cases", 0, "arrays", "theta"), _DELETE, "cases[0].arrays.theta", "input array"),
    (("cases", 0, "arrays", "gradient", "sha256"), "xyz", "cases[0].arrays.gradient.sha256", "matching"),
    (("cases", 0, "arrays", "gradient", "provider"), _DELETE, "cases[0].arrays.gradient.provider", "provider"),
    (("cases", 0, "arrays", "gradient", "shape"), [-1], "cases[0].arrays.gradient.shape[0]", "integer"),
    (("cases", 0, "problem", "cell", "n"), 10**9, "cases[0].problem.cell.n", "integer in"),
    (("cases", 0, "problem", "loss"), "hinge", "cases[0].problem.loss", "one of"),
    (("cases", 0, "problem", "readout", "kind"), 3, "cases[0].problem.readout.kind", "one of"),
    (("cases", 0, "name"), "../x", "cases[0].name", "matching"),
    (("cases",), [], "cases", "non-empty"),
    (("format",), "npz", "format", "not an rnn-verify golden file"),
]


@pytest.mark.parametrize("where, value, field, expected", GOLDEN_CASES)
def test_malformed_golden_header_field_is_named(where: tuple[Any, ...], value: Any, field: str, expected: str) -> None:
    header = _header()
    parse_golden_header(copy.deepcopy(header), "g.json")
    _set(header, where, value)
    with pytest.raises(InvalidFile) as exc:
        parse_golden_header(header, "g.json")
    assert exc.value.file == "g.json" and exc.value.field == field and expected in exc.value.expected


def test_npz_reader_refuses_what_is_not_a_plain_npz(tmp_path: Path) -> None:
    rnd = tmp_path / "random.npz"
    rnd.write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(InvalidFile, match=r"not a golden \.npz: not a zip archive") as exc:
        load_npz(rnd)
    assert "pickle" not in str(exc.value)
    pickled = tmp_path / "objects.npz"
    buf = io.BytesIO()
    np.savez(buf, a=np.array([{"x": 1}], dtype=object))
    pickled.write_bytes(buf.getvalue())
    with pytest.raises(InvalidFile, match="Python objects") as exc2:
        load_npz(pickled)
    assert exc2.value.field == "a" and "allow_pickle" not in str(exc2.value)
    damaged = tmp_path / "damaged.npz"
    np.savez(damaged, a=np.arange(100.0))
    raw = bytearray(damaged.read_bytes())
    raw[60:80] = b"\x00" * 20
    damaged.write_bytes(bytes(raw))
    with pytest.raises(InvalidFile):
        load_npz(damaged)
    with pytest.raises(InvalidFile, match="no such file"):
        load_npz(tmp_path / "absent.npz")


# ------------------------------------------------ verify_results: a document that agrees with itself
def _verified(rec: CheckResult, **run: Any) -> None:
    doc = json.loads(json.dumps(run_document([claim_record(rec)], {"profile": "ci", **run})))
    verify_results(parse_results(doc, "r.json"))


@pytest.mark.parametrize(
    ("comparison", "statistic", "threshold", "holds"),
    [
        ("<=", 1.0, 1.0, True),
        ("<=", 1.0000001, 1.0, False),
        ("<", 1.0, 1.0, False),
        ("<", 0.99, 1.0, True),
        (">=", 24.0, 24.0, True),
        (">=", 23.0, 24.0, False),
        (">", 100.0, 100.0, False),
        (">", 6.85e6, 100.0, True),
        ("|z| <=", -4.0, 4.37, True),
        ("|z| <=", -4.5, 4.37, False),
        ("<=", 1e300, float("inf"), True),
        ("grows", 5.4e8, None, True),  # not recomputable: accepted
        ("≈", 5.0, 1.0, True),  # an unknown wording: not recomputable, accepted
    ],
)
def test_a_pass_is_recomputed_from_its_statistic(
    comparison: str, statistic: float, threshold: float | None, holds: bool
) -> None:
    rec = CheckResult("x.a", Verdict.PASS, "s", statistic=statistic, threshold=threshold, comparison=comparison)
    if holds:
        _verified(rec)
    else:
        with pytest.raises(InvalidFile) as exc:
            _verified(rec)
        assert exc.value.field == "claims[0].verdict" and "does not hold" in exc.value.expected
    # a FAIL is never recomputed (a check FAILs for other reasons too), whatever its numbers
    _verified(CheckResult("x.a", Verdict.FAIL, "s", statistic=statistic, threshold=threshold, comparison=comparison))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_pass_with_a_non_finite_statistic_is_refused(value: float) -> None:
    with pytest.raises(InvalidFile) as exc:
        _verified(CheckResult("x.a", Verdict.PASS, "s", statistic=value, threshold=1.0, comparison=">="))
    assert exc.value.field == "claims[0].verdict" and "finite statistic" in exc.value.expected


def test_a_pass_with_a_control_not_caught_and_the_exit_code_are_checked() -> None:
    rec = claim_record(CheckResult("x.a", Verdict.PASS, "s", controls=(Control("m", "FAIL", "FAIL"),)))
    rec["controls"][0]["observed"] = "PASS"  # CheckResult itself refuses to build this
    doc = json.loads(json.dumps(run_document([rec], {"profile": "ci", "exit_code": 0})))
    with pytest.raises(InvalidFile, match=r"claims\[0\]\.controls\[0\]") as exc:
        verify_results(parse_results(doc, "r.json"))
    assert exc.value.field == "claims[0].verdict"
    fail = CheckResult("x.a", Verdict.FAIL, "s", reason="r")
    _verified(fail, exit_code=1)
    for code in (0, 2):
        with pytest.raises(InvalidFile) as exc:
            _verified(fail, exit_code=code)
        assert exc.value.field == "run.exit_code"
    inconclusive = CheckResult("x.a", Verdict.INCONCLUSIVE, "s", reason="r")
    _verified(inconclusive, exit_code=0)
    _verified(inconclusive, exit_code=1, fail_on="inconclusive")
    with pytest.raises(InvalidFile, match=r"run\.exit_code"):
        _verified(inconclusive, exit_code=0, fail_on="inconclusive")
