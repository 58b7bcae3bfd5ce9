"""Shared by the gallery's stand-in tests: run one claim through ``rnn-verify run`` as a user would."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from verify.cli import main

STANDINS = Path(__file__).parent / "standins"


def use_standin(monkeypatch: pytest.MonkeyPatch, var: str, name: str, package: str, bug: bool = False) -> Path:
    """Point ``var`` at ``standins/<name>``, set or clear the seeded bug, forget an imported ``package``."""
    root = STANDINS / name
    monkeypatch.setenv(var, str(root))
    if bug:
        monkeypatch.setenv("RNN_VERIFY_STANDIN_BUG", "1")
    else:
        monkeypatch.delenv("RNN_VERIFY_STANDIN_BUG", raising=False)
    for mod in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, mod)
    return root


def run_claim(tmp_path: Path, spec: str, claim: str) -> tuple[int, dict[str, object]]:
    """``rnn-verify run --impl SPEC --impl-only --claims CLAIM``: the exit code and the claim's JSON record."""
    out = tmp_path / "results.json"
    code = main(["run", "--impl", spec, "--impl-only", "--no-report", "-q", "--json", str(out), "--claims", claim])
    doc = json.loads(out.read_text())
    return code, {c["id"]: c for c in doc["claims"]}[claim]
