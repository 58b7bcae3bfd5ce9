"""A stop of the *process* (a signal delivered to rnn-verify) told apart from what the code under test raises.

Code under test (an ``--impl`` module, at import, at the load check or inside a claim) may raise anything:
``SystemExit`` from ``sys.exit()``, ``KeyboardInterrupt``, any ``BaseException``. That is *its* error -- exit
2 at load naming the module, FAIL of the claim inside a claim -- and never the process's exit status. A
real SIGINT/SIGTERM/SIGHUP delivered to rnn-verify is a stop of the run: exit 128 + the signal number.

While :func:`handling` is active (the CLI's ``main``), the three signals raise :class:`Stop`, the toolkit's
own exception, and the signal is *recorded*. The places that run code under test catch every
``BaseException`` and ask :func:`reraise_if_stopped` whether it was a genuine stop: only the record decides,
so a user's ``raise KeyboardInterrupt`` (or even ``raise Stop(15)``) is the user's error, and a
``Stop`` that the user's ``except BaseException`` swallowed is raised again when that code returns
(:func:`raise_pending`) and, while it does not return, every :data:`REPEAT_S` seconds (a SIGALRM timer)
until the toolkit has begun to stop (:func:`stopping`; from then on further signals are ignored so the
cleanup finishes; SIGKILL still works). A signal that arrives inside a ``__del__`` or a weakref callback, where
Python would print the exception as "Exception ignored" and drop it, is recorded and raised by the next repeat.

A worker process (:func:`worker_process`) ignores SIGINT (the run's process stops it), so a
``KeyboardInterrupt`` there is always the code under test's. Where no handler is installed (the library
used from Python, the pytest plugin) a ``KeyboardInterrupt`` cannot be told apart and is left to propagate.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = [
    "REPEAT_S",
    "STOP_SIGNALS",
    "Stop",
    "blocked_interrupts",
    "deferred",
    "die_with_parent",
    "handling",
    "pending",
    "raise_pending",
    "reraise_if_stopped",
    "stopping",
    "worker_process",
]

#: the signals that stop a run: Ctrl-C, ``kill``, a closed terminal (where the platform has them)
STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


_ALARM = (signal.SIGALRM,) if hasattr(signal, "SIGALRM") else ()


class Stop(BaseException):
    """Raised in the main thread by a signal delivered to rnn-verify: stop the run, exit 128 + the signal number.

    A ``BaseException`` so that ``except Exception`` (the user's or the toolkit's) does not swallow it; only
    the record of :func:`handling` makes one genuine (see the module docstring).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = int(signum)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def what(self) -> str:
        """``interrupted`` (SIGINT) or ``terminated by SIGTERM`` / ``SIGHUP``."""
        return "interrupted" if self.signum == signal.SIGINT else f"terminated by {self.name}"


class _State:
    mode: str | None = None  #: "main" while :func:`handling` is active, "worker" in a worker process
    fired: list[int] = []  # noqa: RUF012 -- one process-wide record
    stopping: bool = False
    deferred: bool = False  #: inside :func:`deferred`: a signal is recorded, its Stop raised when the block ends


#: seconds between the repeats of a stop that code under test swallowed (``except BaseException: ...``)
REPEAT_S = 0.5


def _unraisable(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs inside a function whose exceptions Python does not propagate -- a ``__del__``, a weakref
    callback (importlib's module-lock ``cb``, those of :mod:`weakref` and ``_weakrefset``), logging's at-fork hooks:
    a :class:`Stop` raised there is printed as "Exception ignored" with its traceback and lost. Every frame of the
    chain is active, so one such frame anywhere in it means the signal arrived inside that function."""
    f = frame
    while f is not None:
        code = f.f_code
        name, where = code.co_name, code.co_filename.replace("\\", "/")
        if (
            name == "__del__"
            or (name == "cb" and where == "<frozen importlib._bootstrap>")
            or where.endswith(_CALLBACK_FILES)
            or ("fork" in name and where.endswith(_LOGGING))
        ):
            return True
        f = f.f_back
    return False


_CALLBACK_FILES = ("/weakref.py", "/_weakrefset.py")
_LOGGING = "/logging/__init__.py"


def _handler(signum: int, frame: FrameType | None) -> None:
    if _State.fired and _State.stopping:  # the toolkit is stopping: let the cleanup finish
        return
    if not _State.fired:
        _State.fired.append(signum)
        if hasattr(signal, "setitimer"):  # raised again until the toolkit catches it: no catch-all can keep it
            signal.signal(signal.SIGALRM, _repeat)
            signal.setitimer(signal.ITIMER_REAL, REPEAT_S, REPEAT_S)
    if not _State.deferred and not _unraisable(frame):  # inside a __del__ or a callback: the repeat raises it
        raise Stop(_State.fired[0])


def _repeat(signum: int, frame: FrameType | None) -> None:
    if _State.fired and not _State.stopping and not _State.deferred and not _unraisable(frame):
        raise Stop(_State.fired[0])


def _cancel_repeat() -> None:
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise :class:`Stop` for the duration (main thread only; old handlers restored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.getsignal(sig) for sig in (*STOP_SIGNALS, *_ALARM)}
    before = (_State.mode, list(_State.fired), _State.stopping)
    _State.mode, _State.fired, _State.stopping = "main", [], False
    for sig in STOP_SIGNALS:
        signal.signal(sig, _handler)
    try:
        yield
    finally:
        if _State.fired:
            _cancel_repeat()
        for sig, h in old.items():
            signal.signal(sig, h)
        _State.mode, _State.fired, _State.stopping = before[0], before[1], before[2]


def die_with_parent(parent: int | None = None) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux ``PR_SET_PDEATHSIG``; elsewhere
    nothing): a worker must not outlive a supervisor that was killed (``kill -9``), holding the CI's pipes.
    ``parent``: the pid the caller expects as its parent -- if it is already gone, exit now."""
    import os
    import sys

    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    if parent is not None and os.getppid() != parent:
        os._exit(0)


def worker_process() -> None:
    """In a worker process: SIGINT is ignored (the run's process stops the workers); any KeyboardInterrupt
    raised here is the code under test's."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _State.mode = "worker"


def stopping() -> None:
    """The toolkit has caught the stop and is cleaning up: further signals are ignored until it exits."""
    _State.stopping = True
    if _State.fired:
        _cancel_repeat()


def pending() -> Stop | None:
    """The stop a signal asked for in this process (None: none was delivered)."""
    return Stop(_State.fired[0]) if _State.fired else None


def raise_pending() -> None:
    """Raise :class:`Stop` if a signal was delivered (after code under test that may have swallowed it)."""
    stop = pending()
    if stop is not None:
        raise stop


def reraise_if_stopped(exc: BaseException) -> None:
    """In an ``except BaseException`` around code under test: re-raise when the process was told to stop.

    Returns (the caller reports ``exc`` as the code's own error) when ``exc`` is what the code raised:
    ``SystemExit``, ``KeyboardInterrupt`` or a ``Stop`` that no signal caused. Where no handler is
    installed (library use) a ``KeyboardInterrupt`` cannot be told apart from Ctrl-C and is re-raised.
    """
    stop = pending()
    if stop is not None:
        raise exc if isinstance(exc, Stop) else stop
    if _State.mode is None and isinstance(exc, KeyboardInterrupt):
        raise exc


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A stop delivered now is recorded and raised when the block ends (if the toolkit is not stopping already).

    For ``os.fork`` and what makes the new worker the pool's: a :class:`Stop` raised inside the fork would run in an
    at-fork hook (logging's lock release in the parent, its reinit in the child), where Python prints it as
    "Exception ignored" with its traceback and leaves the hook undone; raised between the fork and the pool's record
    of the worker, the worker would be nobody's. A signal mask cannot do this: a process-directed signal goes to any
    thread that does not block it (torch's, a reader's) and the main thread runs the Python handler all the same.
    A forked child inherits the deferral and clears it (:mod:`verify.run.spawn`)."""
    if threading.current_thread() is not threading.main_thread() or _State.deferred:
        yield
        return
    _State.deferred = True
    try:
        yield
    finally:
        _State.deferred = False
    if _State.fired and not _State.stopping:
        raise Stop(_State.fired[0])


@contextlib.contextmanager
def blocked_interrupts() -> Iterator[None]:
    """SIGINT held back while processes are started: a child inherits the blocked mask, so a Ctrl-C at the
    terminal during its start-up (before it ignores SIGINT) does not print its traceback; this process gets the
    signal when the block ends.

    A Python signal handler runs at the first bytecode after the C call that blocks: a :class:`Stop` raised there
    finds the mask restored (the old mask is read before anything is blocked)."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, set())  # the mask as it is: nothing blocked yet
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
