"""The worker process of an isolated run: the only place where code under test is imported and called.

The supervisor (:mod:`verify.run.pool`, used by ``rnn-verify run``) never imports or calls a user's code; it
starts this program as ``python -c <bootstrap>`` with two pipes and talks to it in JSON lines:

* supervisor -> worker: ``{"id": KEY, "task": NAME, "params": {...}, "threads": N}`` runs the sweep task
  ``NAME`` (:func:`verify.run.sweep.cells.execute_cell`: ``claim``, ``load_impls``, ``plan_claims``, ...);
  ``{"quit": true}`` ends the worker (``os._exit(0)``: threads the code under test started do not hold it).
* worker -> supervisor: ``{"ready": PID}`` once started; ``{"id": KEY, "outcome": {...}}`` when a task is
  done (the outcome is plain JSON, ASCII-escaped, never a pickle: the supervisor runs no code of the worker's);
  ``{"event": "exit", "status": N, "where": TEXT}`` just before the process ends through ``os._exit`` -- the
  supervisor words the death of the worker as what the implementation did ("called os._exit(0) in step() at
  my_uoro.py:41").

Set-up, before anything of the user's is imported: the worker runs in its own session (the supervisor starts it
with ``start_new_session``), asks the kernel to SIGKILL it when the supervisor dies (Linux ``PR_SET_PDEATHSIG``;
the supervisor's reaper process kills the rest of its session, see :mod:`verify.run.pool`), ignores SIGINT (the
supervisor stops the run), writes stack dumps of every thread to its captured stderr on SIGUSR1 (what a claim
that runs past its time limit was doing) and on a fatal signal (faulthandler), and wraps ``os._exit`` so that
an exit the code under test forces is reported with the frame that called it. Its stdout and stderr are a file
of the supervisor's (never the terminal or the CI log), whose tail the supervisor quotes when the worker dies.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["main"]

_TOOLKIT_ROOT = Path(__file__).resolve().parents[1]  # the verify package: its worked examples count as users
_REAL_EXIT = os._exit
_OUT_FD = -1


#: the worker's exit status when the code under test closed its control pipe (the supervisor words it so)
PIPE_LOST = 86


def _reader(raw: Any) -> Any:
    """``raw.readline``, exiting with :data:`PIPE_LOST` when the pipe was closed under the worker."""

    def readline() -> bytes:
        try:
            line: bytes = raw.readline()
        except (OSError, ValueError):
            _REAL_EXIT(PIPE_LOST)
        return line

    return readline


def _send(message: dict[str, Any]) -> None:
    """One JSON line to the supervisor (ASCII only: lone surrogates and controls travel escaped)."""
    data = (json.dumps(message, ensure_ascii=True, allow_nan=True, default=str) + "\n").encode("ascii")
    view = memoryview(data)
    while view:
        written = os.write(_OUT_FD, view)
        view = view[written:]


def _where(frames: list[traceback.FrameSummary]) -> str:
    """The innermost frame outside rnn-verify (the user's), else the innermost frame: ``name() at file:line``."""
    outside = [
        f
        for f in frames
        if not f.filename.startswith("<")  # the bootstrap, frozen importlib
        and (not Path(f.filename).resolve().is_relative_to(_TOOLKIT_ROOT) or "/examples/" in f.filename)
    ]
    chosen = outside[-1] if outside else (frames[-1] if frames else None)
    if chosen is None:
        return "an unknown place"
    return f"{chosen.name}() at {chosen.filename}:{chosen.lineno}"


def _format(exc: BaseException) -> str:
    """The traceback of ``exc``, or its type's name where formatting it raises (a broken ``__str__``)."""
    try:
        return traceback.format_exc()
    except BaseException:
        return f"{type(exc).__name__} (its message could not be formatted: its __str__ raised)"


def _exit_hook(status: int) -> NoReturn:  # replaces os._exit for the code under test
    try:
        _send({"event": "exit", "status": status, "where": _where(traceback.extract_stack()[:-1])})
    except BaseException:  # the exit happens whatever the report does
        pass
    _REAL_EXIT(status)


def main(argv: list[str] | None = None) -> None:
    """``READ_FD WRITE_FD SUPERVISOR_PID``: serve tasks until told to quit or the supervisor's pipe closes."""
    global _OUT_FD
    args = sys.argv[1:] if argv is None else argv
    read_fd, _OUT_FD, parent = int(args[0]), int(args[1]), int(args[2])
    from verify.stop import die_with_parent

    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    faulthandler.enable(file=sys.stderr, all_threads=True)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    os._exit = _exit_hook  # the code under test's os._exit is reported before it takes effect

    from verify import stop
    from verify.run.sweep.cells import execute_cell

    stop.worker_process()
    _send({"ready": os.getpid()})
    cwd = os.getcwd()
    with os.fdopen(read_fd, "rb", buffering=0) as raw, contextlib.suppress(BaseException):
        for line in iter(_reader(raw), b""):
            msg = json.loads(line)
            if msg.get("quit"):
                break
            with contextlib.suppress(OSError):  # code under test may have changed the folder (os.chdir)
                os.chdir(cwd)
            try:
                outcome = execute_cell(str(msg["task"]), msg.get("params") or {}, msg.get("threads"))
            except BaseException as exc:  # execute_cell lets BaseException through: the task's error, not the worker's
                outcome = {"ok": False, "error": _format(exc), "wall_time": 0.0, "worker": "", "code": ""}
            try:
                _send({"id": msg["id"], "outcome": outcome})
            except OSError:  # the code under test closed our pipe (os.closerange): say so by the exit status
                _REAL_EXIT(PIPE_LOST)
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
    _REAL_EXIT(0)


if __name__ == "__main__":  # pragma: no cover
    main()
