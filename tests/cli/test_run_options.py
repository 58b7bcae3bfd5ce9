"""`run` options (issue 12): --seed range (case 2), --workers cap (case 9), progress lines on a non-TTY."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import fake_claim
from theory.catalog import get_claim
from verify._validate import MAX_SEED, SEED_MULTIPLIER, validate_seed
from verify.cli import _Progress, main
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.verdict import CheckResult, Verdict


def _recording(seeds: list[int]) -> Callable[[RunConfig], CheckResult]:
    def fn(config: RunConfig) -> CheckResult:
        seeds.append(config.seed)
        config.generator(salt=SEED_MULTIPLIER - 1)  # the largest salt: must not overflow
        return CheckResult("reference.adjoint", Verdict.PASS, "ok", seed=config.seed)

    return fn


@pytest.mark.parametrize("seed", [str(MAX_SEED + 1), "99999999999999999999", str(2**64), "-1"])
def test_seed_out_of_range_is_a_usage_error_before_compute(
    seed: str, fake_checks: Callable[..., None], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    seeds: list[int] = []
    fake_checks({"reference.adjoint": _recording(seeds)})
    out = tmp_path / "r"
    assert main(["run", "--claims", "reference.adjoint", "--seed", seed, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--seed" in err and f"[0, {MAX_SEED}]" in err and "Traceback" not in err
    assert seeds == [] and not out.exists()


def test_largest_seed_runs(fake_checks: Callable[..., None]) -> None:
    seeds: list[int] = []
    fake_checks({"reference.adjoint": _recording(seeds)})
    assert main(["run", "--claims", "reference.adjoint", "--seed", str(MAX_SEED), "--no-report", "-q"]) == 0
    assert seeds == [MAX_SEED]


def test_seed_limit_is_the_generators_limit() -> None:
    """MAX_SEED is exact: seed * SEED_MULTIPLIER + salt fits 64 bits for every salt; one more seed does not."""
    import torch

    torch.Generator().manual_seed(MAX_SEED * SEED_MULTIPLIER + SEED_MULTIPLIER - 1)
    with pytest.raises((RuntimeError, ValueError, OverflowError)):
        torch.Generator().manual_seed((MAX_SEED + 1) * SEED_MULTIPLIER + SEED_MULTIPLIER - 1)
    assert validate_seed("s", MAX_SEED) == MAX_SEED
    for bad in (MAX_SEED + 1, -1, True, 1.0, "3"):
        with pytest.raises(InvalidArgument, match=r"invalid argument s="):
            validate_seed("s", bad)
    with pytest.raises(InvalidArgument, match="seed"):
        RunConfig(seed=2**70)
    with pytest.raises(InvalidArgument, match="salt"):
        RunConfig().generator(salt=SEED_MULTIPLIER)


def test_workers_capped_at_the_cpus_with_a_note(
    tmp_path: Path,
    fake_checks: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import verify.cli as cli
    import verify.run.catalog as runner

    claims = tuple(fake_claim(f"reference.fake-{i}") for i in range(3))
    fake_checks(
        {c.id: (lambda cid: lambda config: CheckResult(cid, Verdict.PASS, "ok"))(c.id) for c in claims},
        extra_claims=claims,
    )
    used: list[int] = []
    monkeypatch.setattr(cli, "available_cpus", lambda: 2)
    monkeypatch.setattr(runner, "_cpus", lambda: 2)

    def serial(todo: object, cfg: object, progress: object, workers: int, results: object, maxfail: object) -> None:
        used.append(workers)
        for c in todo:  # type: ignore[attr-defined]
            results[c.id] = runner.run_check(c, cfg(c))  # type: ignore[index,operator]

    monkeypatch.setattr(runner, "_run_parallel", serial)
    out = tmp_path / "r"
    assert main(["run", "--claims", "reference.fake-*", "--workers", "1000", "--out", str(out), "-q"]) == 0
    err = capsys.readouterr().err
    assert "--workers 1000 capped at 2" in err and "CPUs" in err
    assert used == [2] and json.loads((out / "results.json").read_text())["run"]["workers"] == 2
    # never more workers than claims to run: one claim runs in this process, no pool, no note
    used.clear()
    assert main(["run", "--claims", "reference.fake-0", "--workers", "2", "--no-report", "-q"]) == 0
    assert used == [] and "capped" not in capsys.readouterr().err


def test_progress_lines_on_a_non_tty_every_interval() -> None:
    stream = io.StringIO()
    err = io.StringIO()
    import sys

    real = sys.stderr
    sys.stderr = err
    try:
        p = _Progress(3, stream, quiet=False, interval=0.05, tty=False)
        claim = get_claim("reference.adjoint")
        p("start", claim, None)
        time.sleep(0.4)
        p("done", claim, CheckResult(claim.id, Verdict.PASS, "ok", wall_time=0.4))
        time.sleep(0.2)
        p.close()
    finally:
        sys.stderr = real
    lines = err.getvalue().splitlines()
    assert len(lines) >= 3, lines  # ~8 intervals of 0.05 s while the claim ran
    assert all(line.startswith("[0/3] running reference.adjoint ") and line.endswith("s ...") for line in lines)
    assert "\r" not in err.getvalue()  # plain lines for a log, not the terminal's live line
    assert stream.getvalue().startswith("PASS") and "reference.adjoint" in stream.getvalue()
    quiet_err = io.StringIO()
    sys.stderr = quiet_err
    try:
        q = _Progress(1, io.StringIO(), quiet=True, tty=False)  # --quiet: a line only after a minute
        q("start", claim, None)
        time.sleep(0.2)
        q.close()
        assert quiet_err.getvalue() == ""
        q = _Progress(1, io.StringIO(), quiet=True, interval=0.05, tty=False)  # a claim that runs long is seen
        q("start", claim, None)
        time.sleep(0.3)
        q.close()
    finally:
        sys.stderr = real
    assert quiet_err.getvalue().startswith("[0/1] running reference.adjoint ")


def test_progress_interval_in_a_real_run(
    fake_checks: Callable[..., None], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import verify.cli as cli

    def slow(config: RunConfig) -> CheckResult:
        time.sleep(0.5)
        return CheckResult("reference.adjoint", Verdict.PASS, "ok")

    fake_checks({"reference.adjoint": slow})
    monkeypatch.setattr(cli, "PROGRESS_INTERVAL_S", 0.1)
    assert main(["run", "--claims", "reference.adjoint", "--no-report"]) == 0
    err = capsys.readouterr().err
    assert "[0/1] running reference.adjoint" in err and "\r" not in err
