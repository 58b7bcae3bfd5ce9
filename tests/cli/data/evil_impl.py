"""A correct UORO (the worked example) that misbehaves on request: the code under test of the isolation corpus.

``EVIL_MODE`` says what it does and ``EVIL_WHERE`` where: ``import`` (when the module is imported), ``load``
(in the load check, :func:`verify.impl.loader.validate_part`) or ``claim`` (in a step of a claim's run). Used by
tests/cli/test_isolation.py through ``--impl uoro=tests/cli/data/evil_impl.py:Evil`` in real subprocesses.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading
import time
import traceback
from typing import Any

from verify.examples.uoro import MyUORO

MODE = os.environ.get("EVIL_MODE", "")
WHERE = os.environ.get("EVIL_WHERE", "")


class BrokenStr(Exception):
    def __str__(self) -> str:
        raise ValueError("no str for you")

    def __repr__(self) -> str:
        raise ValueError("no repr for you")


def _misbehave() -> None:
    if MODE == "exit0":
        os._exit(0)
    elif MODE == "exit3":
        os._exit(3)
    elif MODE == "sysexit0":
        sys.exit(0)
    elif MODE == "sysexit-broken":
        raise SystemExit(BrokenStr())
    elif MODE == "broken-str":
        raise BrokenStr()
    elif MODE == "keyboard":
        raise KeyboardInterrupt
    elif MODE == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif MODE == "sigsegv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif MODE == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
    elif MODE == "abort":
        os.abort()
    elif MODE == "chdir-root":
        os.chdir("/")
    elif MODE == "chdir-here":
        os.chdir(os.path.dirname(os.path.abspath(__file__)))
    elif MODE == "fork":
        if os.fork() == 0:  # the child outlives nothing: it sleeps, the run must end it
            time.sleep(600)
            os._exit(0)
    elif MODE == "thread":
        threading.Thread(target=time.sleep, args=(600,), daemon=False).start()
    elif MODE == "ignore-sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    elif MODE == "close-fds":
        os.closerange(3, 1024)
    elif MODE == "close-stdout":
        os.close(1)
        os.close(2)
    elif MODE == "hang":
        time.sleep(600)
    elif MODE == "escapes":
        print("\x1b[31mred\x1b[0m \x00 \x0c \ufffe \udcff", flush=True)
        raise ValueError("bad \x1b[2J\x00\x0c\ufffe \udcff value")
    elif MODE == "surrogate-name":
        raise FileNotFoundError(os.fsdecode(b"/tmp/caf\xe9.npz"))


if WHERE == "import":
    _misbehave()


def _in_load_check() -> bool:
    return any(f.name == "validate_part" for f in traceback.extract_stack())


_done = set()


@dataclasses.dataclass(frozen=True)
class Evil(MyUORO):
    name: str = "evil-uoro"

    def step(self, *args: Any, **kwargs: Any) -> Any:
        place = "load" if _in_load_check() else "claim"
        if place == WHERE and MODE in ("fork", "thread", "ignore-sigterm", "chdir-root", "chdir-here", "close-stdout"):
            if place not in _done:  # once per process
                _done.add(place)
                _misbehave()
        elif place == WHERE:
            _misbehave()
        return super().step(*args, **kwargs)

    def with_noise(self, noise: Any) -> Evil:
        return dataclasses.replace(self, noise=noise)
