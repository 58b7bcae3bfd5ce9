"""Executors: where a sweep's cells run -- in this process, in a local process pool, or on Dask.

Every executor has the same shape: :meth:`Executor.map_unordered` takes cells and
yields ``(cell, outcome)`` as each finishes, where ``outcome`` is the dict made by
:func:`execute_cell` on the worker (``ok``, ``value`` or ``error`` with the
traceback, ``wall_time``, ``worker``, ``code``). A cell that raises comes back as
an outcome with ``ok=False`` and its traceback -- it is reported, never swallowed,
and never retried (a deterministic error would only repeat). Infrastructure faults
are the executor's business:

* **process** (:class:`ProcessExecutor`, ``concurrent.futures`` with ``spawn``): a
  worker killed mid-cell breaks the pool; the cells that were in flight are
  resubmitted on a fresh pool, each at most ``max_attempts`` times (a cell that
  kills its worker every time is reported as failed, with the reason).
* **dask** (:class:`DaskExecutor`, ``dask.distributed``): by default a
  ``LocalCluster`` of ``workers`` single-threaded worker processes on the loopback
  interface (nothing listens beyond this machine; no dashboard); with an address,
  an existing scheduler. A killed worker is restarted by its nanny and the
  scheduler reruns its cells (``distributed.scheduler.allowed-failures``; beyond
  that the cell is reported failed with ``KilledWorker``). A lost scheduler
  connection or a restarted scheduler (checked by its id whenever no cell has
  finished for ``poll`` seconds) makes the executor reconnect and resubmit the
  cells not yet returned, up to ``max_reconnects`` times; cells already returned
  are in the driver's cache and are not run again.
* **serial** (:class:`SerialExecutor`): in this process, in order (tests, debugging).

``workers`` is the number of cells run at once; each cell gets ``threads`` torch
threads (default: the CPUs available divided by ``workers``, at least 1). Dask is
optional (``pip install 'rnn-verify[dask]'``): :func:`make_executor` with
``"auto"`` picks Dask where it is installed and the process pool otherwise.
"""

from __future__ import annotations

import contextlib
import os
import time
import traceback
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from typing import Any

from verify import stop
from verify.errors import InvalidArgument
from verify.files import make_temp_dir, remove_temp_dir
from verify.run.sweep.cells import SweepCell, execute_cell

__all__ = [
    "EXECUTOR_KINDS",
    "DaskExecutor",
    "Executor",
    "ProcessExecutor",
    "SerialExecutor",
    "available_cpus",
    "dask_available",
    "make_executor",
    "parse_executor",
]

EXECUTOR_KINDS = ("auto", "serial", "process", "dask")
Outcome = dict[str, Any]
#: most cells at once (``--workers``): each worker is a process with its own torch import (~0.3 GB), so 1024 of
#: them already need ~300 GB; a larger number is a typo, refused before anything starts
MAX_WORKERS = 1024
#: most torch threads per cell (``--threads``): no machine rnn-verify runs on has more cores than this
MAX_THREADS = 1024


def check_count(argument: str, value: object, maximum: int, why: str) -> int:
    """``value`` if it is an integer in [1, ``maximum``]; else InvalidArgument naming ``argument`` and the reason."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(argument, value, "must be an integer >= 1")
    if value > maximum:
        raise InvalidArgument(argument, value, f"must be at most {maximum}: {why}")
    return value


WORKERS_WHY = "each worker is a process with its own torch import (~0.3 GB); more is a typo, not a machine"
THREADS_WHY = "torch threads per cell; no machine has that many cores"


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except OSError:  # pragma: no cover
            pass
    return max(1, os.cpu_count() or 1)


def dask_available() -> bool:
    """True where ``dask.distributed`` can be imported."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def _failure(cell: SweepCell, error: str, worker: str = "", wall: float = 0.0) -> Outcome:
    return {"ok": False, "error": error, "wall_time": wall, "worker": worker, "code": ""}


class Executor:
    """Base class: ``workers`` cells at once; :meth:`map_unordered` yields ``(cell, outcome)`` as they finish."""

    kind = "serial"

    def __init__(self, workers: int = 1, threads: int | None = None) -> None:
        self.workers = check_count("--workers", workers, MAX_WORKERS, WORKERS_WHY)
        self.threads = threads if threads is not None else max(1, available_cpus() // workers)

    def describe(self) -> str:
        return f"{self.kind} ({self.workers} worker{'s' if self.workers != 1 else ''}, {self.threads} thread(s) each)"

    def map_unordered(self, cells: Sequence[SweepCell]) -> Iterator[tuple[SweepCell, Outcome]]:
        raise NotImplementedError

    def close(self) -> None:
        """Release workers and clusters this executor started."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SerialExecutor(Executor):
    """Cells one after another in this process (torch threads left as they are)."""

    kind = "serial"

    def __init__(self) -> None:
        super().__init__(1, threads=0)

    def describe(self) -> str:
        return "serial (this process)"

    def map_unordered(self, cells: Sequence[SweepCell]) -> Iterator[tuple[SweepCell, Outcome]]:
        for cell in cells:
            yield cell, execute_cell(cell.task, cell.params, None)


def _init_process_worker() -> None:
    stop.worker_process()  # the driver handles Ctrl-C and stops the workers; a KeyboardInterrupt here is user code's
    stop.die_with_parent()  # a driver killed with kill -9 takes its workers with it


class ProcessExecutor(Executor):
    """A ``spawn`` process pool; a broken pool (a worker killed) is replaced and the in-flight cells rerun."""

    kind = "process"

    def __init__(self, workers: int = 1, threads: int | None = None, max_attempts: int = 3) -> None:
        super().__init__(workers, threads)
        self.max_attempts = max_attempts
        self._pool: Any = None

    def _new_pool(self) -> Any:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(
            max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_process_worker
        )

    def worker_pids(self) -> list[int]:
        """PIDs of the pool's live worker processes (tests kill one of them)."""
        procs = (getattr(self._pool, "_processes", None) or {}) if self._pool is not None else {}
        return [p.pid for p in procs.values() if p.pid is not None]

    def map_unordered(self, cells: Sequence[SweepCell]) -> Iterator[tuple[SweepCell, Outcome]]:
        from concurrent.futures import FIRST_COMPLETED, Future, wait
        from concurrent.futures.process import BrokenProcessPool

        pending: deque[SweepCell] = deque(cells)
        attempts: Counter[str] = Counter()
        running: dict[Future[Outcome], SweepCell] = {}
        try:
            while pending or running:
                if self._pool is None:
                    self._pool = self._new_pool()
                with stop.blocked_interrupts():  # a worker started now inherits SIGINT blocked: no traceback of it
                    while pending and len(running) < self.workers:  # in flight == running: a break blames only these
                        cell = pending.popleft()
                        running[self._pool.submit(execute_cell, cell.task, cell.params, self.threads)] = cell
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                broken = False
                for fut in done:
                    cell = running.pop(fut)
                    try:
                        yield cell, fut.result()
                    except BrokenProcessPool:
                        broken = True
                        attempts[cell.key] += 1
                        if attempts[cell.key] >= self.max_attempts:
                            yield (
                                cell,
                                _failure(
                                    cell,
                                    f"its worker process died {attempts[cell.key]} times (killed, or out of memory)",
                                ),
                            )
                        else:
                            pending.appendleft(cell)
                    except Exception as exc:  # the cell or its result could not be sent
                        yield cell, _failure(cell, "".join(traceback.format_exception(exc)))
                if broken:
                    for fut, cell in list(running.items()):  # the rest of the broken pool's cells: rerun
                        with contextlib.suppress(Exception):
                            fut.cancel()
                        attempts[cell.key] += 1
                        pending.appendleft(cell)
                    running.clear()
                    self._discard_pool()
        except BaseException:
            self._discard_pool()
            raise

    def _discard_pool(self) -> None:
        if self._pool is None:
            return
        procs = list((getattr(self._pool, "_processes", None) or {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        stop_processes(procs)
        self._pool = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


class DaskExecutor(Executor):
    """Cells as ``dask.distributed`` tasks on a loopback ``LocalCluster`` or on the scheduler at ``address``."""

    kind = "dask"

    def __init__(
        self,
        address: str | None = None,
        workers: int = 1,
        threads: int | None = None,
        *,
        max_reconnects: int = 5,
        reconnect_timeout: float = 60.0,
        poll: float = 15.0,
    ) -> None:
        if not dask_available():
            raise InvalidArgument(
                "--executor", "dask", "dask.distributed is not installed: pip install 'rnn-verify[dask]'"
            )
        super().__init__(workers, threads)
        if threads is None and address is not None:
            self.threads = 1  # an existing cluster: one torch thread per cell (its workers share their machines)
        self.address = address
        self.max_reconnects = max_reconnects
        self.reconnect_timeout = reconnect_timeout
        self.poll = poll
        self.cluster: Any = None
        #: the LocalCluster's scratch space (``dask-scratch-space``): a folder of ours, removed by close()
        self.scratch: Any = None
        try:
            self.client: Any = self._connect()
        except BaseException:  # a failed or interrupted start leaves nothing behind (no atexit AssertionError)
            self.close()
            raise

    def describe(self) -> str:
        where = self.address or f"LocalCluster on 127.0.0.1, {self.workers} worker processes"
        return f"dask ({where}, {self.threads} torch thread(s) per cell)"

    def _connect(self) -> Any:
        import importlib
        import logging

        dist: Any = importlib.import_module("distributed")  # typed as Any: dask's API is untyped
        dask_config: Any = importlib.import_module("dask.config")
        if self.address is None:
            if self.cluster is None:
                if self.scratch is None:
                    self.scratch = make_temp_dir("dask")
                spec_mod: Any = importlib.import_module("distributed.deploy.spec")
                before = {id(c) for c in spec_mod.SpecCluster._instances}
                scratch = {
                    "temporary-directory": str(self.scratch),
                    "distributed": {"worker": {"profile": {"enabled": False}}},
                }
                try:  # the scheduler (made here, in this process) reads its scratch folder from dask's config
                    with dask_config.set({"temporary-directory": str(self.scratch)}):
                        self.cluster = dist.LocalCluster(
                            n_workers=self.workers,
                            threads_per_worker=1,
                            processes=True,
                            host="127.0.0.1",  # loopback only
                            dashboard_address="127.0.0.1:0",  # its HTTP server: loopback, a free port
                            silence_logs=logging.CRITICAL,  # a cell's error comes back as its outcome
                            local_directory=str(self.scratch),  # not $TMPDIR/dask-scratch-space
                            # every worker's config: no statistical profiler (it samples the stack every 10 ms, ~5% CPU)
                            config=dask_config.merge(dask_config.config, scratch),
                        )
                except BaseException:  # interrupted while starting: close what was made, disarm dask's atexit
                    for c in list(spec_mod.SpecCluster._instances):
                        if id(c) not in before:
                            _close_cluster(c)
                    raise
            return dist.Client(self.cluster, set_as_default=False)
        return dist.Client(self.address, timeout=self.reconnect_timeout, set_as_default=False)

    def worker_pids(self) -> dict[str, int]:
        """``{worker address: pid}`` of the live workers (tests kill one)."""
        return dict(self.client.run(os.getpid))

    def map_unordered(self, cells: Sequence[SweepCell]) -> Iterator[tuple[SweepCell, Outcome]]:
        import importlib

        dist: Any = importlib.import_module("distributed")
        remaining: dict[str, SweepCell] = {c.key: c for c in cells}
        reconnects = 0
        while remaining:
            try:
                identity = self._scheduler_id()
                futs = {
                    self.client.submit(execute_cell, c.task, c.params, self.threads, pure=False): c
                    for c in remaining.values()
                }
                ac = dist.as_completed(list(futs), loop=self.client.loop)
                quiet_since = time.monotonic()
                while not ac.is_empty():
                    if not ac.has_ready():
                        time.sleep(0.25)  # the driver hosts the scheduler: poll gently
                        if time.monotonic() - quiet_since > self.poll:  # nothing finished for a while: scheduler?
                            if self._scheduler_id() != identity:
                                raise ConnectionError("the Dask scheduler restarted (or is unreachable)")
                            quiet_since = time.monotonic()
                        continue
                    quiet_since = time.monotonic()
                    for fut in ac.next_batch(block=False):
                        cell = futs[fut]
                        outcome = self._outcome(fut, cell)
                        if outcome is None:  # the scheduler lost the task (restart): resubmit what is left
                            raise ConnectionError("the scheduler lost a task")
                        remaining.pop(cell.key, None)
                        yield cell, outcome
            except (ConnectionError, OSError, TimeoutError) as exc:
                reconnects += 1
                if reconnects > self.max_reconnects:
                    for cell in remaining.values():
                        yield cell, _failure(cell, f"lost the Dask scheduler {reconnects} times; last: {exc!r}")
                    return
                self._reconnect()

    def _scheduler_id(self) -> str | None:
        """The scheduler's id (it changes when the scheduler restarts); None when it cannot be reached."""
        try:
            return str(self.client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.id))
        except Exception:
            return None

    @staticmethod
    def _outcome(fut: Any, cell: SweepCell) -> Outcome | None:
        from distributed.scheduler import KilledWorker

        status = getattr(fut, "status", "")
        if status == "cancelled":
            return None
        try:
            out: Outcome = fut.result()
        except KilledWorker as exc:
            return _failure(cell, f"KilledWorker: the cell's worker died too often ({exc})")
        except Exception as exc:
            from distributed.comm.core import CommClosedError

            if isinstance(exc, (CommClosedError, ConnectionError)):
                return None
            if type(exc).__name__ in ("CancelledError", "FutureCancelledError"):
                return None
            return _failure(cell, "".join(traceback.format_exception(exc)))
        return out

    def _reconnect(self) -> None:
        deadline = time.monotonic() + self.reconnect_timeout
        with contextlib.suppress(Exception):
            self.client.close(timeout=5)
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                self.client = self._connect()
                return
            except Exception as exc:  # the scheduler is not back yet
                last = exc
                time.sleep(1.0)
        raise ConnectionError(f"could not reconnect to the Dask scheduler {self.address}: {last!r}")

    def close(self) -> None:
        """Close the client and the LocalCluster (quietly, on every path) and remove the scratch space -- also when
        a Ctrl-C interrupts the closing (the interrupt then goes on, once the scratch space is gone)."""
        try:
            client = getattr(self, "client", None)
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close(timeout=10)
            if self.cluster is not None:
                cluster, self.cluster = self.cluster, None
                _close_cluster(cluster)
        finally:
            if self.scratch is not None:
                remove_temp_dir(self.scratch)
                self.scratch = None


def _close_cluster(cluster: Any) -> None:
    """Close a LocalCluster, whatever state it is in, and keep dask's atexit hook from closing it again (an
    interrupted start leaves workers in ``Status.init``, on which that hook fails with ``AssertionError``)."""
    try:
        with contextlib.suppress(Exception):
            cluster.close(timeout=10)
    finally:
        with contextlib.suppress(Exception):
            cluster.shutdown_on_close = False
        with contextlib.suppress(Exception):
            cluster._loop_runner.stop()


def parse_executor(spec: str) -> tuple[str, str | None]:
    """``"dask=tcp://host:8786"`` -> ``("dask", "tcp://host:8786")``; ``"process"`` -> ``("process", None)``."""
    if not isinstance(spec, str) or not spec:
        raise InvalidArgument("--executor", spec, f"one of {', '.join(EXECUTOR_KINDS)} (dask=ADDRESS for a cluster)")
    kind, _, address = spec.partition("=")
    if kind not in EXECUTOR_KINDS:
        raise InvalidArgument("--executor", spec, f"one of {', '.join(EXECUTOR_KINDS)} (dask=ADDRESS for a cluster)")
    if address and kind != "dask":
        raise InvalidArgument("--executor", spec, "only dask takes an address (dask=tcp://HOST:PORT)")
    if kind == "dask" and "=" in spec and not address:
        raise InvalidArgument("--executor", spec, "dask= needs a scheduler address, e.g. dask=tcp://10.0.0.5:8786")
    return kind, address or None


def make_executor(spec: str = "auto", workers: int | None = None, threads: int | None = None) -> Executor:
    """The executor named by ``spec`` (``auto``, ``serial``, ``process``, ``dask`` or ``dask=ADDRESS``).

    ``workers`` defaults to the CPUs available (local executors) or 1 (an existing Dask cluster,
    where the scheduler decides). ``auto``: Dask where installed, else the process pool; with
    one worker, ``auto`` runs serially in this process.
    """
    kind, address = parse_executor(spec)
    if workers is not None:
        check_count("--workers", workers, MAX_WORKERS, WORKERS_WHY)
    if threads is not None:
        check_count("--threads", threads, MAX_THREADS, THREADS_WHY)
    n = workers if workers is not None else (1 if address else available_cpus())
    if kind == "auto":
        if n == 1:
            return SerialExecutor()
        kind = "dask" if dask_available() else "process"
    if kind == "serial":
        return SerialExecutor()
    if kind == "process":
        return ProcessExecutor(n, threads)
    return DaskExecutor(address, n, threads)


def stop_processes(procs: Sequence[Any], timeout: float = 5.0) -> None:
    """Terminate (SIGTERM) the given ``multiprocessing`` processes, then reap them; SIGKILL any still alive.

    Used when a run is stopped: a worker or figure process must not outlive the
    command (it would go on computing as an orphan).
    """
    for proc in procs:
        with contextlib.suppress(Exception):
            if proc.is_alive():
                proc.terminate()
    deadline = time.monotonic() + timeout
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join(1.0)
