"""Isolated workers: the process that decides the exit status never imports or calls code under test.

``rnn-verify run`` is a CI gate: its exit status is the verdict. So every use of a user's code -- the import
and load check of ``--impl``, every claim, ``--plan``'s pilots -- runs in a worker process
(:mod:`verify.run.worker`) of an :class:`IsolatedPool`, and the supervisor (the CLI's process) only sends
tasks, reads JSON back and decides. Whatever a worker does is recorded as what the implementation did, never
becomes the run's exit status:

* **any exit** -- ``os._exit(n)`` (reported with the frame that called it), an exit from native code, a signal
  (SIGSEGV: the faulthandler stack is quoted), its control pipe closed -- is a FAIL of the claim it was running
  (or, during the load check, exit 2 naming the ``--impl``), worded as such. Only a SIGKILL the supervisor did
  not send (the out-of-memory killer, another process) is retried, at most ``max_attempts`` times in all;
* **a hang**: each task has a time limit (``--timeout``); past it the worker's stacks are dumped (SIGUSR1,
  faulthandler) into its captured stderr, the worker's session is killed and the claim FAILs "did not finish
  within N s" with the frame it was in;
* **processes it started**: each worker is a session of its own (``start_new_session``); after every task the
  processes of that session other than the worker are killed (a child forked by the code under test does not
  outlive its claim), and at the end of the run the whole session is;
* **threads it started** do not keep anything alive: the worker ends with ``os._exit`` when told to quit;
* **its output** (stdout and stderr) goes to a file of the supervisor's, never to the terminal or the CI log;
  the supervisor quotes its tail when the worker dies;
* **a killed supervisor** (``kill -9``, the CI runner's timeout) leaves nothing running: every worker asked the
  kernel to SIGKILL it when the supervisor dies (Linux ``PR_SET_PDEATHSIG``), and a small *reaper* process
  (its own session, stdout and stderr on ``/dev/null`` so it holds no pipe of the CI's) kills every process of
  every worker session as soon as the supervisor's pipe to it closes.

Messages from a worker are JSON (never pickles: unpickling would run the worker's code in the supervisor), and
every text in them is cleaned of control characters and lone surrogates before it is shown or written
(:func:`clean_outcome`).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from verify import stop
from verify.files import make_temp_dir, remove_temp_dir
from verify.run import spawn
from verify.run.sweep.cells import SweepCell
from verify.run.sweep.executors import Executor
from verify.run.worker import PIPE_LOST
from verify.text import clean_tree

__all__ = [
    "IsolatedPool",
    "WorkerDeath",
    "clean_outcome",
    "session_processes",
]

Outcome = dict[str, Any]

#: seconds a worker is given to start (import torch and rnn-verify) before it counts as failed to start
START_TIMEOUT_S = 120.0
#: seconds between SIGUSR1 (stack dump) and SIGKILL of a worker past its time limit
DUMP_GRACE_S = 0.5
#: lines of a dead worker's captured output quoted in the FAIL's reason
TAIL_LINES = 25
#: signals that mean "killed from outside" (retried) rather than "crashed" (deterministic: not retried)
_RETRIED = frozenset({int(signal.SIGKILL)})

_BOOTSTRAP = spawn.BOOTSTRAP

#: the reaper: reads ``+SID``/``-SID`` lines; when the supervisor's end of the pipe closes (it exited, or was
#: killed), SIGKILLs every process of every session still listed, then exits. Our code only, no imports of ours.
_REAPER = r"""
import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
sids = set()
for line in sys.stdin:
    line = line.strip()
    if line[:1] == "+":
        sids.add(int(line[1:]))
    elif line[:1] == "-":
        sids.discard(int(line[1:]))
for _ in range(3):
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if int(fields[3]) in sids and int(name) != os.getpid():
                os.kill(int(name), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass
    for sid in sids:
        try:
            os.killpg(sid, signal.SIGKILL)
        except OSError:
            pass
"""


def session_processes(sid: int) -> list[int]:
    """PIDs of the live processes whose session id is ``sid`` (Linux ``/proc``; empty elsewhere)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                if int(fields[3]) == sid and fields[0] != b"Z":
                    found.append(int(name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _kill_session(sid: int, *, spare: int | None = None) -> None:
    """SIGKILL every process of session ``sid`` (its process group first), except ``spare``."""
    if spare is None:
        with contextlib.suppress(OSError):
            os.killpg(sid, signal.SIGKILL)
    for pid in session_processes(sid):
        if pid != spare:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def clean_outcome(obj: Any) -> Any:
    """A JSON value from a worker with every string (keys included) cleaned (:func:`verify.text.clean_tree`)."""
    return clean_tree(obj)


@dataclass(frozen=True)
class WorkerDeath:
    """How a worker ended while it ran a task: what the supervisor saw, in words; ``retry``: worth running again."""

    summary: str
    detail: str
    retry: bool = False


@dataclass(eq=False)
class _Worker:
    proc: subprocess.Popen[bytes]
    to_worker: int
    log: Path
    ready: bool = False
    cell: SweepCell | None = None
    started: float = 0.0
    deadline: float | None = None
    exit_event: dict[str, Any] | None = None
    killed_by_us: bool = False
    timed_out: bool = False
    attempts: dict[str, int] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid


def _tail(path: Path, lines: int = TAIL_LINES) -> str:
    with contextlib.suppress(OSError):
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64_000))
            data = f.read().decode("utf-8", "replace")
        return "\n".join(data.splitlines()[-lines:])
    return ""


def _stack_frame(dump: str) -> str:
    """The innermost frame of the main thread in a faulthandler dump: ``name() at file:line`` (or "")."""
    lines = dump.splitlines()
    # faulthandler: "Current thread 0x... (most recent call first):" / "Thread 0x..." then '  File "f", line N in name'
    starts = [i for i, line in enumerate(lines) if line.startswith(("Current thread", "Thread 0x"))]
    main = [i for i in starts if "(most recent call first)" in lines[i]]
    for i in main[-1:] or starts[-1:]:
        for line in lines[i + 1 :]:
            s = line.strip()
            if s.startswith("File "):
                try:
                    path = s.split('"')[1]
                    rest = s.split('"')[2]
                    lineno = rest.split("line")[1].split()[0]
                    name = rest.split(" in ")[-1].strip()
                except IndexError:
                    return s
                return f"{name}() at {path}:{lineno}"
    return ""


class IsolatedPool(Executor):
    """``workers`` isolated worker processes (see the module docstring) serving sweep tasks.

    :meth:`map_unordered` runs cells (each with its time limit, ``timeout_for(cell)`` seconds; None: none) and
    yields ``(cell, outcome)`` as they finish -- the :class:`~verify.run.sweep.executors.Executor` shape, so
    :func:`verify.run.catalog.run_on_executor` can use it; :meth:`call` runs one task and returns its outcome.
    A worker that dies or runs past its limit gives an outcome with ``ok=False``, ``died=True`` and
    ``summary`` (what the worker -- the code under test -- did, in one line). ``on_start(cell)`` is called when
    a cell is handed to a worker. ``affinity_for(cell)`` names a computation the cell shares with other cells
    through a process's caches (None: none): such a cell goes to the worker that took the first cell of its name
    while that worker lives, and meanwhile another worker takes the next cell instead -- unless no other cell
    waits (no worker idles to keep an affinity). Outcomes never depend on it (issue 42: the claims over one
    cached suite computed it once per worker).
    """

    kind = "isolated"

    def __init__(
        self,
        workers: int = 1,
        threads: int = 1,
        *,
        timeout_for: Callable[[SweepCell], float | None] | None = None,
        max_attempts: int = 3,
        on_start: Callable[[SweepCell], None] | None = None,
        affinity_for: Callable[[SweepCell], str | None] | None = None,
    ) -> None:
        super().__init__(workers, threads)
        self.timeout_for = timeout_for or (lambda cell: None)
        self.affinity_for = affinity_for or (lambda cell: None)
        self._home: dict[str, int] = {}  # affinity name -> pid of the worker that took its first cell
        self.max_attempts = max_attempts
        self.on_start = on_start
        self._workers: list[_Worker] = []
        self._inbox: queue.Queue[tuple[_Worker, dict[str, Any] | None]] = queue.Queue()
        self._logs = make_temp_dir("workers")
        self._counter = 0
        self._closed = False
        self._reaper: subprocess.Popen[bytes] | None = None
        self._start_reaper()

    def describe(self) -> str:
        return self.description(self.workers, self.threads)

    @staticmethod
    def description(workers: int, threads: int) -> str:
        """``isolated (2 worker processes, 1 torch thread(s) each)``: what ``run.executor`` records."""
        return f"isolated ({workers} worker process{'es' if workers != 1 else ''}, {threads} torch thread(s) each)"

    # ------------------------------------------------------------------ processes
    def _start_reaper(self) -> None:
        if not sys.platform.startswith("linux"):
            return
        with contextlib.suppress(OSError):
            self._reaper = subprocess.Popen(
                [sys.executable, "-S", "-c", _REAPER],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )

    def _tell_reaper(self, line: str) -> None:
        if self._reaper is not None and self._reaper.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self._reaper.stdin.write(line.encode() + b"\n")
                self._reaper.stdin.flush()

    def _spawn(self) -> _Worker:
        """A new worker: forked from this process where it has the toolkit imported, else started afresh
        (:mod:`verify.run.spawn`)."""
        self._counter += 1
        log = self._logs / f"worker-{self._counter}.log"
        # a stop deferred until the worker is ours (registered, its reader running): see verify.stop.deferred
        with stop.deferred():
            sp = spawn.fork(log, self.threads) if spawn.can_fork() else spawn.spawn(log, self.threads)
            worker = _Worker(sp.proc, sp.to_worker, sp.log)
            self._tell_reaper(f"+{sp.proc.pid}")
            reader = threading.Thread(
                target=self._read,
                args=(worker, sp.from_worker),
                daemon=True,
                name=f"{spawn.THREAD_PREFIX}reader-{sp.proc.pid}",
            )
            reader.start()
            self._workers.append(worker)
        return worker

    def _read(self, worker: _Worker, fd: int) -> None:
        """Reader thread: every JSON line of ``worker`` into the inbox; ``None`` at EOF (it died or closed).

        Plain ``os.read`` on the descriptor, closed here on every path (no file object left for the garbage
        collector to warn about when a pool is dropped at interpreter exit)."""
        buf = b""
        try:
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:
                    break
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    self._inbox.put((worker, self._parse(line)))
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
            self._inbox.put((worker, None))

    @staticmethod
    def _parse(line: bytes) -> dict[str, Any]:
        try:
            msg = json.loads(line)
        except ValueError:
            return {"garbled": line[:200].decode("utf-8", "replace")}
        return msg if isinstance(msg, dict) else {"garbled": str(msg)[:200]}

    def _send(self, worker: _Worker, message: Mapping[str, Any]) -> bool:
        data = (json.dumps(message, ensure_ascii=True, allow_nan=True) + "\n").encode("ascii")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(worker.to_worker, view) :]
        except OSError:
            return False
        return True

    def _end(self, worker: _Worker) -> None:
        """Kill ``worker``'s whole session, reap it, forget it."""
        worker.killed_by_us = True
        _kill_session(worker.pid)
        with contextlib.suppress(Exception):
            worker.proc.wait(timeout=5)
        with contextlib.suppress(OSError):
            os.close(worker.to_worker)
        self._tell_reaper(f"-{worker.pid}")
        if worker in self._workers:
            self._workers.remove(worker)

    # ------------------------------------------------------------------ outcomes
    def _death(self, worker: _Worker) -> WorkerDeath:
        """What ended ``worker`` (which was running ``worker.cell``), in words."""
        with contextlib.suppress(Exception):
            worker.proc.wait(timeout=5)
        code = worker.proc.poll()
        if code is None:  # its pipe closed but it lives: the code under test closed the worker's file descriptors
            _kill_session(worker.pid)
            with contextlib.suppress(Exception):
                worker.proc.wait(timeout=5)
            return WorkerDeath(
                "the code under test closed the worker's control pipe (a file descriptor it did not open); the "
                "worker was stopped",
                _tail(worker.log),
            )
        tail = _tail(worker.log)
        if not worker.ready and code != -signal.SIGKILL:
            last = (tail.strip().splitlines() or [f"exit status {code}"])[-1]
            return WorkerDeath(f"a worker process could not start: {last}", tail)
        ev = worker.exit_event
        if ev is not None:
            return WorkerDeath(
                f"the code under test called os._exit({ev.get('status')}) in {ev.get('where')}: it ended the worker "
                "process (an exit is never the run's exit status)",
                tail,
            )
        if code == PIPE_LOST:
            return WorkerDeath(
                "the code under test closed the worker's control pipe (a file descriptor it did not open, e.g. with "
                "os.closerange): the worker could not report and ended",
                tail,
            )
        if code >= 0:
            return WorkerDeath(
                f"the worker process ended with exit status {code} while running it: rnn-verify's workers exit only "
                "when told to, so the code under test (or a native library it called) ended the process",
                tail,
            )
        sig = -code
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        if sig in _RETRIED:
            return WorkerDeath(
                f"the worker process was killed by {name} (out of memory, or killed by another process)", tail, True
            )
        where = _stack_frame(_tail(worker.log, 100_000))  # the whole dump (see _timeout)
        return WorkerDeath(
            f"the worker process died of {name}" + (f" in {where}" if where else "") + " (a crash of the code under "
            "test or of a native library it called)",
            tail,
        )

    @staticmethod
    def _failed(summary: str, detail: str, wall: float, worker: _Worker) -> Outcome:
        reason = summary + (f"\n--- last lines the worker printed ---\n{detail}" if detail.strip() else "")
        return {"ok": False, "died": True, "summary": summary, "error": reason, "wall_time": wall,
                "worker": f"pid {worker.pid}", "code": ""}  # fmt: skip

    # ------------------------------------------------------------------ scheduling
    def map_unordered(self, cells: Sequence[SweepCell]) -> Iterator[tuple[SweepCell, Outcome]]:
        """Run ``cells`` on the workers; yield ``(cell, outcome)`` as each finishes (see the class docstring)."""
        pending: deque[SweepCell] = deque(cells)
        attempts: dict[str, int] = {}
        busy: dict[int, _Worker] = {}
        try:
            while pending or busy:
                while pending and len(busy) < self.workers:
                    worker = self._idle_worker(busy)
                    cell = self._next_cell(pending, worker)
                    if not self._dispatch(worker, cell):
                        self._end(worker)
                        pending.appendleft(cell)
                        continue
                    busy[worker.pid] = worker
                    if self.on_start is not None:
                        self.on_start(cell)
                for cell, outcome in self._wait(busy, pending, attempts):
                    yield cell, outcome
        except GeneratorExit:  # the caller stopped asking (call() has its outcome): the workers stay warm
            raise
        except BaseException:
            self.close(terminate=True)
            raise

    def _next_cell(self, pending: deque[SweepCell], worker: _Worker) -> SweepCell:
        """Take the first pending cell ``worker`` may run (its affinity homed on no other live worker), else the
        first pending cell."""
        live = {w.pid for w in self._workers}
        for i, cell in enumerate(pending):
            name = self.affinity_for(cell)
            home = self._home.get(name) if name else None
            if home is None or home == worker.pid or home not in live:
                del pending[i]
                if name:
                    self._home[name] = worker.pid
                return cell
        return pending.popleft()

    def _idle_worker(self, busy: Mapping[int, _Worker]) -> _Worker:
        for w in self._workers:
            if w.pid not in busy and w.cell is None:
                return w
        return self._spawn()

    def _dispatch(self, worker: _Worker, cell: SweepCell) -> bool:
        worker.cell = cell
        worker.started = time.monotonic()
        limit = self.timeout_for(cell)
        worker.deadline = None if limit is None or limit <= 0 else worker.started + limit + (
            0.0 if worker.ready else START_TIMEOUT_S)  # fmt: skip
        worker.timed_out = False
        message = {"id": cell.key, "task": cell.task, "params": dict(cell.params), "threads": self.threads}
        return self._send(worker, message)

    def _wait(
        self, busy: dict[int, _Worker], pending: deque[SweepCell], attempts: dict[str, int]
    ) -> Iterator[tuple[SweepCell, Outcome]]:
        """Wait for one message (or a deadline); yield what finished."""
        now = time.monotonic()
        deadlines = [w.deadline for w in busy.values() if w.deadline is not None]
        wait = max(0.01, min([*(d - now for d in deadlines), 1.0]))
        try:
            worker, msg = self._inbox.get(timeout=wait)
        except queue.Empty:
            worker, msg = None, None
        if worker is not None and worker.pid in busy:
            done = self._handle(worker, msg, busy, pending, attempts)
            if done is not None:
                yield done
        elif worker is not None and msg is not None and "ready" in msg:
            worker.ready = True
        elif worker is not None and msg is None and worker in self._workers:  # an idle worker died: replace it
            self._end(worker)
        for w in list(busy.values()):  # time limits
            if w.deadline is not None and time.monotonic() > w.deadline and w.cell is not None:
                yield self._timeout(w, busy)

    def _handle(
        self,
        worker: _Worker,
        msg: dict[str, Any] | None,
        busy: dict[int, _Worker],
        pending: deque[SweepCell],
        attempts: dict[str, int],
    ) -> tuple[SweepCell, Outcome] | None:
        cell = worker.cell
        assert cell is not None
        if msg is not None and "ready" in msg:
            if not worker.ready and worker.deadline is not None:
                limit = self.timeout_for(cell)
                worker.deadline = time.monotonic() + (limit or 0.0)
            worker.ready = True
            return None
        if msg is not None and msg.get("event") == "exit":
            worker.exit_event = msg
            return None
        if msg is not None and msg.get("id") == cell.key and isinstance(msg.get("outcome"), dict):
            busy.pop(worker.pid, None)
            worker.cell, worker.deadline = None, None
            _kill_session(worker.pid, spare=worker.pid)  # what the code under test started ends with its claim
            return cell, clean_outcome(msg["outcome"])
        if msg is not None:  # a line that is not ours (the code under test wrote to our pipe): ignore it
            return None
        # EOF: the worker is gone (or closed our pipe)
        busy.pop(worker.pid, None)
        wall = time.monotonic() - worker.started
        death = self._death(worker)
        self._end(worker)
        attempts[cell.key] = attempts.get(cell.key, 0) + 1
        if death.retry and attempts[cell.key] < self.max_attempts:
            pending.appendleft(cell)
            return None
        times = f" ({attempts[cell.key]} times)" if attempts[cell.key] > 1 else ""
        return cell, clean_outcome(self._failed(death.summary + times, death.detail, wall, worker))

    def _timeout(self, worker: _Worker, busy: dict[int, _Worker]) -> tuple[SweepCell, Outcome]:
        cell = worker.cell
        assert cell is not None
        limit = self.timeout_for(cell) or 0.0
        busy.pop(worker.pid, None)
        if hasattr(signal, "SIGUSR1"):
            with contextlib.suppress(OSError):
                os.kill(worker.pid, signal.SIGUSR1)  # faulthandler: every thread's stack into its captured stderr
            time.sleep(DUMP_GRACE_S)
        tail = _tail(worker.log, 60)
        # the frame from the whole dump: a forked worker's stacks go on into the supervisor's frames below the fork
        # (hundreds of lines under a test runner), past the 60 lines quoted
        where = _stack_frame(_tail(worker.log, 100_000))
        self._end(worker)
        summary = f"did not finish within {limit:g} s (--timeout)" + (
            f"; it was in {where}" if where else "") + "; its worker was stopped"  # fmt: skip
        return cell, clean_outcome(self._failed(summary, tail, time.monotonic() - worker.started, worker))

    def call(self, task: str, params: Mapping[str, Any], timeout: float | None = None) -> Outcome:
        """Run one task on a worker and return its outcome (see :meth:`map_unordered`)."""
        cell = SweepCell(task, dict(params), label=task)
        old = self.timeout_for
        self.timeout_for = lambda c: timeout if c.key == cell.key else old(c)
        try:
            for _, outcome in self.map_unordered([cell]):
                return outcome
        finally:
            self.timeout_for = old
        raise RuntimeError("no outcome")  # pragma: no cover

    def worker_pids(self) -> list[int]:
        """PIDs of the live worker processes (tests kill one)."""
        return [w.pid for w in self._workers if w.proc.poll() is None]

    def close(self, terminate: bool = False) -> None:
        """End every worker (politely unless ``terminate``), their sessions, the reaper; remove the logs."""
        if self._closed:
            return
        self._closed = True
        workers = list(self._workers)
        if not terminate:
            for w in workers:
                if w.cell is None:
                    self._send(w, {"quit": True})
            deadline = time.monotonic() + 2.0
            for w in workers:
                with contextlib.suppress(Exception):
                    w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        for w in workers:
            self._end(w)
        if self._reaper is not None:
            stdin: IO[bytes] | None = self._reaper.stdin
            with contextlib.suppress(OSError, ValueError):
                if stdin is not None:
                    stdin.close()
            with contextlib.suppress(Exception):
                self._reaper.wait(timeout=5)
            self._reaper = None
        remove_temp_dir(self._logs)

    def __del__(self) -> None:  # a pool dropped without close(): still leave nothing running
        with contextlib.suppress(Exception):
            if not self._closed:
                self.close(terminate=True)
