"""The rnn-verify command: list, run, exit codes, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from verify.cli import main


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "reference.adjoint" in out


def test_run_selected_claim_exit_0_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "r.json"
    assert main(["run", "--claims", "reference.influence", "--json", str(out_file)]) == 0
    data = json.loads(out_file.read_text())
    assert data[0]["claim_id"] == "reference.influence" and data[0]["verdict"] == "PASS"
    assert "1 PASS" in capsys.readouterr().out


def test_unknown_claim_exit_2_with_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--claims", "reference.adjiont"]) == 2
    err = capsys.readouterr().err
    assert "did you mean reference.adjoint" in err


def test_usage_error_exit_2() -> None:
    assert main(["run", "--profile", "huge"]) == 2
    assert main([]) == 2


def test_python_dash_m() -> None:
    proc = subprocess.run([sys.executable, "-m", "verify", "--help"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "exit codes" in proc.stdout
