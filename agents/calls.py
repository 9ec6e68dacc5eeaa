"""LLM calls that a stop does not wait for.

A call to an endpoint that hangs or trickles lasts up to its time limit (600 s by default),
far past a draining daemon's DRAIN_LIMIT_S. So every role's call, the search's and the port's,
runs on a daemon thread while the caller's thread waits on it, looking every STOP_POLL_S
whether it should stop: a caller asked to stop leaves at once, and the call it leaves behind
holds nothing (the interpreter does not join daemon threads; a thread pool's workers are joined
at exit, which kept a stopped daemon alive until SIGKILL). A call left behind is asked again,
by its id, at the next start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from agents.llm import LLMError
from agents.roles import NoCode

__all__ = ["STOP_POLL_S", "stoppable"]

T = TypeVar("T")
STOP_POLL_S = 0.5
"""How often a caller waiting on its LLM calls looks whether it should stop."""


def stoppable(
    work: Sequence[Callable[[], T]], *, check_stop: Callable[[], None], width: int
) -> list[T | Exception]:
    """Run `work` concurrently, at most `width` at a time; results (or their LLMError or
    NoCode) in the given order. `check_stop` raises to leave (the calls still running are left
    behind); any other exception of a step is a bug, raised again in the caller's thread."""
    check_stop()
    if not work:
        return []
    slots = threading.Semaphore(min(len(work), width))
    results: dict[int, T | Exception] = {}
    crashes: list[BaseException] = []
    left = [len(work)]
    lock, done = threading.Lock(), threading.Event()

    def run(index: int, step: Callable[[], T]) -> None:
        try:
            with slots:
                results[index] = step()
        except (LLMError, NoCode) as e:
            results[index] = e
        except BaseException as e:  # a bug: raised again in the caller's own thread
            crashes.append(e)
        finally:
            with lock:
                left[0] -= 1
                if left[0] == 0:
                    done.set()

    for index, step in enumerate(work):
        threading.Thread(
            target=run, args=(index, step), name=f"llm-step-{index}", daemon=True
        ).start()
    while not done.wait(STOP_POLL_S):
        check_stop()
    if crashes:
        raise crashes[0]
    return [results[index] for index in range(len(work))]
