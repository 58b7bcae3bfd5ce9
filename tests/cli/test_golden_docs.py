"""The golden-vectors how-to page runs: its python blocks in order in one namespace in a temporary folder
holding the published golden pair, its ``rnn-verify`` commands parsed by the CLI's parser (the harness of
tests/test_readme.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.test_readme import GOLDEN, _check_command, _doctest, _script, blocks

PAGE = "docs/howto/golden-vectors.md"


def test_golden_vectors_page_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("golden.npz", "golden.json"):
        shutil.copy(GOLDEN / name, tmp_path / name)
    globs: dict[str, Any] = {"__name__": "docs"}
    done: dict[str, int] = {}
    for b in blocks(PAGE):
        if b.lang == "python":
            if b.body.lstrip().startswith(">>>"):
                _doctest(b, globs)
                done["doctest"] = done.get("doctest", 0) + 1
            else:
                _script(b, globs, tmp_path)
                done["script"] = done.get("script", 0) + 1
        elif b.lang == "bash":
            for cmd in b.body.splitlines():
                cmd = cmd.split("#", 1)[0].strip()
                if cmd:
                    assert cmd.startswith("rnn-verify ")
                    assert _check_command(cmd, pytestconfig, f"{PAGE}:{b.lineno}") == "parsed"
                    done["command"] = done.get("command", 0) + 1
        else:
            assert b.lang == "text", f"{PAGE}:{b.lineno}: {b.lang}"
    assert done == {"doctest": 4, "script": 1, "command": 3}, done
