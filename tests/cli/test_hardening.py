"""Issue 23, part 2: leave nothing behind, one seed limit, FINDING lines that say what they are.

The refusals themselves (huge integers, counts, paths, devices, ``--impl``) are cases of
:mod:`tests.cli.test_fuzz_corpus`; this module holds what a corpus case cannot show: the
``.gitignore`` of every default output folder, Dask's scratch space and a clean close on every
path (an interrupted start included), the guarded removal of rnn-verify's own temporary folders,
the one seed constant, and the wording of a FINDING line.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

import verify.cli as cli
from verify import _validate
from verify.errors import InvalidArgument
from verify.files import TEMP_PREFIX, make_temp_dir, remove_temp_dir
from verify.verdict import Verdict, finding_line

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ default output folders are git-ignored
def _default_output_dirs() -> list[Path]:
    """The folders rnn-verify writes into when no output is named: ``run``/``sweep``
    (:data:`verify.cli.DEFAULT_OUTPUT_DIRS`) and the device bench's ``--out`` default
    (``python -m verify.bench.gpu``); ``reports/calibration`` of the statistics bench is a
    published report, committed on purpose."""
    text = (ROOT / "verify" / "bench" / "gpu.py").read_text()
    assert 'ap.add_argument("--out", default="calibration-device")' in text
    return [*cli.DEFAULT_OUTPUT_DIRS, Path("calibration-device")]


def test_every_default_output_folder_is_git_ignored() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    dirs = _default_output_dirs()
    assert Path("reports/runs") in dirs and Path("reports/sweeps") in dirs
    for d in dirs:
        probe = d / "20260101-000000-ci" / "results.json"
        res = subprocess.run(["git", "check-ignore", "-q", str(probe)], cwd=ROOT, capture_output=True)
        assert res.returncode == 0, f"{d}/ (a default output folder of rnn-verify) is not git-ignored"


def test_run_and_sweep_write_under_their_default_folders(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli._default_out("ci").parent == cli.DEFAULT_RUNS

    class Args:
        no_report, out, name = False, None, "selftest"

    out = cli._sweep_out(Args())  # type: ignore[arg-type]
    assert out is not None and out.parent == (tmp_path / cli.DEFAULT_SWEEPS)


# ------------------------------------------------------------------ rnn-verify's own temporary folders
def test_remove_temp_dir_removes_only_its_own_folder_and_follows_no_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("the user's")
    d = make_temp_dir("test")
    assert d.name.startswith(TEMP_PREFIX + "test-")
    (d / "a" / "b").mkdir(parents=True)
    (d / "a" / "b" / "f.bin").write_bytes(b"x")
    (d / "link-dir").symlink_to(victim, target_is_directory=True)
    (d / "a" / "link-file").symlink_to(victim / "keep.txt")
    assert remove_temp_dir(d) and not d.exists()
    assert (victim / "keep.txt").read_text() == "the user's"  # links removed, never followed
    other = tmp_path / (TEMP_PREFIX + "dask-lookalike")  # right prefix, but not made by make_temp_dir
    other.mkdir()
    (other / "x").write_text("1")
    assert not remove_temp_dir(other) and (other / "x").exists()
    assert not remove_temp_dir(victim) and (victim / "keep.txt").exists()


# ------------------------------------------------------------------ Dask: scratch space, close on every path
@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh system temporary folder for this test (what ``$TMPDIR`` would be)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def test_dask_scratch_space_is_ours_and_removed(private_tmp: Path) -> None:
    pytest.importorskip("distributed")
    from verify.run.sweep import DaskExecutor, SweepOptions, get_definition, run_plan

    ex = DaskExecutor(workers=1, threads=1)
    try:
        assert ex.scratch is not None and ex.scratch.parent == private_tmp
        plan = get_definition("selftest").build(SweepOptions(seeds=2))
        assert run_plan(plan, ex).computed == 2
        assert not (private_tmp / "dask-scratch-space").exists()  # the scheduler's and the workers' are in ours
        assert os.listdir(private_tmp) == [ex.scratch.name]
        cluster = ex.cluster
    finally:
        ex.close()
    assert os.listdir(private_tmp) == []  # nothing left behind
    assert cluster.shutdown_on_close is False  # dask's atexit hook will not close it again


def test_an_interrupted_dask_start_closes_what_was_made(private_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the LocalCluster starts: the half-made cluster is closed and dask's atexit hook disarmed (it
    would fail with ``AssertionError: Status.init`` on workers that never started); the scratch space is removed."""
    dist = pytest.importorskip("distributed")
    from distributed.deploy.spec import SpecCluster

    from verify.run.sweep import DaskExecutor

    made: list[Any] = []

    class HalfStarted:
        shutdown_on_close = True

        def __init__(self, **kw: Any) -> None:
            self.closed = False
            self.kw = kw
            made.append(self)
            SpecCluster._instances.add(self)
            raise KeyboardInterrupt

        def close(self, timeout: float | None = None) -> None:
            self.closed = True
            raise AssertionError("Status.init")  # what distributed raises on such a cluster

    monkeypatch.setattr(dist, "LocalCluster", HalfStarted)
    with pytest.raises(KeyboardInterrupt):
        DaskExecutor(workers=2, threads=1)
    (half,) = made
    assert half.closed and half.shutdown_on_close is False
    assert "dask-scratch-space" not in half.kw["local_directory"] or half.kw["local_directory"].startswith(
        str(private_tmp)
    )
    assert os.listdir(private_tmp) == []
    SpecCluster._instances.discard(half)


@pytest.mark.slow
@pytest.mark.parametrize("delay", [1.0, 2.2, 3.0, 4.5])
def test_ctrl_c_at_any_point_of_a_dask_sweep_prints_one_line(tmp_path: Path, delay: float) -> None:
    """A real ``rnn-verify sweep`` on a LocalCluster, SIGINT after ``delay`` s (imports, cluster start, cells,
    close): exit 130 or 0, no traceback (no ``AssertionError: Status.init`` from atexit), nothing left in $TMPDIR."""
    pytest.importorskip("distributed")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "verify", "sweep", "selftest", "--executor", "dask", "--workers", "2",
            "--no-cache", "--no-report", "--seeds", "4"]  # fmt: skip
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode in (0, 130), err
    assert "Traceback" not in out + err and "AssertionError" not in err, err
    if p.returncode == 130:
        assert sum("interrupted" in line for line in err.splitlines()) == 1, err
    assert os.listdir(tmp) == [], os.listdir(tmp)


# ------------------------------------------------------------------ one seed limit
def test_one_seed_limit_for_the_cli_and_the_api() -> None:
    from verify.stats import unbiased
    from verify.testing import assertions

    assert unbiased.SEED_RANGE == (0, _validate.MAX_SEED)
    assert unbiased.validate_seed is _validate.validate_seed is assertions.validate_seed
    assert _validate.MAX_SEED == 18_446_688_733_642
    assert cli.main(["run", "--seed", str(_validate.MAX_SEED + 1), "--no-report", "--claims", "nope"]) == 2
    with pytest.raises(InvalidArgument, match=str(_validate.MAX_SEED)):
        assertions.validate_seed("seed", 2**64 - 1)


# ------------------------------------------------------------------ FINDING lines
def test_a_finding_line_says_whether_it_is_a_failure() -> None:
    ok = finding_line("fpp.x", Verdict.PASS, "the printed bound fails by 3x")
    assert ok.startswith("FINDING (not a failure) fpp.x:") and "the checked version PASSes" in ok
    assert ok.endswith("the printed bound fails by 3x")
    for v in (Verdict.FAIL, Verdict.INCONCLUSIVE, Verdict.SKIPPED):
        line = finding_line("fpp.x", v, "f")
        assert line.startswith("FINDING fpp.x:") and f"this claim is {v.value}" in line and "not a failure" not in line
