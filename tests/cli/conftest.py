"""Fixtures for the CLI tests: fake checks injected into the runner's registry."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import verify.cli as cli_mod
import verify.run.catalog as runner
import verify.run.check as check_mod
from theory.catalog import Claim, all_claims
from verify.config import RunConfig
from verify.verdict import CheckResult


@pytest.fixture
def fake_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """``fake_checks({claim_id: fn}, extra_claims=[Claim...])``: run these instead of the registered checks."""

    def install(checks: dict[str, Callable[[RunConfig], CheckResult]], extra_claims: tuple[Claim, ...] = ()) -> None:
        # only the fakes: the tests do not depend on the other families' check modules
        monkeypatch.setattr(check_mod, "registry", lambda: dict(checks))
        # fakes live in this process only: the run must not send them to worker processes (default: one per CPU)
        monkeypatch.setattr(cli_mod, "available_cpus", lambda: 1)
        if extra_claims:
            claims = {**all_claims(), **{c.id: c for c in extra_claims}}
            monkeypatch.setattr(check_mod, "all_claims", lambda: claims)

    yield install


def fake_claim(claim_id: str, profiles: tuple[str, ...] = ("ci", "full")) -> Claim:
    family = claim_id.split(".", 1)[0]
    return Claim(
        id=claim_id,
        title=f"fake {claim_id}",
        paper="none.md",
        where="nowhere",
        statement="a fake claim for CLI tests",
        math="-",
        assumptions=(),
        check=f"verify.checks.{family}.fake",
        profiles=profiles,
    )


def run_serial(todo: Any, cfg: Any, progress: Any, workers: int, results: Any, maxfail: Any = None) -> None:
    """Stands in for the runner's ``_run_parallel``: every claim in this process, in order (fakes do not pickle)."""
    for c in todo:
        if runner._reached(results, maxfail):
            runner._skip_rest(todo, cfg, progress, results)
            return
        if progress:
            progress("start", c, None)
        results[c.id] = runner.run_check(c, cfg(c))
        if progress:
            progress("done", c, results[c.id])


def run_cli_in(cwd: Path, argv: list[str]) -> tuple[int, str]:
    """``rnn-verify ARGV`` in process with *cwd* as the working folder: (exit code, stdout + stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_mod.main(argv)
    finally:
        os.chdir(old)
    return code, out.getvalue() + err.getvalue()
