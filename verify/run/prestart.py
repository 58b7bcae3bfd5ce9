"""Worker processes started before the supervisor's own imports, so that theirs overlap (issue 42).

``rnn-verify run`` imports torch and the numerical code (seconds of CPU) in the supervisor, and every worker of
its :class:`~verify.run.pool.IsolatedPool` imports them again. Started one after the other, the workers' imports
wait for the supervisor's: on a 2-core machine one core idles for that long. The front of the command line
(:mod:`verify.cli_front`, which imports nothing of torch) calls :func:`prestart` as soon as it knows a run will
use worker processes; the pool then takes these processes (:func:`take`) before starting any of its own. What
the pool does not take is ended when the command returns (:func:`discard`, also at interpreter exit).

Only the starting is moved: a prestarted worker is the same program (:mod:`verify.run.worker`), started the
same way (its own session, its output into a file, asked by the kernel to die with the supervisor), and it
imports nothing of the user's until the pool sends it a task. This module imports only the standard library
and :mod:`verify.files`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from verify.files import make_temp_dir, remove_temp_dir

__all__ = ["BOOTSTRAP", "Spawned", "discard", "prestart", "spawn", "take"]

#: the worker program: the supervisor's import path, then :func:`verify.run.worker.main`
BOOTSTRAP = (
    "import json, os, sys; sys.path[:0] = [p for p in json.loads(os.environ.pop('RNN_VERIFY_WORKER_PATH')) "
    "if p not in sys.path]; from verify.run.worker import main; main()"
)


@dataclass(frozen=True)
class Spawned:
    """A started worker process: its two pipe ends on the supervisor's side, its output file, its torch threads."""

    proc: subprocess.Popen[bytes]
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


_early: list[Spawned] = []
_folder: list[Path] = []  # the prestarted workers' log folder (at most one)


def prestart(n: int, threads: int) -> None:
    """Start ``n`` workers with ``threads`` torch threads each now, for the pool to :func:`take` later."""
    if n < 1:
        return
    if not _folder:
        _folder.append(make_temp_dir("workers-early"))
        atexit.register(discard)
    for _ in range(n):
        _early.append(spawn(_folder[0] / f"worker-early-{len(_early) + 1}.log", threads))


def take(threads: int) -> Spawned | None:
    """A prestarted worker with ``threads`` torch threads that is still alive (None: none)."""
    while _early:
        sp = _early.pop(0)
        if sp.threads == threads and sp.proc.poll() is None:
            return sp
        _end(sp)
    return None


def _end(sp: Spawned) -> None:
    with contextlib.suppress(OSError):
        os.killpg(sp.proc.pid, signal.SIGKILL)  # its own session: what it started too
    with contextlib.suppress(Exception):
        sp.proc.wait(timeout=5)
    for fd in (sp.to_worker, sp.from_worker):
        with contextlib.suppress(OSError):
            os.close(fd)


def discard() -> None:
    """End the prestarted workers no pool took, and remove their log folder once none is in use."""
    while _early:
        _end(_early.pop(0))
    if _folder and remove_temp_dir(_folder[0]):
        _folder.clear()
