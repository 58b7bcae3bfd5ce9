"""Workers prestarted by the command-line front (:mod:`verify.run.prestart`, issue 42): which runs start them, the
pool takes them, and none outlives the command."""

from __future__ import annotations

import os

import pytest

from verify import cli_front
from verify.cli import _parser
from verify.cli_front import THREADS_EARLY, run_workers_early
from verify.run import prestart
from verify.run.check import THREADS_PER_PROCESS
from verify.run.pool import IsolatedPool
from verify.run.sweep.cache import code_version


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat", "rb") as f:  # a zombie not yet reaped by its parent counts as gone
        return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"


def test_prestarted_workers_have_the_pools_thread_count() -> None:
    assert THREADS_EARLY == THREADS_PER_PROCESS


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "--profile", "ci", "--workers", "2"], 2),
        (["run", "--workers", "1"], 0),  # serial, in this process: no worker
        (["run", "--workers", "2", "--claims", "rtrl.exact"], 0),  # a selection may run fewer claims than workers
        (["run", "--workers", "2", "-k", "uoro"], 0),
        (["run", "--workers", "2", "--plan"], 0),
        (["run", "--workers", "2", "--executor", "serial"], 0),
        (["list"], 0),
    ],
)
def test_only_a_run_of_the_whole_profile_on_workers_prestarts_them(
    argv: list[str], expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_front, "FORK_EXPECTED", False)  # where the pool cannot fork its workers
    args = _parser().parse_args(argv)
    assert run_workers_early(args) == min(expected, len(os.sched_getaffinity(0)))


def test_none_is_prestarted_where_the_pool_forks_its_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forked workers import nothing again: starting fresh ones early would cost more CPU than it saves."""
    monkeypatch.setattr(cli_front, "FORK_EXPECTED", True)
    assert run_workers_early(_parser().parse_args(["run", "--workers", "2"])) == 0
    cuda = run_workers_early(_parser().parse_args(["run", "--workers", "2", "--device", "cuda"]))
    assert cuda == min(2, len(os.sched_getaffinity(0)))  # CUDA may be initialized by then: no fork


@pytest.mark.skipif(not prestart.can_fork(), reason="forks on Linux with torch imported and CUDA not initialized")
def test_a_forked_worker_runs_tasks_with_the_supervisors_code_and_ends_with_the_pool() -> None:
    pool = IsolatedPool(1, THREADS_EARLY)
    try:
        out = pool.call("sweep.selftest", {"seed": 3}, timeout=300)
        assert out["ok"] and out["code"] == code_version(), out
        (pid,) = pool.worker_pids()
        assert isinstance(pool._workers[0].proc, prestart.Forked) and os.getsid(pid) == pid  # a session of its own
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert b"pytest" in f.read()  # forked from this process, not started afresh
    finally:
        pool.close()
    assert _gone(pid)


def test_a_worker_with_another_thread_count_is_ended_not_taken() -> None:
    prestart.prestart(1, THREADS_EARLY)
    pid = prestart._early[0].proc.pid
    try:
        assert prestart.take(THREADS_EARLY + 1) is None
    finally:
        prestart.discard()
    assert _gone(pid) and not prestart._early


@pytest.mark.slow
def test_the_pool_takes_a_prestarted_worker_and_discard_ends_the_rest() -> None:
    prestart.prestart(2, THREADS_EARLY)
    pids = [sp.proc.pid for sp in prestart._early]
    pool = IsolatedPool(1, THREADS_EARLY)
    try:
        out = pool.call("sweep.selftest", {"seed": 3}, timeout=300)
        assert out["ok"], out
        assert pool.worker_pids() == pids[:1]  # the first prestarted one, not a new process
    finally:
        pool.close()
        prestart.discard()
    assert all(_gone(pid) for pid in pids) and not prestart._early
