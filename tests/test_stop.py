"""verify.stop: a stop never raised where Python would drop it ("Exception ignored"), raised by the next repeat."""

from __future__ import annotations

import os
import signal
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from verify import stop

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="the repeat needs setitimer (POSIX)")


def _signal_then_busy() -> None:
    """SIGINT to this process, then 1.2 s of bytecode: the handler and two repeats run inside the caller."""
    os.kill(os.getpid(), signal.SIGINT)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 2.4 * stop.REPEAT_S:
        pass


@contextmanager
def _unraisables() -> Iterator[list[Any]]:
    seen: list[Any] = []
    old = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        yield seen
    finally:
        sys.unraisablehook = old


def _stop_after(trigger: Callable[[], None]) -> tuple[list[Any], float]:
    """Run ``trigger`` (which gets the signal delivered inside a callback) under the CLI's handling; the seconds from
    its end to the Stop and what Python reported as ignored."""
    with _unraisables() as seen, stop.handling():
        with pytest.raises(stop.Stop) as caught:
            trigger()
            t_end = time.monotonic()
            time.sleep(10 * stop.REPEAT_S)  # the next repeat raises here
        waited = time.monotonic() - t_end
        stop.stopping()
    assert caught.value.signum == signal.SIGINT
    return seen, waited


def test_a_signal_inside_a_del_is_raised_by_the_next_repeat_not_inside_it() -> None:
    """CI saw a repeated Stop raised inside importlib's module-lock callback during a Dask sweep's shutdown: Python
    printed it as "Exception ignored" with its traceback. Inside a ``__del__`` the stop waits for the repeat."""

    class Slow:
        def __del__(self) -> None:
            _signal_then_busy()

    def trigger() -> None:
        obj = Slow()
        del obj

    seen, waited = _stop_after(trigger)
    assert seen == []
    assert waited <= 2 * stop.REPEAT_S


def test_a_signal_inside_a_weakref_callback_is_raised_by_the_next_repeat() -> None:
    class Obj:
        pass

    def trigger() -> None:
        obj = Obj()
        weakref.finalize(obj, _signal_then_busy)
        del obj

    seen, waited = _stop_after(trigger)
    assert seen == []
    assert waited <= 2 * stop.REPEAT_S


def test_an_ordinary_frame_gets_the_stop_at_once() -> None:
    assert not stop._unraisable(sys._getframe())
    with stop.handling(), pytest.raises(stop.Stop):
        _signal_then_busy()
        pytest.fail("the stop was not raised in ordinary code")
