"""Sweeps end to end: executors, faults (a killed worker, a raising cell), the cache, resume, the CLI.

Must show (issue 16): a tiny sweep on a 2-worker Dask LocalCluster (loopback), one worker
killed mid-sweep, gives the same merged results as an uninterrupted run, and a second run
of the same sweep recomputes nothing.
"""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from verify.cli import main
from verify.errors import InvalidArgument
from verify.run.sweep import (
    CellCache,
    Executor,
    ProcessExecutor,
    SerialExecutor,
    SweepOptions,
    execute_cell,
    get_definition,
    make_executor,
    parse_executor,
    run_plan,
)
from verify.verdict import Verdict

SLEEP = 0.6  # seconds per selftest cell: long enough to kill a worker while cells run


class _NoRun(Executor):
    """An executor that must not be asked for anything (everything is cached)."""

    def map_unordered(self, cells: Any) -> Any:
        assert not list(cells), "a cached cell was recomputed"
        return iter(())


def _counting(cache: CellCache) -> Counter[str]:
    puts: Counter[str] = Counter()
    put = cache.put

    def counted(key: str, *a: Any, **k: Any) -> Any:
        puts[key] += 1
        return put(key, *a, **k)

    cache.put = counted  # type: ignore[method-assign]
    return puts


def _killer(executor: Any) -> Any:
    """A progress callback that SIGKILLs one of the executor's worker processes after the first finished cell."""
    killed: list[int] = []

    def progress(outcome: Any) -> None:
        if not killed and not outcome.cached:
            pids = executor.worker_pids()
            pid = next(iter(pids.values())) if isinstance(pids, dict) else pids[0]
            os.kill(pid, signal.SIGKILL)  # a worker process this test's executor started
            killed.append(pid)

    progress.killed = killed  # type: ignore[attr-defined]
    return progress


def _values(run: Any) -> list[Any]:
    (res,) = run.results
    assert res.verdict is Verdict.PASS, res.reason
    return [res.statistic, res.data["values"]]


def test_selftest_reference_and_a_raising_cell_is_reported_with_its_traceback(tmp_path: Path) -> None:
    plan = get_definition("selftest").build(SweepOptions(seeds=4, fail_seeds=(2,)))
    cache = CellCache(tmp_path / "cache")
    run = run_plan(plan, SerialExecutor(), cache)
    (res,) = run.results
    assert run.failed == 1 and run.computed == 3
    assert res.verdict is Verdict.FAIL and "asked to fail" in (res.reason or "") and "Traceback" in (res.reason or "")
    assert len(cache.keys()) == 3  # the failed cell is not cached: a rerun tries it again
    again = run_plan(plan, SerialExecutor(), cache)
    assert again.cached == 3 and again.failed == 1 and again.computed == 0


def test_execute_cell_never_raises_for_the_task() -> None:
    out = execute_cell("no-such-task", {})
    assert not out["ok"] and "no such task" in out["error"]
    out = execute_cell("sweep.selftest", {"seed": 3})
    assert out["ok"] and out["value"]["seed"] == 3 and out["code"]


@pytest.mark.slow
def test_process_pool_survives_a_killed_worker_and_a_rerun_recomputes_nothing(tmp_path: Path) -> None:
    """The pool breaks; the in-flight cells rerun on a fresh pool; nothing finished is computed twice (~30-50 s)."""
    plan = get_definition("selftest").build(SweepOptions(seeds=6, sleep=SLEEP))
    reference = _values(run_plan(plan, SerialExecutor()))
    cache = CellCache(tmp_path / "cache")
    puts = _counting(cache)
    with ProcessExecutor(2, threads=1) as ex:
        progress = _killer(ex)
        run = run_plan(plan, ex, cache, progress)
    assert progress.killed, "no worker was killed"
    assert _values(run) == reference and run.failed == 0
    assert set(puts.values()) == {1} and len(puts) == 6  # every cell cached exactly once
    again = run_plan(plan, _NoRun(), CellCache(tmp_path / "cache"))
    assert again.computed == 0 and again.cached == 6 and _values(again) == reference


@pytest.mark.slow  # a loopback Dask cluster started and a worker killed: .ci/run's slow step
def test_dask_localcluster_two_workers_one_killed_same_results_then_nothing_recomputed(tmp_path: Path) -> None:
    """The must-show test: loopback LocalCluster, 2 workers, one SIGKILLed mid-sweep."""
    pytest.importorskip("distributed")
    from verify.run.sweep import DaskExecutor

    plan = get_definition("selftest").build(SweepOptions(seeds=8, sleep=SLEEP))
    reference = _values(run_plan(plan, SerialExecutor()))
    cache = CellCache(tmp_path / "cache")
    puts = _counting(cache)
    ex = DaskExecutor(workers=2, threads=1)
    try:
        assert all(addr.startswith("tcp://127.0.0.1:") for addr in ex.worker_pids())  # loopback only
        progress = _killer(ex)
        run = run_plan(plan, ex, cache, progress)
    finally:
        ex.close()
    assert progress.killed
    assert _values(run) == reference and run.failed == 0 and run.computed == 8
    assert set(puts.values()) == {1} and len(puts) == 8
    again = run_plan(plan, _NoRun(), CellCache(tmp_path / "cache"))
    assert again.computed == 0 and again.cached == 8 and _values(again) == reference


def test_executor_specs() -> None:
    assert parse_executor("dask=tcp://10.0.0.5:8786") == ("dask", "tcp://10.0.0.5:8786")
    assert parse_executor("process") == ("process", None)
    for bad in ("", "spark", "process=x", "dask="):
        with pytest.raises(InvalidArgument, match="--executor"):
            parse_executor(bad)
    assert isinstance(make_executor("auto", 1), SerialExecutor)
    with pytest.raises(InvalidArgument, match="--workers"):
        make_executor("process", 0)


def test_sweep_cli_writes_one_report_and_resumes_from_the_cache(tmp_path: Path, capsys: Any) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out"
    argv = ["sweep", "selftest", "--seeds", "3", "--executor", "serial", "--cache", str(cache), "--out", str(out)]
    assert main(argv) == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["source"] == "rnn-verify sweep" and doc["run"]["sweep"]["computed"] == 3
    assert doc["claims"][0]["verdict"] == "PASS"
    assert main(argv) == 0  # a marked report folder is replaced; every cell comes from the cache
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["sweep"]["computed"] == 0 and doc["run"]["sweep"]["cached"] == 3
    err = capsys.readouterr().err
    assert "3 cached, 0 to run" in err
    # a foreign folder is refused before anything runs; unknown sweeps and bad options exit 2
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    assert main(["sweep", "selftest", "--cache", str(tmp_path / "mine"), "--no-report"]) == 2
    assert main(["sweep", "nope", "--no-report"]) == 2
    assert main(["sweep", "--list"]) == 0
    assert main(["sweep", "selftest", "--workers", "0", "--no-report"]) == 2
    assert main(["sweep", "fpp-fig3b", "--scale", "huge", "--no-report"]) == 2


def test_sweep_cli_failed_cell_exits_1_and_the_report_holds_its_traceback(tmp_path: Path, monkeypatch: Any) -> None:
    import importlib

    defs: Any = importlib.import_module("verify.run.sweep.definitions")

    real = defs._selftest

    def failing(opts: SweepOptions) -> Any:
        return real(SweepOptions(seeds=3, fail_seeds=(1,)))

    monkeypatch.setattr(defs, "_DEFS", tuple(defs.SweepDefinition(d.name, d.title, failing if d.name == "selftest"
                                                                  else d.build) for d in defs._DEFS))  # fmt: skip
    out = tmp_path / "out"
    assert main(["sweep", "selftest", "--executor", "serial", "--no-cache", "--out", str(out)]) == 1
    md = (out / "report.md").read_text()
    assert "asked to fail" in md and "Traceback" in md


def test_calibration_tabulates_verdict_rates_with_clopper_pearson() -> None:
    from verify.run.sweep.definitions import calibration_result
    from verify.verdict import CheckResult

    res = [CheckResult("x.y", Verdict.FAIL if s < 5 else Verdict.PASS, "s", alpha=0.01, seed=s) for s in range(100)]
    cal = calibration_result("x.y", res, list(range(100)), "ci")
    assert cal.verdict is Verdict.FAIL and cal.statistic == 0.05  # CP 95% [0.016, 0.113] lies above 0.01
    assert "lies above alpha" in (cal.reason or "")
    ok = calibration_result("x.y", res[2:], list(range(98)), "ci")  # 3/98: CP [0.006, 0.087] holds 0.01
    assert ok.verdict is Verdict.PASS
    none = calibration_result("x.y", [CheckResult("x.y", Verdict.PASS, "s")], [0], "ci")
    assert none.verdict is Verdict.INCONCLUSIVE
    table = cal.data["figures"][0]
    assert table["kind"] == "table" and table["rows"][1][:3] == ["FAIL", 5, 100]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_dask_scheduler_restart_mid_sweep_resubmits_only_what_is_missing(tmp_path: Path) -> None:
    """An external scheduler (and its workers) restarted on the same address mid-sweep: the sweep finishes,
    the merged results equal an uninterrupted run, and no cell that was cached is computed again."""
    pytest.importorskip("distributed")
    import subprocess
    import sys
    import threading
    import time

    from verify.run.sweep import DaskExecutor

    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Any] = []

    def start() -> None:
        log = open(tmp_path / f"cluster-{len(procs)}.log", "wb")  # closed at the end
        logs.append(log)
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                       "--port", str(port), "--dashboard-address", "127.0.0.1:0"],
                                      stdout=log, stderr=log))  # fmt: skip
        time.sleep(3)
        for _ in range(2):
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", addr, "--nthreads",
                                           "1", "--host", "127.0.0.1"], stdout=log, stderr=log))  # fmt: skip

    def stop_all() -> None:
        for p in procs:  # processes this test started, by their handles
            if p.poll() is None:
                p.kill()
                p.wait(10)

    plan = get_definition("selftest").build(SweepOptions(seeds=6, sleep=1.5))
    reference = _values(run_plan(plan, SerialExecutor()))
    cache = CellCache(tmp_path / "cache")
    puts = _counting(cache)
    start()
    try:
        ex = DaskExecutor(addr, workers=2, threads=1, poll=2.0, reconnect_timeout=90.0)
        restarted = threading.Event()

        def progress(outcome: Any) -> None:
            if not restarted.is_set():
                restarted.set()
                stop_all()
                start()

        run = run_plan(plan, ex, cache, progress)
        ex.close()
    finally:
        stop_all()
        for log in logs:
            log.close()
    assert restarted.is_set()
    assert _values(run) == reference and run.failed == 0
    assert set(puts.values()) == {1} and len(puts) == 6


@pytest.mark.slow
def test_run_with_the_dask_executor_gives_the_verdicts_in_catalog_order(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    out = tmp_path / "o"
    argv = ["run", "--claims", "fpp.gradient-eq7", "truncation.rate", "--executor", "dask", "--workers", "2",
            "--out", str(out), "-q"]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads((out / "results.json").read_text())
    assert [r["id"] for r in doc["claims"]] == ["fpp.gradient-eq7", "truncation.rate"]
    assert all(r["verdict"] == "PASS" for r in doc["claims"]) and doc["run"]["executor"].startswith("dask")


def test_fig4_sweep_at_the_ci_scale_reproduces_the_check(tmp_path: Path) -> None:
    """``fpp-fig4`` is judged by the claim's own judge: at the check's sizes it gives the check's verdict."""
    from verify.checks import registry
    from verify.config import RunConfig

    out = tmp_path / "fig4.json"
    argv = ["sweep", "fpp-fig4", "--scale", "ci", "--executor", "serial", "--no-cache", "--no-report"]
    main([*argv, "--json", str(out), "-q"])
    rec = json.loads(out.read_text())["claims"][0]
    direct = registry()["fpp.updates-reproduction"](RunConfig())
    assert rec["id"] == "fpp.updates-reproduction"
    assert rec["verdict"] == direct.verdict.value == "PASS"
    assert rec["statistic"] == direct.statistic
