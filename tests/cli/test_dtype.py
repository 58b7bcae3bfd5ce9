"""``rnn-verify run --dtype float32`` (issue 37, item 3): a float32 implementation judged against the predicted float32
budget; without it the FAIL says where its error sits (float32 round-off) and how to declare the precision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verify.cli import main

IMPL = "rtrl=verify.examples.numpy_float32:MyFloat32RTRLUndeclared"


def _run(tmp_path: Path, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "results.json"
    code = main(["run", "--impl", IMPL, "--no-report", "-q", "--json", str(out), "--claims", "rtrl.exact", *extra])
    doc = json.loads(out.read_text())
    return code, {c["id"]: c for c in doc["claims"]}["rtrl.exact"]


@pytest.mark.slow  # two runs through the supervisor and its worker: ~15 s on a loaded 2-core machine
def test_dtype_float32_judges_float32_code_by_the_float32_budget(tmp_path: Path) -> None:
    code, res = _run(tmp_path)
    assert (code, res["verdict"], res["dtype"]) == (1, "FAIL", "float64"), res["summary"]
    assert res["summary"].startswith("error ") and "~ float32 round-off" in res["summary"]
    assert "declare dtype='float32' or run with --dtype float32" in res["summary"]
    code, res = _run(tmp_path, "--dtype", "float32")
    assert (code, res["verdict"], res["dtype"]) == (0, "PASS", "float32"), res["summary"]
    assert "judged at float32" in res["summary"]
