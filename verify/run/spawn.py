"""Starting the worker processes of an :class:`~verify.run.pool.IsolatedPool`: afresh, or forked (issue 42).

A worker is :mod:`verify.run.worker`'s program in a session of its own, its output into a file of the
supervisor's, asked by the kernel to die with the supervisor; it imports nothing of the user's until the pool sends
it a task. :func:`spawn` starts it afresh (``python -c BOOTSTRAP``): it imports torch and the toolkit again, seconds
of CPU per worker.

Imports paid once: where the supervisor has imported torch and the toolkit already (and CUDA is not
initialized: a forked CUDA context is unusable), the worker is *forked* from it instead (:func:`fork`, Linux;
:func:`can_fork`) and begins with those modules loaded. The supervisor has imported nothing of the user's
(``--impl`` code is loaded in workers only), so neither has the forked worker; it keeps only its two pipes (every
other descriptor, e.g. the CI's pipes and the reaper's, is closed), takes a session of its own, has fresh standard
streams on its log and its signal handlers back at their defaults, and then runs :func:`verify.run.worker.main`
as a started one does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BOOTSTRAP", "Forked", "Spawned", "can_fork", "fork", "spawn"]

#: the worker program: the supervisor's import path, then :func:`verify.run.worker.main`
BOOTSTRAP = (
    "import json, os, sys; sys.path[:0] = [p for p in json.loads(os.environ.pop('RNN_VERIFY_WORKER_PATH')) "
    "if p not in sys.path]; from verify.run.worker import main; main()"
)


@dataclass(frozen=True)
class Spawned:
    """A started worker process: its two pipe ends on the supervisor's side, its output file, its torch threads."""

    proc: Any  # subprocess.Popen[bytes] or Forked: pid, poll(), wait(timeout)
    to_worker: int
    from_worker: int
    log: Path
    threads: int


def spawn(log: Path, threads: int) -> Spawned:
    """Start one worker process writing its output to ``log`` (a file in a folder of ours)."""
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    env = dict(os.environ)
    env["RNN_VERIFY_WORKER_PATH"] = json.dumps([os.path.abspath(p) if p else os.getcwd() for p in sys.path])
    env.setdefault("OMP_NUM_THREADS", str(threads))
    try:
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-c", BOOTSTRAP, str(to_r), str(from_w), str(os.getpid())],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=(to_r, from_w),
                start_new_session=True,
                env=env,
            )
    except BaseException:
        for fd in (to_r, to_w, from_r, from_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        raise
    os.close(to_r)
    os.close(from_w)
    return Spawned(proc, to_w, from_r, log, threads)


class Forked:
    """What the pool uses of :class:`subprocess.Popen` (``pid``, ``returncode``, ``poll``, ``wait``) for a forked
    worker: its exit status as Popen gives it (negative: killed by that signal)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: gone, status unknown
                self.returncode = -int(signal.SIGKILL)
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
            time.sleep(0.005)
        assert self.returncode is not None
        return self.returncode


#: libraries whose threads make a fork unsafe (JAX warns, at fork, that the child will likely deadlock): with one
#: of them loaded here (a test session, a notebook that imported it), workers start afresh
FORK_UNSAFE = ("jax", "jaxlib", "tensorflow")


#: forking is the default; ``RNN_VERIFY_FORK_WORKERS=0`` starts every worker afresh. (It was opt-in while a Ctrl-C
#: during the workers' start seemed unanswered for 60 s: the test looked for its workers by the started program's
#: command line, which a forked worker does not have -- the interrupt itself was answered in under a second.)
FORK_ENV = "RNN_VERIFY_FORK_WORKERS"


#: the name prefix of this toolkit's own threads (a pool's readers, the progress line): they hold no lock a forked
#: worker uses. Any other thread (a test runner's, a notebook's, a library's) may hold one at the fork -- a child
#: forked beside an xdist worker's threads hung before its first task -- so beside one, workers start afresh
THREAD_PREFIX = "rnn-verify-"


def can_fork() -> bool:
    """Whether a worker is forked from this process: not turned off (:data:`FORK_ENV` = 0), Linux, torch imported
    here, CUDA not initialized, none of :data:`FORK_UNSAFE` loaded, called from the main thread and no thread running
    but this toolkit's own (:data:`THREAD_PREFIX`)."""
    if os.environ.get(FORK_ENV, "1") == "0":
        return False
    main = threading.main_thread()
    if threading.current_thread() is not main:
        return False
    if any(t is not main and not t.name.startswith(THREAD_PREFIX) for t in threading.enumerate()):
        return False
    torch = sys.modules.get("torch")
    if not (sys.platform.startswith("linux") and hasattr(os, "fork") and torch is not None):
        return False
    if any(name in sys.modules for name in FORK_UNSAFE):
        return False
    try:
        return not bool(torch.cuda.is_initialized())
    except Exception:  # an unusual torch build: start workers afresh
        return False


def fork(log: Path, threads: int) -> Spawned:
    """Fork one worker from this process (see the module docstring), its output into ``log``."""
    for stream in (sys.stdout, sys.stderr):  # nothing of ours left in a buffer the child would write to its log
        with contextlib.suppress(Exception):
            stream.flush()
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    parent = os.getpid()
    with warnings.catch_warnings():  # Python >= 3.12 warns of fork() beside threads; the child uses none of theirs
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover -- the child; it never returns
        _forked_child(log, threads, to_r, from_w, parent)
    os.close(to_r)
    os.close(from_w)
    return Spawned(Forked(pid), to_w, from_r, log, threads)


def _forked_child(log: Path, threads: int, to_r: int, from_w: int, parent: int) -> None:  # pragma: no cover
    code = 70
    try:
        os.setsid()
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        keep = {0, 1, 2, to_r, from_w}
        for name in os.listdir("/proc/self/fd"):
            if name.isdigit() and int(name) not in keep:
                with contextlib.suppress(OSError):
                    os.close(int(name))
        # the supervisor's streams may be anything (a test's StringIO): fresh ones on the log, as a started worker
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_IGN if sig == signal.SIGPIPE else signal.SIG_DFL)
        from verify import stop

        stop._State.mode, stop._State.fired, stop._State.stopping, stop._State.deferred = None, [], False, False
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        from verify.run.worker import main

        main([str(to_r), str(from_w), str(parent)])
        code = 0
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        os._exit(code)
