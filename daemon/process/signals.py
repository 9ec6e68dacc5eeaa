"""SIGTERM and SIGINT ask the daemon to stop; nothing else in the daemon exits the process.

The handlers are installed for the daemon's run only and the previous ones are restored
after, so a daemon run inside another program (a test, an embedding service) leaves its
signals as it found them.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["STOP_SIGNALS", "stop_on_signals"]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def stop_on_signals(stop: Callable[[str], None]) -> Iterator[None]:
    """While inside, SIGTERM and SIGINT call `stop` with the signal's name. Only the main
    thread may handle signals: a daemon run in another thread (embedded, or in a test) is
    stopped by whoever runs it, and the signals stay theirs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(number: int, _frame: FrameType | None) -> None:
        stop(signal.Signals(number).name)

    previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    for number in STOP_SIGNALS:
        signal.signal(number, handler)
    try:
        yield
    finally:
        for number, earlier in previous.items():
            signal.signal(number, earlier)
